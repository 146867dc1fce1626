// KDA (the delta rule decaying per key channel) token by token: block (request, head, 32 value
// columns) keeps its [DK, 32] slice of the state in registers, the warps splitting the rows;
// each state row decays by its own key channel's gate.
#ifndef CBC_CODEGEN_CUDA_KERNELS_KDA_CUH
#define CBC_CODEGEN_CUDA_KERNELS_KDA_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// The sum over the warps of each lane's value, in warp order; every thread gets its lane's sum.
__device__ __forceinline__ float kda_rows_sum(float v, float (*red)[32]) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  red[warp][lane] = v;
  __syncthreads();
  return red[0][lane] + red[1][lane] + red[2][lane] + red[3][lane];
}

// BOUNDED: g = lower_bound * sigmoid(exp(A_log) x), else g = -exp(A_log) softplus(x), x = f + dt_bias.
template <class TQ, class TK, class TV, class TF, class TB, class TAL, class TDT, class TO, int H, int DK, int DV,
          bool BOUNDED>
__device__ __forceinline__ void kda(const CbcArgs &a) {
  using S = slots::Kda;
  static_assert(kKdaWarps == 4, "the reductions add four warps");
  constexpr int ROWS = (DK + kKdaWarps - 1) / kKdaWarps; // state rows per warp
  __shared__ float qs[DK], ks[DK], red[kKdaWarps][32];
  const TQ *q = (const TQ *)a.p[S::Q];
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const TF *f = (const TF *)a.p[S::F];
  const TB *bv = (const TB *)a.p[S::B];
  const TAL *A_log = (const TAL *)a.p[S::ALog];
  const TDT *dt_bias = (const TDT *)a.p[S::DtBias];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *slots = (const int *)a.p[S::Slots];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  float lowerBound = a.f[S::LowerBound], qScale = a.f[S::QScale];
  int r = blockIdx.x, h = blockIdx.y, col = blockIdx.z * 32 + (threadIdx.x & 31), warp = threadIdx.x >> 5;
  float *St = pool + ((long long)slots[r] * H + h) * DK * DV;
  float s[ROWS], dtb[ROWS];
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + 4 * m;
    s[m] = (i < DK && col < DV && has_initial[r]) ? St[(long long)i * DV + col] : 0.0f;
    dtb[m] = i < DK ? ld(dt_bias, h * DK + i) : 0.0f;
  }
  float rate = expf(ld(A_log, h));
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    // q and k of this head, l2-normalised (q also scaled by DK^-1/2), staged in shared memory.
    float pq = 0.0f, pk = 0.0f;
    for (int i = threadIdx.x; i < DK; i += blockDim.x) {
      float qv = ld(q, (long long)t * H * DK + h * DK + i), kv = ld(k, (long long)t * H * DK + h * DK + i);
      qs[i] = qv;
      ks[i] = kv;
      pq += qv * qv;
      pk += kv * kv;
    }
    pq = warp_sum(pq);
    pk = warp_sum(pk);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) {
      red[warp][0] = pq;
      red[warp][1] = pk;
    }
    __syncthreads();
    float sq = red[0][0] + red[1][0] + red[2][0] + red[3][0], sk = red[0][1] + red[1][1] + red[2][1] + red[3][1];
    float iq = rsqrtf(sq + 1e-6f), ik = rsqrtf(sk + 1e-6f);
    float beta = 1.0f / (1.0f + expf(-ld(bv, (long long)t * H + h)));
    float u = 0.0f;
    for (int m = 0; m < ROWS; ++m) {
      int i = warp + 4 * m;
      if (i < DK) {
        float x = ld(f, (long long)t * H * DK + h * DK + i) + dtb[m];
        float g = BOUNDED ? lowerBound / (1.0f + expf(-rate * x)) : -rate * (x > 20.0f ? x : log1pf(expf(x)));
        s[m] *= expf(g);
        u += s[m] * ks[i] * ik;
      }
    }
    u = kda_rows_sum(u, red);
    float vv = col < DV ? ld(v, (long long)t * H * DV + h * DV + col) : 0.0f;
    float delta = beta * (vv - u);
    float o = 0.0f;
    for (int m = 0; m < ROWS; ++m) {
      int i = warp + 4 * m;
      if (i < DK) {
        s[m] += ks[i] * ik * delta;
        o += s[m] * qs[i] * iq * qScale;
      }
    }
    o = kda_rows_sum(o, red);
    if (warp == 0 && col < DV)
      st(out, (long long)t * H * DV + h * DV + col, o);
    __syncthreads();
  }
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + 4 * m;
    if (i < DK && col < DV)
      St[(long long)i * DV + col] = s[m];
  }
}

} // namespace cbc

#endif
