// RMS norms: one block per normalised group (a whole row, or one head of it), the sum of
// squares reduced over the block in fp32.
#ifndef CBC_CODEGEN_CUDA_KERNELS_NORM_CUH
#define CBC_CODEGEN_CUDA_KERNELS_NORM_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// What a normalised feature is multiplied by: weight + offset, or 1 without a weight.
template <class TW> __device__ __forceinline__ float norm_weight(const TW *w, long long j, float offset) {
  if constexpr (present<TW>)
    return ld(w, j) + offset;
  else
    return 1.0f;
}

// What is added to a normalised feature: the bias, or 0 without one.
template <class TB> __device__ __forceinline__ float norm_bias(const TB *b, long long j) {
  if constexpr (present<TB>)
    return ld(b, j);
  else
    return 0.0f;
}

// Groups of G features; the grid has one block per (row, group). The weight holds one entry per
// feature of a group or, with RowGroups set (the groups per row), per feature of the row.
template <class TI, class TO, class TW, int G> __device__ __forceinline__ void rms_norm(const CbcArgs &a) {
  using S = slots::RmsNorm;
  __shared__ float scratch[32];
  const TI *x = (const TI *)a.p[S::X];
  TO *y = (TO *)a.p[S::Out];
  const TW *w = (const TW *)a.p[S::Weight];
  if constexpr (present<TW>)
    w += a.i[S::RowGroups] ? (long long)(blockIdx.x % a.i[S::RowGroups]) * G : 0;
  float eps = a.f[S::Eps], offset = a.f[S::Offset];
  long long base = (long long)blockIdx.x * G;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < G; j += blockDim.x) {
    float v = ld(x, base + j);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  float inv = rsqrtf(ss / (float)G + eps);
  for (int j = threadIdx.x; j < G; j += blockDim.x)
    st(y, base + j, ld(x, base + j) * inv * norm_weight(w, j, offset));
}

// Each group of G features, times scale (TS void: none), shortened to y * min(1, threshold /
// (|y| + eps)) in fp32: one block per group of a row of W.
template <class TI, class TS, class TO, int G, int W> __device__ __forceinline__ void l2_clip(const CbcArgs &a) {
  using S = slots::L2Clip;
  __shared__ float scratch[32];
  const TI *x = (const TI *)a.p[S::X];
  const TS *scale = (const TS *)a.p[S::Scale];
  TO *y = (TO *)a.p[S::Out];
  long long base = (long long)blockIdx.x * G;
  int col0 = (int)(base % W); // the group's first column in its row
  auto scaled = [&](int j) {
    float v = ld(x, base + j);
    if constexpr (present<TS>)
      v *= ld(scale, col0 + j);
    return v;
  };
  float ss = 0.0f;
  for (int j = threadIdx.x; j < G; j += blockDim.x) {
    float v = scaled(j);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  float factor = fminf(1.0f, a.f[S::Threshold] / (sqrtf(ss) + a.f[S::Eps]));
  for (int j = threadIdx.x; j < G; j += blockDim.x)
    st(y, base + j, scaled(j) * factor);
}

// The mean of the W features from base and their mean squared deviation from it, each reduced
// over the block in fp32 (one block per group).
struct Moments {
  float mean, var;
};
template <class TI, int W> __device__ __forceinline__ Moments group_moments(const TI *x, long long base, float *scratch) {
  float s = 0.0f;
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    s += ld(x, base + j);
  float mean = block_sum(s, scratch) / (float)W;
  __syncthreads();
  float ss = 0.0f;
  for (int j = threadIdx.x; j < W; j += blockDim.x) {
    float d = ld(x, base + j) - mean;
    ss += d * d;
  }
  return {mean, block_sum(ss, scratch) / (float)W};
}

// LayerNorm of groups of W features (the mean, then the biased variance, both reduced in fp32),
// with an optional weight + offset and bias, one entry per feature of a group or, with
// RowGroups set (the groups per row), per feature of the row; one block per group.
template <class TI, class TO, class TW, class TB, int W> __device__ __forceinline__ void layer_norm(const CbcArgs &a) {
  using S = slots::LayerNorm;
  __shared__ float scratch[32];
  const TI *x = (const TI *)a.p[S::X];
  TO *y = (TO *)a.p[S::Out];
  const long long wo = a.i[S::RowGroups] ? (long long)(blockIdx.x % a.i[S::RowGroups]) * W : 0;
  const TW *w = (const TW *)a.p[S::Weight];
  const TB *b = (const TB *)a.p[S::Bias];
  if constexpr (present<TW>)
    w += wo;
  if constexpr (present<TB>)
    b += wo;
  float offset = a.f[S::Offset];
  long long base = (long long)blockIdx.x * W;
  Moments m = group_moments<TI, W>(x, base, scratch);
  float inv = rsqrtf(m.var + a.f[S::Eps]);
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    st(y, base + j, (ld(x, base + j) - m.mean) * inv * norm_weight(w, j, offset) + norm_bias(b, j));
}

// act(scale * a_g . b_g) per group g of D features: one warp per (row, group), the dot reduced in
// fp32 (cbc.math.group_dot).
template <class TA, class TB, class TO, int NG, int D, Act A> __device__ __forceinline__ void group_dot(const CbcArgs &a) {
  using S = slots::GroupDot;
  const TA *x = (const TA *)a.p[S::A];
  const TB *z = (const TB *)a.p[S::B];
  TO *y = (TO *)a.p[S::Out];
  long long g = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (g >= a.i[S::Rows] * NG)
    return;
  float acc = 0.0f;
  for (int i = threadIdx.x % 32; i < D; i += 32)
    acc += ld(x, g * D + i) * ld(z, g * D + i);
  for (int off = 16; off > 0; off /= 2)
    acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (threadIdx.x % 32 == 0)
    st(y, g, act<A>(a.f[S::Scale] * acc));
}

// Per-row int8 fake quantisation (absmax, the activations of ternary linear layers): one block
// per row of W.
template <class TI, class TO, int W> __device__ __forceinline__ void act_quant(const CbcArgs &a) {
  using S = slots::ActQuant;
  __shared__ float scratch[32];
  const TI *x = (const TI *)a.p[S::X];
  TO *y = (TO *)a.p[S::Out];
  long long base = (long long)blockIdx.x * W;
  float m = 0.0f;
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    m = fmaxf(m, fabsf(ld(x, base + j)));
  float scale = 127.0f / fmaxf(block_max(m, scratch), 1e-5f); // IEEE division: NVRTC runs without fast math
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    st(y, base + j, fminf(fmaxf(rintf(ld(x, base + j) * scale), -128.0f), 127.0f) / scale);
}

// x * rms(ref) / sqrt(max(mean(x^2), floor)) over rows of W (ref: rows of RW), one block a row.
template <class TX, class TR, class TO, int W, int RW> __device__ __forceinline__ void match_rms(const CbcArgs &a) {
  using S = slots::MatchRms;
  __shared__ float scratch[32];
  const TX *x = (const TX *)a.p[S::X];
  const TR *ref = (const TR *)a.p[S::Ref];
  TO *y = (TO *)a.p[S::Out];
  long long base = (long long)blockIdx.x * W, rbase = (long long)blockIdx.x * RW;
  float xs = 0.0f, rs = 0.0f;
  for (int j = threadIdx.x; j < W; j += blockDim.x) {
    float v = ld(x, base + j);
    xs += v * v;
  }
  xs = block_sum(xs, scratch);
  __syncthreads();
  for (int j = threadIdx.x; j < RW; j += blockDim.x) {
    float v = ld(ref, rbase + j);
    rs += v * v;
  }
  rs = block_sum(rs, scratch);
  float factor = sqrtf(rs / (float)RW) / sqrtf(fmaxf(xs / (float)W, a.f[S::Floor]));
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    st(y, base + j, ld(x, base + j) * factor);
}

// max(x - mean - multiplier * std, 0) over rows of W (the population std), one block a row.
template <class TX, class TO, int W> __device__ __forceinline__ void gaussian_topk(const CbcArgs &a) {
  using S = slots::GaussianTopk;
  __shared__ float scratch[32];
  const TX *x = (const TX *)a.p[S::X];
  TO *y = (TO *)a.p[S::Out];
  long long base = (long long)blockIdx.x * W;
  Moments m = group_moments<TX, W>(x, base, scratch);
  float cutoff = m.mean + sqrtf(m.var) * a.f[S::Multiplier];
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    st(y, base + j, fmaxf(ld(x, base + j) - cutoff, 0.0f));
}

// The residual add and the norm of the sum in one pass over rows of W.
template <class TA, class TB, class TS, class TN, class TW, int W>
__device__ __forceinline__ void add_rms_norm(const CbcArgs &a) {
  using S = slots::AddRmsNorm;
  __shared__ float scratch[32];
  const TA *x0 = (const TA *)a.p[S::Lhs];
  const TB *x1 = (const TB *)a.p[S::Rhs];
  TS *sum = (TS *)a.p[S::Sum];
  TN *y = (TN *)a.p[S::Normed];
  const TW *w = (const TW *)a.p[S::Weight];
  float eps = a.f[S::Eps], offset = a.f[S::Offset];
  long long base = (long long)blockIdx.x * W;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < W; j += blockDim.x) {
    float v = ld(x0, base + j) + ld(x1, base + j);
    st(sum, base + j, v);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  float inv = rsqrtf(ss / (float)W + eps);
  for (int j = threadIdx.x; j < W; j += blockDim.x) {
    float v = ld(x0, base + j) + ld(x1, base + j);
    st(y, base + j, v * inv * norm_weight(w, j, offset));
  }
}

// A norm and an activated gate z over groups of G features. The weight has G entries, or with
// W_ROW > 0 one per feature of a row of W_ROW.
template <class TI, class TZ, class TO, class TW, int G, int W_ROW, Act A, GateOrder O>
__device__ __forceinline__ void rms_norm_gated(const CbcArgs &a) {
  using S = slots::RmsNormGated;
  constexpr bool normFirst = O == GateOrder::norm_gate;
  __shared__ float scratch[32];
  const TI *x = (const TI *)a.p[S::X];
  const TZ *z = (const TZ *)a.p[S::Z];
  TO *y = (TO *)a.p[S::Out];
  const TW *w = (const TW *)a.p[S::Weight];
  float eps = a.f[S::Eps], offset = a.f[S::Offset];
  long long base = (long long)blockIdx.x * G;
  long long wbase = 0;
  if constexpr (W_ROW > 0)
    wbase = base % W_ROW;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < G; j += blockDim.x) {
    float gz = ld(z, base + j);
    float v = normFirst ? ld(x, base + j) : ld(x, base + j) * act<A>(gz);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  float inv = rsqrtf(ss / (float)G + eps);
  for (int j = threadIdx.x; j < G; j += blockDim.x) {
    float gz = ld(z, base + j);
    float v = normFirst ? ld(x, base + j) : ld(x, base + j) * act<A>(gz);
    float n = v * inv * norm_weight(w, wbase + j, offset);
    st(y, base + j, normFirst ? n * act<A>(gz) : n);
  }
}

} // namespace cbc

#endif
