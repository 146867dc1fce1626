#include "runtime/request_json.h"

#include <bit>
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
      {"num_return_sequences", "n"}, {"best_of", "n"}, {"salt", "cache_salt"},
      {"inputs_embeds", "embeds"}, {"embeddings", "embeds"}, {"images", "embeds"},
      {"image_token_id", "placeholder"}, {"image_token_index", "placeholder"},
      {"min_new_tokens", "min_tokens"}, {"sequence_bias", "logit_bias"}, {"bad_words_ids", "bad_words"}};
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

bool endsWith(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// An image's (t, h, w): three integers >= 1.
std::string readGrid(const json &v, const std::string &key, int64_t grid[3]) {
  if (!v.is_array() || v.size() != 3)
    return quoted(key) + " must be [t, h, w], three integers >= 1";
  for (size_t c = 0; c < 3; ++c) {
    std::string bad = readInt(v[c], key + "[" + std::to_string(c) + "]", 1, int64_t(1) << 31, grid[c]);
    if (!bad.empty())
      return bad;
  }
  return "";
}

// Keys of an "embeds" segment people may write for the ones it takes.
const char *segmentSuggestion(const std::string &key) {
  static const std::pair<const char *, const char *> kNear[] = {
      {"path", "file"}, {"npy", "file"}, {"safetensors", "file"}, {"data", "base64"}, {"b64", "base64"},
      {"offset", "start"}, {"position", "start"}, {"image_grid_thw", "grid"}, {"name", "tensor"},
      {"type", "modality"}, {"kind", "modality"}};
  for (const auto &[from, to] : kNear)
    if (key == from)
      return to;
  return nullptr;
}

// One segment of "embeds": its source ("file" [+ "tensor"] or "base64") and place.
std::string readSegment(const json &v, const std::string &where, PendingSegment &seg) {
  if (!v.is_object())
    return quoted(where) + " must be an object with \"file\" or \"base64\"";
  bool hasFile = false, hasBase64 = false, hasTensor = false;
  for (const auto &[key, value] : v.items()) {
    const std::string k = where + "." + key;
    if (key == "file" || key == "tensor") {
      if (!value.is_string() || value.get<std::string>().empty())
        return quoted(k) + (key == "file" ? " must be a path (a non-empty string)" : " must be a tensor name (a non-empty string)");
      (key == "file" ? seg.file : seg.tensor) = value.get<std::string>();
      (key == "file" ? hasFile : hasTensor) = true;
    } else if (key == "base64") {
      if (!value.is_string())
        return quoted(k) + " must be a string of base64 (float32 little-endian values)";
      std::vector<uint8_t> bytes;
      std::string bad = decodeBase64(value.get<std::string>(), bytes);
      if (!bad.empty())
        return quoted(k) + " is not valid base64: " + bad;
      if (bytes.empty())
        return quoted(k) + " holds no values";
      if (bytes.size() % 4 != 0)
        return quoted(k) + " decodes to " + std::to_string(bytes.size()) +
               " bytes, not a whole number of float32 values (4 bytes each)";
      auto values = std::make_shared<std::vector<float>>(bytes.size() / 4);
      for (size_t i = 0; i < values->size(); ++i) {
        const uint8_t *b = &bytes[4 * i];
        (*values)[i] = std::bit_cast<float>((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                            (uint32_t)b[3] << 24);
      }
      seg.values = std::move(values);
      hasBase64 = true;
    } else if (key == "start") {
      std::string bad = readInt(value, k, 0, std::numeric_limits<int32_t>::max(), seg.start);
      if (!bad.empty())
        return bad;
    } else if (key == "grid") {
      std::string bad = readGrid(value, k, seg.grid);
      if (!bad.empty())
        return bad;
    } else if (key == "modality") {
      if (!value.is_string() || !modalityFromName(value.get<std::string>(), seg.modality))
        return quoted(k) + " must be \"image\", \"video\" or \"audio\"";
    } else {
      std::string why = "unknown key " + quoted(key) + " in " + quoted(where) +
                        " (a segment takes \"file\", \"tensor\", \"base64\", \"start\", \"grid\" and \"modality\")";
      if (const char *near = segmentSuggestion(key))
        why += "; did you mean " + quoted(near) + "?";
      return why;
    }
  }
  if (hasFile == hasBase64)
    return quoted(where) + " needs exactly one of \"file\" (a .npy or .safetensors path) and \"base64\"";
  if (hasFile && !endsWith(seg.file, ".npy") && !endsWith(seg.file, ".safetensors"))
    return quoted(where + ".file") + " must name a .npy or .safetensors file, got '" + seg.file + "'";
  if (hasTensor && !endsWith(seg.file, ".safetensors"))
    return quoted(where + ".tensor") + " names a tensor of a .safetensors \"file\"; this segment has none";
  return "";
}

std::string readEmbeds(const json &v, std::vector<PendingSegment> &out) {
  if (!v.is_array())
    return "\"embeds\" must be a list of segments ({\"file\" or \"base64\", \"start\", \"grid\"})";
  out.assign(v.size(), PendingSegment{});
  for (size_t i = 0; i < v.size(); ++i) {
    std::string bad = readSegment(v[i], "embeds[" + std::to_string(i) + "]", out[i]);
    if (!bad.empty())
      return bad;
  }
  return "";
}

// The segments' places: every one by "start", or every one by the "placeholder"'s runs.
std::string checkPlacement(const ParsedRequest &p) {
  for (size_t i = 0; i < p.embeds.size(); ++i) {
    const std::string where = "embeds[" + std::to_string(i) + "]";
    if (p.placeholder >= 0 && p.embeds[i].start >= 0)
      return quoted(where + ".start") + " cannot be given with \"placeholder\" (the placeholder's runs place every segment)";
    if (p.placeholder < 0 && p.embeds[i].start < 0)
      return quoted(where) + " needs \"start\" (its first prompt row), or the request a \"placeholder\" id";
  }
  return "";
}

// {"id": bias, ...} as OpenAI's logit_bias writes it (ids as strings).
std::string readLogitBias(const json &v, std::vector<std::pair<int32_t, float>> &out) {
  if (!v.is_object())
    return "\"logit_bias\" must be an object of token ids (as strings) to biases";
  out.clear();
  for (const auto &[idText, bias] : v.items()) {
    const std::string where = "logit_bias." + idText;
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(idText, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != idText.size() || id < 0 || id > std::numeric_limits<int32_t>::max())
      return quoted(where) + " does not name a token id (a non-negative integer)";
    double b = 0;
    std::string bad = readDouble(bias, where, b);
    if (!bad.empty())
      return bad;
    out.emplace_back((int32_t)id, (float)b);
  }
  return "";
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
  if (key == "embeds")
    return readEmbeds(v, p.embeds);
  if (key == "placeholder")
    return readInt(v, key, 0, std::numeric_limits<int32_t>::max(), p.placeholder);
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
  if (key == "top_logprobs")
    return readInt(v, key, 0, kMaxTopLogprobs, s.top_logprobs);
  if (key == "prompt_logprobs")
    return readInt(v, key, 0, kMaxTopLogprobs, s.prompt_logprobs);
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
  if (key == "repetition_penalty")
    return readDouble(v, key, s.repetition_penalty);
  if (key == "presence_penalty")
    return readDouble(v, key, s.presence_penalty);
  if (key == "frequency_penalty")
    return readDouble(v, key, s.frequency_penalty);
  if (key == "min_tokens")
    return readInt(v, key, 0, kMax, s.min_tokens);
  if (key == "logit_bias")
    return readLogitBias(v, s.logit_bias);
  if (key == "bad_words") {
    if (!v.is_array())
      return "\"bad_words\" must be a list of token id lists";
    s.bad_words.assign(v.size(), {});
    for (size_t i = 0; i < v.size(); ++i) {
      std::string bad = readTokenIds(v[i], "bad_words[" + std::to_string(i) + "]", s.bad_words[i]);
      if (!bad.empty())
        return bad;
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
    p.error = checkPlacement(p);
  } catch (const json::exception &e) {
    // Only the parse can throw here: every field is type-checked before it is read.
    p.error = std::string("malformed JSON: ") + e.what();
  } catch (const std::bad_alloc &) {
    p.error = "request too large";
  }
  if (!p.error.empty())
    p.embeds.clear(); // a rejected line holds no data
  return p;
}

std::string decodeBase64(const std::string &text, std::vector<uint8_t> &out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  size_t n = text.size();
  size_t pad = 0;
  while (pad < 2 && pad < n && text[n - 1 - pad] == '=')
    ++pad;
  size_t body = n - pad;
  if (pad > 0 && n % 4 != 0)
    return "its length with \"=\" padding (" + std::to_string(n) + ") is not a multiple of 4";
  if (body % 4 == 1)
    return "its length (" + std::to_string(body) + " characters) leaves a partial byte";
  out.clear();
  out.reserve(body / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < body; ++i) {
    int v = value(text[i]);
    if (v < 0) {
      unsigned char c = (unsigned char)text[i];
      std::string shown = c >= 0x20 && c < 0x7f ? std::string("'") + (char)c + "'" : "byte " + std::to_string(c);
      return shown + " at offset " + std::to_string(i) + " is not a base64 character";
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back((uint8_t)(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  return "";
}

} // namespace cbc::rt
