// Typed, key-naming access to a config.json object. Every accessor names the full key path in
// its error, so `cbc compile` can say exactly which key is wrong.
#ifndef CBC_FRONTENDS_HF_CONFIG_CONFIG_READER_H
#define CBC_FRONTENDS_HF_CONFIG_CONFIG_READER_H

#include "frontends/hf_config/model_spec.h"
#include "runtime/schema/python_json.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <set>

namespace cbc::hf {

// config.json as Python's json module writes it (runtime/schema/python_json.h).
inline nlohmann::json parseConfigJson(const std::string &text) { return parsePythonJson(text); }

// The largest value of the size `key` (runtime/schema/limits.h): kMaxVocab for vocabulary
// sizes, kMaxLayers, kMaxHeads, kMaxExperts and kMaxPositions for layer, head, expert and
// position counts (windows and chunks too), kMaxHeadDim for head sizes, else kMaxDim.
int64_t sizeBound(const std::string &key);

class ConfigReader {
public:
  ConfigReader(const nlohmann::json &obj, std::string prefix = "")
      : obj_(obj), prefix_(std::move(prefix)) {}

  // The top-level keys every reader derived from this one (child(), sameKeys()) has looked at,
  // read or found absent: the keys that decide the computation, which the runtime compares
  // with the config.json beside the weights. Tracking starts here, on the top-level reader.
  void trackKeys() { read_ = std::make_shared<KeysRead>(); }
  // In the order first read (model_type first), so a mismatch names the most telling key.
  std::vector<std::string> keysRead() const { return read_ ? read_->order : std::vector<std::string>{}; }
  // A reader of a rewritten copy of this object (renamed keys) that records into the same set.
  ConfigReader sameKeys(const nlohmann::json &copy) const;

  // A key whose value is null counts as absent, as in transformers.
  bool has(const std::string &key) const;
  // The key is written, even as null (where null and absent mean different things).
  bool contains(const std::string &key) const {
    record(key);
    return obj_.contains(key);
  }
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
  // The whole object: every key of it counts as read.
  const nlohmann::json &object() const;
  // The object, counting nothing: for a rewritten copy that is then read through sameKeys().
  const nlohmann::json &objectToCopy() const { return obj_; }

private:
  [[noreturn]] void typeError(const std::string &key, const char *expected) const;
  struct KeysRead {
    std::set<std::string> seen;
    std::vector<std::string> order;
    void insert(const std::string &key) {
      if (seen.insert(key).second)
        order.push_back(key);
    }
  };
  void record(const std::string &key) const {
    if (read_)
      read_->insert(top_.empty() ? key : top_);
  }
  const nlohmann::json &obj_;
  std::string prefix_;
  std::shared_ptr<KeysRead> read_; // null: not tracked
  std::string top_; // the top-level key this reader's object sits under; empty at the top
};

} // namespace cbc::hf

#endif
