// Row gathers between the step's per-token and per-request rows: one block per output row.
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

} // namespace cbc

#endif
