#include "frontends/hf_config/config_reader.h"

#include "runtime/schema/limits.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace cbc::hf {

namespace {
const char *jsonTypeName(const nlohmann::json &v) {
  double d;
  if (v.is_null()) return "null";
  if (!v.is_number() && jsonNumber(v, d)) return std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}
} // namespace

ConfigReader ConfigReader::sameKeys(const nlohmann::json &copy) const {
  ConfigReader r(copy, prefix_);
  r.read_ = read_;
  r.top_ = top_;
  return r;
}

const nlohmann::json &ConfigReader::object() const {
  if (read_ && top_.empty())
    for (const auto &[key, _] : obj_.items())
      read_->insert(key);
  else
    record("");
  return obj_;
}

bool ConfigReader::has(const std::string &key) const {
  record(key);
  auto it = obj_.find(key);
  return it != obj_.end() && !it->is_null();
}

const nlohmann::json &ConfigReader::raw(const std::string &key) const {
  if (!has(key))
    throw ConfigError(path(key), "is missing");
  return obj_.at(key);
}

void ConfigReader::typeError(const std::string &key, const char *expected) const {
  throw ConfigError(path(key), std::string("expected ") + expected + ", got " +
                                   jsonTypeName(obj_.at(key)));
}

int64_t ConfigReader::requireInt(const std::string &key) const {
  const auto &v = raw(key);
  // Beyond int64 (an unsigned literal, or a float such as 1e30) no size or index makes sense,
  // and converting it would wrap or be undefined.
  if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t)INT64_MAX)
    throw ConfigError(path(key), "is too large (" + v.dump() + ")");
  if (v.is_number_integer())
    return v.get<int64_t>();
  // transformers accepts 4096.0 where an int is meant; a fractional value is an error.
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
    double d = v.get<double>();
    if (std::fabs(d) >= 9.2e18)
      throw ConfigError(path(key), "is too large (" + v.dump() + ")");
    return (int64_t)d;
  }
  typeError(key, "an integer");
}

int64_t sizeBound(const std::string &key) {
  auto has = [&](const char *word) { return key.find(word) != std::string::npos; };
  if (has("vocab"))
    return limits::kMaxVocab;
  if (has("layers") || key == "n_layer")
    return limits::kMaxLayers;
  if (has("experts"))
    return limits::kMaxExperts;
  if (has("heads") || key == "n_head" || key == "n_group" || key == "ngroups")
    return limits::kMaxHeads;
  if (has("position") || has("window") || has("chunk") || key == "n_ctx" || key == "model_max_length")
    return limits::kMaxPositions;
  if (has("head_dim") || has("headdim") || has("d_head") || has("rotary_dim"))
    return limits::kMaxHeadDim;
  return limits::kMaxDim;
}

int64_t ConfigReader::getInt(const std::string &key, int64_t fallback) const {
  return has(key) ? requireInt(key) : fallback;
}

int64_t ConfigReader::requireSize(const std::string &key, int64_t bound) const {
  int64_t v = requireInt(key);
  if (v <= 0)
    throw ConfigError(path(key), "must be positive, got " + std::to_string(v));
  int64_t most = bound ? bound : sizeBound(key);
  if (v > most)
    throw ConfigError(path(key), "is " + std::to_string(v) + ", above the largest cbc supports (" +
                                     std::to_string(most) + ")");
  return v;
}

int64_t ConfigReader::getSize(const std::string &key, int64_t fallback, int64_t bound) const {
  return has(key) ? requireSize(key, bound) : fallback;
}

int64_t ConfigReader::getCount(const std::string &key, int64_t fallback, int64_t bound) const {
  if (!has(key))
    return fallback;
  int64_t v = requireInt(key);
  if (v < 0)
    throw ConfigError(path(key), "must not be negative");
  int64_t most = bound ? bound : sizeBound(key);
  if (v > most)
    throw ConfigError(path(key), "is " + std::to_string(v) + ", above the largest cbc supports (" +
                                     std::to_string(most) + ")");
  return v;
}

namespace {
const char *kPosInf = "<cbc:Infinity>", *kNegInf = "<cbc:-Infinity>", *kNaN = "<cbc:NaN>";

// The length of the JSON number at text[i], or 0.
size_t numberLength(const std::string &text, size_t i) {
  size_t j = i;
  while (j < text.size() && std::strchr("+-.0123456789eE", text[j]) && text[j] != '\0')
    ++j;
  return j > i && (text[i] == '-' || (text[i] >= '0' && text[i] <= '9')) ? j - i : 0;
}

// A number beyond double range (1e400): Python's json reads it as +-inf, so it becomes the
// same marker as Infinity, and the key that reads it says what is wrong (nlohmann would throw
// out_of_range, naming no key).
const char *overflowMarker(const std::string &number) {
  errno = 0;
  double d = std::strtod(number.c_str(), nullptr);
  if (errno == ERANGE && std::isinf(d))
    return d > 0 ? kPosInf : kNegInf;
  return nullptr;
}
} // namespace

nlohmann::json parseConfigJson(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
      out += c;
      continue;
    }
    auto token = [&](const char *word) { return text.compare(i, std::strlen(word), word) == 0; };
    if (token("-Infinity")) {
      out += std::string("\"") + kNegInf + "\"";
      i += 8;
    } else if (token("Infinity")) {
      out += std::string("\"") + kPosInf + "\"";
      i += 7;
    } else if (token("NaN")) {
      out += std::string("\"") + kNaN + "\"";
      i += 2;
    } else if (size_t n = numberLength(text, i)) {
      std::string number = text.substr(i, n);
      const char *marker = overflowMarker(number);
      out += marker ? std::string("\"") + marker + "\"" : number;
      i += n - 1;
    } else {
      out += c;
    }
  }
  return nlohmann::json::parse(out);
}

bool jsonNumber(const nlohmann::json &v, double &out) {
  if (v.is_number() && !v.is_boolean()) {
    out = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string &s = v.get_ref<const std::string &>();
    if (s == kPosInf || s == kNegInf || s == kNaN) {
      out = s == kPosInf ? INFINITY : s == kNegInf ? -INFINITY : NAN;
      return true;
    }
  }
  // transformers 5 saves non-finite floats as {"__float__": "Infinity"} (and -Infinity, NaN).
  if (v.is_object() && v.size() == 1 && v.contains("__float__") && v["__float__"].is_string()) {
    const std::string &s = v["__float__"].get_ref<const std::string &>();
    if (s == "Infinity" || s == "-Infinity" || s == "NaN") {
      out = s == "Infinity" ? INFINITY : s == "-Infinity" ? -INFINITY : NAN;
      return true;
    }
  }
  return false;
}

double ConfigReader::requireNumber(const std::string &key) const {
  double out;
  if (!jsonNumber(raw(key), out))
    typeError(key, "a number");
  // Infinity and NaN are only meaningful where a key reads them explicitly (time_step_limit).
  if (!std::isfinite(out))
    throw ConfigError(path(key), "must be a finite number");
  return out;
}

double ConfigReader::getNumber(const std::string &key, double fallback) const {
  return has(key) ? requireNumber(key) : fallback;
}

bool ConfigReader::getBool(const std::string &key, bool fallback) const {
  if (!has(key))
    return fallback;
  const auto &v = obj_.at(key);
  if (!v.is_boolean())
    typeError(key, "a boolean");
  return v.get<bool>();
}

std::string ConfigReader::getString(const std::string &key, const std::string &fallback) const {
  if (!has(key))
    return fallback;
  const auto &v = obj_.at(key);
  double number;
  if (!v.is_string() || jsonNumber(v, number)) // a bare Infinity reads as a string marker
    typeError(key, "a string");
  return v.get<std::string>();
}

std::vector<int64_t> ConfigReader::getIntList(const std::string &key) const {
  if (!has(key))
    return {};
  const auto &v = obj_.at(key);
  if (v.is_number_integer())
    return {v.get<int64_t>()};
  if (!v.is_array())
    typeError(key, "an integer or a list of integers");
  std::vector<int64_t> out;
  for (const auto &e : v) {
    if (!e.is_number_integer())
      typeError(key, "a list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<std::string> ConfigReader::getStringList(const std::string &key) const {
  if (!has(key))
    return {};
  const auto &v = obj_.at(key);
  if (!v.is_array())
    typeError(key, "a list of strings");
  std::vector<std::string> out;
  for (const auto &e : v) {
    if (!e.is_string())
      typeError(key, "a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<double> ConfigReader::getNumberList(const std::string &key) const {
  if (!has(key))
    return {};
  const auto &v = obj_.at(key);
  if (!v.is_array())
    typeError(key, "a list of numbers");
  std::vector<double> out;
  for (const auto &e : v) {
    double d;
    if (!jsonNumber(e, d))
      typeError(key, "a list of numbers");
    out.push_back(d);
  }
  return out;
}

ConfigReader ConfigReader::child(const std::string &key) const {
  const auto &v = raw(key);
  if (!v.is_object())
    typeError(key, "an object");
  ConfigReader r(v, path(key) + ".");
  r.read_ = read_;
  r.top_ = top_.empty() ? key : top_;
  return r;
}

} // namespace cbc::hf
