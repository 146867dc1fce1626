// The gated delta rule in chunks of CH tokens, for prefill (delta_chunked.cuh has the shared
// part). One decay per head and token: with c the chunk's running sum of the log decays g (fp32,
// one warp's prefix sum), q^ and k^ the l2-normalised rows (q^ also scaled by DK^-1/2):
//   A[i][j] = beta_i (k^_i . k^_j) e^(c_i - c_j) for j < i,  P[i][j] = (q^_i . k^_j) e^(c_i - c_j) for j <= i,
// from K K^T and Q K^T on tensor cores with the raw bf16 q and k rows as operands (exact), the
// norms, gates and decays applied to the fp32 results; then ws = beta e^c / |k|, os = e^c
// q-scale / |q|, us = e^(c_last - c) / |k| and decay = e^(c_last) with the raw rows as Kw, Qo
// and Ks. Requests with at most RecurrentMax tokens in the step exit at once: the
// token-recurrent gated_delta (gated_delta.cuh) runs those.
#ifndef CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CHUNKED_CUH
#define CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CHUNKED_CUH

#include "codegen/cuda/kernels/delta_chunked.cuh"

namespace cbc {

template <int CH> struct GatedDeltaChunkExtra {
  float cum[CH]; // c (g before the prefix sum)
};

// Per row: the norms, the gate g (then its running sum c), beta and the scales.
template <class TA, class TB, int HV, int CH, int DKP, class Smem>
__device__ __forceinline__ void gdc_rows(Smem &sm, const TA *av, const TB *bv, long long t, int L, int h, float A,
                                         float dtb, float betaScale, float qScale, bool l2) {
  dc_norms<CH, DKP>(sm, l2);
  if (threadIdx.x < CH) {
    int i = threadIdx.x;
    float g = 0.0f, beta = 0.0f;
    if (i < L) {
      float an = ld(av, (t + i) * HV + h) + dtb;
      g = A * (an > 20.0f ? an : log1pf(expf(an)));
      beta = betaScale / (1.0f + expf(-ld(bv, (t + i) * HV + h)));
    }
    sm.x.cum[i] = g;
    sm.beta[i] = beta;
  }
  __syncthreads();
  warp_prefix_sum(sm.x.cum, CH);
  __syncthreads();
  float last = sm.x.cum[CH - 1];
  if (threadIdx.x < CH) {
    int i = threadIdx.x;
    float c = sm.x.cum[i];
    sm.ws[i] = sm.beta[i] * expf(c) * sm.ik[i];
    sm.os[i] = expf(c) * qScale * sm.iq[i];
    sm.us[i] = expf(last - c) * sm.ik[i];
  }
  if (threadIdx.x == 0)
    sm.decay[0] = expf(last); // one for every state row
}

// A and P from K K^T and Q K^T (warp w: columns 8w..8w+7 of both).
template <int CH, int DKP, class Smem> __device__ __forceinline__ void gdc_pairs(Smem &sm, float qScale) {
  constexpr int MC = CH / 16, LDK = Smem::LDK;
  int warp = threadIdx.x >> 5;
  if (warp >= CH / 8)
    return;
  unsigned x[4], b[2];
  float kk[MC][4], qk[MC][4];
  acc_zero(kk);
  acc_zero(qk);
  for (int kt = 0; kt < DKP / 16; ++kt) {
    frag_b(b, &sm.k[0][0], LDK, 16 * kt, 8 * warp);
    for (int m = 0; m < MC; ++m) {
      frag_a(x, &sm.k[0][0], LDK, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(kk[m], x, b, kk[m]);
      frag_a(x, &sm.qt.q[0][0], LDK, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(qk[m], x, b, qk[m]);
    }
  }
  for (int m = 0; m < MC; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e), j = acc_col(8 * warp, e);
      float d = j <= i ? expf(sm.x.cum[i] - sm.x.cum[j]) * sm.ik[j] : 0.0f; // never above 1
      sm.u.a[i][j] = j < i ? sm.beta[i] * sm.ik[i] * d * kk[m][e] : 0.0f;
      sm.p[i][j] = bf16_of(qScale * sm.iq[i] * d * qk[m][e]);
    }
}

template <class TQ, class TK, class TV, class TA, class TB, class TAL, class TDT, class TO, int HK, int HV, int DK,
          int DV, bool L2, int CH>
__device__ __forceinline__ void gated_delta_chunked(const CbcArgs &a) {
  using S = slots::GatedDelta;
  constexpr int DKP = roundUp16(DK);
  using Smem = DeltaChunkSmem<CH, DKP, GatedDeltaChunkExtra<CH>>;
  static_assert(kGatedDeltaCols == 8 * (kScanChunkThreads / 32), "warp w owns value columns 8w..8w+7");
  static_assert(CH == 16 || CH == 32, "the running sums of a chunk take one warp");
  static_assert(sizeof(Smem) <= gatedDeltaChunkBytes(DK, CH) && gatedDeltaChunkBytes(DK, CH) <= kScanChunkSmemBytes,
                "the shared tiles exceed what the emitter planned");
  __shared__ Smem sm;
  long long t0;
  int n, r = blockIdx.x;
  if (!chunked_request<S>(a, t0, n))
    return;
  int h = blockIdx.y, c0 = blockIdx.z * kGatedDeltaCols, kh = h / (HV / HK);
  float betaScale = a.f[S::BetaScale], qScale = a.f[S::QScale];
  float *pool = (float *)a.p[S::Pool];
  float *Sin = pool + ((long long)((const int *)a.p[S::StateIn])[r] * HV + h) * DK * DV;
  float *St = pool + ((long long)((const int *)a.p[S::StateOut])[r] * HV + h) * DK * DV;
  float s[DKP / 16][4];
  dc_state_io<DK, DV, DKP>(s, Sin, c0, true, ((const int *)a.p[S::HasInitial])[r] != 0);
  dc_copy_state<DKP>(sm, s);
  float A = -expf(ld((const TAL *)a.p[S::ALog], h)), dtb = ld((const TDT *)a.p[S::DtBias], h);
  for (int base = 0; base < n; base += CH) {
    int L = n - base < CH ? n - base : CH;
    dc_load<TQ, TK, TV, HK, HV, DK, DV, CH, DKP>(sm, (const TQ *)a.p[S::Q], (const TK *)a.p[S::K],
                                                 (const TV *)a.p[S::V], t0 + base, L, kh, h, c0);
    gdc_rows<TA, TB, HV, CH, DKP>(sm, (const TA *)a.p[S::A], (const TB *)a.p[S::B], t0 + base, L, h, A, dtb,
                                  betaScale, qScale, L2);
    gdc_pairs<CH, DKP>(sm, qScale);
    // The pairs' reads of q end before the solve overwrites it: dc_chunk's first barrier.
    dc_chunk<TO, HV, DV, CH, DKP, false>(sm, s, &sm.k[0][0], (TO *)a.p[S::Out], t0 + base, L, h, c0);
  }
  dc_state_io<DK, DV, DKP>(s, St, c0, false, false);
}

} // namespace cbc

#endif
