// Softmax-gated pooling of windows of R tokens into compressed entries (cbc.state.window_pool):
// one block per request walks its rows in order. Each row's [kv | gate + ape] goes to its slot
// of the open window (the request's state); the row closing a window writes the window's entry
// (per feature, the softmax over the slots of the gates weighing the kvs), RMS-normed and
// rotated at the window's first position, and the other rows write zeros.
#ifndef CBC_CODEGEN_CUDA_KERNELS_WINDOW_POOL_CUH
#define CBC_CODEGEN_CUDA_KERNELS_WINDOW_POOL_CUH

#include "codegen/cuda/kernels/prelude.cuh"
#include "codegen/cuda/kernels/rope.cuh"

namespace cbc {

// OVERLAP: rows hold two halves (the next window's, then this window's) and an entry pools
// window w's second halves with window w - 1's first halves; the state is then [previous first
// halves | open second halves | open first halves], R slots of 2D each. TN: the norm's weight
// type (void: no norm); RD > 0: the RoPE of the entry over its features OFF .. OFF + RD.
template <class TX, class TA, class TN, class TY, int R, int D, bool OVERLAP, int RD, Pairing P, const float *FREQ,
          int OFF>
__device__ __forceinline__ void window_pool(const CbcArgs &a) {
  using S = slots::WindowPool;
  constexpr int SN = OVERLAP ? 2 : 1, SZ = (OVERLAP ? 3 : 1) * R * 2 * D;
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
  if (start != state || !has_initial[r])
    for (int i = threadIdx.x; i < SZ; i += blockDim.x)
      state[i] = has_initial[r] ? start[i] : 0.0f;
  __syncthreads();
  float *prevA = state, *curB = state + (OVERLAP ? R : 0) * 2 * D, *curA = state + 2 * R * 2 * D;
  __shared__ float entry[D];
  __shared__ float partial[32];
  for (int t = 0; t < n; ++t) {
    long long row = first + t;
    int pos = positions[row], s = pos % R, w = pos / R;
    for (int f = threadIdx.x; f < D; f += blockDim.x)
      for (int h = 0; h < SN; ++h) { // h 0: the first half (with overlap), else the window's own
        bool own = !OVERLAP || h == 1;
        float *slot = (own ? curB : curA) + s * 2 * D;
        int col = h * D + f;
        slot[f] = ld(x, row * 2 * SN * D + col);
        slot[D + f] = ld(x, row * 2 * SN * D + SN * D + col) + ld(ape, (long long)s * SN * D + col);
      }
    __syncthreads();
    if (s != R - 1) { // the whole block takes the same branch
      for (int f = threadIdx.x; f < D; f += blockDim.x)
        st(y, row * D + f, 0.0f);
      continue;
    }
    bool previous = OVERLAP && w > 0;
    float ss = 0.0f;
    for (int f = threadIdx.x; f < D; f += blockDim.x) {
      float m = -INFINITY;
      for (int j = 0; j < R; ++j) {
        m = fmaxf(m, curB[j * 2 * D + D + f]);
        if (previous)
          m = fmaxf(m, prevA[j * 2 * D + D + f]);
      }
      float sum = 0.0f, acc = 0.0f;
      for (int j = 0; j < R; ++j) {
        float e = expf(curB[j * 2 * D + D + f] - m);
        sum += e;
        acc += e * curB[j * 2 * D + f];
        if (previous) {
          float e2 = expf(prevA[j * 2 * D + D + f] - m);
          sum += e2;
          acc += e2 * prevA[j * 2 * D + f];
        }
      }
      entry[f] = acc / sum;
      ss += entry[f] * entry[f];
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
    if constexpr (OVERLAP) // the open window's first halves are the next entry's previous ones
      for (int i = threadIdx.x; i < R * 2 * D; i += blockDim.x)
        prevA[i] = curA[i];
    __syncthreads();
  }
}

} // namespace cbc

#endif
