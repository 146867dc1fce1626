#include "runtime/cpu/matrix.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace cbc::rt::cpu {

namespace {

inline float bf16Value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Output rows [n0, n1) of y = x . w^T for M <= kBf16GemvRows rows of x: each weight row is
// converted once into `row` (L1-resident) and dotted with every x row. Built for AVX-512,
// AVX2 and the baseline, chosen at load time by the CPU it runs on; lane-wise accumulators
// let the compiler vectorise without reassociating.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
gemvRows(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t n0, int64_t n1, int64_t N, float *row,
         float *y) {
  constexpr int L = 32;
  for (int64_t n = n0; n < n1; ++n) {
    const uint16_t *wr = w + n * K;
    for (int64_t k = 0; k < K; ++k)
      row[k] = bf16Value(wr[k]);
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
      y[m * N + n] = s;
    }
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void toFloat(const uint16_t *w, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16Value(w[i]);
}

} // namespace

void matmulBf16(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t N, float *y,
                const ParallelFor &pfor) {
  if (M == 0 || N == 0)
    return;
  if (M <= kBf16GemvRows) {
    // Blocks of output rows small enough to balance two to a few threads, large enough that
    // handing one out costs little against reading it.
    const int64_t rowsPerTask = 64;
    int64_t tasks = (N + rowsPerTask - 1) / rowsPerTask;
    pfor(tasks, [&](int64_t t) {
      thread_local std::vector<float> row;
      row.resize(K);
      gemvRows(x, M, K, w, t * rowsPerTask, std::min(N, (t + 1) * rowsPerTask), N, row.data(), y);
    });
    return;
  }
  // Larger M: BLAS's blocked GEMM over float32 copies of a block of weight rows at a time, so
  // the float32 copy stays a small scratch buffer instead of the whole matrix.
  const int64_t block = 128;
  thread_local std::vector<float> wf;
  wf.resize(std::min(block, N) * K);
  for (int64_t n0 = 0; n0 < N; n0 += block) {
    int64_t nb = std::min(block, N - n0);
    toFloat(w + n0 * K, nb * K, wf.data());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)nb, (int)K, 1.0f, x, (int)K, wf.data(), (int)K,
                0.0f, y + n0, (int)N);
  }
}

} // namespace cbc::rt::cpu
