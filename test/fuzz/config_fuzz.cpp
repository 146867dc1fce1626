// libFuzzer target: config.json text -> hf::parseConfig. A ConfigError is the parser refusing the
// input, as it should; any other exception, a sanitizer report or an allocation failure is a
// finding (libFuzzer aborts on an uncaught exception, and -rss_limit_mb/-malloc_limit_mb catch
// runaway allocations).
#include "frontends/hf_config/model_spec.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    cbc::hf::ModelSpec spec = cbc::hf::parseConfig(text);
    (void)spec;
  } catch (const cbc::hf::ConfigError &) {
  }
  return 0;
}
