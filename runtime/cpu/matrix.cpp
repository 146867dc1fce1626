#include "runtime/cpu/matrix.h"

#include "runtime/cpu/matrix_x86.h"
#include "runtime/safetensors.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

namespace cbc::rt::cpu {

namespace {

std::atomic<bool> portableOnly{false}, blasOnly{false};

bool useAvx512() {
  static const bool supported = x86::hasAvx512();
  return supported && !portableOnly.load(std::memory_order_relaxed);
}
bool useAmx() { return !blasOnly.load(std::memory_order_relaxed) && useAvx512() && x86::hasAmx(); }

// ---- portable kernels (CPUs without AVX-512; also the reference the tests hold them to) ----
// Lane-wise accumulators that the compiler vectorises without reassociating.
__attribute__((target_clones("avx2", "default"))) void dotRows(const float *x, int64_t M, int64_t K,
                                                               const float *row, float *y, int64_t N) {
  constexpr int L = 32;
  for (int64_t m = 0; m < M; ++m) {
    const float *xr = x + m * K;
    float acc[L] = {};
    int64_t k = 0;
    for (; k + L <= K; k += L)
      for (int l = 0; l < L; ++l)
        acc[l] += xr[k + l] * row[k + l];
    float s = 0;
    for (; k < K; ++k)
      s += xr[k] * row[k];
    for (int l = 0; l < L; ++l)
      s += acc[l];
    y[m * N] = s;
  }
}

// Rows [n0, n0 + rows) of w as float32, from any format.
void widenRows(Matrix w, int64_t K, int64_t n0, int64_t rows, float *out) {
  auto toFloatRow = storageTraits(w.format).toFloatRow;
  for (int64_t r = 0; r < rows; ++r)
    toFloatRow(w.data, K, n0 + r, out + r * K);
}

void gemvPortable(const float *x, int64_t M, int64_t K, Matrix w, int64_t n0, int64_t n1, int64_t N, float *y) {
  thread_local std::vector<float> row;
  row.resize(K);
  auto toFloatRow = storageTraits(w.format).toFloatRow;
  for (int64_t n = n0; n < n1; ++n) {
    toFloatRow(w.data, K, n, row.data());
    dotRows(x, M, K, row.data(), y + n, N);
  }
}

void gemv(const float *x, int64_t M, int64_t K, Matrix w, int64_t n0, int64_t n1, int64_t N, float *y) {
  GemvFn fast = formatKernels(w.format).gemvAvx512;
  if (fast && useAvx512())
    fast(x, M, K, w.data, n0, n1, N, y);
  else
    gemvPortable(x, M, K, w, n0, n1, N, y);
}

// Columns per task of the AMX GEMM: their panels (2 K bytes a column) within about 1 MiB, so
// they stay in L2 while every block of x rows passes over them; whole threes of panels.
int64_t amxColumnsPerTask(int64_t K) { return std::clamp<int64_t>((int64_t(1) << 19) / K / 48 * 48, 48, 240); }

void amxGemm(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t N, float *y, const ParallelFor &pfor) {
  int64_t rows = (M + 15) / 16 * 16;
  // The caller's buffer, reached by the workers through `planes` (a thread_local named inside the
  // tasks would be each worker's own).
  thread_local std::vector<uint16_t> buffer;
  buffer.resize(3 * rows * K);
  uint16_t *planes = buffer.data();
  // Split in blocks of 16 rows over the threads; the last block zeroes its padding rows.
  pfor(rows / 16, [&](int64_t b) {
    int64_t m0 = b * 16, m1 = std::min(M, m0 + 16);
    uint16_t *p = planes + m0 * K;
    x86::splitBf16x3(x + m0 * K, m1 - m0, K, rows * K, p);
    for (int part = 0; part < 3; ++part)
      std::memset(p + part * rows * K + (m1 - m0) * K, 0, (m0 + 16 - m1) * K * sizeof(uint16_t));
  });
  int64_t per = amxColumnsPerTask(K);
  pfor((N + per - 1) / per, [&](int64_t t) {
    x86::amxColumns(planes, M, rows, K, w, t * per, std::min(N, (t + 1) * per), N, y);
  });
}

// Rows of w per task of the BLAS GEMM: a block of rows sgemm cannot read as stored (bf16) is
// widened into a scratch buffer of at most 1 MiB (it stays in L2 while BLAS packs it), at least
// 16 rows so that BLAS's own blocking has room; float32 rows are split alike.
int64_t blasRowsPerTask(int64_t K) { return std::max<int64_t>(16, (int64_t(1) << 18) / std::max<int64_t>(K, 1)); }

void blasGemm(const float *x, int64_t M, int64_t K, Matrix w, int64_t N, float *y, const ParallelFor &pfor) {
  const FormatKernels &kernels = formatKernels(w.format);
  int64_t per = (blasRowsPerTask(K) + kernels.rowBlock - 1) / kernels.rowBlock * kernels.rowBlock;
  pfor((N + per - 1) / per, [&](int64_t t) {
    int64_t n0 = t * per, rows = std::min(per, N - n0);
    const float *panel = kernels.sgemmReads ? reinterpret_cast<const float *>(w.data) + n0 * K : nullptr;
    thread_local std::vector<float> wide;
    if (!panel) {
      wide.resize(rows * K);
      widenRows(w, K, n0, rows, wide.data());
      panel = wide.data();
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)rows, (int)K, 1.0f, x, (int)K, panel, (int)K,
                0.0f, y + n0, (int)N);
  });
}

} // namespace

void scoreKeys(const float *q, int64_t G, int64_t D, const float *const *keys, int64_t n, float *scores) {
  if (useAvx512() && D % 16 == 0)
    return x86::scoreKeys(q, G, D, keys, n, scores);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t j = 0; j < n; ++j)
      dotRows(q + g * D, 1, D, keys[j], scores + g * n + j, 1);
}

void sumValues(const float *scores, int64_t G, int64_t n, const float *const *values, int64_t Dv, float *out) {
  if (useAvx512() && Dv % 32 == 0)
    return x86::sumValues(scores, G, n, values, Dv, out);
  std::fill(out, out + G * Dv, 0.0f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t d = 0; d < Dv; ++d)
        out[g * Dv + d] += scores[g * n + j] * values[j][d];
}

const char *gemvKernel() { return useAvx512() ? "avx512" : "portable"; }
const char *gemmKernel() { return useAmx() ? "amx" : "blas"; }
void setGemvPortable(bool portable) { portableOnly.store(portable, std::memory_order_relaxed); }
void setGemmBlas(bool blas) { blasOnly.store(blas, std::memory_order_relaxed); }

void matmul(const float *x, int64_t M, int64_t K, Matrix w, int64_t N, float *y, const ParallelFor &pfor) {
  if (M == 0 || N == 0)
    return;
  if (M <= kGemvRows) {
    // Blocks of output columns (whole panels) small enough to balance two to a few threads,
    // large enough that handing one out costs little against streaming its rows.
    const int64_t per = 64;
    pfor((N + per - 1) / per, [&](int64_t t) { gemv(x, M, K, w, t * per, std::min(N, (t + 1) * per), N, y); });
  } else if (formatKernels(w.format).amxTiles && useAmx()) {
    amxGemm(x, M, K, reinterpret_cast<const uint16_t *>(w.data), N, y, pfor);
  } else {
    blasGemm(x, M, K, w, N, y, pfor);
  }
}

} // namespace cbc::rt::cpu
