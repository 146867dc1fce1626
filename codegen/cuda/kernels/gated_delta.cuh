// The gated delta rule, token by token: block (request, value head, 32 value columns) keeps
// its [DK, 32] slice of the state in registers (delta_rule.cuh); one decay per head and token.
// It takes the requests with at most RecurrentMax tokens in the step (decode): the chunked form
// (gated_delta_chunked.cuh) takes the others, unless the emitter found that it does not fit.
#ifndef CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CUH
#define CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CUH

#include "codegen/cuda/kernels/delta_rule.cuh"

namespace cbc {

template <class TQ, class TK, class TV, class TA, class TB, class TAL, class TDT, class TO, int HK, int HV, int DK,
          int DV, bool L2>
__device__ __forceinline__ void gated_delta(const CbcArgs &a) {
  using S = slots::GatedDelta;
  static_assert(kGatedDeltaWarps == kDeltaRuleWarps, "the reductions add four warps");
  constexpr int ROWS = (DK + kDeltaRuleWarps - 1) / kDeltaRuleWarps; // state rows per warp
  __shared__ float qs[DK], ks[DK], red[kDeltaRuleWarps][32];
  const TQ *q = (const TQ *)a.p[S::Q];
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const TA *av = (const TA *)a.p[S::A];
  const TB *bv = (const TB *)a.p[S::B];
  const TAL *A_log = (const TAL *)a.p[S::ALog];
  const TDT *dt_bias = (const TDT *)a.p[S::DtBias];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  float betaScale = a.f[S::BetaScale], qScale = a.f[S::QScale];
  int r = blockIdx.x, h = blockIdx.y, col = blockIdx.z * 32 + (threadIdx.x & 31), warp = threadIdx.x >> 5;
  if (cu[r + 1] - cu[r] > a.i[S::RecurrentMax])
    return; // gated_delta_chunked's request
  int kh = h / (HV / HK);
  const float *Sin = pool + ((long long)state_in[r] * HV + h) * DK * DV;
  float *St = pool + ((long long)state_out[r] * HV + h) * DK * DV;
  float s[ROWS];
  delta_load_state<DK, DV>(s, Sin, has_initial[r], col);
  float A = -expf(ld(A_log, h)), dtb = ld(dt_bias, h);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    // q and k of this key head, l2-normalised (q also scaled by DK^-1/2), staged in shared memory.
    float iq, ik;
    long long qk = (long long)t * HK * DK + kh * DK;
    delta_stage_qk<DK>(q + qk, k + qk, qs, ks, red, L2, iq, ik);
    float an = ld(av, (long long)t * HV + h) + dtb;
    float sp = an > 20.0f ? an : log1pf(expf(an));
    float decay = expf(A * sp);
    float beta = betaScale / (1.0f + expf(-ld(bv, (long long)t * HV + h)));
    for (int m = 0; m < ROWS; ++m)
      s[m] *= decay;
    float vv = col < DV ? ld(v, (long long)t * HV * DV + h * DV + col) : 0.0f;
    float o = delta_update_read<DK>(s, qs, ks, red, iq, ik, qScale, beta, vv);
    if (warp == 0 && col < DV)
      st(out, (long long)t * HV * DV + h * DV + col, o);
    __syncthreads();
  }
  delta_store_state<DK, DV>(s, St, col);
}

} // namespace cbc

#endif
