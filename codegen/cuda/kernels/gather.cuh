// Row gathers between the step's per-token and per-request rows, and the injection of given
// rows: one block per output row.
#ifndef CBC_CODEGEN_CUDA_KERNELS_GATHER_CUH
#define CBC_CODEGEN_CUDA_KERNELS_GATHER_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

template <class TI, class TO, int W> __device__ __forceinline__ void gather_rows(const CbcArgs &a) {
  using S = slots::Gather;
  const TI *x = (const TI *)a.p[S::X];
  const int *rows = (const int *)a.p[S::Rows];
  TO *y = (TO *)a.p[S::Out];
  long long r = blockIdx.x, src = rows[r];
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    st(y, r * W + j, ld(x, src * W + j));
}

// Token row t takes the given embedding where the ascending list of injected rows holds t (a
// binary search: one block per token row, so the copy may be in place).
template <class TI, class TO, int W> __device__ __forceinline__ void inject_rows(const CbcArgs &a) {
  using S = slots::Inject;
  const TI *x = (const TI *)a.p[S::X];
  const int *rows = (const int *)a.p[S::Rows];
  const float *embeds = (const float *)a.p[S::Embeds];
  TO *y = (TO *)a.p[S::Out];
  long long t = blockIdx.x;
  int lo = 0, hi = (int)a.i[S::Injected];
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (rows[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  bool given = lo < (int)a.i[S::Injected] && rows[lo] == t;
  for (int j = threadIdx.x; j < W; j += blockDim.x)
    st(y, t * W + j, given ? embeds[lo * (long long)W + j] : ld(x, t * W + j));
}

} // namespace cbc

#endif
