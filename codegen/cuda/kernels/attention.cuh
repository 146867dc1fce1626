// Flash-decoding over the paged cache. attention: block (token, kv head, split) runs an online
// softmax for the G = H / HKV query heads of its group over its share of the visible keys, one
// key per warp at a time, and writes per head the split's max, denominator and weighted values.
// attention_combine merges the splits and the sinks.
#ifndef CBC_CODEGEN_CUDA_KERNELS_ATTENTION_CUH
#define CBC_CODEGEN_CUDA_KERNELS_ATTENTION_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// The first position the layer's retention (of TOKENS tokens) lets position pos see.
template <Retention R, int TOKENS> __device__ __forceinline__ int first_visible(int pos) {
  int lo = 0;
  if constexpr (R == Retention::window)
    lo = pos - TOKENS + 1 > 0 ? pos - TOKENS + 1 : 0;
  else if constexpr (R == Retention::chunk)
    lo = pos / TOKENS * TOKENS;
  return lo;
}

// Merges the warps' online-softmax states and writes the split's partial result: per head,
// the max, the denominator and DV weighted values.
template <int G, int DV, int H, int WARPS>
__device__ __forceinline__ void attention_partial(float (*sm_m)[G], float (*sm_l)[G], float (*sm_acc)[G][DV],
                                                  float *part, long long t, int kvh, int split, long long splits) {
  for (int idx = threadIdx.x; idx < G * (DV + 2); idx += blockDim.x) {
    int g = idx / (DV + 2), d = idx % (DV + 2);
    float mm = -INFINITY;
    for (int w = 0; w < WARPS; ++w)
      mm = fmaxf(mm, sm_m[w][g]);
    float value = 0.0f;
    if (d == 0) {
      value = mm;
    } else {
      for (int w = 0; w < WARPS; ++w) {
        float scale = sm_m[w][g] == -INFINITY ? 0.0f : expf(sm_m[w][g] - mm);
        value += scale * (d == 1 ? sm_l[w][g] : sm_acc[w][g][d - 2]);
      }
    }
    int h = kvh * G + g;
    part[((t * H + h) * splits + split) * (DV + 2) + d] = value;
  }
}

// One key of the online softmax: score s joins the running max m and denominator l, and the
// accumulated values acc (NV per lane) are rescaled and take p * v.
template <int NV>
__device__ __forceinline__ void online_softmax_step(float s, float &m, float &l, float (&acc)[NV], const float (&v)[NV]) {
  float mn = fmaxf(m, s);
  float corr = expf(m - mn), p = expf(s - mn);
  l = l * corr + p;
  for (int e = 0; e < NV; ++e)
    acc[e] = acc[e] * corr + p * v[e];
  m = mn;
}

// Each warp's online-softmax state of G heads (DVL values of DV per lane) into shared memory,
// then the block's partial result for its heads `head_block * G ...`.
template <int G, int DV, int DVL, int H, int WARPS>
__device__ __forceinline__ void attention_finish(const float (&m)[G], const float (&l)[G], const float (&acc)[G][DVL],
                                                 float (*sm_m)[G], float (*sm_l)[G], float (*sm_acc)[G][DV],
                                                 float *part, long long t, int head_block, int split,
                                                 long long splits) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      sm_m[warp][g] = m[g];
      sm_l[warp][g] = l[g];
    }
    for (int e = 0; e < DVL; ++e) {
      int d = lane + 32 * e;
      if (d < DV)
        sm_acc[warp][g][d] = acc[g][e];
    }
  }
  __syncthreads();
  attention_partial<G, DV, H, WARPS>(sm_m, sm_l, sm_acc, part, t, head_block, split, splits);
}

// TB, BIAS: the distance bias [T, H * BIAS] added to the score of the key at distance pos - j <
// BIAS (void, 0: none).
template <class TQ, class TKV, int H, int HKV, int D, int DV, int B, Retention R, int TOKENS, bool SOFTCAP,
          class TB = void, int BIAS = 0>
__device__ __forceinline__ void attention(const CbcArgs &a) {
  using S = slots::Attention;
  constexpr int G = H / HKV, DL = (D + 31) / 32, DVL = (DV + 31) / 32, WARPS = kAttentionWarps;
  constexpr int ROW = HKV * (D + DV), KELEMS = HKV * D;
  __shared__ float sm_m[WARPS][G], sm_l[WARPS][G];
  __shared__ float sm_acc[WARPS][G][DV];
  const TQ *q = (const TQ *)a.p[S::Q];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots];
  const int *tables = (const int *)a.p[S::Tables] + a.i[S::Group] * a.i[S::TableSlots] * a.i[S::TableWidth];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  const TB *bias = (const TB *)a.p[S::DistanceBias];
  float scoreScale = a.f[S::ScoreScale], cap = a.f[S::ScoreCap];
  long long splits = a.i[S::Splits];
  long long t = blockIdx.x;
  int kvh = blockIdx.y, split = blockIdx.z;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int pos = positions[t];
  int lo = first_visible<R, TOKENS>(pos);
  int n = pos - lo + 1, per = (int)((n + splits - 1) / splits);
  int begin = lo + split * per, end = begin + per < pos + 1 ? begin + per : pos + 1;
  const int *table = tables + (long long)slots[seq_ids[t]] * a.i[S::TableWidth];
  float qr[G][DL], acc[G][DVL], m[G], l[G];
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
    for (int e = 0; e < DL; ++e) {
      int d = lane + 32 * e;
      qr[g][e] = d < D ? ld(q, (t * H + kvh * G + g) * D + d) : 0.0f;
    }
    for (int e = 0; e < DVL; ++e)
      acc[g][e] = 0.0f;
  }
  for (int j = begin + warp; j < end; j += WARPS) {
    long long slot = (long long)table[j / B] * B + j % B;
    const TKV *kr = pool + slot * ROW + kvh * D;
    const TKV *vr = pool + slot * ROW + KELEMS + kvh * DV;
    float kv[DL], vv[DVL];
    for (int e = 0; e < DL; ++e) {
      int d = lane + 32 * e;
      kv[e] = d < D ? ld(kr, d) : 0.0f;
    }
    for (int e = 0; e < DVL; ++e) {
      int d = lane + 32 * e;
      vv[e] = d < DV ? ld(vr, d) : 0.0f;
    }
    for (int g = 0; g < G; ++g) {
      float dot = 0.0f;
      for (int e = 0; e < DL; ++e)
        dot += qr[g][e] * kv[e];
      float s = warp_sum(dot) * scoreScale;
      if constexpr (SOFTCAP)
        s = cap * tanhf(s / cap);
      if constexpr (present<TB>)
        if (pos - j < BIAS)
          s += ld(bias, (t * H + kvh * G + g) * BIAS + (pos - j));
      online_softmax_step(s, m[g], l[g], acc[g], vv);
    }
  }
  attention_finish<G, DV, DVL, H, WARPS>(m, l, acc, sm_m, sm_l, sm_acc, (float *)a.p[S::Partials], t, kvh, split,
                                         splits);
}

// Latent attention (cbc.kv.latent_attention): block (token, head block, split) runs the online
// softmax for HG query heads over its share of the visible tokens. A cached row is
// [latent (L) | k_rope (R)]; the key is the whole row and the value its latent, so each row is
// read once per head block and nothing is up-projected. The splits merge in attention_combine.
// ROW is the pool row's stride (more than L + R when the layer also keeps an index_key row);
// with SEL > 0 the block's tokens are the SEL positions its query's selection lists (-1: none),
// so the work per query is SEL rows whatever the context length.
template <class TQ, class TKV, int H, int L, int R, int HG, int B, Retention RET, int TOKENS, int ROW = L + R,
          int SEL = 0>
__device__ __forceinline__ void latent_attention(const CbcArgs &a) {
  using S = slots::LatentAttention;
  constexpr int D = ROW, LL = (L + 31) / 32, RL = (R + 31) / 32, WARPS = kAttentionWarps;
  __shared__ float sm_m[WARPS][HG], sm_l[WARPS][HG];
  __shared__ float sm_acc[WARPS][HG][L];
  const TQ *ql = (const TQ *)a.p[S::QLatent];
  const TQ *qr = (const TQ *)a.p[S::QRope];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots];
  const int *tables = (const int *)a.p[S::Tables] + a.i[S::Group] * a.i[S::TableSlots] * a.i[S::TableWidth];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  float scoreScale = a.f[S::ScoreScale];
  long long splits = a.i[S::Splits];
  long long t = blockIdx.x;
  int hb = blockIdx.y, split = blockIdx.z;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int pos = positions[t];
  int lo = first_visible<RET, TOKENS>(pos);
  const int *sel = (const int *)a.p[S::Selection] + t * SEL;
  int n = SEL > 0 ? SEL : pos - lo + 1, per = (int)((n + splits - 1) / splits);
  int first = SEL > 0 ? 0 : lo, last = SEL > 0 ? SEL : pos + 1;
  int begin = first + split * per, end = begin + per < last ? begin + per : last;
  const int *table = tables + (long long)slots[seq_ids[t]] * a.i[S::TableWidth];
  float qlat[HG][LL], qrot[HG][RL > 0 ? RL : 1], acc[HG][LL], m[HG], l[HG];
  for (int g = 0; g < HG; ++g) {
    int h = hb * HG + g;
    m[g] = -INFINITY;
    l[g] = 0.0f;
    for (int e = 0; e < LL; ++e) {
      int d = lane + 32 * e;
      qlat[g][e] = d < L ? ld(ql, (t * H + h) * L + d) : 0.0f;
      acc[g][e] = 0.0f;
    }
    for (int e = 0; e < RL; ++e) {
      int d = lane + 32 * e;
      qrot[g][e] = d < R ? ld(qr, (t * H + h) * R + d) : 0.0f;
    }
  }
  for (int i = begin + warp; i < end; i += WARPS) {
    int j = i;
    if constexpr (SEL > 0) {
      j = sel[i];
      if (j < 0 || j > pos)
        continue;
    }
    const TKV *row = pool + ((long long)table[j / B] * B + j % B) * D;
    float lat[LL], rot[RL > 0 ? RL : 1];
    for (int e = 0; e < LL; ++e) {
      int d = lane + 32 * e;
      lat[e] = d < L ? ld(row, d) : 0.0f;
    }
    for (int e = 0; e < RL; ++e) {
      int d = lane + 32 * e;
      rot[e] = d < R ? ld(row, L + d) : 0.0f;
    }
    for (int g = 0; g < HG; ++g) {
      float dot = 0.0f;
      for (int e = 0; e < LL; ++e)
        dot += qlat[g][e] * lat[e];
      for (int e = 0; e < RL; ++e)
        dot += qrot[g][e] * rot[e];
      online_softmax_step(warp_sum(dot) * scoreScale, m[g], l[g], acc[g], lat);
    }
  }
  attention_finish<HG, L, LL, H, WARPS>(m, l, acc, sm_m, sm_l, sm_acc, (float *)a.p[S::Partials], t, hb, split,
                                        splits);
}

// Merges the splits of one (token, head), with a learned sink logit per head when TS is not void.
template <class TO, class TS, int H, int DV> __device__ __forceinline__ void attention_combine(const CbcArgs &a) {
  using S = slots::AttentionCombine;
  const float *part = (const float *)a.p[S::Partials];
  TO *out = (TO *)a.p[S::Out];
  const TS *sinks = (const TS *)a.p[S::Sinks];
  long long splits = a.i[S::Splits];
  long long t = blockIdx.x;
  int h = blockIdx.y;
  const float *p = part + (t * H + h) * splits * (DV + 2);
  float mm = -INFINITY;
  if constexpr (present<TS>)
    mm = ld(sinks, h);
  for (int s = 0; s < splits; ++s)
    mm = fmaxf(mm, p[s * (DV + 2)]);
  float denom = 0.0f;
  if constexpr (present<TS>)
    denom = expf(ld(sinks, h) - mm);
  for (int s = 0; s < splits; ++s)
    if (p[s * (DV + 2)] != -INFINITY)
      denom += expf(p[s * (DV + 2)] - mm) * p[s * (DV + 2) + 1];
  for (int d = threadIdx.x; d < DV; d += blockDim.x) {
    float v = 0.0f;
    for (int s = 0; s < splits; ++s)
      if (p[s * (DV + 2)] != -INFINITY)
        v += expf(p[s * (DV + 2)] - mm) * p[s * (DV + 2) + 2 + d];
    st(out, (t * H + h) * DV + d, v / denom);
  }
}

} // namespace cbc

#endif
