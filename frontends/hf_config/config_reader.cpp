#include "frontends/hf_config/config_reader.h"

#include "runtime/schema/limits.h"

#include <cmath>

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
