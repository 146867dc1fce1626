// The mLSTM cell, token by token: block (request, head) updates its head's state in place in the
// request's output unit, the threads splitting the value columns of C (and the rows of n). The
// stabiliser m and the normaliser are shared by every column, so one block owns a head whole:
// split across blocks, a block starting late would read another's already-updated n and m
// when the request's input and output units coincide.
#ifndef CBC_CODEGEN_CUDA_KERNELS_MLSTM_CUH
#define CBC_CODEGEN_CUDA_KERNELS_MLSTM_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

template <class TQ, class TK, class TV, class TI, class TF, class TO, int H, int DK, int DV>
__device__ __forceinline__ void mlstm(const CbcArgs &a) {
  using S = slots::Mlstm;
  constexpr long long SIZE = (long long)DK * (DV + 1) + 1; // C [DK, DV], n [DK], m
  __shared__ float qs[DK], ks[DK], scratch[32];
  const TQ *q = (const TQ *)a.p[S::Q];
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const TI *ig = (const TI *)a.p[S::InputGate];
  const TF *fg = (const TF *)a.p[S::ForgetGate];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  int r = blockIdx.x, h = blockIdx.y;
  const float *in = pool + ((long long)state_in[r] * H + h) * SIZE;
  float *C = pool + ((long long)state_out[r] * H + h) * SIZE, *n = C + (long long)DK * DV;
  bool initial = has_initial[r];
  for (long long e = threadIdx.x; e < SIZE; e += blockDim.x) // each thread reads what it writes
    C[e] = initial ? in[e] : 0.0f;
  __syncthreads();
  float m = C[SIZE - 1], eps = a.f[S::Eps], scale = rsqrtf((float)DK);
  __syncthreads();
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    long long qk = ((long long)t * H + h) * DK, vo = ((long long)t * H + h) * DV;
    for (int i = threadIdx.x; i < DK; i += blockDim.x) {
      qs[i] = scale * ld(q, qk + i);
      ks[i] = ld(k, qk + i);
    }
    float f = ld(fg, (long long)t * H + h), i = ld(ig, (long long)t * H + h);
    float lf = fminf(f, 0.0f) - log1pf(expf(-fabsf(f)));
    float mNew = fmaxf(lf + m, i), decay = expf(lf + m - mNew), gain = expf(i - mNew);
    __syncthreads();
    float part = 0.0f;
    for (int d = threadIdx.x; d < DK; d += blockDim.x) {
      float nd = decay * n[d] + gain * ks[d];
      n[d] = nd;
      part += qs[d] * nd;
    }
    float denom = fmaxf(fabsf(block_sum(part, scratch)), expf(-mNew)) + eps;
    for (int j = threadIdx.x; j < DV; j += blockDim.x) {
      float vj = gain * ld(v, vo + j), o = 0.0f;
      for (int d = 0; d < DK; ++d) {
        float c = decay * C[(long long)d * DV + j] + ks[d] * vj;
        C[(long long)d * DV + j] = c;
        o += qs[d] * c;
      }
      st(out, vo + j, o / denom);
    }
    m = mNew;
    __syncthreads();
  }
  if (threadIdx.x == 0)
    C[SIZE - 1] = m;
}

} // namespace cbc

#endif
