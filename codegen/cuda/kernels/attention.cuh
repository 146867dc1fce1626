// Flash-decoding over the paged cache, for the requests whose chunk of the step is one token
// (the tiled kernels of attention_prefill.cuh take the longer chunks). attention: block
// (request, kv head, split) runs an online softmax for the G = H / HKV query heads of its group
// over its share of the visible keys, and writes per head the split's max, denominator and
// weighted values; attention_combine merges the splits and the sinks.
//
// Rows are read with 128-bit loads (ld128: 8 bf16 or 4 floats a lane) wherever a row and each
// head's offset in it are a whole number of 16-byte chunks: a key is spread over LPK lanes
// (the chunks of its row round-robin), so a warp takes 32 / LPK keys at a time and each key's
// row is read once for the whole group. Other row shapes take the same code with one element
// a chunk (the scalar path).
#ifndef CBC_CODEGEN_CUDA_KERNELS_ATTENTION_CUH
#define CBC_CODEGEN_CUDA_KERNELS_ATTENTION_CUH

#include "codegen/cuda/kernels/prelude.cuh"
#include "codegen/cuda/kernels/warp.cuh"

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

// The token of decode block blockIdx.x: with ALL, token blockIdx.x; otherwise request
// blockIdx.x's only token when its chunk is one token, else -1 (a prefill chunk, which the
// tiled kernel takes).
template <bool ALL> __device__ __forceinline__ long long decode_token(const int *cuSeqlens) {
  if constexpr (ALL) {
    return blockIdx.x;
  } else {
    int r = blockIdx.x;
    return cuSeqlens[r + 1] - cuSeqlens[r] == 1 ? cuSeqlens[r] : -1;
  }
}

// N elements of T packed in 32-bit words as a 16-byte load brings them (bf16: two a word, the
// lower index in the low half): the decode kernels keep q and the rows they load packed, so
// that bf16 takes half the registers.
template <class T, int N> struct Packed {
  static constexpr int W = (N * (int)sizeof(T) + 3) / 4;
  unsigned w[W];
};
template <class T, int N> __device__ __forceinline__ void packed_zero(Packed<T, N> &p) {
  #pragma unroll
  for (int i = 0; i < Packed<T, N>::W; ++i)
    p.w[i] = 0;
}
template <class T, int N> __device__ __forceinline__ float packed_at(const Packed<T, N> &p, int i) {
  if constexpr (same<T, bf16>)
    return (i & 1) ? bf16x2_hi(p.w[i >> 1]) : bf16x2_lo(p.w[i >> 1]);
  else
    return __int_as_float((int)p.w[i]);
}
// p[0..N) element by element (any alignment).
template <class T, int N> __device__ __forceinline__ void packed_load_elems(Packed<T, N> &p, const T *src) {
  packed_zero(p);
  #pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (same<T, bf16>)
      p.w[i >> 1] |= bf16_bits(src[i]) << (16 * (i & 1));
    else
      p.w[i] = __float_as_uint(src[i]);
  }
}
// p[0..N) with one 128-bit load where they are 16 bytes (src then 16-byte aligned).
template <class T, int N> __device__ __forceinline__ void packed_load(Packed<T, N> &p, const T *src) {
  if constexpr (N * sizeof(T) == 16) {
    uint4 v = ld128(src);
    p.w[0] = v.x, p.w[1] = v.y, p.w[2] = v.z, p.w[3] = v.w;
  } else {
    packed_load_elems(p, src);
  }
}


// How the decode kernels spread rows over lanes: chunks of VEC elements (16 bytes where WIDE,
// else one element), KCH and VCH in a key and a value row, LPK lanes a key, KPW keys a warp at
// a time, KC and VC chunks of a key and a value per lane.
template <class TKV, int D, int DV, bool WIDE> struct DecodeShape {
  static constexpr int VEC = WIDE ? 16 / (int)sizeof(TKV) : 1;
  static constexpr int KCH = D / VEC, VCH = DV / VEC;
  static constexpr int LPK = decodeLanes(KCH > VCH ? KCH : VCH), KPW = 32 / LPK;
  static constexpr int KC = (KCH + LPK - 1) / LPK, VC = (VCH + LPK - 1) / LPK;
};

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

// The online-softmax state of G heads in one lane: running max and denominator, and the
// accumulated values of the lane's VC value chunks.
template <int G, class SH> struct DecodeState {
  float m[G], l[G], acc[G][SH::VC][SH::VEC];
};
template <int G, class SH> __device__ __forceinline__ void decode_state_init(DecodeState<G, SH> &st) {
  #pragma unroll
  for (int g = 0; g < G; ++g) {
    st.m[g] = -INFINITY;
    st.l[g] = 0.0f;
    #pragma unroll
    for (int e = 0; e < SH::VC; ++e)
      #pragma unroll
      for (int i = 0; i < SH::VEC; ++i)
        st.acc[g][e][i] = 0.0f;
  }
}

// One key of head g: score s joins the running max and denominator, and the accumulated values
// are rescaled and take p * v (the key's value chunks v).
template <int G, class SH, class TKV, int NV>
__device__ __forceinline__ void decode_step(DecodeState<G, SH> &st, int g, float s,
                                            const Packed<TKV, SH::VEC> (&v)[NV]) {
  float mn = fmaxf(st.m[g], s);
  float corr = expf(st.m[g] - mn), p = expf(s - mn);
  st.l[g] = st.l[g] * corr + p;
  #pragma unroll
  for (int e = 0; e < SH::VC; ++e)
    #pragma unroll
    for (int i = 0; i < SH::VEC; ++i)
      st.acc[g][e][i] = st.acc[g][e][i] * corr + p * packed_at(v[e], i);
  st.m[g] = mn;
}

// Sum over the LPK lanes of a key.
template <int LPK> __device__ __forceinline__ float key_sum(float v) {
  #pragma unroll
  for (int o = LPK / 2; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// A warp's online softmax over the keys of loop indices [begin, end). row(i, j, kr, vr) names
// index i's key position j and its key and value rows (false: no key, a selection's -1);
// score(g, s, j) turns head g's dot product into its score. With VALUE_IN_KEY the values are
// the first DV elements of the key row (latent attention), loaded once. Each key group of LPK
// lanes takes U keys per round, their loads issued before any is used.
template <int G, class SH, int WARPS, bool VALUE_IN_KEY, class TQ, class TKV, class Row, class Score>
__device__ __forceinline__ void decode_keys(DecodeState<G, SH> &st, const Packed<TQ, SH::VEC> (&q)[G][SH::KC],
                                            int begin, int end, Row row, Score score) {
  constexpr int VEC = SH::VEC, LPK = SH::LPK, KPW = SH::KPW, KC = SH::KC;
  constexpr int VL = VALUE_IN_KEY ? 1 : SH::VC, U = KC + (VALUE_IN_KEY ? 0 : SH::VC) <= 2 ? 4 : 2;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, sub = lane % LPK, grp = lane / LPK;
  for (int base = begin + warp * KPW * U; base < end; base += WARPS * KPW * U) {
    Packed<TKV, VEC> kc[U][KC], vc[U][VL];
    bool ok[U];
    int js[U];
    #pragma unroll
    for (int u = 0; u < U; ++u) {
      int i = base + u * KPW + grp;
      const TKV *kr = nullptr, *vr = nullptr;
      ok[u] = i < end && row(i, js[u], kr, vr);
      #pragma unroll
      for (int e = 0; e < KC; ++e) {
        int c = sub + LPK * e;
        if (ok[u] && c < SH::KCH)
          packed_load(kc[u][e], kr + c * VEC);
        else
          packed_zero(kc[u][e]);
      }
      #pragma unroll
      for (int e = 0; e < VL && !VALUE_IN_KEY; ++e) {
        int c = sub + LPK * e;
        if (ok[u] && c < SH::VCH)
          packed_load(vc[u][e], vr + c * VEC);
        else
          packed_zero(vc[u][e]);
      }
    }
    #pragma unroll
    for (int u = 0; u < U; ++u)
      #pragma unroll
      for (int g = 0; g < G; ++g) {
        float dot = 0.0f;
        #pragma unroll
        for (int e = 0; e < KC; ++e)
          #pragma unroll
          for (int x = 0; x < VEC; ++x)
            dot += packed_at(q[g][e], x) * packed_at(kc[u][e], x);
        float s = key_sum<LPK>(dot); // every lane takes part, with or without a key
        if (!ok[u])
          continue;
        if constexpr (VALUE_IN_KEY)
          decode_step<G, SH>(st, g, score(g, s, js[u]), kc[u]);
        else
          decode_step<G, SH>(st, g, score(g, s, js[u]), vc[u]);
      }
  }
}

// Merges the key groups of each warp (lanes LPK apart hold the same value chunks), then the
// warps through shared memory, and writes the block's partial result for heads kvh * G ...
template <int G, int DV, int H, int WARPS, class SH>
__device__ __forceinline__ void decode_finish(DecodeState<G, SH> &st, float (*sm_m)[G], float (*sm_l)[G],
                                              float (*sm_acc)[G][DV], float *part, long long t, int kvh, int split,
                                              long long splits) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  #pragma unroll
  for (int o = SH::LPK; o < 32; o <<= 1)
    #pragma unroll
    for (int g = 0; g < G; ++g) {
      float mo = __shfl_xor_sync(0xffffffffu, st.m[g], o), lo = __shfl_xor_sync(0xffffffffu, st.l[g], o);
      float mn = fmaxf(st.m[g], mo);
      float x = st.m[g] == -INFINITY ? 0.0f : expf(st.m[g] - mn), y = mo == -INFINITY ? 0.0f : expf(mo - mn);
      st.l[g] = st.l[g] * x + lo * y;
      #pragma unroll
      for (int e = 0; e < SH::VC; ++e)
        #pragma unroll
        for (int i = 0; i < SH::VEC; ++i)
          st.acc[g][e][i] = st.acc[g][e][i] * x + __shfl_xor_sync(0xffffffffu, st.acc[g][e][i], o) * y;
      st.m[g] = mn;
    }
  #pragma unroll
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      sm_m[warp][g] = st.m[g];
      sm_l[warp][g] = st.l[g];
    }
    #pragma unroll
    for (int e = 0; e < SH::VC; ++e) {
      int c = lane + SH::LPK * e;
      if (lane < SH::LPK && c < SH::VCH)
        #pragma unroll
        for (int i = 0; i < SH::VEC; ++i)
          sm_acc[warp][g][c * SH::VEC + i] = st.acc[g][e][i];
    }
  }
  __syncthreads();
  attention_partial<G, DV, H, WARPS>(sm_m, sm_l, sm_acc, part, t, kvh, split, splits);
}

// This split's share [begin, end) of the n positions from first.
__device__ __forceinline__ void split_range(int first, int n, int last, long long splits, int split, int &begin,
                                            int &end) {
  int per = (int)((n + splits - 1) / splits);
  begin = first + split * per;
  end = begin + per < last ? begin + per : last;
}

// TB, BIAS: the distance bias [T, H * BIAS] added to the score of the key at distance pos - j <
// BIAS (void, 0: none). ALL: block x takes token x, for heads too wide for the prefill kernel.
// ROWS: the pool row's stride where the layer keeps an index_key row after k | v (0: k | v).
// SELH > 0: the block selection [T, SELH * SELK] of blocks of SELB positions; the block's keys
// are those its heads' selection lists (one list for all G heads: H / SELH is a multiple of G),
// so the work per query is SELK * SELB keys whatever the context length. ALIBI: a table of one
// slope per query head (null: none); the score of the key at distance pos - j gains
// -slope * (pos - j). GB > 0: a block takes GB of a KV head's query heads (decodeHeadsPerBlock),
// block y the heads y * GB ... of KV head y / (H / HKV / GB); 0: all of them.
template <class TQ, class TKV, int H, int HKV, int D, int DV, int B, Retention R, int TOKENS, bool SOFTCAP,
          class TB = void, int BIAS = 0, bool ALL = false, int ROWS = 0, int SELH = 0, int SELK = 0, int SELB = 0,
          const float *ALIBI = nullptr, int GB = 0>
__device__ __forceinline__ void attention(const CbcArgs &a) {
  using S = slots::Attention;
  constexpr int G = GB > 0 ? GB : H / HKV, V16 = 16 / (int)sizeof(TKV), WARPS = kAttentionWarps;
  static_assert((H / HKV) % G == 0, "a block's query heads divide the KV head's");
  constexpr int ROW = ROWS > 0 ? ROWS : HKV * (D + DV), KELEMS = HKV * D;
  static_assert(SELH == 0 || (H / SELH) % G == 0, "a key head's query heads must share one block selection");
  using SH = DecodeShape<TKV, D, DV, D % V16 == 0 && DV % V16 == 0>;
  __shared__ float sm_m[WARPS][G], sm_l[WARPS][G];
  __shared__ float sm_acc[WARPS][G][DV];
  long long t = decode_token<ALL>((const int *)a.p[S::CuSeqlens]);
  if (t < 0)
    return;
  const TQ *q = (const TQ *)a.p[S::Q];
  const int *tables = (const int *)a.p[S::Tables] + a.i[S::Group] * a.i[S::TableSlots] * a.i[S::TableWidth];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  const TB *bias = (const TB *)a.p[S::DistanceBias];
  float scoreScale = a.f[S::ScoreScale], cap = a.f[S::ScoreCap];
  // hb: the block's heads hb * G ...; kvh: their KV head.
  int hb = blockIdx.y, kvh = hb / (H / HKV / G), split = blockIdx.z, sub = (threadIdx.x & 31) % SH::LPK;
  int pos = ((const int *)a.p[S::Positions])[t];
  int lo = first_visible<R, TOKENS>(pos), begin, end;
  // Keys [lo, hi): up to the token itself, or with key ends to its image's end.
  const int *keyEnds = (const int *)a.p[S::KeyEnds];
  int hi = keyEnds ? keyEnds[t] : pos + 1;
  constexpr int SELN = SELK * SELB; // loop indices over the selected blocks' positions
  if constexpr (SELH > 0)
    split_range(0, SELN, SELN, a.i[S::Splits], split, begin, end);
  else
    split_range(lo, hi - lo, hi, a.i[S::Splits], split, begin, end);
  const int *sel = SELH > 0 ? (const int *)a.p[S::Selection] + (t * SELH + hb * G / (H / (SELH ? SELH : 1))) * SELK
                            : nullptr;
  const int *table = tables + (long long)((const int *)a.p[S::Slots])[((const int *)a.p[S::SeqIds])[t]] *
                                  a.i[S::TableWidth];
  Packed<TQ, SH::VEC> qv[G][SH::KC];
  #pragma unroll
  for (int g = 0; g < G; ++g)
    #pragma unroll
    for (int e = 0; e < SH::KC; ++e) {
      int c = sub + SH::LPK * e;
      packed_zero(qv[g][e]);
      if (c < SH::KCH)
        packed_load_elems(qv[g][e], q + (t * H + hb * G + g) * D + c * SH::VEC);
    }
  auto row = [&](int i, int &j, const TKV *&kr, const TKV *&vr) {
    j = i;
    if constexpr (SELH > 0) {
      int blk = sel[i / (SELB ? SELB : 1)];
      j = blk * SELB + i % (SELB ? SELB : 1);
      if (blk < 0 || j > pos)
        return false;
    }
    const TKV *r = pool + ((long long)table[j / B] * B + j % B) * ROW;
    kr = r + kvh * D;
    vr = r + KELEMS + kvh * DV;
    return true;
  };
  auto score = [&](int g, float s, int j) {
    s *= scoreScale;
    if constexpr (SOFTCAP)
      s = cap * tanhf(s / cap);
    if constexpr (present<TB>)
      if (pos - j < BIAS)
        s += ld(bias, (t * H + hb * G + g) * BIAS + (pos - j));
    if constexpr (ALIBI != nullptr)
      s -= ALIBI[hb * G + g] * (float)(pos - j);
    return s;
  };
  DecodeState<G, SH> st;
  decode_state_init(st);
  decode_keys<G, SH, WARPS, false, TQ, TKV>(st, qv, begin, end, row, score);
  decode_finish<G, DV, H, WARPS>(st, sm_m, sm_l, sm_acc, (float *)a.p[S::Partials], t, hb, split,
                                 a.i[S::Splits]);
}

// Latent attention (cbc.kv.latent_attention): block (request, head block, split) runs the
// online softmax for HG query heads over its share of the visible tokens. A cached row is
// [latent (L) | k_rope (R)]; the key is the whole row and the value its latent, so each row is
// read once per head block and nothing is up-projected. The splits merge in attention_combine.
// ROW is the pool row's stride (more than L + R when the layer also keeps an index_key row);
// with SEL > 0 the block's tokens are the SEL positions its query's selection lists (-1: none),
// so the work per query is SEL rows whatever the context length, and the kernel takes every
// token of the step (ALL; there is no tiled form: each token's keys are its own).
template <class TQ, class TKV, int H, int L, int R, int HG, int B, Retention RET, int TOKENS, int ROW = L + R,
          int SEL = 0, bool ALL = (SEL > 0)>
__device__ __forceinline__ void latent_attention(const CbcArgs &a) {
  using S = slots::LatentAttention;
  constexpr int D = L + R, V16 = 16 / (int)sizeof(TKV), WARPS = kAttentionWarps;
  using SH = DecodeShape<TKV, D, L, L % V16 == 0 && R % V16 == 0 && ROW % V16 == 0>;
  __shared__ float sm_m[WARPS][HG], sm_l[WARPS][HG];
  __shared__ float sm_acc[WARPS][HG][L];
  long long t = decode_token<ALL>((const int *)a.p[S::CuSeqlens]);
  if (t < 0)
    return;
  const TQ *ql = (const TQ *)a.p[S::QLatent];
  const TQ *qr = (const TQ *)a.p[S::QRope];
  const int *tables = (const int *)a.p[S::Tables] + a.i[S::Group] * a.i[S::TableSlots] * a.i[S::TableWidth];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  float scoreScale = a.f[S::ScoreScale];
  int hb = blockIdx.y, split = blockIdx.z, sub = (threadIdx.x & 31) % SH::LPK;
  int pos = ((const int *)a.p[S::Positions])[t];
  int lo = first_visible<RET, TOKENS>(pos), begin, end;
  const int *sel = (const int *)a.p[S::Selection] + t * SEL;
  split_range(SEL > 0 ? 0 : lo, SEL > 0 ? SEL : pos - lo + 1, SEL > 0 ? SEL : pos + 1, a.i[S::Splits], split, begin,
              end);
  const int *table = tables + (long long)((const int *)a.p[S::Slots])[((const int *)a.p[S::SeqIds])[t]] *
                                  a.i[S::TableWidth];
  // A chunk lies wholly in the latent or the rope part (WIDE needs L % VEC == 0).
  Packed<TQ, SH::VEC> qv[HG][SH::KC];
  #pragma unroll
  for (int g = 0; g < HG; ++g)
    #pragma unroll
    for (int e = 0; e < SH::KC; ++e) {
      int c = sub + SH::LPK * e, d = c * SH::VEC;
      long long h = hb * HG + g;
      packed_zero(qv[g][e]);
      if (c < SH::KCH)
        packed_load_elems(qv[g][e], d < L ? ql + (t * H + h) * L + d : qr + (t * H + h) * R + (d - L));
    }
  auto row = [&](int i, int &j, const TKV *&kr, const TKV *&vr) {
    j = i;
    if constexpr (SEL > 0) {
      j = sel[i];
      if (j < 0 || j > pos)
        return false;
    }
    kr = vr = pool + ((long long)table[j / B] * B + j % B) * ROW;
    return true;
  };
  auto score = [&](int, float s, int) { return s * scoreScale; };
  DecodeState<HG, SH> st;
  decode_state_init(st);
  decode_keys<HG, SH, WARPS, true, TQ, TKV>(st, qv, begin, end, row, score);
  decode_finish<HG, L, H, WARPS>(st, sm_m, sm_l, sm_acc, (float *)a.p[S::Partials], t, hb, split, a.i[S::Splits]);
}

// Merges the splits of one (token, head), with a learned sink logit per head when TS is not void
// (SR: one per query row and head, [T, H]).
// Block (x, h): with ALL token x, else request x's token when its chunk is one token (the
// prefill kernels write the other tokens' results themselves).
template <class TO, class TS, int H, int DV, bool ALL = false, bool SR = false>
__device__ __forceinline__ void attention_combine(const CbcArgs &a) {
  using S = slots::AttentionCombine;
  long long t = decode_token<ALL>((const int *)a.p[S::CuSeqlens]);
  if (t < 0)
    return;
  const float *part = (const float *)a.p[S::Partials];
  TO *out = (TO *)a.p[S::Out];
  const TS *sinks = (const TS *)a.p[S::Sinks];
  long long splits = a.i[S::Splits];
  int h = blockIdx.y;
  const float *p = part + (t * H + h) * splits * (DV + 2);
  long long sink = SR ? t * H + h : h;
  float mm = -INFINITY;
  if constexpr (present<TS>)
    mm = ld(sinks, sink);
  for (int s = 0; s < splits; ++s)
    mm = fmaxf(mm, p[s * (DV + 2)]);
  float denom = 0.0f;
  if constexpr (present<TS>)
    denom = expf(ld(sinks, sink) - mm);
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
