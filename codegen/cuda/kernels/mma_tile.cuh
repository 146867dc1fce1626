// A block's tile of a GEMM on the tensor cores, C[BM x BN] = A[BM x KDIM] W[BN x KDIM]^T with
// fp32 accumulators, for kernels whose operand rows are gathered rather than strided (the rows
// of one expert through a permutation, the rows of a weight picked by a unit layout): each
// thread names the rows it stages by pointer, and the tile runs the shared-memory pipeline
// (cp.async, `STAGES` deep), ldmatrix and mma.sync m16n8k16 over them.
//
// Operands of either element type: a bf16 row is copied as it is; a float row is split at load
// into two bf16 parts, hi = bf16(v) and lo = bf16(v - hi), and the tile adds hi*hi + hi*lo +
// lo*hi (the lo*lo term is below 2^-16 of the product), so fp32 operands keep about 16 bits
// of mantissa instead of bf16's 8 and an fp32 model's kernels stay checkable against an fp32
// reference. A bf16 operand whose rows are not 16-byte aligned takes the same converting path
// with one part.
#ifndef CBC_CODEGEN_CUDA_KERNELS_MMA_TILE_CUH
#define CBC_CODEGEN_CUDA_KERNELS_MMA_TILE_CUH

#include "codegen/cuda/kernels/warp.cuh"

namespace cbc {

// bf16 parts an operand of element type T takes on the tensor cores.
template <class T> constexpr int kBf16Parts = same<T, bf16> ? 1 : 2;

// ROWS staged rows of BK bf16 (the raw bits), P parts. Rows are padded to BK + 8 elements, so
// that every row starts 16-byte aligned (cp.async, ldmatrix) and, for BK = 32 (80-byte rows),
// the 8 rows one ldmatrix matrix reads fall in 8 distinct 16-byte bank groups.
template <int ROWS, int BK, int P> struct alignas(16) TileRows {
  static constexpr int kStride = BK + 8;
  unsigned short v[P][ROWS][kStride];
};

__device__ __forceinline__ bool aligned16(const void *p) { return ((unsigned long long)p & 15ull) == 0; }

// The tile's shape: WARPS_M x WARPS_N warps, each owning (BM / WARPS_M) x (BN / WARPS_N) of C
// as MF x NF fragments of 16 x 8. Thread i stages the 8-element chunk (i % kChunks) of rows
// i / kChunks + j * kRowStep of each operand, for j < RA (A) or RW (W).
template <int BM_, int BN_, int BK_, int WARPS_M, int WARPS_N> struct MmaTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr int kThreads = 32 * WARPS_M * WARPS_N, kWarpsN = WARPS_N;
  static constexpr int kWarpM = BM / WARPS_M, kWarpN = BN / WARPS_N;
  static constexpr int MF = kWarpM / 16, NF = kWarpN / 8;
  static constexpr int kChunks = BK / 8, kRowStep = kThreads / kChunks;
  static constexpr int RA = BM / kRowStep, RW = BN / kRowStep;
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0 && BK % 16 == 0, "whole m16n8k16 fragments, B in pairs");
  static_assert(kThreads % kChunks == 0 && BM % kRowStep == 0 && BN % kRowStep == 0, "rows staged evenly");
};

// The j-th row this thread stages.
template <class Sh> __device__ __forceinline__ int staged_row(int j) {
  return (int)threadIdx.x / Sh::kChunks + j * Sh::kRowStep;
}
// This warp's first row and column of C.
template <class Sh> __device__ __forceinline__ int warp_row() { return (int)(threadIdx.x >> 5) / Sh::kWarpsN * Sh::kWarpM; }
template <class Sh> __device__ __forceinline__ int warp_col() { return (int)(threadIdx.x >> 5) % Sh::kWarpsN * Sh::kWarpN; }
// Row and column of C of accumulator element i (0..3) of this thread's fragment (m, n).
template <class Sh> __device__ __forceinline__ int frag_row(int m, int i) {
  return warp_row<Sh>() + 16 * m + (int)((threadIdx.x & 31) >> 2) + 8 * (i >> 1);
}
template <class Sh> __device__ __forceinline__ int frag_col(int n, int i) {
  return warp_col<Sh>() + 8 * n + 2 * (int)(threadIdx.x & 3) + (i & 1);
}
// How many of this warp's row fragments hold any of the first `rows` rows: the others are
// skipped (a decode step's expert has a row or two; its tile's product costs one fragment).
template <class Sh> __device__ __forceinline__ int active_frags(int rows) {
  int r = rows - warp_row<Sh>();
  return r <= 0 ? 0 : r >= Sh::kWarpM ? Sh::MF : (r + 15) / 16;
}

__device__ __forceinline__ void st_shared16(void *dst, unsigned a, unsigned b, unsigned c, unsigned d) {
  uint4 v;
  v.x = a, v.y = b, v.z = c, v.w = d;
  *reinterpret_cast<uint4 *>(dst) = v;
}

// Stages this thread's chunks of one operand for columns [k0, k0 + BK): by cp.async when `vec`
// (bf16 rows, 16-byte aligned, KDIM a multiple of 8), else loaded and converted to the parts;
// columns from KDIM on are zero, rows with a null pointer are left as they are (their results
// are never stored: a row of C depends on its row of A only, a column on its row of W).
template <class Sh, int KDIM, class T, int ROWS, int R>
__device__ __forceinline__ void stage_rows(TileRows<ROWS, Sh::BK, kBf16Parts<T>> &s, const T *const (&rows)[R],
                                           int k0, bool vec) {
  constexpr int P = kBf16Parts<T>;
  int c = (int)(threadIdx.x % Sh::kChunks) * 8, k = k0 + c;
  for (int j = 0; j < R; ++j) {
    const T *src = rows[j];
    if (!src)
      continue;
    unsigned short *dst = &s.v[0][staged_row<Sh>(j)][c];
    if constexpr (P == 1 && KDIM % 8 == 0)
      if (vec) {
        if (k < KDIM)
          cp_async16(dst, src + k);
        else
          st_shared16(dst, 0, 0, 0, 0);
        continue;
      }
    unsigned hi[4], lo[4];
    for (int q = 0; q < 4; ++q) {
      float v0 = k + 2 * q < KDIM ? ld(src, k + 2 * q) : 0.0f;
      float v1 = k + 2 * q + 1 < KDIM ? ld(src, k + 2 * q + 1) : 0.0f;
      hi[q] = pack_bf16x2(v0, v1);
      lo[q] = pack_bf16x2(v0 - bf16x2_lo(hi[q]), v1 - bf16x2_hi(hi[q]));
    }
    st_shared16(dst, hi[0], hi[1], hi[2], hi[3]);
    if constexpr (P == 2)
      st_shared16(&s.v[1][staged_row<Sh>(j)][c], lo[0], lo[1], lo[2], lo[3]);
  }
}

// This warp's products over one staged slice: acc[m][n] += A W^T for its fragments, the row
// fragments from `mFrags` on skipped.
template <class Sh, int PA, int PW>
__device__ __forceinline__ void mma_slice(const TileRows<Sh::BM, Sh::BK, PA> &a, const TileRows<Sh::BN, Sh::BK, PW> &w,
                                          int mFrags, float (&acc)[Sh::MF][Sh::NF][4]) {
  if (mFrags == 0)
    return;
  int lane = (int)(threadIdx.x & 31), am = warp_row<Sh>(), wn = warp_col<Sh>();
  for (int kk = 0; kk < Sh::BK; kk += 16) {
    unsigned af[PA][Sh::MF][4], bf[PW][Sh::NF][2];
    // A: matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) are a[0..3].
    for (int p = 0; p < PA; ++p)
      for (int m = 0; m < Sh::MF; ++m)
        if (m < mFrags)
          ldmatrix_x4(af[p][m], &a.v[p][am + 16 * m + (lane & 15)][kk + (lane >> 4) * 8]);
    // W rows are B's columns: matrices (n 0-7, k 0-7), (0-7, 8-15) are fragment n's b[0..1],
    // (8-15, 0-7), (8-15, 8-15) fragment n + 1's.
    for (int p = 0; p < PW; ++p)
      for (int n = 0; n < Sh::NF; n += 2) {
        unsigned r[4];
        ldmatrix_x4(r, &w.v[p][wn + 8 * n + (lane & 7) + ((lane >> 4) << 3)][kk + ((lane >> 3) & 1) * 8]);
        bf[p][n][0] = r[0], bf[p][n][1] = r[1], bf[p][n + 1][0] = r[2], bf[p][n + 1][1] = r[3];
      }
    for (int m = 0; m < Sh::MF; ++m) {
      if (m >= mFrags)
        continue;
      for (int n = 0; n < Sh::NF; ++n) {
        if constexpr (PW == 2)
          mma_m16n8k16_bf16(acc[m][n], af[0][m], bf[1][n], acc[m][n]);
        if constexpr (PA == 2)
          mma_m16n8k16_bf16(acc[m][n], af[1][m], bf[0][n], acc[m][n]);
        mma_m16n8k16_bf16(acc[m][n], af[0][m], bf[0][n], acc[m][n]);
      }
    }
  }
}

// The tile's whole product over KDIM: STAGES slices in shared memory (sa, sw), STAGES - 1 of
// them in flight while the warps multiply the oldest. Every thread of the block calls it.
template <class Sh, int KDIM, int STAGES, class TA, class TW>
__device__ __forceinline__ void mma_tile(TileRows<Sh::BM, Sh::BK, kBf16Parts<TA>> (&sa)[STAGES],
                                         TileRows<Sh::BN, Sh::BK, kBf16Parts<TW>> (&sw)[STAGES],
                                         const TA *const (&aRows)[Sh::RA], const TW *const (&wRows)[Sh::RW],
                                         bool vecA, bool vecW, int mFrags, float (&acc)[Sh::MF][Sh::NF][4]) {
  static_assert(STAGES >= 2 && STAGES <= 8, "a pipeline of 2 to 8 slices");
  constexpr int NK = (KDIM + Sh::BK - 1) / Sh::BK;
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < NK) {
      stage_rows<Sh, KDIM>(sa[s], aRows, s * Sh::BK, vecA);
      stage_rows<Sh, KDIM>(sw[s], wRows, s * Sh::BK, vecW);
    }
    cp_async_commit(); // empty groups too, so that the wait below counts slices
  }
  for (int kt = 0; kt < NK; ++kt) {
    cp_async_wait<STAGES - 2>(); // this thread's copies of slice kt have landed
    __syncthreads();             // everyone's, and nobody still reads the slot refilled next
    int next = kt + STAGES - 1;
    if (next < NK) {
      stage_rows<Sh, KDIM>(sa[next % STAGES], aRows, next * Sh::BK, vecA);
      stage_rows<Sh, KDIM>(sw[next % STAGES], wRows, next * Sh::BK, vecW);
    }
    cp_async_commit();
    mma_slice<Sh>(sa[kt % STAGES], sw[kt % STAGES], mFrags, acc);
  }
  cp_async_wait<0>();
}

} // namespace cbc

#endif
