// The causal convolution over each request's rows: one thread per (request, channel) walks the
// rows in order, starting from the request's state (its input unit) and leaving the last K - 1
// inputs in its output unit. Also the token shift, the same walk with no weights, RWKV's WKV recurrence
// and Griffin's RG-LRU.
#ifndef CBC_CODEGEN_CUDA_KERNELS_CONV1D_CUH
#define CBC_CODEGEN_CUDA_KERNELS_CONV1D_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// The input of channel `c` at request row m (0-based; m < 0: before the step, from the state
// or, for a fresh request, `initial`).
template <class TX, class TI, int C, int HIST>
__device__ __forceinline__ float conv1d_input(const TX *x, const TI *initial, const float *start, bool fresh,
                                              int first, int m, int c) {
  if (m >= 0)
    return ld(x, (long long)(first + m) * C + c);
  if (fresh)
    return ld_or_zero(initial, c);
  return start[(long long)c * HIST + HIST + m];
}

// RES: the row itself is added in fp32, x + act(conv x), before the one rounding to TY; the
// slot Scale multiplies the sum. G: the channels per group (1: depthwise, the K - 1 carried
// inputs in registers; more: the block is one group, whose threads read each other's inputs and
// state). TI: the inputs a fresh request starts from (void: zeros). Depthwise only: TT the
// per-token taps [T, TTW] (void: none), each run of C / (TTW / K) channels sharing K of them; LAG:
// weight and taps index j weighs the input j rows back; DIL: tap j reads the input (K - 1 - j) *
// DIL rows back, the state then holding the last (K - 1) * DIL inputs.
template <class TX, class TW, class TB, class TY, int C, int K, Act A, bool RES = false, int G = 1,
          class TI = void, class TT = void, int TTW = K, bool LAG = false, int DIL = 1>
__device__ __forceinline__ void conv1d(const CbcArgs &a) {
  using S = slots::Conv1d;
  constexpr int HIST = (K - 1) * DIL, HIST1 = HIST > 1 ? HIST : 1;
  const TX *x = (const TX *)a.p[S::X];
  const TW *w = (const TW *)a.p[S::Weight];
  const TB *bias = (const TB *)a.p[S::Bias];
  const TI *initial = (const TI *)a.p[S::Initial];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TY *y = (TY *)a.p[S::Out];
  const TT *taps = (const TT *)a.p[S::Taps];
  float scale = a.f[S::Scale];
  int r = blockIdx.x;
  bool fresh = !has_initial[r];
  const float *start = HIST > 0 ? pool + (long long)state_in[r] * C * HIST : 0;
  float *state = HIST > 0 ? pool + (long long)state_out[r] * C * HIST : 0;
  int first = cu[r], n = cu[r + 1] - cu[r];
  if constexpr (G == 1) {
    int c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= C)
      return;
    float b = 0.0f;
    if constexpr (present<TB>)
      b = ld(bias, c);
    float hist[HIST1];
    for (int j = 0; j < HIST; ++j)
      hist[j] = conv1d_input<TX, TI, C, HIST>(x, initial, start, fresh, first, j - HIST, c);
    float wr[K]; // wr[j] weighs the input K - 1 - j rows back
    for (int j = 0; j < K; ++j)
      wr[j] = ld(w, (long long)c * K + (LAG ? K - 1 - j : j));
    for (int t = 0; t < n; ++t) {
      float xv = ld(x, (long long)(first + t) * C + c);
      float wt[K];
      for (int j = 0; j < K; ++j) {
        wt[j] = wr[j];
        if constexpr (present<TT>)
          wt[j] += ld(taps, (long long)(first + t) * TTW + (long long)(c / (C / (TTW / K))) * K + (LAG ? K - 1 - j : j));
      }
      float acc = b + wt[K - 1] * xv;
      for (int j = 0; j + 1 < K; ++j)
        acc += wt[j] * hist[HIST - (K - 1 - j) * DIL];
      st(y, (long long)(first + t) * C + c, scale * (RES ? act<A>(acc) + xv : act<A>(acc)));
      for (int j = 0; j + 1 < HIST; ++j)
        hist[j] = hist[j + 1];
      if constexpr (HIST > 0)
        hist[HIST - 1] = xv;
    }
    for (int j = 0; j < HIST; ++j)
      state[(long long)c * HIST + j] = hist[j];
  } else {
    // Block y is group y; its threads stride over the group's channels.
    int g0 = blockIdx.y * G;
    for (int c = g0 + threadIdx.x; c < g0 + G; c += blockDim.x) {
      float b = 0.0f;
      if constexpr (present<TB>)
        b = ld(bias, c);
      for (int t = 0; t < n; ++t) {
        float acc = b;
        for (int i = 0; i < G; ++i)
          for (int j = 0; j < K; ++j)
            acc += ld(w, ((long long)c * G + i) * K + j) *
                   conv1d_input<TX, TI, C, HIST>(x, initial, start, fresh, first, t - HIST + j, g0 + i);
        float xv = ld(x, (long long)(first + t) * C + c);
        st(y, (long long)(first + t) * C + c, scale * (RES ? act<A>(acc) + xv : act<A>(acc)));
      }
    }
    // Every thread of the group has read the input state before any overwrites it (the input
    // and output units may be one).
    constexpr int PER = 8; // channels a thread holds across the barrier, in rounds of PER
    for (int base = g0; base < g0 + G; base += PER * (int)blockDim.x) {
      float last[PER][HIST1];
      for (int k = 0; k < PER; ++k) {
        int c = base + k * (int)blockDim.x + threadIdx.x;
        for (int j = 0; j < HIST && c < g0 + G; ++j)
          last[k][j] = conv1d_input<TX, TI, C, HIST>(x, initial, start, fresh, first, n - HIST + j, c);
      }
      __syncthreads();
      for (int k = 0; k < PER; ++k) {
        int c = base + k * (int)blockDim.x + threadIdx.x;
        for (int j = 0; j < HIST && c < g0 + G; ++j)
          state[(long long)c * HIST + j] = last[k][j];
      }
      __syncthreads();
    }
  }
}

// Hashed n-gram embeddings (cbc.state.ngram_embed): one block per request, its threads over the
// request's rows. Context s of row t is the token s rows back (the state's ids before the step,
// EOS before a fresh request), or EOS once the walk back crosses an EOS; head g of the m-gram
// (m = 2 .. N) reads row (XOR_{s<m} c_s MULT[s]) mod PRIMES[g] + OFFSETS[g] of the table. The
// state keeps the last N - 1 ids (as fp32), written once every thread has read it.
template <class TT, class TY, int N, int HPN, int D, const long long *MULT, const long long *PRIMES,
          const long long *OFFSETS>
__device__ __forceinline__ void ngram_embed(const CbcArgs &a) {
  using S = slots::NgramEmbed;
  constexpr int H = N - 1, P = (N - 1) * HPN;
  const int *tokens = (const int *)a.p[S::Tokens];
  const TT *table = (const TT *)a.p[S::Table];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TY *y = (TY *)a.p[S::Out];
  long long eos = a.i[S::Eos];
  int r = blockIdx.x, first = cu[r], n = cu[r + 1] - cu[r];
  bool fresh = !has_initial[r];
  const float *start = pool + (long long)state_in[r] * H;
  auto id = [&](int m) -> long long { // row m of the request; m < 0: the state's (or EOS)
    if (m >= 0)
      return tokens[first + m];
    return fresh ? eos : (long long)start[H + m];
  };
  for (int t = threadIdx.x; t < n; t += blockDim.x) {
    long long ctx[N];
    bool crossed = false;
    ctx[0] = id(t);
    for (int s = 1; s < N; ++s) {
      crossed = crossed || (s > 1 && id(t - s + 1) == eos);
      ctx[s] = crossed ? eos : id(t - s);
    }
    unsigned long long mixed = (unsigned long long)ctx[0] * (unsigned long long)MULT[0];
    for (int m = 2; m <= N; ++m) {
      mixed ^= (unsigned long long)ctx[m - 1] * (unsigned long long)MULT[m - 1];
      for (int k = 0; k < HPN; ++k) {
        int g = (m - 2) * HPN + k;
        long long row = (long long)(mixed % (unsigned long long)PRIMES[g]) + OFFSETS[g];
        for (int d = 0; d < D; ++d)
          st(y, ((long long)(first + t) * P + g) * D + d, ld(table, row * D + d));
      }
    }
  }
  float last[H];
  for (int j = 0; j < H; ++j)
    last[j] = (float)id(n - H + j);
  __syncthreads(); // the input and output units may be one
  if (threadIdx.x == 0)
    for (int j = 0; j < H; ++j)
      pool[(long long)state_out[r] * H + j] = last[j];
}

// Each request's rows one row later: one thread per (request, channel) carries the previous
// input, starting from the state (or, for a fresh request, `initial`, TI void: zeros).
template <class TX, class TI, class TY, int C> __device__ __forceinline__ void shift(const CbcArgs &a) {
  using S = slots::Shift;
  const TX *x = (const TX *)a.p[S::X];
  const TI *initial = (const TI *)a.p[S::Initial];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TY *y = (TY *)a.p[S::Out];
  int r = blockIdx.x;
  int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C)
    return;
  float prev = has_initial[r] ? pool[(long long)state_in[r] * C + c] : ld_or_zero(initial, c);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    st(y, (long long)t * C + c, prev);
    prev = ld(x, (long long)t * C + c);
  }
  pool[(long long)state_out[r] * C + c] = prev;
}

// RWKV's WKV recurrence: one thread per (request, channel) walks the rows in fp32, from the
// request's numerator, denominator and exponent ([3][C] in its input unit; empty for a fresh
// request) to its output unit.
template <class TK, class TV, class TD, class TF, class TY, int C>
__device__ __forceinline__ void wkv(const CbcArgs &a) {
  using S = slots::Wkv;
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TY *y = (TY *)a.p[S::Out];
  int r = blockIdx.x;
  int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C)
    return;
  const float *in = pool + (long long)state_in[r] * 3 * C;
  bool fresh = !has_initial[r];
  float num = fresh ? 0.0f : in[c], den = fresh ? 0.0f : in[C + c], p = fresh ? -1e30f : in[2 * C + c];
  float w = -expf(ld((const TD *)a.p[S::TimeDecay], c)), u = ld((const TF *)a.p[S::TimeFirst], c);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    float kt = ld(k, (long long)t * C + c), vt = ld(v, (long long)t * C + c);
    float q = fmaxf(p, kt + u), e1 = expf(p - q), e2 = expf(kt + u - q);
    st(y, (long long)t * C + c, (e1 * num + e2 * vt) / (e1 * den + e2));
    float q2 = fmaxf(p + w, kt);
    e1 = expf(p + w - q2);
    e2 = expf(kt - q2);
    num = e1 * num + e2 * vt;
    den = e1 * den + e2;
    p = q2;
  }
  float *out = pool + (long long)state_out[r] * 3 * C;
  out[c] = num;
  out[C + c] = den;
  out[2 * C + c] = p;
}

// Griffin's RG-LRU: one thread per (request, channel) walks the rows in fp32 from the request's h
// (its input unit; a fresh request's first row takes its scaled input whole) to its output unit.
template <class TX, class TG, class TR, class TP, class TY, int C>
__device__ __forceinline__ void rg_lru(const CbcArgs &a) {
  using S = slots::RgLru;
  const TX *x = (const TX *)a.p[S::X];
  const TG *gx = (const TG *)a.p[S::InputGate];
  const TR *ga = (const TR *)a.p[S::RecurrentGate];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TY *y = (TY *)a.p[S::Out];
  int r = blockIdx.x;
  int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C)
    return;
  bool fresh = !has_initial[r];
  float h = fresh ? 0.0f : pool[(long long)state_in[r] * C + c];
  float p = ld((const TP *)a.p[S::Param], c), sp = p > 20.0f ? p : log1pf(expf(p));
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    long long i = (long long)t * C + c;
    bool reset = fresh && t == cu[r];
    float logA = -8.0f * sp / (1.0f + expf(-ld(ga, i)));
    float in = ld(x, i) / (1.0f + expf(-ld(gx, i)));
    float decay = reset ? 0.0f : expf(logA), scale = reset ? 1.0f : sqrtf(1.0f - expf(2.0f * logA));
    h = decay * h + in * scale;
    st(y, i, h);
  }
  pool[(long long)state_out[r] * C + c] = h;
}

} // namespace cbc

#endif
