// The embedding by token id or by position: one block per token copies its table row (offset
// rows in), scaled.
#ifndef CBC_CODEGEN_CUDA_KERNELS_EMBED_CUH
#define CBC_CODEGEN_CUDA_KERNELS_EMBED_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

template <class TW, class TO, int H> __device__ __forceinline__ void embed(const CbcArgs &a) {
  using S = slots::Embed;
  const int *tok = (const int *)a.p[S::Tokens];
  const TW *table = (const TW *)a.p[S::Table];
  TO *out = (TO *)a.p[S::Out];
  float scale = a.f[S::Scale];
  long long t = blockIdx.x, row = tok[t] + a.i[S::Offset], held = a.i[S::Held];
  if (a.i[S::Rows] > 0 && row >= a.i[S::Rows])
    row = a.i[S::OovRow];
  row -= held * a.i[S::Rank];
  bool mine = held == 0 || (row >= 0 && row < held); // another rank's id: zeros, which the all-reduce fills
  for (int j = threadIdx.x; j < H; j += blockDim.x)
    st(out, t * H + j, mine ? ld(table, row * H + j) * scale : 0.0f);
}

} // namespace cbc

#endif
