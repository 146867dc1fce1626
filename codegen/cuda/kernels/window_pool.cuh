// Softmax-gated pooling of windows of R tokens into compressed entries (cbc.state.window_pool):
// one block per request walks its rows in order, each thread its features. Each row joins the
// open window's running softmax (the request's state); the row closing a window writes the
// window's entry (per feature, the softmax over the slots of the gates weighing the kvs),
// RMS-normed and rotated at the window's first position, and the other rows write zeros.
#ifndef CBC_CODEGEN_CUDA_KERNELS_WINDOW_POOL_CUH
#define CBC_CODEGEN_CUDA_KERNELS_WINDOW_POOL_CUH

#include "codegen/cuda/kernels/prelude.cuh"
#include "codegen/cuda/kernels/rope.cuh"

namespace cbc {

// The running softmax of one feature over the slots pooled so far: the largest logit m, the sum
// l of exp(g - m) and the kv weighted by them (a zero accumulator is empty whatever its m).
__device__ __forceinline__ void pool_add(float *acc, int f, int D, float kv, float logit) {
  float m = acc[f], mn = fmaxf(m, logit), c = expf(m - mn), e = expf(logit - mn);
  acc[D + f] = acc[D + f] * c + e;
  acc[2 * D + f] = acc[2 * D + f] * c + e * kv;
  acc[f] = mn;
}

// OVERLAP: rows hold two halves (the next window's, then this window's) and an entry pools
// window w's second halves with window w - 1's first halves; the state then holds two running
// entries, the open window's and the next one's. TN: the norm's weight type (void: no norm);
// RD > 0: the RoPE of the entry over its features OFF .. OFF + RD.
template <class TX, class TA, class TN, class TY, int R, int D, bool OVERLAP, int RD, Pairing P, const float *FREQ,
          int OFF>
__device__ __forceinline__ void window_pool(const CbcArgs &a) {
  using S = slots::WindowPool;
  constexpr int SN = OVERLAP ? 2 : 1, SZ = SN * 3 * D;
  const TX *x = (const TX *)a.p[S::X];
  const TA *ape = (const TA *)a.p[S::Ape];
  const TN *norm = (const TN *)a.p[S::Norm];
  const int *positions = (const int *)a.p[S::Positions];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TY *y = (TY *)a.p[S::Out];
  int r = blockIdx.x, first = cu[r], n = cu[r + 1] - cu[r];
  const float *start = pool + (long long)state_in[r] * SZ;
  float *state = pool + (long long)state_out[r] * SZ;
  for (int i = threadIdx.x; i < SZ; i += blockDim.x)
    state[i] = has_initial[r] ? start[i] : 0.0f;
  __syncthreads(); // from here each thread touches its own features only
  float *cur = state, *next = state + 3 * D;
  __shared__ float entry[D];
  __shared__ float partial[32];
  for (int t = 0; t < n; ++t) {
    long long row = first + t;
    int pos = positions[row], s = pos % R, w = pos / R;
    const long long base = row * 2 * SN * D;
    for (int f = threadIdx.x; f < D; f += blockDim.x) {
      int own = (SN - 1) * D + f; // the window's own half
      pool_add(cur, f, D, ld(x, base + own), ld(x, base + SN * D + own) + ld(ape, (long long)s * SN * D + own));
      if constexpr (OVERLAP)
        pool_add(next, f, D, ld(x, base + f), ld(x, base + SN * D + f) + ld(ape, (long long)s * SN * D + f));
    }
    if (s != R - 1) { // the whole block takes the same branch
      for (int f = threadIdx.x; f < D; f += blockDim.x)
        st(y, row * D + f, 0.0f);
      continue;
    }
    float ss = 0.0f;
    for (int f = threadIdx.x; f < D; f += blockDim.x) {
      entry[f] = cur[2 * D + f] / cur[D + f];
      ss += entry[f] * entry[f];
      // This window is done: the next entry (already holding its first halves) takes over.
      cur[f] = OVERLAP ? next[f] : 0.0f;
      cur[D + f] = OVERLAP ? next[D + f] : 0.0f;
      cur[2 * D + f] = OVERLAP ? next[2 * D + f] : 0.0f;
      if constexpr (OVERLAP)
        next[f] = next[D + f] = next[2 * D + f] = 0.0f;
    }
    if constexpr (present<TN>) {
      ss = warp_sum(ss);
      if ((threadIdx.x & 31) == 0)
        partial[threadIdx.x / 32] = ss;
      __syncthreads();
      float total = 0.0f;
      for (int i = 0; i < (int)(blockDim.x + 31) / 32; ++i)
        total += partial[i];
      float inv = rsqrtf(total / (float)D + a.f[S::Eps]);
      for (int f = threadIdx.x; f < D; f += blockDim.x)
        entry[f] = entry[f] * inv * ld(norm, f);
    }
    __syncthreads();
    if constexpr (RD > 0) {
      RopeScalars rs = rope_scalars<S>(a);
      for (int i = threadIdx.x; i < RD / 2; i += blockDim.x) {
        RopeAngle ang = rope_angle<RD, P, FREQ, nullptr, 0, false, 0>(P == Pairing::interleaved ? 2 * i : i, w * R,
                                                                     pos + 1, rs);
        float x1 = entry[OFF + ang.first], x2 = entry[OFF + ang.second];
        entry[OFF + ang.first] = rope_rotate(ang, ang.first, x1, x2);
        entry[OFF + ang.second] = rope_rotate(ang, ang.second, x1, x2);
      }
      __syncthreads();
    }
    for (int f = threadIdx.x; f < D; f += blockDim.x)
      st(y, row * D + f, entry[f]);
    __syncthreads(); // entry and partial are reused by the next window
  }
}

} // namespace cbc

#endif
