// KDA (the delta rule decaying per key channel) in chunks of 16 tokens, for prefill
// (delta_chunked.cuh has the shared part). With G_i[d] the running sum over the chunk's rows of
// channel d's log decay (fp32, a thread per channel), q^ and k^ the l2-normalised rows (q^ also
// scaled by DK^-1/2):
//   A[i][j] = beta_i sum_d k^_i[d] k^_j[d] e^(G_i[d] - G_j[d]) for j < i, P[i][j] likewise from q^_i for j <= i,
// in fp32 on CUDA cores: the exponents are never positive there, where a factored product
// e^(G_i) e^(-G_j) on tensor cores would overflow under strong decays. Then Kw = k e^G, Qo = q
// e^G and Ks = k e^(G_last - G) (bf16, every exponent <= 0), ws = beta / |k|, os = q-scale / |q|,
// us = 1 / |k| and decay[d] = e^(G_last[d]). Requests with at most RecurrentMax tokens in the
// step exit at once: the token-recurrent kda (kda.cuh) runs those.
#ifndef CBC_CODEGEN_CUDA_KERNELS_KDA_CHUNKED_CUH
#define CBC_CODEGEN_CUDA_KERNELS_KDA_CHUNKED_CUH

#include "codegen/cuda/kernels/delta_chunked.cuh"

namespace cbc {

template <int CH, int DKP> struct KdaChunkExtra {
  alignas(16) unsigned short kw[CH][DKP + 8]; // k e^G
  float g[CH][DKP + 1];                       // G
};

// Per row: the norms, beta and the scales; per channel: G and the state's decay.
// BOUNDED: g = lower_bound * sigmoid(exp(A_log) x), else g = -exp(A_log) softplus(x), x = f + dt_bias.
template <class TF, class TB, class TDT, int H, int DK, int CH, int DKP, bool BOUNDED, class Smem>
__device__ __forceinline__ void kdac_rows(Smem &sm, const TF *f, const TB *bv, const TDT *dt_bias, long long t, int L,
                                          int h, float rate, float lowerBound, float qScale) {
  dc_norms<CH, DKP>(sm, true);
  __syncthreads();
  if (threadIdx.x < CH) {
    int i = threadIdx.x;
    float beta = i < L ? 1.0f / (1.0f + expf(-ld(bv, (t + i) * H + h))) : 0.0f;
    sm.beta[i] = beta;
    sm.ws[i] = beta * sm.ik[i];
    sm.os[i] = qScale * sm.iq[i];
    sm.us[i] = sm.ik[i];
  }
  for (int d = threadIdx.x; d < DKP; d += kScanChunkThreads) {
    float dtb = d < DK ? ld(dt_bias, h * DK + d) : 0.0f, G = 0.0f;
    for (int i = 0; i < CH; ++i) {
      if (i < L && d < DK) {
        float x = ld(f, (t + i) * H * DK + h * DK + d) + dtb;
        G += BOUNDED ? lowerBound / (1.0f + expf(-rate * x)) : -rate * (x > 20.0f ? x : log1pf(expf(x)));
      }
      sm.x.g[i][d] = G;
    }
    sm.decay[d] = expf(G);
  }
  __syncthreads();
}

// A and P element by element (a thread per pair), then the decayed tiles Qo (over q), Kw and
// Ks (over k).
template <int CH, int DKP, class Smem> __device__ __forceinline__ void kdac_pairs(Smem &sm, float qScale) {
  for (int e = threadIdx.x; e < CH * CH; e += kScanChunkThreads) {
    int i = e / CH, j = e - i * CH;
    float ak = 0.0f, aq = 0.0f;
    if (j <= i)
      for (int d = 0; d < DKP; ++d) {
        float kj = float_of(sm.k[j][d]) * expf(sm.x.g[i][d] - sm.x.g[j][d]);
        ak += float_of(sm.k[i][d]) * kj;
        aq += float_of(sm.qt.q[i][d]) * kj;
      }
    sm.u.a[i][j] = j < i ? sm.beta[i] * sm.ik[i] * sm.ik[j] * ak : 0.0f;
    sm.p[i][j] = bf16_of(qScale * sm.iq[i] * sm.ik[j] * aq);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < CH * DKP; e += kScanChunkThreads) {
    int i = e / DKP, d = e - i * DKP;
    float G = sm.x.g[i][d], k = float_of(sm.k[i][d]);
    sm.qt.q[i][d] = bf16_of(float_of(sm.qt.q[i][d]) * expf(G));
    sm.x.kw[i][d] = bf16_of(k * expf(G));
    sm.k[i][d] = bf16_of(k * expf(sm.x.g[CH - 1][d] - G));
  }
  __syncthreads();
}

template <class TQ, class TK, class TV, class TF, class TB, class TAL, class TDT, class TO, int H, int DK, int DV,
          bool BOUNDED, int CH>
__device__ __forceinline__ void kda_chunked(const CbcArgs &a) {
  using S = slots::Kda;
  constexpr int DKP = roundUp16(DK);
  using Smem = DeltaChunkSmem<CH, DKP, KdaChunkExtra<CH, DKP>>;
  static_assert(kKdaCols == 8 * (kScanChunkThreads / 32), "warp w owns value columns 8w..8w+7");
  static_assert(sizeof(Smem) <= kdaChunkBytes(DK, CH) && kdaChunkBytes(DK, CH) <= kScanChunkSmemBytes,
                "the shared tiles exceed what the emitter planned");
  __shared__ Smem sm;
  long long t0;
  int n, r = blockIdx.x;
  if (!chunked_request<S>(a, t0, n))
    return;
  int h = blockIdx.y, c0 = blockIdx.z * kKdaCols;
  float lowerBound = a.f[S::LowerBound], qScale = a.f[S::QScale], rate = expf(ld((const TAL *)a.p[S::ALog], h));
  float *pool = (float *)a.p[S::Pool];
  float *Sin = pool + ((long long)((const int *)a.p[S::StateIn])[r] * H + h) * DK * DV;
  float *St = pool + ((long long)((const int *)a.p[S::StateOut])[r] * H + h) * DK * DV;
  float s[DKP / 16][4];
  dc_state_io<DK, DV, DKP>(s, Sin, c0, true, ((const int *)a.p[S::HasInitial])[r] != 0);
  dc_copy_state<DKP>(sm, s);
  for (int base = 0; base < n; base += CH) {
    int L = n - base < CH ? n - base : CH;
    dc_load<TQ, TK, TV, H, H, DK, DV, CH, DKP>(sm, (const TQ *)a.p[S::Q], (const TK *)a.p[S::K],
                                               (const TV *)a.p[S::V], t0 + base, L, h, h, c0);
    kdac_rows<TF, TB, TDT, H, DK, CH, DKP, BOUNDED>(sm, (const TF *)a.p[S::F], (const TB *)a.p[S::B],
                                                    (const TDT *)a.p[S::DtBias], t0 + base, L, h, rate, lowerBound,
                                                    qScale);
    kdac_pairs<CH, DKP>(sm, qScale);
    dc_chunk<TO, H, DV, CH, DKP, true>(sm, s, &sm.x.kw[0][0], (TO *)a.p[S::Out], t0 + base, L, h, c0);
  }
  dc_state_io<DK, DV, DKP>(s, St, c0, false, false);
}

} // namespace cbc

#endif
