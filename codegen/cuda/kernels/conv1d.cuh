// The causal depthwise convolution over each request's rows: one thread per (request,
// channel) walks the rows in order with the K - 1 carried inputs in registers, starting from
// the request's state (its input unit) and leaving the last K - 1 inputs in its output unit.
#ifndef CBC_CODEGEN_CUDA_KERNELS_CONV1D_CUH
#define CBC_CODEGEN_CUDA_KERNELS_CONV1D_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// RES: the row itself is added in fp32, x + act(conv x), before the one rounding to TY.
template <class TX, class TW, class TB, class TY, int C, int K, Act A, bool RES = false>
__device__ __forceinline__ void conv1d(const CbcArgs &a) {
  using S = slots::Conv1d;
  constexpr int HIST = K - 1, HIST1 = HIST > 1 ? HIST : 1;
  const TX *x = (const TX *)a.p[S::X];
  const TW *w = (const TW *)a.p[S::Weight];
  const TB *bias = (const TB *)a.p[S::Bias];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TY *y = (TY *)a.p[S::Out];
  int r = blockIdx.x;
  int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C)
    return;
  float hist[HIST1];
  const float *start = HIST > 0 ? pool + ((long long)state_in[r] * C + c) * HIST : 0;
  float *state = HIST > 0 ? pool + ((long long)state_out[r] * C + c) * HIST : 0;
  for (int j = 0; j < HIST; ++j)
    hist[j] = has_initial[r] ? start[j] : 0.0f;
  float wr[K];
  for (int j = 0; j < K; ++j)
    wr[j] = ld(w, (long long)c * K + j);
  float b = 0.0f;
  if constexpr (present<TB>)
    b = ld(bias, c);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    float xv = ld(x, (long long)t * C + c);
    float acc = b + wr[K - 1] * xv;
    for (int j = 0; j < HIST; ++j)
      acc += wr[j] * hist[j];
    st(y, (long long)t * C + c, RES ? act<A>(acc) + xv : act<A>(acc));
    for (int j = 0; j + 1 < HIST; ++j)
      hist[j] = hist[j + 1];
    if constexpr (HIST > 0)
      hist[HIST - 1] = xv;
  }
  for (int j = 0; j < HIST; ++j)
    state[j] = hist[j];
}

} // namespace cbc

#endif
