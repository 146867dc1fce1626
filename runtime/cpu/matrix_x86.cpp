#include "runtime/cpu/matrix_x86.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace cbc::rt::cpu::x86 {

#define CBC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define CBC_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl")))

bool hasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

bool hasAmx() {
  static const bool ok = [] {
    unsigned a, b, c, d;
    if (!hasAvx512() || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
      return false;
    const unsigned amxBf16 = 1u << 22, amxTile = 1u << 24;
    if ((d & (amxBf16 | amxTile)) != (amxBf16 | amxTile))
      return false;
    // Linux hands out the 8 KiB tile state only to a process that asks (ARCH_REQ_XCOMP_PERM for
    // XFEATURE_XTILEDATA); without it the first tile instruction faults.
    const long reqXcompPerm = 0x1023, xtiledata = 18;
    return syscall(SYS_arch_prctl, reqXcompPerm, xtiledata) == 0;
  }();
  return ok;
}

// ---- matrix-vector products over row-major weights ----
// A tile is R weight rows against MB rows of x: R * MB accumulators of 16 lanes, so each weight
// vector is loaded (and a bf16 one widened, two integer instructions) once for MB products and
// each x vector once for R. With R = MB = 4 that is 16 accumulators plus 5 operands, inside the
// 32 vector registers. A decode step streams its weights once, so this loop only has to keep up
// with memory; the lanes are summed by one fixed tree at the end.
CBC_AVX512 inline __m512 load16(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
CBC_AVX512 inline __m512 load16(const uint16_t *p, __mmask16 m) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

template <int R, int MB, class T>
CBC_AVX512 inline __attribute__((always_inline)) void rowStep(const float *x, int64_t K, const T *w, int64_t k,
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
template <int R, int MB, class T>
CBC_AVX512 void rowTile(const float *x, int64_t K, const T *w, float *y, int64_t N) {
  __m512 acc[MB][R];
  for (int m = 0; m < MB; ++m)
    for (int r = 0; r < R; ++r)
      acc[m][r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16)
    rowStep<R, MB>(x, K, w, k, (__mmask16)0xffff, acc);
  if (k < K)
    rowStep<R, MB>(x, K, w, k, (__mmask16)((1u << (K - k)) - 1), acc);
  for (int m = 0; m < MB; ++m)
    for (int r = 0; r < R; ++r)
      y[m * N + r] = _mm512_reduce_add_ps(acc[m][r]);
}

// Blocks of up to four x rows through Tile<.., MB> (one template per block height).
template <template <int> class Tile, class... Args> CBC_AVX512 void byRowBlocks(int64_t M, Args... args) {
  for (int64_t m0 = 0; m0 < M; m0 += 4)
    switch (std::min<int64_t>(4, M - m0)) {
    case 1:
      Tile<1>::run(m0, args...);
      break;
    case 2:
      Tile<2>::run(m0, args...);
      break;
    case 3:
      Tile<3>::run(m0, args...);
      break;
    default:
      Tile<4>::run(m0, args...);
    }
}

template <int R, class T> struct RowTiles {
  template <int MB> struct Of {
    CBC_AVX512 static void run(int64_t m0, const float *x, int64_t K, const T *w, float *y, int64_t N) {
      rowTile<R, MB>(x + m0 * K, K, w, y + m0 * N, N);
    }
  };
};

// Four weight rows at a time (one row at the end), each against every x row in blocks of four
// while the rows are still in L1.
template <class T>
CBC_AVX512 void gemvRowsAvx512(const float *x, int64_t M, int64_t K, const T *w, int64_t n0, int64_t n1, int64_t N,
                               float *y) {
  for (int64_t n = n0; n < n1;) {
    if (n + 4 <= n1)
      byRowBlocks<RowTiles<4, T>::template Of>(M, x, K, w + n * K, y + n, N);
    else
      byRowBlocks<RowTiles<1, T>::template Of>(M, x, K, w + n * K, y + n, N);
    n += n + 4 <= n1 ? 4 : 1;
  }
}

void gemvRows(const float *x, int64_t M, int64_t K, const float *w, int64_t n0, int64_t n1, int64_t N, float *y) {
  gemvRowsAvx512(x, M, K, w, n0, n1, N, y);
}
void gemvRows(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t n0, int64_t n1, int64_t N,
              float *y) {
  gemvRowsAvx512(x, M, K, w, n0, n1, N, y);
}

// ---- matrix-vector products over packed weights ----
// J panels (16 outputs each) against MB x rows. A 64-byte line of a panel holds two k of its
// 16 rows: the even k widen by a shift, the odd by a mask, and each meets a broadcast x value,
// so the accumulators are the outputs themselves (no lane sums at the end).
template <int J, int MB>
CBC_AVX512 void packedTile(const float *x, int64_t K, const uint16_t *w, float *y, int64_t N) {
  __m512 acc[MB][J];
  for (int m = 0; m < MB; ++m)
    for (int j = 0; j < J; ++j)
      acc[m][j] = _mm512_setzero_ps();
  const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
  for (int64_t kk = 0; kk < K / 2; ++kk) {
    __m512 even[J], odd[J];
    for (int j = 0; j < J; ++j) {
      __m512i v = _mm512_loadu_si512(w + j * 16 * K + kk * 32);
      even[j] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      odd[j] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
    }
    for (int m = 0; m < MB; ++m) {
      __m512 x0 = _mm512_set1_ps(x[m * K + 2 * kk]), x1 = _mm512_set1_ps(x[m * K + 2 * kk + 1]);
      for (int j = 0; j < J; ++j)
        acc[m][j] = _mm512_fmadd_ps(odd[j], x1, _mm512_fmadd_ps(even[j], x0, acc[m][j]));
    }
  }
  for (int m = 0; m < MB; ++m)
    for (int j = 0; j < J; ++j)
      _mm512_storeu_ps(y + m * N + j * 16, acc[m][j]);
}

template <int J> struct PackedTiles {
  template <int MB> struct Of {
    CBC_AVX512 static void run(int64_t m0, const float *x, int64_t K, const uint16_t *w, float *y, int64_t N) {
      packedTile<J, MB>(x + m0 * K, K, w, y + m0 * N, N);
    }
  };
};

CBC_AVX512 void gemvPacked(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t n0, int64_t n1,
                           int64_t N, float *y) {
  for (int64_t n = n0; n < n1;) {
    bool four = n + 64 <= n1;
    if (four)
      byRowBlocks<PackedTiles<4>::Of>(M, x, K, w + n * K, y + n, N);
    else
      byRowBlocks<PackedTiles<1>::Of>(M, x, K, w + n * K, y + n, N);
    n += four ? 64 : 16;
  }
}

// ---- attention's products ----
// One key row against each query row: two accumulators over the row, then one tree sum.
CBC_AVX512 void scoreKeys(const float *q, int64_t G, int64_t D, const float *const *keys, int64_t n,
                          float *scores) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t g = 0; g < G; ++g) {
      const float *qg = q + g * D;
      __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
      int64_t d = 0;
      for (; d + 32 <= D; d += 32) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(qg + d), _mm512_loadu_ps(keys[j] + d), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(qg + d + 16), _mm512_loadu_ps(keys[j] + d + 16), a1);
      }
      if (d < D)
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(qg + d), _mm512_loadu_ps(keys[j] + d), a0);
      scores[g * n + j] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    }
}

// Up to four output rows by 32 columns stay in registers while every value row passes.
template <int HG> CBC_AVX512 void sumValueBlock(const float *scores, int64_t n, const float *const *values, int64_t d,
                                                int64_t Dv, float *out) {
  __m512 acc[HG][2];
  for (int g = 0; g < HG; ++g)
    acc[g][0] = acc[g][1] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    __m512 v0 = _mm512_loadu_ps(values[j] + d), v1 = _mm512_loadu_ps(values[j] + d + 16);
    for (int g = 0; g < HG; ++g) {
      __m512 w = _mm512_set1_ps(scores[g * n + j]);
      acc[g][0] = _mm512_fmadd_ps(w, v0, acc[g][0]);
      acc[g][1] = _mm512_fmadd_ps(w, v1, acc[g][1]);
    }
  }
  for (int g = 0; g < HG; ++g) {
    _mm512_storeu_ps(out + g * Dv + d, acc[g][0]);
    _mm512_storeu_ps(out + g * Dv + d + 16, acc[g][1]);
  }
}

CBC_AVX512 void sumValues(const float *scores, int64_t G, int64_t n, const float *const *values, int64_t Dv,
                          float *out) {
  for (int64_t g0 = 0; g0 < G; g0 += 4)
    for (int64_t d = 0; d < Dv; d += 32) {
      const float *s = scores + g0 * n;
      float *o = out + g0 * Dv;
      switch (std::min<int64_t>(4, G - g0)) {
      case 1:
        sumValueBlock<1>(s, n, values, d, Dv, o);
        break;
      case 2:
        sumValueBlock<2>(s, n, values, d, Dv, o);
        break;
      case 3:
        sumValueBlock<3>(s, n, values, d, Dv, o);
        break;
      default:
        sumValueBlock<4>(s, n, values, d, Dv, o);
      }
    }
}

// ---- x as three bf16 planes ----
// Truncation keeps each remainder exact: hi holds the top 8 bits of x's significand, x - hi the
// rest exactly, mid its top 8 bits and lo the last 8. An infinite x leaves hi infinite and the
// NaN remainder is cleared, so the product is infinite as in float32.
CBC_AVX512 void splitBf16x3(const float *x, int64_t M, int64_t K, int64_t plane, uint16_t *planes) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; k += 16) {
      int64_t i = m * K + k;
      __mmask16 mask = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1);
      __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(mask, x + i));
      __m512i hi = _mm512_srli_epi32(u, 16);
      __m512 r = _mm512_sub_ps(_mm512_castsi512_ps(u), _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16)));
      r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r);
      __m512i mid = _mm512_srli_epi32(_mm512_castps_si512(r), 16);
      __m512 l = _mm512_sub_ps(r, _mm512_castsi512_ps(_mm512_slli_epi32(mid, 16)));
      __m512i lo = _mm512_srli_epi32(_mm512_castps_si512(l), 16);
      _mm256_mask_storeu_epi16(planes + i, mask, _mm512_cvtepi32_epi16(hi));
      _mm256_mask_storeu_epi16(planes + plane + i, mask, _mm512_cvtepi32_epi16(mid));
      _mm256_mask_storeu_epi16(planes + 2 * plane + i, mask, _mm512_cvtepi32_epi16(lo));
    }
}

// ---- the AMX GEMM ----
// Eight tiles of 16 rows x 64 bytes: C in 0-2 (16 rows of x by three panels), the panels in 3-5,
// x's planes in 6 and 7 in turn. Each k step of 32 loads the three panels once and x's three
// planes one after another, so a weight tile serves three products; the planes alternate
// between two tiles because a tile being loaded must wait for the products still reading it
// (measured: 15-25 % faster than two x blocks by two panels, whose planes shared one pair).
struct TileConfig {
  uint8_t palette = 1, startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colBytes[16] = {};
  uint8_t rows[16] = {};
};

CBC_AMX void configureTiles() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.rows[t] = 16;
    c.colBytes[t] = 64;
  }
  _tile_loadconfig(&c);
}

// C[16, 16 * NB] (row stride ldc floats) for 16 rows of x at `a` (plane stride `plane`) and NB
// panels at `b`.
template <int NB>
CBC_AMX void amxBlock(const uint16_t *a, int64_t plane, int64_t K, const uint16_t *b, float *c, int64_t ldc) {
  _tile_zero(0);
  if constexpr (NB > 1)
    _tile_zero(1);
  if constexpr (NB > 2)
    _tile_zero(2);
  const int64_t lda = K * 2;
  for (int64_t k = 0; k < K; k += 32) {
    _tile_loadd(3, b + k * 16, 64);
    if constexpr (NB > 1)
      _tile_loadd(4, b + 16 * K + k * 16, 64);
    if constexpr (NB > 2)
      _tile_loadd(5, b + 32 * K + k * 16, 64);
#define CBC_AMX_PART(T)                                                                                              \
  _tile_dpbf16ps(0, T, 3);                                                                                           \
  if constexpr (NB > 1)                                                                                              \
    _tile_dpbf16ps(1, T, 4);                                                                                         \
  if constexpr (NB > 2)                                                                                              \
    _tile_dpbf16ps(2, T, 5);
    _tile_loadd(6, a + k, lda);
    CBC_AMX_PART(6)
    _tile_loadd(7, a + plane + k, lda);
    CBC_AMX_PART(7)
    _tile_loadd(6, a + 2 * plane + k, lda);
    CBC_AMX_PART(6)
#undef CBC_AMX_PART
  }
  _tile_stored(0, c, ldc * 4);
  if constexpr (NB > 1)
    _tile_stored(1, c + 16, ldc * 4);
  if constexpr (NB > 2)
    _tile_stored(2, c + 32, ldc * 4);
}

// Rows of x in blocks of 16, each against the columns in threes of panels: the columns' panels
// (sized by the caller to stay in L2) are read once per block of x rows. A whole block stores
// its tiles straight into y; the last, partial one through a scratch tile.
CBC_AMX void amxColumns(const uint16_t *planes, int64_t M, int64_t rows, int64_t K, const uint16_t *w, int64_t n0,
                        int64_t n1, int64_t N, float *y) {
  alignas(64) float scratch[16 * 48];
  configureTiles();
  for (int64_t m0 = 0; m0 < rows; m0 += 16) {
    bool whole = M - m0 >= 16;
    for (int64_t n = n0; n < n1;) {
      int nb = (int)std::min<int64_t>(3, (n1 - n) / 16);
      const uint16_t *a = planes + m0 * K, *b = w + n * K;
      float *c = whole ? y + m0 * N + n : scratch;
      int64_t ldc = whole ? N : 48;
      if (nb == 3)
        amxBlock<3>(a, rows * K, K, b, c, ldc);
      else if (nb == 2)
        amxBlock<2>(a, rows * K, K, b, c, ldc);
      else
        amxBlock<1>(a, rows * K, K, b, c, ldc);
      if (!whole)
        for (int64_t i = 0; i < M - m0; ++i)
          std::memcpy(y + (m0 + i) * N + n, scratch + i * 48, nb * 16 * sizeof(float));
      n += nb * 16;
    }
  }
  _tile_release();
}

} // namespace cbc::rt::cpu::x86
