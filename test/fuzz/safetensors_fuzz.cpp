// libFuzzer target: bytes -> rt::SafetensorsFile, then every tensor's view read end to end. The
// reader only opens files (it mmaps them), so each input is written to one file in /dev/shm
// (memory, not disk). A WeightError is the reader refusing the input; anything else is a finding.
#include "runtime/safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

const std::string &inputPath() {
  static const std::string path = [] {
    const char *shm = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(shm) + "/cbc-safetensors-fuzz-" + std::to_string(getpid()) + ".safetensors";
  }();
  return path;
}

void writeInput(const uint8_t *data, size_t size) {
  FILE *f = std::fopen(inputPath().c_str(), "wb");
  if (!f) __builtin_trap(); // the harness, not the reader, failed
  if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  writeInput(data, size);
  try {
    cbc::rt::SafetensorsFile file(inputPath());
    volatile uint8_t sink = 0;
    for (const std::string &name : file.names()) {
      const cbc::rt::TensorView &t = file.get(name);
      // Touch every byte the view claims, so ASan sees a range that leaves the mapping.
      for (size_t i = 0; i < t.bytes; ++i) sink = sink ^ t.data[i];
      (void)t.numel();
    }
  } catch (const cbc::rt::WeightError &) {
  }
  return 0;
}
