// Typed, key-naming access to a config.json object. Every accessor names the full key path in
// its error, so `cbc compile` can say exactly which key is wrong.
#ifndef CBC_FRONTENDS_HF_CONFIG_CONFIG_READER_H
#define CBC_FRONTENDS_HF_CONFIG_CONFIG_READER_H

#include "frontends/hf_config/model_spec.h"

#include <nlohmann/json.hpp>

namespace cbc::hf {

// Parses config.json as Python's json module writes it: besides standard JSON, the bare
// tokens Infinity, -Infinity and NaN (older transformers saved time_step_limit = [0.0,
// Infinity]). They become marker strings that the number accessors read back as IEEE values,
// as is transformers 5's own {"__float__": "Infinity"} form.
nlohmann::json parseConfigJson(const std::string &text);
// A number, or one of the markers parseConfigJson leaves for Infinity, -Infinity and NaN.
bool jsonNumber(const nlohmann::json &v, double &out);

// The largest value of the size `key` (runtime/schema/limits.h): kMaxVocab for vocabulary
// sizes, kMaxLayers, kMaxHeads, kMaxExperts and kMaxPositions for layer, head, expert and
// position counts (windows and chunks too), kMaxHeadDim for head sizes, else kMaxDim.
int64_t sizeBound(const std::string &key);

class ConfigReader {
public:
  ConfigReader(const nlohmann::json &obj, std::string prefix = "")
      : obj_(obj), prefix_(std::move(prefix)) {}

  // A key whose value is null counts as absent, as in transformers.
  bool has(const std::string &key) const;
  // The key is written, even as null (where null and absent mean different things).
  bool contains(const std::string &key) const { return obj_.contains(key); }
  std::string path(const std::string &key) const { return prefix_ + key; }
  const nlohmann::json &raw(const std::string &key) const;

  int64_t requireInt(const std::string &key) const;
  int64_t getInt(const std::string &key, int64_t fallback) const;
  // Sizes must be positive and at most `bound`; bound 0 takes the key's bound from
  // runtime/schema/limits.h (sizeBound), so nothing that compiles is refused by the loader.
  int64_t requireSize(const std::string &key, int64_t bound = 0) const;
  int64_t getSize(const std::string &key, int64_t fallback, int64_t bound = 0) const;
  // A count that may be 0 (shared experts, a window): not negative, at most `bound` (0: sizeBound).
  int64_t getCount(const std::string &key, int64_t fallback, int64_t bound = 0) const;
  double getNumber(const std::string &key, double fallback) const;
  double requireNumber(const std::string &key) const;
  bool getBool(const std::string &key, bool fallback) const;
  std::string getString(const std::string &key, const std::string &fallback) const;
  std::vector<int64_t> getIntList(const std::string &key) const; // int or [int]
  std::vector<std::string> getStringList(const std::string &key) const;
  std::vector<double> getNumberList(const std::string &key) const;
  ConfigReader child(const std::string &key) const; // a nested object
  const nlohmann::json &object() const { return obj_; }

private:
  [[noreturn]] void typeError(const std::string &key, const char *expected) const;
  const nlohmann::json &obj_;
  std::string prefix_;
};

} // namespace cbc::hf

#endif
