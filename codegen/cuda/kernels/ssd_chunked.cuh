// The state space dual scan in chunks of CH tokens, for prefill: block (request, head, PT rows
// of head_dim) carries its [PT, N] slice of the state in mma accumulators (fp32) and runs each
// chunk's products on tensor cores (bf16 operands, fp32 accumulation). With dt the clamped
// softplus steps and c the chunk's running sum of dt a:
//   M[i][j] = (C_i . B_j) e^(c_i - c_j) dt_j for j <= i       (C B^T masked by the segment sums)
//   y = diag(e^c) C S^T + M X + D x                           (X: the raw x rows)
//   S <- e^(c_last) S + X^T diag(e^(c_last - c) dt) B
// The raw bf16 x, B and C rows are the operands where they can be (exact); M, the scaled B of
// the update and the state's bf16 copy are rounded once to bf16. The running sums and decays
// stay fp32 on CUDA cores. Rows past the request's end are zero with dt 0, so they change
// nothing. Requests with at most RecurrentMax tokens in the step exit at once: the
// token-recurrent ssd (ssd.cuh) runs those.
#ifndef CBC_CODEGEN_CUDA_KERNELS_SSD_CHUNKED_CUH
#define CBC_CODEGEN_CUDA_KERNELS_SSD_CHUNKED_CUH

#include "codegen/cuda/kernels/chunk_tiles.cuh"

namespace cbc {

template <int CH, int PT, int NP> struct SsdChunkSmem {
  static constexpr int LDP = PT + 8, LDN = NP + 8, LDC = CH + 8;
  alignas(16) unsigned short x[CH][LDP];  // this block's rows of head_dim
  alignas(16) unsigned short b[CH][LDN];  // B, then B scaled for the update
  alignas(16) unsigned short c[CH][LDN];
  alignas(16) unsigned short st[PT][LDN]; // the state at the chunk's start, in bf16
  alignas(16) unsigned short m[CH][LDC];
  float cum[CH], dt[CH];
};

// The chunk's raw rows of x (head h, rows p0..p0+PT), B and C (group g) from token t on, zero
// past L rows and past the head's columns; dt per row and its running sum of dt a; then a
// barrier.
template <class TX, class TDT, class TB, class TC, int H, int P, int G, int N, int CH, class Smem>
__device__ __forceinline__ void ssdc_load(Smem &sm, const TX *x, const TDT *dtv, const TB *Bm, const TC *Cm,
                                          long long t, int L, int h, int g, int p0, float A, float dtb, float dtMin,
                                          float dtMax) {
  constexpr int PT = Smem::LDP - 8, NP = Smem::LDN - 8;
  load_tile<TX, CH, PT>(&sm.x[0][0], Smem::LDP, x, t * H * P + h * P + p0, H * P, L, P - p0 < PT ? P - p0 : PT);
  load_tile<TB, CH, NP>(&sm.b[0][0], Smem::LDN, Bm, t * G * N + g * N, G * N, L, N);
  load_tile<TC, CH, NP>(&sm.c[0][0], Smem::LDN, Cm, t * G * N + g * N, G * N, L, N);
  if (threadIdx.x < CH) {
    int i = threadIdx.x;
    float d = 0.0f;
    if (i < L) {
      float dn = ld(dtv, (t + i) * H + h) + dtb;
      d = fminf(fmaxf(dn > 20.0f ? dn : log1pf(expf(dn)), dtMin), dtMax);
    }
    sm.dt[i] = d;
    sm.cum[i] = d * A;
  }
  load_tiles_done();
  warp_prefix_sum(sm.cum, CH);
  __syncthreads();
}

// M from C B^T (warp w: columns 8w..8w+7), and y = C S^T with the state's bf16 copy (warp w:
// head_dim columns 8w, 8w+32, ...; the rows' decays are applied later).
template <int CH, int PT, int NP, class Smem>
__device__ __forceinline__ void ssdc_pairs(Smem &sm, float (&y)[(PT / 8 + 3) / 4][CH / 16][4]) {
  constexpr int MC = CH / 16, LDN = Smem::LDN, WARPS = kScanChunkThreads / 32;
  int warp = threadIdx.x >> 5;
  unsigned a[4], b[2];
  if (warp < CH / 8) {
    float cb[MC][4];
    acc_zero(cb);
    for (int kt = 0; kt < NP / 16; ++kt) {
      frag_b(b, &sm.b[0][0], LDN, 16 * kt, 8 * warp);
      for (int m = 0; m < MC; ++m) {
        frag_a(a, &sm.c[0][0], LDN, 16 * m, 16 * kt);
        mma_m16n8k16_bf16(cb[m], a, b, cb[m]);
      }
    }
    for (int m = 0; m < MC; ++m)
      for (int e = 0; e < 4; ++e) {
        int i = acc_row(16 * m, e), j = acc_col(8 * warp, e);
        sm.m[i][j] = bf16_of(j <= i ? cb[m][e] * expf(sm.cum[i] - sm.cum[j]) * sm.dt[j] : 0.0f);
      }
  }
  for (int w = 0; w < (PT / 8 + 3) / 4; ++w) {
    int nt = warp + WARPS * w;
    acc_zero(y[w]);
    if (nt >= PT / 8)
      continue;
    for (int kt = 0; kt < NP / 16; ++kt) {
      frag_b(b, &sm.st[0][0], LDN, 16 * kt, 8 * nt);
      for (int m = 0; m < MC; ++m) {
        frag_a(a, &sm.c[0][0], LDN, 16 * m, 16 * kt);
        mma_m16n8k16_bf16(y[w][m], a, b, y[w][m]);
      }
    }
  }
}

// y = diag(e^c) (C S^T) + M X + D x, stored for the chunk's L rows and the head's columns; then
// B scaled by e^(c_last - c_j) dt_j for the update.
template <class TO, int H, int P, int CH, int PT, int NP, class Smem>
__device__ __forceinline__ void ssdc_out(Smem &sm, float (&y)[(PT / 8 + 3) / 4][CH / 16][4], TO *out, long long t,
                                         int L, int h, int p0, float D) {
  constexpr int MC = CH / 16, LDP = Smem::LDP, LDC = Smem::LDC, WARPS = kScanChunkThreads / 32;
  int warp = threadIdx.x >> 5;
  unsigned a[4], b[2];
  for (int w = 0; w < (PT / 8 + 3) / 4; ++w) {
    int nt = warp + WARPS * w;
    if (nt >= PT / 8)
      continue;
    for (int m = 0; m < MC; ++m)
      for (int e = 0; e < 4; ++e)
        y[w][m][e] *= expf(sm.cum[acc_row(16 * m, e)]);
    for (int kt = 0; kt < MC; ++kt) {
      frag_b_trans(b, &sm.x[0][0], LDP, 16 * kt, 8 * nt);
      for (int m = 0; m < MC; ++m) {
        frag_a(a, &sm.m[0][0], LDC, 16 * m, 16 * kt);
        mma_m16n8k16_bf16(y[w][m], a, b, y[w][m]);
      }
    }
    for (int m = 0; m < MC; ++m)
      for (int e = 0; e < 4; ++e) {
        int i = acc_row(16 * m, e), p = acc_col(8 * nt, e);
        if (i < L && p0 + p < P)
          st(out, (t + i) * H * P + h * P + p0 + p, y[w][m][e] + D * float_of(sm.x[i][p]));
      }
  }
  float last = sm.cum[CH - 1];
  for (int e = threadIdx.x; e < CH * NP; e += kScanChunkThreads) {
    int j = e / NP, n = e - j * NP;
    sm.b[j][n] = bf16_of(float_of(sm.b[j][n]) * expf(last - sm.cum[j]) * sm.dt[j]);
  }
}

// S <- e^(c_last) S + X^T B'' (B'' the scaled B; warp w: state columns 8w, 8w+32, ...), then the
// state's bf16 copy for the next chunk.
template <int CH, int PT, int NP, class Smem>
__device__ __forceinline__ void ssdc_state(Smem &sm, float (&s)[(NP / 8 + 3) / 4][PT / 16][4]) {
  constexpr int LDP = Smem::LDP, LDN = Smem::LDN, WARPS = kScanChunkThreads / 32;
  int warp = threadIdx.x >> 5;
  unsigned a[4], b[2];
  float decay = expf(sm.cum[CH - 1]);
  for (int w = 0; w < (NP / 8 + 3) / 4; ++w) {
    int nt = warp + WARPS * w;
    if (nt >= NP / 8)
      continue;
    for (int m = 0; m < PT / 16; ++m)
      for (int e = 0; e < 4; ++e)
        s[w][m][e] *= decay;
    for (int kt = 0; kt < CH / 16; ++kt) {
      frag_b_trans(b, &sm.b[0][0], LDN, 16 * kt, 8 * nt);
      for (int m = 0; m < PT / 16; ++m) {
        frag_a_trans(a, &sm.x[0][0], LDP, 16 * m, 16 * kt);
        mma_m16n8k16_bf16(s[w][m], a, b, s[w][m]);
      }
    }
  }
}

// The state's bf16 copy (st[row][column]) from the accumulators.
template <int PT, int NP, class Smem>
__device__ __forceinline__ void ssdc_copy_state(Smem &sm, const float (&s)[(NP / 8 + 3) / 4][PT / 16][4]) {
  int warp = threadIdx.x >> 5;
  for (int w = 0; w < (NP / 8 + 3) / 4; ++w) {
    int nt = warp + kScanChunkThreads / 32 * w;
    if (nt < NP / 8)
      for (int m = 0; m < PT / 16; ++m)
        for (int e = 0; e < 4; ++e)
          sm.st[acc_row(16 * m, e)][acc_col(8 * nt, e)] = bf16_of(s[w][m][e]);
  }
}

// Loads (zero for a fresh request) or stores the block's slice of the state: rows p0.. of P,
// columns of N.
template <int P, int N, int PT, int NP>
__device__ __forceinline__ void ssdc_state_io(float (&s)[(NP / 8 + 3) / 4][PT / 16][4], float *St, int p0,
                                              bool load, bool initial) {
  int warp = threadIdx.x >> 5;
  for (int w = 0; w < (NP / 8 + 3) / 4; ++w)
    for (int m = 0; m < PT / 16; ++m)
      for (int e = 0; e < 4; ++e) {
        int p = p0 + acc_row(16 * m, e), n = acc_col(8 * (warp + kScanChunkThreads / 32 * w), e);
        bool in = p < P && n < N;
        if (load)
          s[w][m][e] = in && initial ? St[(long long)p * N + n] : 0.0f;
        else if (in)
          St[(long long)p * N + n] = s[w][m][e];
      }
}

template <class TX, class TDT, class TB, class TC, class TAL, class TDB, class TD, class TO, int H, int P, int G, int N,
          int CH, int PT>
__device__ __forceinline__ void ssd_chunked(const CbcArgs &a) {
  using S = slots::Ssd;
  constexpr int NP = roundUp16(N), NW = (NP / 8 + 3) / 4, YW = (PT / 8 + 3) / 4;
  using Smem = SsdChunkSmem<CH, PT, NP>;
  static_assert(CH == 16 || CH == 32, "the running sums of a chunk take one warp");
  static_assert(PT % 16 == 0, "the state's rows are whole mma tiles");
  static_assert(sizeof(Smem) <= ssdChunkBytes(N, PT, CH) && ssdChunkBytes(N, PT, CH) <= kScanChunkSmemBytes,
                "the shared tiles exceed what the emitter planned");
  __shared__ Smem sm;
  long long t0;
  int n, r = blockIdx.x;
  if (!chunked_request<S>(a, t0, n))
    return;
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  int h = blockIdx.y, p0 = blockIdx.z * PT, g = h / (H / G);
  float *Sin = (float *)a.p[S::Pool] + ((long long)state_in[r] * H + h) * P * N;
  float *St = (float *)a.p[S::Pool] + ((long long)state_out[r] * H + h) * P * N;
  float A = -expf(ld((const TAL *)a.p[S::ALog], h)), dtb = ld((const TDB *)a.p[S::DtBias], h);
  float D = ld((const TD *)a.p[S::D], h);
  float s[NW][PT / 16][4], y[YW][CH / 16][4];
  ssdc_state_io<P, N, PT, NP>(s, Sin, p0, true, ((const int *)a.p[S::HasInitial])[r] != 0);
  ssdc_copy_state<PT, NP>(sm, s);
  for (int base = 0; base < n; base += CH) {
    int L = n - base < CH ? n - base : CH;
    ssdc_load<TX, TDT, TB, TC, H, P, G, N, CH>(sm, (const TX *)a.p[S::X], (const TDT *)a.p[S::Dt],
                                               (const TB *)a.p[S::B], (const TC *)a.p[S::C], t0 + base, L, h, g, p0,
                                               A, dtb, a.f[S::DtMin], a.f[S::DtMax]);
    ssdc_pairs<CH, PT, NP>(sm, y);
    __syncthreads();
    ssdc_out<TO, H, P, CH, PT, NP>(sm, y, (TO *)a.p[S::Out], t0 + base, L, h, p0, D);
    __syncthreads();
    ssdc_state<CH, PT, NP>(sm, s);
    ssdc_copy_state<PT, NP>(sm, s);
    __syncthreads();
  }
  ssdc_state_io<P, N, PT, NP>(s, St, p0, false, false);
}

} // namespace cbc

#endif
