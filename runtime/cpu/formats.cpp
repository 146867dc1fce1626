#include "runtime/cpu/formats.h"

#include "runtime/cpu/matrix_x86.h"

#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace cbc::rt::cpu {

namespace {

void gemvF32(const float *x, int64_t M, int64_t K, const uint8_t *w, int64_t n0, int64_t n1, int64_t N, float *y) {
  x86::gemvRows(x, M, K, reinterpret_cast<const float *>(w), n0, n1, N, y);
}

void gemvBf16(const float *x, int64_t M, int64_t K, const uint8_t *w, int64_t n0, int64_t n1, int64_t N, float *y) {
  x86::gemvRows(x, M, K, reinterpret_cast<const uint16_t *>(w), n0, n1, N, y);
}

void gemvBf16Panels(const float *x, int64_t M, int64_t K, const uint8_t *w, int64_t n0, int64_t n1, int64_t N,
                    float *y) {
  x86::gemvPacked(x, M, K, reinterpret_cast<const uint16_t *>(w), n0, n1, N, y);
}

void packBf16Bytes(uint8_t *w, int64_t count, int64_t N, int64_t K) {
  packBf16(reinterpret_cast<uint16_t *>(w), count, N, K);
}

// Indexed by Storage.
constexpr FormatKernels kKernels[] = {
    /* F32 */ {gemvF32, false, true, 1, nullptr, Storage::F32},
    /* BF16 */ {gemvBf16, false, false, 1, packBf16Bytes, Storage::BF16Panels},
    /* BF16Panels */ {gemvBf16Panels, true, false, kPanelRows, nullptr, Storage::BF16Panels},
};
static_assert(std::size(kKernels) == kStorageCount, "one row of CPU kernels per storage format");

} // namespace

const FormatKernels &formatKernels(Format f) {
  auto i = (size_t)f.storage;
  if (i >= std::size(kKernels))
    throw std::logic_error("cpu backend: unknown storage format " + std::to_string(i));
  return kKernels[i];
}

void packForProducts(HostTensor &t) {
  const FormatKernels &k = formatKernels(t.format());
  const std::vector<int64_t> &s = t.shape();
  if (!k.pack || !storageTraits(k.packsTo).fits(s))
    return;
  int64_t N = s[s.size() - 2], K = s.back();
  k.pack(t.data(), t.numel() / (N * K), N, K);
  t.setFormat(k.packsTo);
}

void packBf16(uint16_t *w, int64_t count, int64_t N, int64_t K) {
  std::vector<uint16_t> panel(kPanelRows * K);
  for (int64_t p = 0; p < count * N / kPanelRows; ++p) {
    uint16_t *dst = w + p * kPanelRows * K;
    std::memcpy(panel.data(), dst, panel.size() * sizeof(uint16_t));
    for (int64_t r = 0; r < kPanelRows; ++r)
      for (int64_t k = 0; k < K; ++k)
        dst[panelIndex(r, k, K)] = panel[r * K + k];
  }
}

} // namespace cbc::rt::cpu
