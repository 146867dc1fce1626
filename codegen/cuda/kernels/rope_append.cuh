// The attention prologue for one token per block: the q and k heads of a fused q|k|v row are
// staged in shared memory, optionally RMS-normalised per head by the warps, rotated, and then
// written out (q) or appended to the cache with v (k).
#ifndef CBC_CODEGEN_CUDA_KERNELS_ROPE_APPEND_CUH
#define CBC_CODEGEN_CUDA_KERNELS_ROPE_APPEND_CUH

#include "codegen/cuda/kernels/kv_append.cuh"
#include "codegen/cuda/kernels/prelude.cuh"
#include "codegen/cuda/kernels/rope.cuh"

namespace cbc {

// Normalises each of the NH heads of D features in buf, a warp per head; q heads (h < H) use
// the q weights. Without norm weights (TN void) the heads are left alone.
template <class TN, int H, int NH, int D> __device__ __forceinline__ void head_norms(const CbcArgs &a, float *buf) {
  using S = slots::RopeAppend;
  if constexpr (present<TN>) {
    const TN *qn = (const TN *)a.p[S::QNorm];
    const TN *kn = (const TN *)a.p[S::KNorm];
    float eps = a.f[S::Eps], offset = a.f[S::NormOffset];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int h = warp; h < NH; h += warps) {
      float ss = 0.0f;
      for (int d = lane; d < D; d += 32)
        ss += buf[h * D + d] * buf[h * D + d];
      float inv = rsqrtf(warp_sum(ss) / (float)D + eps);
      const TN *w = h < H ? qn : kn;
      for (int d = lane; d < D; d += 32)
        buf[h * D + d] *= inv * (ld(w, d) + offset);
    }
    __syncthreads();
  }
}

// qkv rows hold H query heads, then HKV key heads, then HKV value heads of D features.
template <class TX, class TQ, class TN, class TKV, int H, int HKV, int D, int B, int RD, Pairing P, const float *FREQ,
          const float *FREQ_LONG, int LONG_AFTER, bool DYNAMIC, int DYN_MAX>
__device__ __forceinline__ void rope_append(const CbcArgs &a) {
  using S = slots::RopeAppend;
  constexpr int QW = H * D, KW = HKV * D, W = QW + 2 * KW;
  __shared__ float buf[(H + HKV) * D];
  const TX *qkv = (const TX *)a.p[S::Qkv];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *prompt_lens = (const int *)a.p[S::PromptLens];
  const int *slots = (const int *)a.p[S::Slots];
  TQ *qout = (TQ *)a.p[S::QOut];
  RopeScalars scalars = rope_scalars<S>(a);
  long long t = blockIdx.x;
  for (int j = threadIdx.x; j < (H + HKV) * D; j += blockDim.x)
    buf[j] = ld(qkv, t * W + j);
  __syncthreads();
  head_norms<TN, H, H + HKV, D>(a, buf);
  int pos = positions[t];
  long long seq_len = rope_seq_len(prompt_lens, seq_ids[t], pos);
  TKV *row = cache_row<B, 2 * KW, S>(a, (TKV *)a.p[S::Pool], slots[seq_ids[t]], pos);
  for (int idx = threadIdx.x; idx < (H + HKV) * D; idx += blockDim.x) {
    int h = idx / D, d = idx % D;
    float value;
    if (d >= RD) {
      value = buf[idx];
    } else {
      RopeAngle r = rope_angle<RD, P, FREQ, FREQ_LONG, LONG_AFTER, DYNAMIC, DYN_MAX>(d, pos, seq_len, scalars);
      value = rope_rotate(r, d, buf[h * D + r.first], buf[h * D + r.second]);
    }
    if (h < H)
      st(qout, t * QW + idx, value);
    else
      st(row, idx - QW, value);
  }
  for (int j = threadIdx.x; j < KW; j += blockDim.x)
    st(row, KW + j, ld(qkv, t * W + QW + KW + j));
}

} // namespace cbc

#endif
