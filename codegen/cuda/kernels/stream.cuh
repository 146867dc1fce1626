// Residual-stream kernels (cbc.stream.*): N streams of H side by side in each row.
#ifndef CBC_CODEGEN_CUDA_KERNELS_STREAM_CUH
#define CBC_CODEGEN_CUDA_KERNELS_STREAM_CUH

#include "codegen/cuda/kernels/elementwise.cuh"

namespace cbc {

// A hyper-connection's coefficients, one thread per token: KIND 0 pre, 1 pre and post, 2 pre,
// post and comb (softmax per row, then Sinkhorn: columns, then ITERS - 1 rounds of rows and
// columns, each sum plus eps).
template <class TM, class TB, class TS, class TO, int N, int KIND, int ITERS>
__device__ __forceinline__ void hc_weights(const CbcArgs &a) {
  using S = slots::HcWeights;
  constexpr int W = KIND == 0 ? N : KIND == 1 ? 2 * N : (2 + N) * N;
  const TM *mixes = (const TM *)a.p[S::Mixes];
  const TB *base = (const TB *)a.p[S::Base];
  const TS *scale = (const TS *)a.p[S::Scale];
  TO *out = (TO *)a.p[S::Out];
  float eps = a.f[S::Eps];
  for_element<1>(a.i[S::Rows], [&](long long t, long long, long long) {
    long long m = t * W;
    for (int n = 0; n < N; ++n)
      st(out, m + n, 1.0f / (1.0f + expf(-(ld(mixes, m + n) * ld(scale, 0) + ld(base, n)))) + eps);
    if constexpr (KIND >= 1)
      for (int n = N; n < 2 * N; ++n)
        st(out, m + n,
           a.f[S::Magnitude] / (1.0f + expf(-(ld(mixes, m + n) * ld(scale, 1) + ld(base, n)))) + a.f[S::PostEps]);
    if constexpr (KIND == 2) {
      float c[N * N];
      for (int j = 0; j < N; ++j) {
        float mx = -INFINITY, sum = 0.0f;
        for (int k = 0; k < N; ++k) {
          c[j * N + k] = ld(mixes, m + 2 * N + j * N + k) * ld(scale, 2) + ld(base, 2 * N + j * N + k);
          mx = fmaxf(mx, c[j * N + k]);
        }
        for (int k = 0; k < N; ++k)
          sum += (c[j * N + k] = expf(c[j * N + k] - mx));
        for (int k = 0; k < N; ++k)
          c[j * N + k] = c[j * N + k] / sum + eps;
      }
      auto normalise = [&](bool columns) {
        for (int x = 0; x < N; ++x) {
          float sum = 0.0f;
          for (int y = 0; y < N; ++y)
            sum += columns ? c[y * N + x] : c[x * N + y];
          for (int y = 0; y < N; ++y)
            (columns ? c[y * N + x] : c[x * N + y]) /= sum + eps;
        }
      };
      normalise(true);
      for (int i = 1; i < ITERS; ++i) {
        normalise(false);
        normalise(true);
      }
      for (int i = 0; i < N * N; ++i)
        st(out, m + 2 * N + i, c[i]);
    }
  });
}

// sum_n w[t, OFF + n] * streams[t, n], or (TW void) the streams' mean: one thread per output
// element.
template <class TS, class TW, class TO, int N, int H, int WW, int OFF>
__device__ __forceinline__ void stream_collapse(const CbcArgs &a) {
  using S = slots::StreamCollapse;
  const TS *streams = (const TS *)a.p[S::Streams];
  const TW *w = (const TW *)a.p[S::Weights];
  TO *y = (TO *)a.p[S::Out];
  for_element<H>(a.i[S::Rows], [&](long long i, long long t, long long j) {
    float acc = 0.0f;
    for (int n = 0; n < N; ++n) {
      if constexpr (present<TW>)
        acc += ld(w, t * WW + OFF + n) * ld(streams, t * N * H + n * H + j);
      else
        acc += ld(streams, t * N * H + n * H + j);
    }
    if constexpr (present<TW>)
      st(y, i, acc);
    else
      st(y, i, acc / (float)N);
  });
}

// w[t, OFF + k] * block[t] + (COMB ? sum_i comb[i, k] streams[t, i] : streams[t, k]).
template <class TB, class TS, class TW, class TO, int N, int H, int WW, int OFF, bool COMB>
__device__ __forceinline__ void stream_expand(const CbcArgs &a) {
  using S = slots::StreamExpand;
  const TB *block = (const TB *)a.p[S::Block];
  const TS *streams = (const TS *)a.p[S::Streams];
  const TW *w = (const TW *)a.p[S::Weights];
  TO *y = (TO *)a.p[S::Out];
  for_element<N * H>(a.i[S::Rows], [&](long long i, long long t, long long c) {
    int k = (int)(c / H), j = (int)(c % H);
    long long row = t * WW + OFF;
    float residual = 0.0f;
    if constexpr (COMB)
      for (int n = 0; n < N; ++n)
        residual += ld(w, row + N + n * N + k) * ld(streams, t * N * H + n * H + j);
    else
      residual = ld(streams, i);
    st(y, i, ld(w, row + k) * ld(block, t * H + j) + residual);
  });
}

// Q learned queries [Q, H] attend over the N weightlessly RMS-normed sources [N * H] of a token,
// one block per token: softmax_i(query_q . n_i / sqrt(H)) weighs the normed sources, in fp32.
template <class TS, class TQ, class TO, int N, int H, int Q>
__device__ __forceinline__ void stream_attend(const CbcArgs &a) {
  using S = slots::StreamAttend;
  __shared__ float scratch[32];
  __shared__ float inv[N], weight[N];
  const TS *src = (const TS *)a.p[S::Sources];
  const TQ *query = (const TQ *)a.p[S::Query];
  TO *y = (TO *)a.p[S::Out];
  long long base = (long long)blockIdx.x * N * H;
  for (int i = 0; i < N; ++i) {
    float ss = 0.0f;
    for (int j = threadIdx.x; j < H; j += blockDim.x) {
      float v = ld(src, base + i * H + j);
      ss += v * v;
    }
    ss = block_sum(ss, scratch);
    if (threadIdx.x == 0)
      inv[i] = rsqrtf(ss / (float)H + a.f[S::Eps]);
    __syncthreads();
  }
  for (int q = 0; q < Q; ++q) {
    for (int i = 0; i < N; ++i) {
      float dot = 0.0f;
      for (int j = threadIdx.x; j < H; j += blockDim.x)
        dot += ld(query, (long long)q * H + j) * ld(src, base + i * H + j);
      dot = block_sum(dot, scratch);
      if (threadIdx.x == 0)
        weight[i] = dot * inv[i] * rsqrtf((float)H);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      float best = weight[0], total = 0.0f;
      for (int i = 1; i < N; ++i)
        best = fmaxf(best, weight[i]);
      for (int i = 0; i < N; ++i)
        total += weight[i] = expf(weight[i] - best);
      for (int i = 0; i < N; ++i)
        weight[i] = weight[i] / total * inv[i];
    }
    __syncthreads();
    for (int j = threadIdx.x; j < H; j += blockDim.x) {
      float acc = 0.0f;
      for (int i = 0; i < N; ++i)
        acc += weight[i] * ld(src, base + i * H + j);
      st(y, ((long long)blockIdx.x * Q + q) * H + j, acc);
    }
    __syncthreads();
  }
}

} // namespace cbc

#endif // CBC_CODEGEN_CUDA_KERNELS_STREAM_CUH
