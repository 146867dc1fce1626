// The state space dual scan, token by token: block (request, head, kSsdRows rows of head_dim
// P); each thread keeps its state columns (N over the block's threads) of those rows in
// registers, and y = S C + D x is a block reduction per row. It takes the requests with at most
// RecurrentMax tokens in the step (decode): the chunked form (ssd_chunked.cuh) takes the others,
// unless the emitter found that it does not fit.
#ifndef CBC_CODEGEN_CUDA_KERNELS_SSD_CUH
#define CBC_CODEGEN_CUDA_KERNELS_SSD_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

template <class TX, class TDT, class TB, class TC, class TAL, class TDB, class TD, class TO, int H, int P, int G, int N>
__device__ __forceinline__ void ssd(const CbcArgs &a) {
  using S = slots::Ssd;
  constexpr int PB = kSsdRows, THREADS = kSsdThreads, NJ = (N + THREADS - 1) / THREADS;
  static_assert(THREADS == 128, "y adds the partial sums of four warps");
  __shared__ float xs[PB], red[4][PB];
  const TX *x = (const TX *)a.p[S::X];
  const TDT *dtv = (const TDT *)a.p[S::Dt];
  const TB *Bm = (const TB *)a.p[S::B];
  const TC *Cm = (const TC *)a.p[S::C];
  const TAL *A_log = (const TAL *)a.p[S::ALog];
  const TDB *dt_bias = (const TDB *)a.p[S::DtBias];
  const TD *Dv = (const TD *)a.p[S::D];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  float dtMin = a.f[S::DtMin], dtMax = a.f[S::DtMax];
  int r = blockIdx.x, h = blockIdx.y, p0 = blockIdx.z * PB, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (cu[r + 1] - cu[r] > a.i[S::RecurrentMax])
    return; // ssd_chunked's request
  int g = h / (H / G);
  const float *Sin = pool + ((long long)state_in[r] * H + h) * P * N;
  float *St = pool + ((long long)state_out[r] * H + h) * P * N;
  float s[PB][NJ];
  for (int i = 0; i < PB; ++i)
    for (int j = 0; j < NJ; ++j) {
      int p = p0 + i, n = threadIdx.x + j * THREADS;
      s[i][j] = (p < P && n < N && has_initial[r]) ? Sin[(long long)p * N + n] : 0.0f;
    }
  float A = -expf(ld(A_log, h)), dtb = ld(dt_bias, h), D = ld(Dv, h);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    if (threadIdx.x < PB)
      xs[threadIdx.x] = p0 + threadIdx.x < P ? ld(x, (long long)t * H * P + h * P + p0 + threadIdx.x) : 0.0f;
    float dn = ld(dtv, (long long)t * H + h) + dtb;
    float dt = fminf(fmaxf(dn > 20.0f ? dn : log1pf(expf(dn)), dtMin), dtMax);
    float decay = expf(dt * A);
    float bn[NJ], cn[NJ];
    for (int j = 0; j < NJ; ++j) {
      int n = threadIdx.x + j * THREADS;
      bn[j] = n < N ? ld(Bm, (long long)t * G * N + g * N + n) : 0.0f;
      cn[j] = n < N ? ld(Cm, (long long)t * G * N + g * N + n) : 0.0f;
    }
    __syncthreads();
    for (int i = 0; i < PB; ++i) {
      float y = 0.0f;
      for (int j = 0; j < NJ; ++j) {
        s[i][j] = s[i][j] * decay + dt * xs[i] * bn[j];
        y += s[i][j] * cn[j];
      }
      y = warp_sum(y);
      if (lane == 0)
        red[warp][i] = y;
    }
    __syncthreads();
    if (threadIdx.x < PB && p0 + threadIdx.x < P) {
      float y = red[0][threadIdx.x] + red[1][threadIdx.x] + red[2][threadIdx.x] + red[3][threadIdx.x];
      st(out, (long long)t * H * P + h * P + p0 + threadIdx.x, y + D * xs[threadIdx.x]);
    }
    __syncthreads();
  }
  for (int i = 0; i < PB; ++i)
    for (int j = 0; j < NJ; ++j) {
      int p = p0 + i, n = threadIdx.x + j * THREADS;
      if (p < P && n < N)
        St[(long long)p * N + n] = s[i][j];
    }
}

} // namespace cbc

#endif
