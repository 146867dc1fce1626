#include "runtime/cpu/matrix.h"

#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
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

// ---- the AVX-512 matrix-vector kernel ----
// A tile is R weight rows against MB rows of x: R * MB accumulators of 16 lanes, so each weight
// vector is loaded (and a bf16 one widened, two integer instructions) once for MB products and
// each x vector once for R. With R = MB = 4 that is 16 accumulators plus 5 operands, inside the
// 32 vector registers. A decode step streams its weights once, so this loop only has to keep up
// with memory; the lanes are summed by one fixed tree at the end.
#define CBC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

CBC_AVX512 inline __m512 load16(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
CBC_AVX512 inline __m512 load16(const uint16_t *p, __mmask16 m) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

template <int R, int MB, class T>
CBC_AVX512 inline __attribute__((always_inline)) void tileStep(const float *x, int64_t K, const T *w, int64_t k,
                                                               __mmask16 mask, __m512 (&acc)[MB][R]) {
  __m512 wv[R];
  for (int r = 0; r < R; ++r)
    wv[r] = load16(w + r * K + k, mask);
  for (int m = 0; m < MB; ++m) {
    __m512 xv = _mm512_maskz_loadu_ps(mask, x + m * K + k);
    for (int r = 0; r < R; ++r)
      acc[m][r] = _mm512_fmadd_ps(wv[r], xv, acc[m][r]);
  }
}

// y[m, r] (row stride N) for m < MB, r < R.
template <int R, int MB, class T> CBC_AVX512 void tile(const float *x, int64_t K, const T *w, float *y, int64_t N) {
  __m512 acc[MB][R];
  for (int m = 0; m < MB; ++m)
    for (int r = 0; r < R; ++r)
      acc[m][r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16)
    tileStep<R, MB>(x, K, w, k, (__mmask16)0xffff, acc);
  if (k < K)
    tileStep<R, MB>(x, K, w, k, (__mmask16)((1u << (K - k)) - 1), acc);
  for (int m = 0; m < MB; ++m)
    for (int r = 0; r < R; ++r)
      y[m * N + r] = _mm512_reduce_add_ps(acc[m][r]);
}

template <int R, class T>
CBC_AVX512 void tileRows(int mb, const float *x, int64_t K, const T *w, float *y, int64_t N) {
  switch (mb) {
  case 1:
    return tile<R, 1>(x, K, w, y, N);
  case 2:
    return tile<R, 2>(x, K, w, y, N);
  case 3:
    return tile<R, 3>(x, K, w, y, N);
  default:
    return tile<R, 4>(x, K, w, y, N);
  }
}

// Output columns [n0, n1): four weight rows at a time (one row at the end), each against every
// x row in blocks of four while the rows are still in L1.
template <class T>
CBC_AVX512 void gemvAvx512(const float *x, int64_t M, int64_t K, const T *w, int64_t n0, int64_t n1, int64_t N,
                           float *y) {
  for (int64_t n = n0; n < n1;) {
    bool four = n + 4 <= n1;
    for (int64_t m0 = 0; m0 < M; m0 += 4) {
      int mb = (int)std::min<int64_t>(4, M - m0);
      if (four)
        tileRows<4>(mb, x + m0 * K, K, w + n * K, y + m0 * N + n, N);
      else
        tileRows<1>(mb, x + m0 * K, K, w + n * K, y + m0 * N + n, N);
    }
    n += four ? 4 : 1;
  }
}

// ---- the portable matrix-vector kernel (CPUs without AVX-512) ----
// Each weight row widened once into `row` (L1-resident), then dotted with every x row through
// lane-wise accumulators that the compiler vectorises without reassociating.
__attribute__((target_clones("avx2", "default"))) void gemvPortableRows(const float *x, int64_t M, int64_t K,
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

__attribute__((target_clones("avx512f", "avx2", "default"))) void toFloat(const uint16_t *w, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16Value(w[i]);
}

void gemvPortable(const float *x, int64_t M, int64_t K, Matrix w, int64_t n0, int64_t n1, int64_t N, float *y) {
  thread_local std::vector<float> row;
  row.resize(K);
  for (int64_t n = n0; n < n1; ++n) {
    const float *r = w.f32 ? w.f32 + n * K : row.data();
    if (w.bf16)
      toFloat(w.bf16 + n * K, K, row.data());
    gemvPortableRows(x, M, K, r, y + n, N);
  }
}

bool hasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

std::atomic<bool> forcePortable{false};

bool useAvx512() {
  static const bool supported = hasAvx512();
  return supported && !forcePortable.load(std::memory_order_relaxed);
}

void gemv(const float *x, int64_t M, int64_t K, Matrix w, int64_t n0, int64_t n1, int64_t N, float *y) {
  if (!useAvx512())
    gemvPortable(x, M, K, w, n0, n1, N, y);
  else if (w.bf16)
    gemvAvx512(x, M, K, w.bf16, n0, n1, N, y);
  else
    gemvAvx512(x, M, K, w.f32, n0, n1, N, y);
}

// Rows of w per task of the blocked GEMM: a bf16 panel is widened into a scratch buffer of at
// most 1 MiB (it stays in L2 while BLAS packs it), at least 16 rows so that BLAS's own
// blocking has room; the same for float32 panels, so both split alike.
int64_t panelRows(int64_t K) { return std::max<int64_t>(16, (int64_t(1) << 18) / std::max<int64_t>(K, 1)); }

} // namespace

const char *gemvKernel() { return useAvx512() ? "avx512" : "portable"; }
void setGemvPortable(bool portable) { forcePortable.store(portable, std::memory_order_relaxed); }

void matmul(const float *x, int64_t M, int64_t K, Matrix w, int64_t N, float *y, const ParallelFor &pfor) {
  if (M == 0 || N == 0)
    return;
  if (M <= kGemvRows) {
    // Blocks of output columns small enough to balance two to a few threads, large enough that
    // handing one out costs little against streaming its rows.
    const int64_t per = 64;
    pfor((N + per - 1) / per, [&](int64_t t) { gemv(x, M, K, w, t * per, std::min(N, (t + 1) * per), N, y); });
    return;
  }
  const int64_t per = panelRows(K);
  pfor((N + per - 1) / per, [&](int64_t t) {
    int64_t n0 = t * per, rows = std::min(per, N - n0);
    const float *panel = w.f32 ? w.f32 + n0 * K : nullptr;
    thread_local std::vector<float> wide;
    if (w.bf16) {
      wide.resize(rows * K);
      toFloat(w.bf16 + n0 * K, rows * K, wide.data());
      panel = wide.data();
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)rows, (int)K, 1.0f, x, (int)K, panel, (int)K,
                0.0f, y + n0, (int)N);
  });
}

} // namespace cbc::rt::cpu
