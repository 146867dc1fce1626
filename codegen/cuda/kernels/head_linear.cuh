// A matrix product per head (cbc.math.head_linear): block (token tile, head, output tile) stages
// its tokens' inputs in shared memory and each thread accumulates one output for all of them,
// so a weight element is read once per tile of headLinearTokens(inputs) tokens.
#ifndef CBC_CODEGEN_CUDA_KERNELS_HEAD_LINEAR_CUH
#define CBC_CODEGEN_CUDA_KERNELS_HEAD_LINEAR_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// Head h uses rows [OFF, OFF + N) of its block of R rows of w [HEADS * R, C]. Without TRANSPOSE
// y[t, h, n] = sum_c w[h R + OFF + n, c] x[t, h, c]; with it y[t, h, c] = sum_n w[h R + OFF + n, c] x[t, h, n].
template <class TX, class TW, class TY, int HEADS, int R, int C, int OFF, int N, bool TRANSPOSE>
__device__ __forceinline__ void head_linear(const CbcArgs &a) {
  using S = slots::HeadLinear;
  constexpr int IN = TRANSPOSE ? N : C, OUT = TRANSPOSE ? C : N, TT = headLinearTokens(IN);
  __shared__ float xs[TT][IN];
  const TX *x = (const TX *)a.p[S::X];
  const TW *w = (const TW *)a.p[S::W];
  TY *y = (TY *)a.p[S::Out];
  long long rows = a.i[S::Rows], t0 = (long long)blockIdx.x * TT;
  int h = blockIdx.y, o = blockIdx.z * blockDim.x + threadIdx.x;
  for (int i = threadIdx.x; i < TT * IN; i += blockDim.x) {
    long long t = t0 + i / IN;
    xs[i / IN][i % IN] = t < rows ? ld(x, (t * HEADS + h) * IN + i % IN) : 0.0f;
  }
  __syncthreads();
  if (o >= OUT)
    return;
  float acc[TT];
  for (int j = 0; j < TT; ++j)
    acc[j] = 0.0f;
  const TW *wh = w + ((long long)h * R + OFF) * C;
  for (int k = 0; k < IN; ++k) {
    float wv = TRANSPOSE ? ld(wh, (long long)k * C + o) : ld(wh, (long long)o * C + k);
    for (int j = 0; j < TT; ++j)
      acc[j] += wv * xs[j][k];
  }
  for (int j = 0; j < TT && t0 + j < rows; ++j)
    st(y, ((t0 + j) * HEADS + h) * OUT + o, acc[j]);
}

} // namespace cbc

#endif
