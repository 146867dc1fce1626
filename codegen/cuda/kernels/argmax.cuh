// Greedy sampling on the device: one block per logits row of V; ties pick the lower token id.
#ifndef CBC_CODEGEN_CUDA_KERNELS_ARGMAX_CUH
#define CBC_CODEGEN_CUDA_KERNELS_ARGMAX_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

template <class TL, int V> __device__ __forceinline__ void argmax(const CbcArgs &a) {
  using S = slots::Argmax;
  __shared__ float best_v[32];
  __shared__ int best_i[32];
  const TL *logits = (const TL *)a.p[S::Logits];
  int *tokens = (int *)a.p[S::Tokens];
  long long r = blockIdx.x;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    float v = ld(logits, r * V + j);
    if (v > bv) {
      bv = v;
      bi = j;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ov > bv || (ov == bv && oi < bi)) {
      bv = ov;
      bi = oi;
    }
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    best_v[warp] = bv;
    best_i[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
      if (best_v[w] > bv || (best_v[w] == bv && best_i[w] < bi)) {
        bv = best_v[w];
        bi = best_i[w];
      }
    tokens[r] = bi;
  }
}

} // namespace cbc

#endif
