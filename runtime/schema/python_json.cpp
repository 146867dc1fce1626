#include "runtime/schema/python_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace cbc {

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

nlohmann::json parsePythonJson(const std::string &text) {
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

} // namespace cbc
