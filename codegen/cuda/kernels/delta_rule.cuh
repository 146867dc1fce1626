// The pieces the delta-rule kernels (gated_delta, kda) share: block (request, head, 32 value
// columns) keeps its [DK, 32] slice of the state in registers, the four warps splitting the
// rows (row i in warp i % 4, register i / 4); each kernel supplies only its decay.
#ifndef CBC_CODEGEN_CUDA_KERNELS_DELTA_RULE_CUH
#define CBC_CODEGEN_CUDA_KERNELS_DELTA_RULE_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

inline constexpr int kDeltaRuleWarps = 4;

// The sum over the warps of each lane's value, in warp order; every thread gets its lane's sum.
__device__ __forceinline__ float delta_rows_sum(float v, float (*red)[32]) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  red[warp][lane] = v;
  __syncthreads();
  return red[0][lane] + red[1][lane] + red[2][lane] + red[3][lane];
}

// Stages one token's q and k rows (DK each) in shared memory and returns their inverse l2
// norms (eps 1e-6), or 1 where `l2` is off.
template <int DK, class TQ, class TK>
__device__ __forceinline__ void delta_stage_qk(const TQ *q, const TK *k, float *qs, float *ks, float (*red)[32],
                                               bool l2, float &iq, float &ik) {
  int warp = threadIdx.x >> 5;
  float pq = 0.0f, pk = 0.0f;
  for (int i = threadIdx.x; i < DK; i += blockDim.x) {
    float qv = ld(q, i), kv = ld(k, i);
    qs[i] = qv;
    ks[i] = kv;
    pq += qv * qv;
    pk += kv * kv;
  }
  pq = warp_sum(pq);
  pk = warp_sum(pk);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    red[warp][0] = pq;
    red[warp][1] = pk;
  }
  __syncthreads();
  float sq = red[0][0] + red[1][0] + red[2][0] + red[3][0], sk = red[0][1] + red[1][1] + red[2][1] + red[3][1];
  iq = l2 ? rsqrtf(sq + 1e-6f) : 1.0f;
  ik = l2 ? rsqrtf(sk + 1e-6f) : 1.0f;
}

// After the decay: u = S^T k for this lane's column, then S += k (beta (v - u)) and the
// result o = S^T q scaled by `qScale`.
template <int DK, int ROWS>
__device__ __forceinline__ float delta_update_read(float (&s)[ROWS], const float *qs, const float *ks,
                                                   float (*red)[32], float iq, float ik, float qScale, float beta,
                                                   float v) {
  int warp = threadIdx.x >> 5;
  float u = 0.0f;
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + kDeltaRuleWarps * m;
    if (i < DK)
      u += s[m] * ks[i] * ik;
  }
  u = delta_rows_sum(u, red);
  float delta = beta * (v - u), o = 0.0f;
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + kDeltaRuleWarps * m;
    if (i < DK) {
      s[m] += ks[i] * ik * delta;
      o += s[m] * qs[i] * iq * qScale;
    }
  }
  return delta_rows_sum(o, red);
}

// Loads (or zeroes, for a fresh request) and stores this block's slice of the state.
template <int DK, int DV, int ROWS>
__device__ __forceinline__ void delta_load_state(float (&s)[ROWS], const float *St, bool initial, int col) {
  int warp = threadIdx.x >> 5;
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + kDeltaRuleWarps * m;
    s[m] = (i < DK && col < DV && initial) ? St[(long long)i * DV + col] : 0.0f;
  }
}
template <int DK, int DV, int ROWS>
__device__ __forceinline__ void delta_store_state(const float (&s)[ROWS], float *St, int col) {
  int warp = threadIdx.x >> 5;
  for (int m = 0; m < ROWS; ++m) {
    int i = warp + kDeltaRuleWarps * m;
    if (i < DK && col < DV)
      St[(long long)i * DV + col] = s[m];
  }
}

} // namespace cbc

#endif
