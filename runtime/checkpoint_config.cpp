#include "runtime/checkpoint_config.h"

#include "runtime/safetensors.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cbc::rt {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char *const kPosInf = "<cbc:Infinity>", *const kNegInf = "<cbc:-Infinity>", *const kNaN = "<cbc:NaN>";

// The marker a non-finite float becomes, whether written bare (Infinity), as transformers 5's
// {"__float__": "Infinity"}, or already a marker; empty for anything else.
std::string nonFinite(const json &v) {
  if (v.is_string()) {
    const std::string &s = v.get_ref<const std::string &>();
    if (s == kPosInf || s == kNegInf || s == kNaN)
      return s;
  }
  if (v.is_object() && v.size() == 1 && v.contains("__float__") && v["__float__"].is_string()) {
    const std::string &s = v["__float__"].get_ref<const std::string &>();
    if (s == "Infinity") return kPosInf;
    if (s == "-Infinity") return kNegInf;
    if (s == "NaN") return kNaN;
  }
  return "";
}

std::string shown(const json &v) {
  std::string s = nonFinite(v);
  if (!s.empty())
    return s.substr(5, s.size() - 6); // <cbc:Infinity> -> Infinity
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

json parsePythonJson(const std::string &text) {
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
    auto token = [&](const char *word) { return text.compare(i, std::strlen(word), word) == 0; };
    const char *marker = token("-Infinity") ? kNegInf : token("Infinity") ? kPosInf : token("NaN") ? kNaN : nullptr;
    if (marker) {
      out += std::string("\"") + marker + "\"";
      i += std::strlen(marker) - 7; // past the bare word: the marker less "<cbc:" and ">"
      continue;
    }
    inString = c == '"';
    out += c;
  }
  return json::parse(out);
}

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
