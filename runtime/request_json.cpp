#include "runtime/request_json.h"

namespace cbc::rt {

using nlohmann::json;

ParsedRequest parseRequestLine(const std::string &line, const SamplingParams &defaults) {
  ParsedRequest p;
  p.params = defaults;
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception &e) {
    p.error = std::string("malformed JSON: ") + e.what();
    return p;
  }
  try {
    const json *ids = &j;
    if (j.is_object()) {
      if (!j.contains("prompt")) {
        p.error = "missing \"prompt\"";
        return p;
      }
      ids = &j["prompt"];
      if (j.contains("id")) p.user_id = j["id"];
      if (j.contains("max_new_tokens")) p.params.max_new_tokens = j["max_new_tokens"].get<int64_t>();
      if (j.contains("temperature")) p.params.temperature = j["temperature"].get<double>();
      if (j.contains("top_k")) p.params.top_k = j["top_k"].get<int64_t>();
      if (j.contains("top_p")) p.params.top_p = j["top_p"].get<double>();
      if (j.contains("min_p")) p.params.min_p = j["min_p"].get<double>();
      if (j.contains("seed")) p.params.seed = j["seed"].get<uint64_t>();
      if (j.contains("ignore_eos")) p.params.ignore_eos = j["ignore_eos"].get<bool>();
      if (j.contains("logprobs")) p.params.logprobs = j["logprobs"].get<bool>();
      if (j.contains("stop_token_ids")) p.params.stop_token_ids = j["stop_token_ids"].get<std::vector<int64_t>>();
    }
    if (!ids->is_array()) {
      p.error = "\"prompt\" must be a list of token ids";
      return p;
    }
    for (const json &t : *ids) {
      if (!t.is_number_integer()) {
        p.error = "\"prompt\" must be a list of integer token ids";
        return p;
      }
      int64_t v = t.get<int64_t>();
      if (v < INT32_MIN || v > INT32_MAX) {
        p.error = "token id " + std::to_string(v) + " is out of range";
        return p;
      }
      p.ids.push_back((int32_t)v);
    }
  } catch (const json::exception &e) {
    p.error = std::string("bad field: ") + e.what();
  }
  return p;
}

} // namespace cbc::rt
