#include "runtime/checkpoint_config.h"

#include "runtime/safetensors.h"
#include "runtime/schema/python_json.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cbc::rt {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// "Infinity", "-Infinity" or "NaN" for a non-finite float in any of its spellings (bare,
// beyond double range, transformers 5's {"__float__": ...}); empty for anything else.
std::string nonFinite(const json &v) {
  double d;
  if (v.is_number() || !jsonNumber(v, d))
    return "";
  return std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
}

std::string shown(const json &v) {
  std::string s = nonFinite(v);
  if (!s.empty())
    return s;
  s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw WeightError("cannot read the checkpoint's config '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

bool sameConfigValue(const json &a, const json &b) {
  std::string fa = nonFinite(a), fb = nonFinite(b);
  if (!fa.empty() || !fb.empty())
    return fa == fb;
  bool na = a.is_number() && !a.is_boolean(), nb = b.is_number() && !b.is_boolean();
  if (na || nb) {
    if (!na || !nb)
      return false;
    if (a.is_number_integer() && b.is_number_integer()) // exactly, beyond double precision
      return a.is_number_unsigned() || b.is_number_unsigned() ? a.get<uint64_t>() == b.get<uint64_t>()
                                                              : a.get<int64_t>() == b.get<int64_t>();
    return a.get<double>() == b.get<double>();
  }
  if (a.type() != b.type())
    return false;
  if (a.is_array()) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!sameConfigValue(a[i], b[i]))
        return false;
    return true;
  }
  if (a.is_object()) {
    // A key set to null and a missing key mean the same to transformers.
    for (const json *o : {&a, &b})
      for (const auto &[k, v] : o->items()) {
        const json &other = o == &a ? b : a;
        json missing;
        if (!sameConfigValue(v, other.contains(k) ? other.at(k) : missing))
          return false;
      }
    return true;
  }
  return a == b;
}

std::string checkpointConfigPath(const std::string &weightsPath) {
  fs::path p(weightsPath);
  if (fs::is_directory(p))
    return (p / "config.json").string();
  if (p.extension() == ".json" && p.filename() != "model.safetensors.index.json" &&
      p.filename().string().find(".index.json") == std::string::npos)
    return p.string();
  return (p.parent_path().empty() ? fs::path("config.json") : p.parent_path() / "config.json").string();
}

void checkCheckpointConfig(const Artefact &a, const std::string &weightsPath) {
  if (a.config_keys.empty())
    return;
  std::string path = checkpointConfigPath(weightsPath);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return;
  json theirs, ours;
  try {
    theirs = parsePythonJson(readText(path));
  } catch (const json::exception &e) {
    throw WeightError("the checkpoint's config '" + path + "' is not valid JSON: " + e.what());
  }
  try {
    ours = parsePythonJson(a.config_json);
  } catch (const json::exception &) {
    return; // not the artefact's fault to report here: the compiler parsed it
  }
  if (!theirs.is_object())
    throw WeightError("the checkpoint's config '" + path + "' is not a JSON object");
  if (!ours.is_object())
    return;
  for (const std::string &key : a.config_keys) {
    json none;
    const json &t = theirs.contains(key) ? theirs.at(key) : none, &o = ours.contains(key) ? ours.at(key) : none;
    if (!sameConfigValue(t, o))
      throw WeightError("the checkpoint's config.json ('" + path + "') differs from the compiled model at \"" + key +
                        "\": " + shown(t) + " vs " + shown(o) +
                        " (weights of another model, or a config edited since: compile the config.json beside the weights)");
  }
}

} // namespace cbc::rt
