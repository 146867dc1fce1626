// libFuzzer target: one JSONL line -> rt::parseRequestLine. The parser never throws (a malformed
// line comes back with its error set), so any exception is a finding, as is a sanitizer report.
// The input is split at newlines like `cbc run` reads its prompts file.
#include "runtime/request_json.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const cbc::rt::SamplingParams defaults;
  std::string text(reinterpret_cast<const char *>(data), size);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    cbc::rt::ParsedRequest r = cbc::rt::parseRequestLine(text.substr(start, end - start), defaults);
    // A request without an error carries its ids; one with an error must say why.
    if (!r.error.empty() && r.error.find_first_not_of(' ') == std::string::npos) __builtin_trap();
    start = end + 1;
  }
  return 0;
}
