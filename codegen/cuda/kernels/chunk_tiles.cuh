// What the chunked scans (gated_delta_chunked, kda_chunked, ssd_chunked) share: bf16 tiles in
// shared memory (raw bits, so that the shared structs stay trivially constructible) loaded with
// cp.async where aligned, their mma fragments loaded with ldmatrix, the accumulator layout, and
// the warp prefix sum of the chunk's decays.
//
// Tiles are row-major with a leading dimension of a multiple of 8 elements plus 8: every row
// starts 16-byte aligned, as ldmatrix needs, and consecutive rows start in different banks.
// Accumulator (16x8 fp32 tile at m0, n0) element i of lane (g = lane >> 2, t = lane & 3) is
// row m0 + g + 8 (i >> 1), column n0 + 2t + (i & 1) (warp.cuh).
#ifndef CBC_CODEGEN_CUDA_KERNELS_CHUNK_TILES_CUH
#define CBC_CODEGEN_CUDA_KERNELS_CHUNK_TILES_CUH

#include "codegen/cuda/kernels/warp.cuh"

namespace cbc {

__device__ __forceinline__ unsigned short bf16_of(float x) { return (unsigned short)bf16_bits(__float2bfloat16(x)); }
__device__ __forceinline__ float float_of(unsigned short h) { return __int_as_float((int)((unsigned)h << 16)); }

// The row and column of accumulator element i of this lane in the tile at (m0, n0).
__device__ __forceinline__ int acc_row(int m0, int i) { return m0 + ((threadIdx.x & 31) >> 2) + 8 * (i >> 1); }
__device__ __forceinline__ int acc_col(int n0, int i) { return n0 + 2 * (threadIdx.x & 3) + (i & 1); }

// The A fragment (16x16 at m0, k0) of a row-major array: A[m][k] = s[m * ld + k].
__device__ __forceinline__ void frag_a(unsigned a[4], const unsigned short *s, int ld, int m0, int k0) {
  int lane = threadIdx.x & 31;
  ldmatrix_x4(a, s + (m0 + (lane & 15)) * ld + k0 + 8 * (lane >> 4));
}
// The A fragment of a k-major array: A[m][k] = s[k * ld + m].
__device__ __forceinline__ void frag_a_trans(unsigned a[4], const unsigned short *s, int ld, int m0, int k0) {
  int lane = threadIdx.x & 31, i = lane >> 3;
  ldmatrix_x4_trans(a, s + (k0 + (lane & 7) + 8 * (i >> 1)) * ld + m0 + 8 * (i & 1));
}
// The B fragment (16x8 at k0, n0) of an n-major array: B[k][n] = s[n * ld + k].
__device__ __forceinline__ void frag_b(unsigned b[2], const unsigned short *s, int ld, int k0, int n0) {
  int lane = threadIdx.x & 15;
  ldmatrix_x2(b, s + (n0 + (lane & 7)) * ld + k0 + 8 * (lane >> 3));
}
// The B fragment of a k-major (row-major K x N) array: B[k][n] = s[k * ld + n].
__device__ __forceinline__ void frag_b_trans(unsigned b[2], const unsigned short *s, int ld, int k0, int n0) {
  int lane = threadIdx.x & 15;
  ldmatrix_x2_trans(b, s + (k0 + lane) * ld + n0);
}

// Rows [0, CH) of a bf16 tile with leading dimension `lead`, NP columns (a multiple of 8): row i
// < L holds elements [0, n) of the global row at src + base + i * stride, the rest zero. Aligned
// 16-byte pieces of bf16 rows go by cp.async (the caller commits, waits and syncs), the others
// element by element.
template <class T, int CH, int NP>
__device__ __forceinline__ void load_tile(unsigned short *dst, int lead, const T *src, long long base,
                                          long long stride, int L, int n) {
  constexpr int PIECES = NP / 8;
  for (int e = threadIdx.x; e < CH * PIECES; e += kScanChunkThreads) {
    int i = e / PIECES, d = (e - i * PIECES) * 8;
    unsigned short *to = dst + i * lead + d;
    const T *from = src + (i < L ? base + i * stride + d : 0);
    if constexpr (same<T, bf16>) {
      if (i < L && d + 8 <= n && ((unsigned long long)from & 15) == 0) {
        cp_async16(to, from);
        continue;
      }
    }
    for (int k = 0; k < 8; ++k)
      to[k] = i < L && d + k < n ? bf16_of(ld(from, k)) : 0;
  }
}
// Completes this thread's copies of load_tile, then the block's.
__device__ __forceinline__ void load_tiles_done() {
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
}

// The request of this block (blockIdx.x): its first token t0 and its n tokens. False when it is
// short enough for the token-recurrent kernel, which takes it instead (both are launched).
template <class S> __device__ __forceinline__ bool chunked_request(const CbcArgs &a, long long &t0, int &n) {
  const int *cu = (const int *)a.p[S::CuSeqlens];
  t0 = cu[blockIdx.x];
  n = cu[blockIdx.x + 1] - cu[blockIdx.x];
  return n > a.i[S::RecurrentMax];
}

// acc = 0.
template <int M> __device__ __forceinline__ void acc_zero(float (&acc)[M][4]) {
  for (int m = 0; m < M; ++m)
    for (int i = 0; i < 4; ++i)
      acc[m][i] = 0.0f;
}

// Warp 0 replaces x[0..n) (n <= 32) by its running sums, in fp32: the chunk's cumulative log decay.
__device__ __forceinline__ void warp_prefix_sum(float *x, int n) {
  int lane = threadIdx.x & 31;
  if (threadIdx.x >= 32)
    return;
  float v = lane < n ? x[lane] : 0.0f;
  for (int o = 1; o < 32; o <<= 1) {
    float u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o)
      v += u;
  }
  if (lane < n)
    x[lane] = v;
}

} // namespace cbc

#endif
