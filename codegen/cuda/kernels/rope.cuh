// Rotary position embedding. The inverse frequencies are tables in the generated source, one
// per schedule, passed by address. The length-dependent schedules are chosen per token from
// the length it sees: the long frequencies (FREQ_LONG, when not null) past LONG_AFTER, dynamic
// NTK past DYN_MAX.
//
// The RoPE template arguments of every kernel that rotates:
//   int RD, Pairing P, const float *FREQ, const float *FREQ_LONG, int LONG_AFTER, bool DYNAMIC,
//   int DYN_MAX
#ifndef CBC_CODEGEN_CUDA_KERNELS_ROPE_CUH
#define CBC_CODEGEN_CUDA_KERNELS_ROPE_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

struct RopeScalars {
  float attention_factor, dynamic_base, dynamic_factor;
};

// A kernel's RoPE slots, which every kernel that rotates names alike.
template <class S> __device__ __forceinline__ RopeScalars rope_scalars(const CbcArgs &a) {
  return {a.f[S::AttentionFactor], a.f[S::DynamicBase], a.f[S::DynamicFactor]};
}

// The length the schedule sees: the whole prompt, or the token's own position past it.
__device__ __forceinline__ long long rope_seq_len(const int *prompt_lens, int seq, int pos) {
  return prompt_lens[seq] > pos + 1 ? prompt_lens[seq] : pos + 1;
}

// The rotation of feature d (below RD) of a head: cos and sin scaled by the attention factor,
// and the pair of features it mixes.
struct RopeAngle {
  float c, s;
  int first, second;
};

// With `log_scale` (LeRoPE), frequency i is multiplied by exp(log_scale(i)).
template <int RD, Pairing P, const float *FREQ, const float *FREQ_LONG, int LONG_AFTER, bool DYNAMIC, int DYN_MAX,
          class TF = float>
__device__ __forceinline__ RopeAngle rope_angle(int d, int pos, long long seq_len, const RopeScalars &r,
                                                const TF *log_scale = nullptr) {
  constexpr bool inter = P == Pairing::interleaved;
  constexpr int half = RD / 2;
  int i = inter ? d / 2 : (d < half ? d : d - half);
  float f = FREQ[i];
  if constexpr (FREQ_LONG != nullptr)
    f = seq_len > LONG_AFTER ? FREQ_LONG[i] : FREQ[i];
  if constexpr (DYNAMIC)
    if (seq_len > DYN_MAX) {
      double dim = (double)RD;
      double base_ = (double)r.dynamic_base * pow((double)r.dynamic_factor * (double)seq_len / (double)DYN_MAX -
                                                      ((double)r.dynamic_factor - 1.0),
                                                  dim / (dim - 2.0));
      f = 1.0f / (float)pow(base_, (double)((float)(2 * i) / (float)RD));
    }
  if (log_scale)
    f *= expf(ld(log_scale, i));
  float angle = (float)pos * f;
  float c = cosf(angle) * r.attention_factor, s = sinf(angle) * r.attention_factor;
  return {c, s, inter ? 2 * i : i, inter ? 2 * i + 1 : i + half};
}

// Feature d of the rotated head, from the pair (x1, x2) = (x[first], x[second]).
__device__ __forceinline__ float rope_rotate(const RopeAngle &r, int d, float x1, float x2) {
  return d == r.first ? x1 * r.c - x2 * r.s : x2 * r.c + x1 * r.s;
}

// Rows of W = heads x D features, RD of each head from OFF on rotated; one block per token. With
// SECTIONS (multimodal RoPE: per frequency, the component 0, 1 or 2 it reads, as floats),
// frequency i turns by SectionPositions[SECTIONS[i] * Tokens + t] instead of the position.
template <class TI, class TO, int W, int D, int RD, Pairing P, const float *FREQ, const float *FREQ_LONG,
          int LONG_AFTER, bool DYNAMIC, int DYN_MAX, const float *SECTIONS, int OFF = 0, class TF = float>
__device__ __forceinline__ void rope(const CbcArgs &a) {
  using S = slots::Rope;
  const TI *x = (const TI *)a.p[S::X];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *prompt_lens = (const int *)a.p[S::PromptLens];
  TO *y = (TO *)a.p[S::Out];
  RopeScalars scalars = rope_scalars<S>(a);
  long long t = blockIdx.x;
  int pos = positions[t];
  long long seq_len = rope_seq_len(prompt_lens, seq_ids[t], pos);
  for (int idx = threadIdx.x; idx < (W / D) * D; idx += blockDim.x) {
    int h = idx / D, d = idx % D - OFF; // d: the feature within the rotated run
    long long base = t * W + h * D + OFF;
    if (d < 0 || d >= RD) {
      st(y, base + d, ld(x, base + d));
      continue;
    }
    int at = pos;
    if constexpr (SECTIONS != nullptr) {
      int i = P == Pairing::interleaved ? d / 2 : (d < RD / 2 ? d : d - RD / 2);
      at = ((const int *)a.p[S::SectionPositions])[(long long)SECTIONS[i] * a.i[S::Tokens] + t];
    }
    const TF *log_scale = (const TF *)a.p[S::FreqLogScale];
    RopeAngle r = rope_angle<RD, P, FREQ, FREQ_LONG, LONG_AFTER, DYNAMIC, DYN_MAX, TF>(d, at, seq_len, scalars, log_scale);
    float x1 = ld(x, base + r.first), x2 = ld(x, base + r.second);
    st(y, base + d, rope_rotate(r, d, x1, x2));
  }
}

} // namespace cbc

#endif
