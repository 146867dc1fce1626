// The selective scan: one thread per (request, channel) with the channel's N state values in
// registers, token by token; gated by silu(z) when TZ is not void.
#ifndef CBC_CODEGEN_CUDA_KERNELS_SELECTIVE_SCAN_CUH
#define CBC_CODEGEN_CUDA_KERNELS_SELECTIVE_SCAN_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

template <class TX, class TDT, class TB, class TC, class TAL, class TDB, class TD, class TZ, class TO, int I, int G,
          int N>
__device__ __forceinline__ void selective_scan(const CbcArgs &a) {
  using S = slots::SelectiveScan;
  const TX *x = (const TX *)a.p[S::X];
  const TDT *dtv = (const TDT *)a.p[S::Dt];
  const TB *Bm = (const TB *)a.p[S::B];
  const TC *Cm = (const TC *)a.p[S::C];
  const TAL *A_log = (const TAL *)a.p[S::ALog];
  const TDB *dt_bias = (const TDB *)a.p[S::DtBias];
  const TD *Dv = (const TD *)a.p[S::D];
  const TZ *z = (const TZ *)a.p[S::Z];
  const int *cu = (const int *)a.p[S::CuSeqlens];
  const int *state_in = (const int *)a.p[S::StateIn], *state_out = (const int *)a.p[S::StateOut];
  const int *has_initial = (const int *)a.p[S::HasInitial];
  float *pool = (float *)a.p[S::Pool];
  TO *out = (TO *)a.p[S::Out];
  int r = blockIdx.x, i = blockIdx.y * blockDim.x + threadIdx.x;
  if (i >= I)
    return;
  int g = i / (I / G);
  const float *Sin = pool + ((long long)state_in[r] * I + i) * N;
  float *St = pool + ((long long)state_out[r] * I + i) * N;
  float s[N], A[N];
  for (int n = 0; n < N; ++n) {
    s[n] = has_initial[r] ? Sin[n] : 0.0f;
    A[n] = -expf(ld(A_log, (long long)i * N + n));
  }
  float dtb = ld(dt_bias, i), D = ld(Dv, i);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    float dn = ld(dtv, (long long)t * I + i) + dtb;
    float dt = dn > 20.0f ? dn : log1pf(expf(dn));
    float xv = ld(x, (long long)t * I + i), y = 0.0f;
    for (int n = 0; n < N; ++n) {
      float b = ld(Bm, (long long)t * G * N + g * N + n), c = ld(Cm, (long long)t * G * N + g * N + n);
      s[n] = expf(dt * A[n]) * s[n] + dt * b * xv;
      y += s[n] * c;
    }
    y += D * xv;
    if constexpr (present<TZ>)
      y *= act_silu(ld(z, (long long)t * I + i));
    st(out, (long long)t * I + i, y);
  }
  for (int n = 0; n < N; ++n)
    St[n] = s[n];
}

} // namespace cbc

#endif
