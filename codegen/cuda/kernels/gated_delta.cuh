// The gated delta rule, token by token: block (request, value head, 32 value columns) keeps
// its [DK, 32] slice of the state in registers, the warps splitting the rows.
#ifndef CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CUH
#define CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// The sum over the warps of each lane's value, in warp order; every thread gets its lane's sum.
__device__ __forceinline__ float gated_delta_rows_sum(float v, float (*red)[32]) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  red[warp][lane] = v;
  __syncthreads();
  return red[0][lane] + red[1][lane] + red[2][lane] + red[3][lane];
}

template <class TQ, class TK, class TV, class TA, class TB, class TAL, class TDT, class TO, int HK, int HV, int DK,
          int DV, bool L2>
__device__ __forceinline__ void gated_delta(const CbcArgs &a) {
  using S = slots::GatedDelta;
  static_assert(kGatedDeltaWarps == 4, "the reductions add four warps");
  constexpr int ROWS = (DK + kGatedDeltaWarps - 1) / kGatedDeltaWarps; // state rows per warp
  __shared__ float qs[DK], ks[DK], red[kGatedDeltaWarps][32];
  const TQ *q = (const TQ *)a.p[S::Q];
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const TA *av = (const TA *)a.p[S::A];
  const TB *bv = (const TB *)a.p[S::B];
  const TAL *A_log = (const TAL *)a.p[S::ALog];
  const TDT *dt_bias = (const TDT *)a.p[S::DtBias];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *slots = (const int *)a.p[S::Slots];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  float betaScale = a.f[S::BetaScale], qScale = a.f[S::QScale];
  int r = blockIdx.x, h = blockIdx.y, col = blockIdx.z * 32 + (threadIdx.x & 31), warp = threadIdx.x >> 5;
  int kh = h / (HV / HK);
  float *St = pool + ((long long)slots[r] * HV + h) * DK * DV;
  float s[ROWS];
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + 4 * m;
    s[m] = (i < DK && col < DV && has_initial[r]) ? St[(long long)i * DV + col] : 0.0f;
  }
  float A = -expf(ld(A_log, h)), dtb = ld(dt_bias, h);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    // q and k of this key head, l2-normalised (q also scaled by DK^-1/2), staged in shared memory.
    float pq = 0.0f, pk = 0.0f;
    for (int i = threadIdx.x; i < DK; i += blockDim.x) {
      float qv = ld(q, (long long)t * HK * DK + kh * DK + i), kv = ld(k, (long long)t * HK * DK + kh * DK + i);
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
    float iq = L2 ? rsqrtf(sq + 1e-6f) : 1.0f, ik = L2 ? rsqrtf(sk + 1e-6f) : 1.0f;
    float an = ld(av, (long long)t * HV + h) + dtb;
    float sp = an > 20.0f ? an : log1pf(expf(an));
    float decay = expf(A * sp);
    float beta = betaScale / (1.0f + expf(-ld(bv, (long long)t * HV + h)));
    float u = 0.0f;
    for (int m = 0; m < ROWS; ++m) {
      int i = warp + 4 * m;
      float kk = i < DK ? ks[i] * ik : 0.0f;
      s[m] *= decay;
      u += s[m] * kk;
    }
    u = gated_delta_rows_sum(u, red);
    float vv = col < DV ? ld(v, (long long)t * HV * DV + h * DV + col) : 0.0f;
    float delta = beta * (vv - u);
    float o = 0.0f;
    for (int m = 0; m < ROWS; ++m) {
      int i = warp + 4 * m;
      if (i < DK) {
        s[m] += ks[i] * ik * delta;
        o += s[m] * qs[i] * iq * qScale;
      }
    }
    o = gated_delta_rows_sum(o, red);
    if (warp == 0 && col < DV)
      st(out, (long long)t * HV * DV + h * DV + col, o);
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
