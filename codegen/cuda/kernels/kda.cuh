// KDA (the delta rule decaying per key channel) token by token: block (request, head, 32 value
// columns) keeps its [DK, 32] slice of the state in registers (delta_rule.cuh); each state row
// decays by its own key channel's gate. It takes the requests with at most RecurrentMax tokens
// in the step (decode): the chunked form (kda_chunked.cuh) takes the others, unless the emitter
// found that it does not fit.
#ifndef CBC_CODEGEN_CUDA_KERNELS_KDA_CUH
#define CBC_CODEGEN_CUDA_KERNELS_KDA_CUH

#include "codegen/cuda/kernels/delta_rule.cuh"

namespace cbc {

// BOUNDED: g = lower_bound * sigmoid(exp(A_log) x), else g = -exp(A_log) softplus(x), x = f + dt_bias.
template <class TQ, class TK, class TV, class TF, class TB, class TAL, class TDT, class TO, int H, int DK, int DV,
          bool BOUNDED>
__device__ __forceinline__ void kda(const CbcArgs &a) {
  using S = slots::Kda;
  static_assert(kKdaWarps == kDeltaRuleWarps, "the reductions add four warps");
  constexpr int ROWS = (DK + kDeltaRuleWarps - 1) / kDeltaRuleWarps; // state rows per warp
  __shared__ float qs[DK], ks[DK], red[kDeltaRuleWarps][32];
  const TQ *q = (const TQ *)a.p[S::Q];
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const TF *f = (const TF *)a.p[S::F];
  const TB *bv = (const TB *)a.p[S::B];
  const TAL *A_log = (const TAL *)a.p[S::ALog];
  const TDT *dt_bias = (const TDT *)a.p[S::DtBias];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  float lowerBound = a.f[S::LowerBound], qScale = a.f[S::QScale];
  int r = blockIdx.x, h = blockIdx.y, col = blockIdx.z * 32 + (threadIdx.x & 31), warp = threadIdx.x >> 5;
  if (cu[r + 1] - cu[r] > a.i[S::RecurrentMax])
    return; // kda_chunked's request
  const float *Sin = pool + ((long long)state_in[r] * H + h) * DK * DV;
  float *St = pool + ((long long)state_out[r] * H + h) * DK * DV;
  float s[ROWS], dtb[ROWS];
  delta_load_state<DK, DV>(s, Sin, has_initial[r], col);
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + kDeltaRuleWarps * m;
    dtb[m] = i < DK ? ld(dt_bias, h * DK + i) : 0.0f;
  }
  float rate = expf(ld(A_log, h));
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    // q and k of this head, l2-normalised (q also scaled by DK^-1/2), staged in shared memory.
    float iq, ik;
    long long qk = (long long)t * H * DK + h * DK;
    delta_stage_qk<DK>(q + qk, k + qk, qs, ks, red, true, iq, ik);
    float beta = 1.0f / (1.0f + expf(-ld(bv, (long long)t * H + h)));
    for (int m = 0; m < ROWS; ++m) {
      int i = warp + kDeltaRuleWarps * m;
      if (i < DK) {
        float x = ld(f, (long long)t * H * DK + h * DK + i) + dtb[m];
        float g = BOUNDED ? lowerBound / (1.0f + expf(-rate * x)) : -rate * (x > 20.0f ? x : log1pf(expf(x)));
        s[m] *= expf(g);
      }
    }
    float vv = col < DV ? ld(v, (long long)t * H * DV + h * DV + col) : 0.0f;
    float o = delta_update_read<DK>(s, qs, ks, red, iq, ik, qScale, beta, vv);
    if (warp == 0 && col < DV)
      st(out, (long long)t * H * DV + h * DV + col, o);
    __syncthreads();
  }
  delta_store_state<DK, DV>(s, St, col);
}

} // namespace cbc

#endif
