// The gated delta rule in chunks of CH tokens (the UT transform), for prefill: block (request,
// value head, 32 value columns) carries its [DK, 32] slice of the state in mma accumulators
// (fp32; warp w owns value columns 8w..8w+7) and runs each chunk's products on tensor cores
// (bf16 operands, fp32 accumulation). With c the chunk's running sum of the log decays g,
// q^ and k^ the l2-normalised rows (q^ also scaled by DK^-1/2):
//   A[i][j] = beta_i (k^_i . k^_j) e^(c_i - c_j) for j < i,  P[i][j] = (q^_i . k^_j) e^(c_i - c_j) for j <= i
//   T = (I + A)^-1                    fp32 forward substitution on CUDA cores, a column a thread
//   U = T diag(beta) V,  W = T diag(beta e^c) K^,  V' = U - W S
//   O = diag(e^c) Q^ S + P V',        S <- e^(c_last) S + K^T diag(e^(c_last - c)) V'
// The raw bf16 q, k and v rows are the operands of the products (exact); the norms, gates and
// decays scale the fp32 results or fold into the other operand (T, P, V' and the state's bf16
// copy are rounded once to bf16). Rows past the request's end are zero with beta 0 and g 0, so
// they change nothing. Requests with at most RecurrentMax tokens in the step exit at once: the
// token-recurrent gated_delta (gated_delta.cuh) runs those.
#ifndef CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CHUNKED_CUH
#define CBC_CODEGEN_CUDA_KERNELS_GATED_DELTA_CHUNKED_CUH

#include "codegen/cuda/kernels/chunk_tiles.cuh"

namespace cbc {

template <int CH, int DKP> struct GatedDeltaChunkSmem {
  static constexpr int BV = kGatedDeltaCols, LDK = DKP + 8, LDV = BV + 8, LDC = CH + 8;
  union alignas(16) {
    unsigned short q[CH][LDK]; // the chunk's raw q rows, then -W
    float t[CH][CH + 1];       // T, while the solve runs (q is dead in between)
  } qt;
  alignas(16) unsigned short k[CH][LDK];
  alignas(16) unsigned short v[CH][LDV];  // this block's value columns
  alignas(16) unsigned short st[BV][LDK]; // the state at the chunk's start, transposed, in bf16
  alignas(16) unsigned short tu[CH][LDC]; // T diag(beta)
  alignas(16) unsigned short tw[CH][LDC]; // T diag(beta e^c / |k|)
  alignas(16) unsigned short p[CH][LDC];
  union alignas(16) {
    float a[CH][CH + 1];                 // A, read by the solve only
    unsigned short vn[2][CH][LDV];       // V', and V' scaled for the state update
  } u;
  float cum[CH], beta[CH], iq[CH], ik[CH]; // per row: c (g before the prefix sum), beta, 1/|q|, 1/|k|
};

// The chunk's raw rows of q and k (key head kh) and of v (value head h, columns c0..c0+31) from
// token t on, zero past L rows and past the head's columns.
template <class TQ, class TK, class TV, int HK, int HV, int DK, int DV, class Smem, int CH, int DKP>
__device__ __forceinline__ void gdc_load(Smem &sm, const TQ *q, const TK *k, const TV *v, long long t, int L, int kh,
                                         int h, int c0) {
  constexpr int BV = Smem::BV;
  for (int e = threadIdx.x; e < CH * DKP; e += kScanChunkThreads) {
    int i = e / DKP, d = e - i * DKP;
    bool in = i < L && d < DK;
    long long at = (t + i) * HK * DK + kh * DK + d;
    sm.qt.q[i][d] = in ? bf16_of(ld(q, at)) : 0;
    sm.k[i][d] = in ? bf16_of(ld(k, at)) : 0;
  }
  for (int e = threadIdx.x; e < CH * BV; e += kScanChunkThreads) {
    int i = e / BV, c = e - i * BV;
    bool in = i < L && c0 + c < DV;
    sm.v[i][c] = in ? bf16_of(ld(v, (t + i) * HV * DV + h * DV + c0 + c)) : 0;
  }
}

// Per row: the inverse norms, the gate g (then its running sum c) and beta, as gated_delta has them.
template <class TA, class TB, int HV, int CH, int DKP, class Smem>
__device__ __forceinline__ void gdc_rows(Smem &sm, const TA *av, const TB *bv, long long t, int L, int h, float A,
                                         float dtb, float betaScale, bool l2) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = warp; i < CH; i += kScanChunkThreads / 32) {
    float pq = 0.0f, pk = 0.0f;
    for (int d = lane; d < DKP; d += 32) {
      float x = float_of(sm.qt.q[i][d]), y = float_of(sm.k[i][d]);
      pq += x * x;
      pk += y * y;
    }
    pq = warp_sum(pq);
    pk = warp_sum(pk);
    if (lane == 0) {
      float g = 0.0f, beta = 0.0f;
      if (i < L) {
        float an = ld(av, (t + i) * HV + h) + dtb;
        g = A * (an > 20.0f ? an : log1pf(expf(an)));
        beta = betaScale / (1.0f + expf(-ld(bv, (t + i) * HV + h)));
      }
      sm.iq[i] = l2 ? rsqrtf(pq + 1e-6f) : 1.0f;
      sm.ik[i] = l2 ? rsqrtf(pk + 1e-6f) : 1.0f;
      sm.cum[i] = g;
      sm.beta[i] = beta;
    }
  }
  __syncthreads();
  warp_prefix_sum(sm.cum, CH);
  __syncthreads();
}

// A and P from K K^T and Q K^T (warp w: columns 8w..8w+7 of both), and o = Q S with the state's
// bf16 copy (the rows' scales are applied later).
template <int CH, int DKP, class Smem>
__device__ __forceinline__ void gdc_pairs(Smem &sm, float (&o)[CH / 16][4], float qScale) {
  constexpr int MC = CH / 16, MK = DKP / 16, LDK = Smem::LDK;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  if (warp < CH / 8) {
    float kk[MC][4], qk[MC][4];
    acc_zero(kk);
    acc_zero(qk);
    for (int kt = 0; kt < MK; ++kt) {
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
        float d = j <= i ? expf(sm.cum[i] - sm.cum[j]) * sm.ik[j] : 0.0f; // never above 1
        sm.u.a[i][j] = j < i ? sm.beta[i] * sm.ik[i] * d * kk[m][e] : 0.0f;
        sm.p[i][j] = bf16_of(qScale * sm.iq[i] * d * qk[m][e]);
      }
  }
  acc_zero(o);
  for (int kt = 0; kt < MK; ++kt) {
    frag_b(b, &sm.st[0][0], LDK, 16 * kt, 8 * warp);
    for (int m = 0; m < MC; ++m) {
      frag_a(x, &sm.qt.q[0][0], LDK, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(o[m], x, b, o[m]);
    }
  }
}

// T = (I + A)^-1 by forward substitution in fp32: thread j solves column j, T[i][j] = [i == j] -
// sum_{k<i} A[i][k] T[k][j] (no barrier: the columns are independent; T is in shared memory,
// where a column a thread costs no bank conflicts, to keep registers for the accumulators). T
// with its columns scaled for U and for W is rounded to bf16.
template <int CH, class Smem> __device__ __forceinline__ void gdc_solve(Smem &sm) {
  int j = threadIdx.x;
  if (j >= CH)
    return;
  float su = sm.beta[j], sw = su * expf(sm.cum[j]) * sm.ik[j];
  for (int i = 0; i < CH; ++i) {
    float x = i == j ? 1.0f : 0.0f;
    for (int k = j; k < i; ++k) // T[k][j] = 0 for k < j
      x -= sm.u.a[i][k] * sm.qt.t[k][j];
    sm.qt.t[i][j] = x;
    sm.tu[i][j] = bf16_of(x * su);
    sm.tw[i][j] = bf16_of(x * sw);
  }
}

// U = T diag(beta) V into u (this warp's columns), and -W = -T diag(beta e^c / |k|) K over q.
template <int CH, int DKP, class Smem> __device__ __forceinline__ void gdc_uw(Smem &sm, float (&u)[CH / 16][4]) {
  constexpr int MC = CH / 16, LDK = Smem::LDK, LDV = Smem::LDV, LDC = Smem::LDC;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  acc_zero(u);
  for (int kt = 0; kt < MC; ++kt) {
    frag_b_trans(b, &sm.v[0][0], LDV, 16 * kt, 8 * warp);
    for (int m = 0; m < MC; ++m) {
      frag_a(x, &sm.tu[0][0], LDC, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(u[m], x, b, u[m]);
    }
  }
  for (int nt = warp; nt < DKP / 8; nt += kScanChunkThreads / 32) {
    float w[MC][4];
    acc_zero(w);
    for (int kt = 0; kt < MC; ++kt) {
      frag_b_trans(b, &sm.k[0][0], LDK, 16 * kt, 8 * nt);
      for (int m = 0; m < MC; ++m) {
        frag_a(x, &sm.tw[0][0], LDC, 16 * m, 16 * kt);
        mma_m16n8k16_bf16(w[m], x, b, w[m]);
      }
    }
    for (int m = 0; m < MC; ++m)
      for (int e = 0; e < 4; ++e)
        sm.qt.q[acc_row(16 * m, e)][acc_col(8 * nt, e)] = bf16_of(-w[m][e]);
  }
}

// V' = U - W S (in u), kept in bf16 as is and scaled by e^(c_last - c_j) / |k_j| for the update.
template <int CH, int DKP, class Smem> __device__ __forceinline__ void gdc_vnew(Smem &sm, float (&u)[CH / 16][4]) {
  constexpr int MC = CH / 16, LDK = Smem::LDK;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  for (int kt = 0; kt < DKP / 16; ++kt) {
    frag_b(b, &sm.st[0][0], LDK, 16 * kt, 8 * warp);
    for (int m = 0; m < MC; ++m) {
      frag_a(x, &sm.qt.q[0][0], LDK, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(u[m], x, b, u[m]);
    }
  }
  float last = sm.cum[CH - 1];
  for (int m = 0; m < MC; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e), c = acc_col(8 * warp, e);
      sm.u.vn[0][i][c] = bf16_of(u[m][e]);
      sm.u.vn[1][i][c] = bf16_of(u[m][e] * expf(last - sm.cum[i]) * sm.ik[i]);
    }
}

// O = diag(e^c q-scale / |q|) (Q S) + P V', stored for the chunk's L rows and the head's columns.
template <class TO, int HV, int DV, int CH, class Smem>
__device__ __forceinline__ void gdc_out(Smem &sm, float (&o)[CH / 16][4], TO *out, long long t, int L, int h, int c0,
                                        float qScale) {
  constexpr int MC = CH / 16, LDV = Smem::LDV, LDC = Smem::LDC;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  for (int m = 0; m < MC; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e);
      o[m][e] *= expf(sm.cum[i]) * qScale * sm.iq[i];
    }
  for (int kt = 0; kt < MC; ++kt) {
    frag_b_trans(b, &sm.u.vn[0][0][0], LDV, 16 * kt, 8 * warp);
    for (int m = 0; m < MC; ++m) {
      frag_a(x, &sm.p[0][0], LDC, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(o[m], x, b, o[m]);
    }
  }
  for (int m = 0; m < MC; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e), c = c0 + acc_col(8 * warp, e);
      if (i < L && c < DV)
        st(out, (t + i) * HV * DV + h * DV + c, o[m][e]);
    }
}

// S <- e^(c_last) S + K^T V'' (V'' = the scaled V'), then the state's bf16 copy for the next chunk.
template <int CH, int DKP, class Smem> __device__ __forceinline__ void gdc_state(Smem &sm, float (&s)[DKP / 16][4]) {
  constexpr int LDK = Smem::LDK, LDV = Smem::LDV;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  float e = expf(sm.cum[CH - 1]);
  for (int m = 0; m < DKP / 16; ++m)
    for (int i = 0; i < 4; ++i)
      s[m][i] *= e;
  for (int kt = 0; kt < CH / 16; ++kt) {
    frag_b_trans(b, &sm.u.vn[1][0][0], LDV, 16 * kt, 8 * warp);
    for (int m = 0; m < DKP / 16; ++m) {
      frag_a_trans(x, &sm.k[0][0], LDK, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(s[m], x, b, s[m]);
    }
  }
}

// The state's bf16 copy, transposed (st[column][row]), from the accumulators.
template <int DKP, class Smem> __device__ __forceinline__ void gdc_copy_state(Smem &sm, const float (&s)[DKP / 16][4]) {
  int warp = threadIdx.x >> 5;
  for (int m = 0; m < DKP / 16; ++m)
    for (int e = 0; e < 4; ++e)
      sm.st[acc_col(8 * warp, e)][acc_row(16 * m, e)] = bf16_of(s[m][e]);
}

template <class TQ, class TK, class TV, class TA, class TB, class TAL, class TDT, class TO, int HK, int HV, int DK,
          int DV, bool L2, int CH>
__device__ __forceinline__ void gated_delta_chunked(const CbcArgs &a) {
  using S = slots::GatedDelta;
  constexpr int DKP = roundUp16(DK), MK = DKP / 16, MC = CH / 16;
  using Smem = GatedDeltaChunkSmem<CH, DKP>;
  static_assert(kGatedDeltaCols == 8 * (kScanChunkThreads / 32), "warp w owns value columns 8w..8w+7");
  static_assert(CH == 16 || CH == 32, "the running sums of a chunk take one warp");
  static_assert(sizeof(Smem) <= gatedDeltaChunkBytes(DK, CH) && gatedDeltaChunkBytes(DK, CH) <= kScanChunkSmemBytes,
                "the shared tiles exceed what the emitter planned");
  __shared__ Smem sm;
  const int *cu = (const int *)a.p[S::CuSeqlens];
  int r = blockIdx.x;
  long long t0 = cu[r];
  int n = cu[r + 1] - cu[r];
  if (n <= a.i[S::RecurrentMax])
    return; // the token-recurrent kernel's request
  const TAL *A_log = (const TAL *)a.p[S::ALog];
  const TDT *dt_bias = (const TDT *)a.p[S::DtBias];
  const int *slots = (const int *)a.p[S::Slots];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float betaScale = a.f[S::BetaScale], qScale = a.f[S::QScale];
  int h = blockIdx.y, c0 = blockIdx.z * kGatedDeltaCols, warp = threadIdx.x >> 5, kh = h / (HV / HK);
  float *St = (float *)a.p[S::Pool] + ((long long)slots[r] * HV + h) * DK * DV;
  float s[MK][4];
  for (int m = 0; m < MK; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e), c = c0 + acc_col(8 * warp, e);
      s[m][e] = i < DK && c < DV && has_initial[r] ? St[(long long)i * DV + c] : 0.0f;
    }
  gdc_copy_state<DKP>(sm, s);
  float A = -expf(ld(A_log, h)), dtb = ld(dt_bias, h);
  for (int base = 0; base < n; base += CH) {
    int L = n - base < CH ? n - base : CH;
    gdc_load<TQ, TK, TV, HK, HV, DK, DV, Smem, CH, DKP>(sm, (const TQ *)a.p[S::Q], (const TK *)a.p[S::K],
                                                        (const TV *)a.p[S::V], t0 + base, L, kh, h, c0);
    __syncthreads();
    gdc_rows<TA, TB, HV, CH, DKP>(sm, (const TA *)a.p[S::A], (const TB *)a.p[S::B], t0 + base, L, h, A, dtb,
                                  betaScale, L2);
    float o[MC][4], u[MC][4];
    gdc_pairs<CH, DKP>(sm, o, qScale);
    __syncthreads();
    gdc_solve<CH>(sm);
    __syncthreads();
    gdc_uw<CH, DKP>(sm, u);
    __syncthreads();
    gdc_vnew<CH, DKP>(sm, u);
    __syncthreads();
    gdc_out<TO, HV, DV, CH>(sm, o, (TO *)a.p[S::Out], t0 + base, L, h, c0, qScale);
    gdc_state<CH, DKP>(sm, s);
    gdc_copy_state<DKP>(sm, s);
    __syncthreads();
  }
  for (int m = 0; m < MK; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e), c = c0 + acc_col(8 * warp, e);
      if (i < DK && c < DV)
        St[(long long)i * DV + c] = s[m][e];
    }
}

} // namespace cbc

#endif
