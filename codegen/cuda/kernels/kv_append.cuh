// Appends this step's key and value rows to the paged cache: one block per token. A pool row
// holds a token's keys then its values.
#ifndef CBC_CODEGEN_CUDA_KERNELS_KV_APPEND_CUH
#define CBC_CODEGEN_CUDA_KERNELS_KV_APPEND_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// This layer's group of block tables: one row of `TableWidth` blocks per request slot.
template <class S> __device__ __forceinline__ const int *group_tables(const CbcArgs &a) {
  return (const int *)a.p[S::Tables] + a.i[S::Group] * a.i[S::TableSlots] * a.i[S::TableWidth];
}

// The pool row of position pos of the request in `slot`, for blocks of B rows of ROW elements.
template <int B, int ROW, class S, class T>
__device__ __forceinline__ T *cache_row(const CbcArgs &a, T *pool, int slot, int pos) {
  long long block = group_tables<S>(a)[(long long)slot * a.i[S::TableWidth] + pos / B];
  return pool + (block * B + pos % B) * ROW;
}

// The row a token writes in a layer of RATE positions a row (1: its position): the window it
// closes, or -1 when it closes none.
template <int RATE> __device__ __forceinline__ int written_row(int pos) {
  if constexpr (RATE == 1)
    return pos;
  return (pos + 1) % RATE == 0 ? (pos + 1) / RATE - 1 : -1;
}

// ROW: the pool row's stride, more than KW + VW when the layer keeps an index_key row after.
// RATE > 1: a compressed layer, one row per window of RATE positions.
template <class TK, class TV, class TKV, int KW, int VW, int B, int ROW = KW + VW, int RATE = 1>
__device__ __forceinline__ void kv_append(const CbcArgs &a) {
  using S = slots::KvAppend;
  const TK *k = (const TK *)a.p[S::K];
  const TV *v = (const TV *)a.p[S::V];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots];
  long long t = blockIdx.x;
  int at = written_row<RATE>(positions[t]);
  if (at < 0)
    return;
  TKV *row = cache_row<B, ROW, S>(a, (TKV *)a.p[S::Pool], slots[seq_ids[t]], at);
  for (int j = threadIdx.x; j < KW; j += blockDim.x)
    st(row, j, ld(k, t * KW + j));
  for (int j = threadIdx.x; j < VW; j += blockDim.x)
    st(row, KW + j, ld(v, t * VW + j));
}

} // namespace cbc

#endif
