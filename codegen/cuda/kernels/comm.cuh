// The device half of the collectives (cbc.comm.*): the backend has gathered every rank's rows
// of the input into a workspace, [N][rows][W] in the input's type, rank after rank; these
// kernels combine them as the CPU backend does, so that both give the same bits.
#ifndef CBC_CODEGEN_CUDA_KERNELS_COMM_CUH
#define CBC_CODEGEN_CUDA_KERNELS_COMM_CUH

#include "codegen/cuda/kernels/elementwise.cuh"

namespace cbc {

// out = ((part_0 + part_1) + part_2) ... (+ bias): rank order, in fp32, whatever the sizes.
template <class TX, class TB, class TY, int W, int N> __device__ __forceinline__ void rank_sum(const CbcArgs &a) {
  using S = slots::RankSum;
  const TX *parts = (const TX *)a.p[S::Parts];
  const TB *bias = (const TB *)a.p[S::Bias];
  TY *y = (TY *)a.p[S::Out];
  long long rows = a.i[S::Rows];
  for_element<W>(rows, [&](long long i, long long, long long c) {
    float v = ld(parts, i);
    for (int r = 1; r < N; ++r)
      v += ld(parts, r * rows * W + i);
    if constexpr (present<TB>)
      v += ld(bias, c);
    st(y, i, v);
  });
}

// out[row] = [part_0[row] | part_1[row] | ...]: each rank's W columns in rank order.
template <class TX, class TY, int W, int N> __device__ __forceinline__ void rank_columns(const CbcArgs &a) {
  using S = slots::RankColumns;
  const TX *parts = (const TX *)a.p[S::Parts];
  TY *y = (TY *)a.p[S::Out];
  long long rows = a.i[S::Rows];
  for_element<W * N>(rows, [&](long long i, long long row, long long c) {
    long long r = c / W;
    st(y, i, ld(parts, (r * rows + row) * W + c % W));
  });
}

} // namespace cbc

#endif
