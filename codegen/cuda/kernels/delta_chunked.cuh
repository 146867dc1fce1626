// The delta rule in chunks of CH tokens (the UT transform), the part the gated delta rule
// (gated_delta_chunked.cuh) and KDA (kda_chunked.cuh) share. Block (request, value head, 32
// value columns) carries its [DK, 32] slice of the state in mma accumulators (fp32; warp w owns
// value columns 8w..8w+7). Per chunk, with A (strictly lower) and P (lower) the chunk's decayed
// key-key and query-key products that each kernel computes its own way:
//   T = (I + A)^-1                  fp32 forward substitution on CUDA cores, a column a thread
//   U = T diag(beta) V,  W = T diag(ws) Kw,  V' = U - W S
//   O = diag(os) (Qo S) + P V',     S <- diag(decay) S + Ks^T diag(us) V'
// on tensor cores (bf16 operands, fp32 accumulation). Kw, Qo and Ks are bf16 tiles the kernel
// prepares (the gated delta rule: the raw k and q rows, its scalar decays in ws, os and us;
// KDA: k and q scaled by their per-channel decays); T, P, V' and the state's bf16 copy are
// rounded once to bf16. Rows past the request's end are zero with beta 0, so they change
// nothing.
#ifndef CBC_CODEGEN_CUDA_KERNELS_DELTA_CHUNKED_CUH
#define CBC_CODEGEN_CUDA_KERNELS_DELTA_CHUNKED_CUH

#include "codegen/cuda/kernels/chunk_tiles.cuh"

namespace cbc {

// `Extra` holds what one kernel alone needs.
template <int CH, int DKP, class Extra> struct DeltaChunkSmem {
  static constexpr int BV = kGatedDeltaCols, LDK = DKP + 8, LDV = BV + 8, LDC = CH + 8;
  union alignas(16) {
    unsigned short q[CH][LDK]; // the chunk's q rows (Qo), then -W
    float t[CH][CH + 1];       // T, while the solve runs (q is dead in between)
  } qt;
  alignas(16) unsigned short k[CH][LDK];  // the chunk's raw k rows, then Ks
  alignas(16) unsigned short v[CH][LDV];  // this block's value columns
  alignas(16) unsigned short st[BV][LDK]; // the state at the chunk's start, transposed, in bf16
  alignas(16) unsigned short tu[CH][LDC]; // T diag(beta)
  alignas(16) unsigned short tw[CH][LDC]; // T diag(ws)
  alignas(16) unsigned short p[CH][LDC];
  union alignas(16) {
    float a[CH][CH + 1];           // A, read by the solve only
    unsigned short vn[2][CH][LDV]; // V', and diag(us) V' for the state update
  } u;
  // Per row: beta, 1/|q|, 1/|k|, and the scales above; per state row: its decay over the chunk.
  float beta[CH], iq[CH], ik[CH], ws[CH], os[CH], us[CH], decay[DKP];
  Extra x;
};

// The chunk's raw rows of q and k (key head kh of HK) and of v (value head h of HV, columns
// c0..c0+31) from token t on, zero past L rows and past the heads' columns; then a barrier.
template <class TQ, class TK, class TV, int HK, int HV, int DK, int DV, int CH, int DKP, class Smem>
__device__ __forceinline__ void dc_load(Smem &sm, const TQ *q, const TK *k, const TV *v, long long t, int L, int kh,
                                        int h, int c0) {
  constexpr int BV = Smem::BV;
  load_tile<TQ, CH, DKP>(&sm.qt.q[0][0], Smem::LDK, q, t * HK * DK + kh * DK, HK * DK, L, DK);
  load_tile<TK, CH, DKP>(&sm.k[0][0], Smem::LDK, k, t * HK * DK + kh * DK, HK * DK, L, DK);
  load_tile<TV, CH, BV>(&sm.v[0][0], Smem::LDV, v, t * HV * DV + h * DV + c0, HV * DV, L,
                        DV - c0 < BV ? DV - c0 : BV);
  load_tiles_done();
}

// 1/|q| and 1/|k| of each row (eps 1e-6 inside the root), or 1 where `l2` is off; warp w takes
// rows w, w+4, ...
template <int CH, int DKP, class Smem> __device__ __forceinline__ void dc_norms(Smem &sm, bool l2) {
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
      sm.iq[i] = l2 ? rsqrtf(pq + 1e-6f) : 1.0f;
      sm.ik[i] = l2 ? rsqrtf(pk + 1e-6f) : 1.0f;
    }
  }
}

// o = Qo S with the state's bf16 copy (warp w: columns 8w..8w+7; the rows' scales come later).
template <int CH, int DKP, class Smem> __device__ __forceinline__ void dc_qs(Smem &sm, float (&o)[CH / 16][4]) {
  constexpr int LDK = Smem::LDK;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  acc_zero(o);
  for (int kt = 0; kt < DKP / 16; ++kt) {
    frag_b(b, &sm.st[0][0], LDK, 16 * kt, 8 * warp);
    for (int m = 0; m < CH / 16; ++m) {
      frag_a(x, &sm.qt.q[0][0], LDK, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(o[m], x, b, o[m]);
    }
  }
}

// T = (I + A)^-1 by forward substitution in fp32: thread j solves column j, T[i][j] = [i == j] -
// sum_{k<i} A[i][k] T[k][j] (no barrier: the columns are independent; T is in shared memory,
// where a column a thread costs no bank conflicts, to keep registers for the accumulators). T
// with its columns scaled for U and for W is rounded to bf16.
template <int CH, class Smem> __device__ __forceinline__ void dc_solve(Smem &sm) {
  int j = threadIdx.x;
  if (j >= CH)
    return;
  float su = sm.beta[j], sw = sm.ws[j];
  for (int i = 0; i < CH; ++i) {
    float x = i == j ? 1.0f : 0.0f;
    for (int k = j; k < i; ++k) // T[k][j] = 0 for k < j
      x -= sm.u.a[i][k] * sm.qt.t[k][j];
    sm.qt.t[i][j] = x;
    sm.tu[i][j] = bf16_of(x * su);
    sm.tw[i][j] = bf16_of(x * sw);
  }
}

// U = T diag(beta) V into u (this warp's columns), and -W = -T diag(ws) Kw over q.
template <int CH, int DKP, class Smem>
__device__ __forceinline__ void dc_uw(Smem &sm, float (&u)[CH / 16][4], const unsigned short *kw) {
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
      frag_b_trans(b, kw, LDK, 16 * kt, 8 * nt);
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

// V' = U - W S (in u), kept in bf16 as is and scaled by us for the update.
template <int CH, int DKP, class Smem> __device__ __forceinline__ void dc_vnew(Smem &sm, float (&u)[CH / 16][4]) {
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
  for (int m = 0; m < MC; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e), c = acc_col(8 * warp, e);
      sm.u.vn[0][i][c] = bf16_of(u[m][e]);
      sm.u.vn[1][i][c] = bf16_of(u[m][e] * sm.us[i]);
    }
}

// O = diag(os) (Qo S) + P V', stored for the chunk's L rows and the head's columns.
template <class TO, int HV, int DV, int CH, class Smem>
__device__ __forceinline__ void dc_out(Smem &sm, float (&o)[CH / 16][4], TO *out, long long t, int L, int h,
                                       int c0) {
  constexpr int MC = CH / 16, LDV = Smem::LDV, LDC = Smem::LDC;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  for (int m = 0; m < MC; ++m)
    for (int e = 0; e < 4; ++e)
      o[m][e] *= sm.os[acc_row(16 * m, e)];
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

// S <- diag(decay) S + Ks^T diag(us) V', then the state's bf16 copy (st[column][row]) for the
// next chunk. ROW_DECAY: a decay per state row (KDA), else one for all (decay[0]).
template <int CH, int DKP, bool ROW_DECAY, class Smem>
__device__ __forceinline__ void dc_state(Smem &sm, float (&s)[DKP / 16][4]) {
  constexpr int LDK = Smem::LDK, LDV = Smem::LDV;
  int warp = threadIdx.x >> 5;
  unsigned x[4], b[2];
  for (int m = 0; m < DKP / 16; ++m)
    for (int e = 0; e < 4; ++e)
      s[m][e] *= sm.decay[ROW_DECAY ? acc_row(16 * m, e) : 0];
  for (int kt = 0; kt < CH / 16; ++kt) {
    frag_b_trans(b, &sm.u.vn[1][0][0], LDV, 16 * kt, 8 * warp);
    for (int m = 0; m < DKP / 16; ++m) {
      frag_a_trans(x, &sm.k[0][0], LDK, 16 * m, 16 * kt);
      mma_m16n8k16_bf16(s[m], x, b, s[m]);
    }
  }
}
template <int DKP, class Smem> __device__ __forceinline__ void dc_copy_state(Smem &sm, const float (&s)[DKP / 16][4]) {
  int warp = threadIdx.x >> 5;
  for (int m = 0; m < DKP / 16; ++m)
    for (int e = 0; e < 4; ++e)
      sm.st[acc_col(8 * warp, e)][acc_row(16 * m, e)] = bf16_of(s[m][e]);
}

// Loads (zero for a fresh request) or stores the block's slice of the state [DK][DV]: columns
// c0.. of this warp.
template <int DK, int DV, int DKP>
__device__ __forceinline__ void dc_state_io(float (&s)[DKP / 16][4], float *St, int c0, bool load, bool initial) {
  int warp = threadIdx.x >> 5;
  for (int m = 0; m < DKP / 16; ++m)
    for (int e = 0; e < 4; ++e) {
      int i = acc_row(16 * m, e), c = c0 + acc_col(8 * warp, e);
      bool in = i < DK && c < DV;
      if (load)
        s[m][e] = in && initial ? St[(long long)i * DV + c] : 0.0f;
      else if (in)
        St[(long long)i * DV + c] = s[m][e];
    }
}

// After the kernel's own A, P, scales and tiles: the rest of one chunk.
template <class TO, int HV, int DV, int CH, int DKP, bool ROW_DECAY, class Smem>
__device__ __forceinline__ void dc_chunk(Smem &sm, float (&s)[DKP / 16][4], const unsigned short *kw, TO *out,
                                         long long t, int L, int h, int c0) {
  float o[CH / 16][4], u[CH / 16][4];
  dc_qs<CH, DKP>(sm, o);
  __syncthreads();
  dc_solve<CH>(sm);
  __syncthreads();
  dc_uw<CH, DKP>(sm, u, kw);
  __syncthreads();
  dc_vnew<CH, DKP>(sm, u);
  __syncthreads();
  dc_out<TO, HV, DV, CH>(sm, o, out, t, L, h, c0);
  dc_state<CH, DKP, ROW_DECAY>(sm, s);
  dc_copy_state<DKP>(sm, s);
  __syncthreads();
}

} // namespace cbc

#endif
