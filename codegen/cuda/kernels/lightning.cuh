// Lightning attention, token by token: block (request, head, 32 value columns) keeps its
// [D, 32] slice of the state in registers, the warps splitting the rows. Each head's decay
// rate comes from the DECAY table.
#ifndef CBC_CODEGEN_CUDA_KERNELS_LIGHTNING_CUH
#define CBC_CODEGEN_CUDA_KERNELS_LIGHTNING_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

template <class TQ, class TK, class TV, class TO, int H, int D, const float *DECAY>
__device__ __forceinline__ void lightning(const CbcArgs &a) {
  using S = slots::Lightning;
  static_assert(kLightningWarps == 4, "the reduction adds four warps");
  constexpr int ROWS = (D + kLightningWarps - 1) / kLightningWarps; // state rows per warp
  __shared__ float qs[D], ks[D], red[kLightningWarps][32];
  const TQ *q = (const TQ *)a.p[S::Q];
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  int r = blockIdx.x, h = blockIdx.y, lane = threadIdx.x & 31, col = blockIdx.z * 32 + lane, warp = threadIdx.x >> 5;
  const float *Sin = pool + ((long long)state_in[r] * H + h) * D * D;
  float *St = pool + ((long long)state_out[r] * H + h) * D * D;
  float s[ROWS];
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + 4 * m;
    s[m] = (i < D && col < D && has_initial[r]) ? Sin[(long long)i * D + col] : 0.0f;
  }
  float decay = expf(-DECAY[a.i[slots::Lightning::Rank] * H + h]);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    long long row = (long long)t * H * D + h * D;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
      qs[i] = ld(q, row + i);
      ks[i] = ld(k, row + i);
    }
    __syncthreads();
    float vv = col < D ? ld(v, row + col) : 0.0f;
    float o = 0.0f;
    for (int m = 0; m < ROWS; ++m) {
      int i = warp + 4 * m;
      if (i < D) {
        s[m] = decay * s[m] + ks[i] * vv;
        o += qs[i] * s[m];
      }
    }
    red[warp][lane] = o;
    __syncthreads();
    if (warp == 0 && col < D)
      st(out, row + col, red[0][lane] + red[1][lane] + red[2][lane] + red[3][lane]);
    __syncthreads();
  }
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + 4 * m;
    if (i < D && col < D)
      St[(long long)i * D + col] = s[m];
  }
}

} // namespace cbc

#endif
