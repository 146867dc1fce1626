// libFuzzer target: bytes -> rt::Artefact::fromBytes. An ArtefactError is the loader refusing the
// input; anything else (another exception, a sanitizer report, a runaway allocation) is a finding.
#include "runtime/artefact.h"

#include <cstddef>
#include <cstdint>

namespace {

// With the integrity trailer's hash checked, almost every mutation would stop at the hash; the
// loader's own switch to skip it (the trailer must still be there) lets the fuzzer reach the
// structural checks behind it. The second overload serves a loader without that switch.
template <typename A>
auto load(const uint8_t *data, size_t size, int) -> decltype(A::fromBytes(data, size, false)) {
  return A::fromBytes(data, size, /*verifyChecksum=*/false);
}
template <typename A> A load(const uint8_t *data, size_t size, long) {
  return A::fromBytes(data, size);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    cbc::rt::Artefact a = load<cbc::rt::Artefact>(data, size, 0);
    (void)a;
  } catch (const cbc::rt::ArtefactError &) {
  }
  return 0;
}
