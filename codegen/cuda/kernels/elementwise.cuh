// Elementwise kernels over rows of W columns: one thread per output element, the row count
// in the `Rows` slot.
#ifndef CBC_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH
#define CBC_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// Calls f(i, r, c) for this thread's element i = r * W + c, if there is one.
template <int W, class F> __device__ __forceinline__ void for_element(long long rows, F f) {
  long long n = rows * (long long)W;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  f(i, i / W, i % W);
}

// lhs + rhs; with ROW > 0, rhs is a weight of ROW entries added to every row, each entry to its
// W / ROW consecutive columns.
template <class TA, class TB, class TY, int W, int ROW> __device__ __forceinline__ void add(const CbcArgs &a) {
  using S = slots::Add;
  const TA *x0 = (const TA *)a.p[S::Lhs];
  const TB *x1 = (const TB *)a.p[S::Rhs];
  TY *y = (TY *)a.p[S::Out];
  for_element<W>(a.i[S::Rows], [&](long long i, long long, long long c) {
    st(y, i, ld(x0, i) + ld(x1, ROW ? c / (W / (ROW ? ROW : 1)) : i));
  });
}

// scale * act(x).
template <class TX, class TY, int W, Act A> __device__ __forceinline__ void activation(const CbcArgs &a) {
  using S = slots::Act;
  const TX *x = (const TX *)a.p[S::X];
  TY *y = (TY *)a.p[S::Out];
  float scale = a.f[S::Scale];
  for_element<W>(a.i[S::Rows], [&](long long i, long long, long long) { st(y, i, scale * act<A>(ld(x, i))); });
}

// x * f(pos + OFFSET) per row's position, FORM as cbc::PositionScaleForm numbers it: 0 is
// 1 + beta * log(1 + floor(n / PERIOD)), 1 is 1 + beta * log(max(n / PERIOD, 1)) and 2 is
// (1 + n / PERIOD) ^ beta as exp(beta * log1p(n / PERIOD)), the last two in real division.
template <class TX, class TY, int W, long long PERIOD, long long OFFSET, int FORM = 0>
__device__ __forceinline__ void position_scale(const CbcArgs &a) {
  using S = slots::PositionScale;
  const TX *x = (const TX *)a.p[S::X];
  const int *positions = (const int *)a.p[S::Positions];
  TY *y = (TY *)a.p[S::Out];
  float beta = a.f[S::Beta];
  for_element<W>(a.i[S::Rows], [&](long long i, long long r, long long) {
    long long n = positions[r] + OFFSET;
    float f = FORM == 1   ? 1.0f + beta * logf(fmaxf((float)n / (float)PERIOD, 1.0f))
              : FORM == 2 ? expf(beta * log1pf((float)n / (float)PERIOD))
                          : 1.0f + beta * logf(1.0f + (float)(n / PERIOD));
    st(y, i, ld(x, i) * f);
  });
}

// x * (scale[h] * log(1 + pos) + bias[h]) for the N heads of W / N columns of each row.
template <class TX, class TS, class TY, int W, int N>
__device__ __forceinline__ void head_position_scale(const CbcArgs &a) {
  using S = slots::HeadPositionScale;
  const TX *x = (const TX *)a.p[S::X];
  const int *positions = (const int *)a.p[S::Positions];
  const TS *scale = (const TS *)a.p[S::Scale], *bias = (const TS *)a.p[S::Bias];
  TY *y = (TY *)a.p[S::Out];
  for_element<W>(a.i[S::Rows], [&](long long i, long long r, long long c) {
    int h = (int)(c / (W / N));
    st(y, i, ld(x, i) * (ld(scale, h) * logf((float)positions[r] + 1.0f) + ld(bias, h)));
  });
}

// Sinusoidal positions: sin | cos of n * exp(i * step) with n = position + OFFSET, a zero last
// column when W is odd, a zero row for n == PAD (PAD < 0: none); with POWER the frequencies are
// 1 / base ^ (2i / W) instead (the slot Step holds the base).
template <class TY, int W, long long OFFSET, long long PAD, bool POWER = false>
__device__ __forceinline__ void sinusoidal_position(const CbcArgs &a) {
  using S = slots::SinusoidalPosition;
  constexpr int H = W / 2;
  const int *positions = (const int *)a.p[S::Positions];
  TY *y = (TY *)a.p[S::Out];
  float step = a.f[S::Step];
  for_element<W>(a.i[S::Rows], [&](long long i, long long r, long long c) {
    long long n = positions[r] + OFFSET;
    float v = 0.0f;
    if (n != PAD && c < 2 * H) {
      int k = (int)(c < H ? c : c - H);
      float f = POWER ? 1.0f / powf(step, (float)(2 * k) / (float)W) : expf((float)k * step);
      float q = (float)n * f;
      v = c < H ? sinf(q) : cosf(q);
    }
    st(y, i, v);
  });
}

template <class TX, class TY, int W> __device__ __forceinline__ void softcap(const CbcArgs &a) {
  using S = slots::Softcap;
  const TX *x = (const TX *)a.p[S::X];
  TY *y = (TY *)a.p[S::Out];
  float cap = a.f[S::Cap];
  for_element<W>(a.i[S::Rows], [&](long long i, long long, long long) { st(y, i, cap * tanhf(ld(x, i) / cap)); });
}

// Heads of D features, each followed by P more: the head's extra value (TE void: Value), then zeros.
template <class TX, class TE, class TY, int HEADS, int D, int P> __device__ __forceinline__ void head_pad(const CbcArgs &a) {
  using S = slots::HeadPad;
  const TX *x = (const TX *)a.p[S::X];
  const TE *extra = (const TE *)a.p[S::Extra];
  TY *y = (TY *)a.p[S::Out];
  for_element<HEADS *(D + P)>(a.i[S::Rows], [&](long long i, long long r, long long c) {
    long long h = c / (D + P), j = c % (D + P);
    float v = 0.0f;
    if (j < D)
      v = ld(x, r * HEADS * D + h * D + j);
    else if (j == D) {
      if constexpr (present<TE>)
        v = ld(extra, r * HEADS + h);
      else
        v = a.f[S::Value];
    }
    st(y, i, v);
  });
}

template <class TX, class TY, int W> __device__ __forceinline__ void clamp(const CbcArgs &a) {
  using S = slots::Clamp;
  const TX *x = (const TX *)a.p[S::X];
  TY *y = (TY *)a.p[S::Out];
  float limit = a.f[S::Limit];
  for_element<W>(a.i[S::Rows], [&](long long i, long long, long long) { st(y, i, fminf(fmaxf(ld(x, i), -limit), limit)); });
}

// xIELU with its four one-element parameters (TP: their type).
template <class TX, class TP, class TY, int W> __device__ __forceinline__ void xielu(const CbcArgs &a) {
  using S = slots::Xielu;
  const TX *x = (const TX *)a.p[S::X];
  TY *y = (TY *)a.p[S::Out];
  float beta = ld((const TP *)a.p[S::Beta], 0), eps = ld((const TP *)a.p[S::Eps], 0);
  float ap = act_softplus(ld((const TP *)a.p[S::AlphaP], 0));
  float an = beta + act_softplus(ld((const TP *)a.p[S::AlphaN], 0));
  for_element<W>(a.i[S::Rows], [&](long long i, long long, long long) {
    float v = ld(x, i);
    st(y, i, v > 0.0f ? ap * v * v + beta * v : (expm1f(fminf(v, eps)) - v) * an + beta * v);
  });
}

// Differential attention's combination over rows of 2W: x[:W] - lambda x[W:], lambda from the four
// learned vectors of D (TL: their type), recomputed by each thread (4D products, beside a GEMM's).
template <class TX, class TL, class TY, int W, int D> __device__ __forceinline__ void diff_heads(const CbcArgs &a) {
  using S = slots::DiffHeads;
  const TX *x = (const TX *)a.p[S::X];
  TY *y = (TY *)a.p[S::Out];
  auto dot = [&](int p, int q) {
    float s = 0.0f;
    for (int j = 0; j < D; ++j)
      s += ld((const TL *)a.p[p], j) * ld((const TL *)a.p[q], j);
    return s;
  };
  float lambda = expf(dot(S::Q1, S::K1)) - expf(dot(S::Q2, S::K2)) + a.f[S::LambdaInit];
  for_element<W>(a.i[S::Rows], [&](long long i, long long r, long long c) {
    st(y, i, ld(x, r * 2 * W + c) - lambda * ld(x, r * 2 * W + W + c));
  });
}

// x * sigmoid(g), g of GW columns, one per W / GW columns of x.
template <class TX, class TG, class TY, int W, int GW> __device__ __forceinline__ void gate(const CbcArgs &a) {
  using S = slots::Gate;
  const TX *x = (const TX *)a.p[S::X];
  const TG *g = (const TG *)a.p[S::G];
  TY *y = (TY *)a.p[S::Out];
  for_element<W>(a.i[S::Rows], [&](long long i, long long r, long long c) {
    st(y, i, ld(x, i) / (1.0f + expf(-ld(g, r * GW + c / (W / GW)))));
  });
}

// x * g, g of GW columns, one per W / GW columns of x.
template <class TX, class TG, class TY, int W, int GW> __device__ __forceinline__ void mul(const CbcArgs &a) {
  using S = slots::Mul;
  const TX *x = (const TX *)a.p[S::X];
  const TG *g = (const TG *)a.p[S::G];
  TY *y = (TY *)a.p[S::Out];
  for_element<W>(a.i[S::Rows],
                 [&](long long i, long long r, long long c) { st(y, i, ld(x, i) * ld(g, r * GW + c / (W / GW))); });
}

// x * g for a weight g of N entries on every row, each on W / N consecutive columns (N = 1: a
// learned scalar).
template <class TX, class TG, class TY, int W, int N> __device__ __forceinline__ void mul_weight(const CbcArgs &a) {
  using S = slots::Mul;
  const TX *x = (const TX *)a.p[S::X];
  const TG *g = (const TG *)a.p[S::G];
  TY *y = (TY *)a.p[S::Out];
  for_element<W>(a.i[S::Rows], [&](long long i, long long, long long c) { st(y, i, ld(x, i) * ld(g, c / (W / N))); });
}

// A GLU over rows of 2I: gate and up as halves or interleaved columns.
template <class TX, class TY, int I, Glu L, Unit U, Act A> __device__ __forceinline__ void glu(const CbcArgs &a) {
  using S = slots::Glu;
  const TX *x = (const TX *)a.p[S::X];
  TY *y = (TY *)a.p[S::Out];
  float limit = a.f[S::Limit], alpha = a.f[S::Alpha], offset = a.f[S::UpOffset];
  for_element<I>(a.i[S::Rows], [&](long long i, long long r, long long c) {
    constexpr bool inter = L == Glu::interleaved;
    float g = inter ? ld(x, r * (2 * I) + 2 * c) : ld(x, r * (2 * I) + c);
    float u = inter ? ld(x, r * (2 * I) + 2 * c + 1) : ld(x, r * (2 * I) + I + c);
    st(y, i, glu_unit<U, A>(g, u, limit, alpha, offset));
  });
}

// A part of a split or a concat: its element type and its width.
template <class T, int W> struct col {
  using type = T;
  static constexpr int width = W;
};

// Stores v, column c of row r, into the part that holds column c; the parts start at COL.
template <int COL, class Part, class... Rest>
__device__ __forceinline__ void split_store(const CbcArgs &a, int slot, long long r, long long c, float v) {
  constexpr int w = Part::width;
  if (c >= COL && c < COL + w)
    st((typename Part::type *)a.p[slot], r * w + (c - COL), v);
  if constexpr (sizeof...(Rest) > 0)
    split_store<COL + w, Rest...>(a, slot + 1, r, c, v);
}

template <class TX, int W, class... Parts> __device__ __forceinline__ void split(const CbcArgs &a) {
  using S = slots::Split;
  const TX *x = (const TX *)a.p[S::X];
  for_element<W>(a.i[S::Rows],
                 [&](long long i, long long r, long long c) { split_store<0, Parts...>(a, S::Parts, r, c, ld(x, i)); });
}

// Loads column c of row r from the part that holds it into v; the parts start at COL.
template <int COL, class Part, class... Rest>
__device__ __forceinline__ void concat_load(const CbcArgs &a, int slot, long long r, long long c, float &v) {
  constexpr int w = Part::width;
  if (c >= COL && c < COL + w)
    v = ld((const typename Part::type *)a.p[slot], r * w + (c - COL));
  if constexpr (sizeof...(Rest) > 0)
    concat_load<COL + w, Rest...>(a, slot + 1, r, c, v);
}

template <class TY, int W, class... Parts> __device__ __forceinline__ void concat(const CbcArgs &a) {
  using S = slots::Concat;
  TY *y = (TY *)a.p[S::Out];
  for_element<W>(a.i[S::Rows], [&](long long i, long long r, long long c) {
    float v = 0.0f;
    concat_load<0, Parts...>(a, S::Parts, r, c, v);
    st(y, i, v);
  });
}

} // namespace cbc

#endif
