// libFuzzer target: bytes -> rt::Artefact::fromBytes. An ArtefactError is the loader refusing the
// input; anything else (another exception, a sanitizer report, a runaway allocation) is a finding.
#include "runtime/artefact.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    cbc::rt::Artefact a = cbc::rt::Artefact::fromBytes(data, size);
    (void)a;
  } catch (const cbc::rt::ArtefactError &) {
  }
  return 0;
}
