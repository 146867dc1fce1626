#include "runtime/request_json.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace cbc::rt {

using nlohmann::json;

namespace {

std::string quoted(const std::string &key) { return "\"" + key + "\""; }

// Keys people bring from other servers' APIs, and the one cbc reads instead.
const char *suggestionFor(const std::string &key) {
  static const std::pair<const char *, const char *> kNear[] = {
      {"max_tokens", "max_new_tokens"}, {"max_length", "max_new_tokens"},
      {"max_completion_tokens", "max_new_tokens"}, {"n_predict", "max_new_tokens"},
      {"stop", "stop_token_ids"}, {"stop_ids", "stop_token_ids"},
      {"eos_token_id", "stop_token_ids"}, {"tokens", "prompt"},
      {"input_ids", "prompt"}, {"prompt_token_ids", "prompt"},
      {"random_seed", "seed"}, {"logprob", "logprobs"},
      {"num_return_sequences", "n"}, {"best_of", "n"}, {"salt", "cache_salt"}};
  for (const auto &[from, to] : kNear)
    if (key == from)
      return to;
  return nullptr;
}

// An integer field: a JSON integer (never a float, so nothing is truncated or cast out of
// range) within [lo, hi]. Empty on success, else the reason naming the field.
std::string readInt(const json &v, const std::string &key, int64_t lo, int64_t hi, int64_t &out) {
  if (!v.is_number_integer())
    return quoted(key) + " must be an integer" + (v.is_number_float() ? " (got " + v.dump() + ")" : "");
  // Non-negative literals parse as unsigned: above INT64_MAX they fit no int64 field.
  if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t)std::numeric_limits<int64_t>::max())
    return quoted(key) + " is out of range (at most " + std::to_string(hi) + ")";
  int64_t s = v.get<int64_t>();
  if (s < lo && hi == std::numeric_limits<int64_t>::max())
    return quoted(key) + " must be >= " + std::to_string(lo);
  if (s < lo || s > hi)
    return quoted(key) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  out = s;
  return "";
}

std::string readSeed(const json &v, uint64_t &out) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    return "\"seed\" must be an integer in [0, 2^64)";
  out = v.get<uint64_t>();
  return "";
}

std::string readDouble(const json &v, const std::string &key, double &out) {
  if (!v.is_number())
    return quoted(key) + " must be a number";
  out = v.get<double>();
  if (!std::isfinite(out))
    return quoted(key) + " must be finite";
  return "";
}

std::string readBool(const json &v, const std::string &key, bool &out) {
  if (!v.is_boolean())
    return quoted(key) + " must be true or false";
  out = v.get<bool>();
  return "";
}

std::string readTokenIds(const json &v, const std::string &key, std::vector<int32_t> &out) {
  if (!v.is_array())
    return quoted(key) + " must be a list of token ids";
  out.clear();
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t id = 0;
    std::string bad = readInt(v[i], key + "[" + std::to_string(i) + "]", INT32_MIN, INT32_MAX, id);
    if (!bad.empty())
      return bad;
    out.push_back((int32_t)id);
  }
  return "";
}

constexpr int kMaxIdDepth = 64;

// Whether v nests arrays or objects deeper than `limit`; iterative, so any depth is safe.
bool depthExceeds(const json &v, int limit) {
  std::vector<std::pair<const json *, int>> todo = {{&v, 0}};
  while (!todo.empty()) {
    auto [j, depth] = todo.back();
    todo.pop_back();
    if (!j->is_structured())
      continue;
    if (depth >= limit)
      return true;
    for (const json &child : *j)
      todo.push_back({&child, depth + 1});
  }
  return false;
}

// One field of a request object into p. Empty on success, else the reason naming the key.
std::string readField(const std::string &key, const json &v, ParsedRequest &p) {
  SamplingParams &s = p.params;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  if (key == "prompt")
    return readTokenIds(v, key, p.ids);
  if (key == "id") {
    // Copied and printed back recursively: a deep one would overflow the stack.
    if (depthExceeds(v, kMaxIdDepth))
      return "\"id\" nests deeper than " + std::to_string(kMaxIdDepth) + " levels";
    p.user_id = v;
    return "";
  }
  if (key == "max_new_tokens")
    return readInt(v, key, 1, kMax, s.max_new_tokens);
  if (key == "top_k")
    return readInt(v, key, 0, kMax, s.top_k);
  if (key == "temperature")
    return readDouble(v, key, s.temperature);
  if (key == "top_p")
    return readDouble(v, key, s.top_p);
  if (key == "min_p")
    return readDouble(v, key, s.min_p);
  if (key == "seed")
    return readSeed(v, s.seed);
  if (key == "ignore_eos")
    return readBool(v, key, s.ignore_eos);
  if (key == "logprobs")
    return readBool(v, key, s.logprobs);
  if (key == "n")
    return readInt(v, key, 1, 1024, s.n);
  if (key == "cache_salt") {
    if (!v.is_string())
      return "\"cache_salt\" must be a string";
    s.cache_salt = v.get<std::string>();
    return "";
  }
  if (key == "cache_marks") {
    if (!v.is_array())
      return "\"cache_marks\" must be a list of prompt positions";
    s.cache_marks.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t at = 0;
      std::string bad = readInt(v[i], key + "[" + std::to_string(i) + "]", 0, kMax, at);
      if (!bad.empty())
        return bad;
      s.cache_marks.push_back(at);
    }
    return "";
  }
  if (key == "stop_token_ids") {
    std::vector<int32_t> ids;
    std::string bad = readTokenIds(v, key, ids);
    s.stop_token_ids.assign(ids.begin(), ids.end());
    return bad;
  }
  std::string why = "unknown key " + quoted(key);
  if (const char *near = suggestionFor(key))
    why += " (did you mean " + quoted(near) + "?)";
  return why;
}

} // namespace

ParsedRequest parseRequestLine(const std::string &line, const SamplingParams &defaults) {
  ParsedRequest p;
  p.params = defaults;
  try {
    json j = json::parse(line);
    if (j.is_array()) {
      p.error = readTokenIds(j, "prompt", p.ids);
      return p;
    }
    if (!j.is_object()) {
      p.error = "a request must be a list of token ids or an object with \"prompt\"";
      return p;
    }
    if (!j.contains("prompt")) {
      p.error = "missing \"prompt\"";
      return p;
    }
    for (const auto &[key, value] : j.items()) {
      p.error = readField(key, value, p);
      if (!p.error.empty())
        return p;
    }
  } catch (const json::exception &e) {
    // Only the parse can throw here: every field is type-checked before it is read.
    p.error = std::string("malformed JSON: ") + e.what();
  } catch (const std::bad_alloc &) {
    p.error = "request too large";
  }
  return p;
}

} // namespace cbc::rt
