// Sparse (indexed) attention's indexer: the index_key row append, the per-query top-k
// selection (cbc.kv.index_append, cbc.kv.index_select; one block per token), the per-query top-k
// pools (cbc.kv.pool_select; one block per token) and the per-head top-k blocks
// (cbc.kv.block_select; one block per token and head).
#ifndef CBC_CODEGEN_CUDA_KERNELS_INDEX_SELECT_CUH
#define CBC_CODEGEN_CUDA_KERNELS_INDEX_SELECT_CUH

#include "codegen/cuda/kernels/kv_append.cuh"

namespace cbc {

// The index key goes last in the layer's pool row of ROW elements (DI of them).
// RATE > 1: a compressed layer's keys, one per window of RATE positions.
template <class TK, class TKV, int DI, int ROW, int B, int RATE = 1>
__device__ __forceinline__ void index_append(const CbcArgs &a) {
  using S = slots::IndexAppend;
  const TK *k = (const TK *)a.p[S::Key];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots];
  long long t = blockIdx.x;
  int at = written_row<RATE>(positions[t]);
  if (at < 0)
    return;
  TKV *row = cache_row<B, ROW, S>(a, (TKV *)a.p[S::Pool], slots[seq_ids[t]], at);
  for (int j = threadIdx.x; j < DI; j += blockDim.x)
    st(row, ROW - DI + j, ld(k, t * DI + j));
}

// An order-preserving unsigned key of a score; +0 and -0 are one key, as they compare equal.
__device__ __forceinline__ unsigned score_key(float s) {
  unsigned u = __float_as_uint(s == 0.0f ? 0.0f : s);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

template <class TQ, class TW, class TKV, int H, int D, int ROW, int B>
__device__ __forceinline__ float index_score(const CbcArgs &a, const int *table, long long t, int j, float ks,
                                             float ws) {
  using S = slots::IndexSelect;
  const TQ *q = (const TQ *)a.p[S::Q];
  const TW *w = (const TW *)a.p[S::W];
  const TKV *k = (const TKV *)a.p[S::Pool] + ((long long)table[j / B] * B + j % B) * ROW + (ROW - D);
  float s = 0.0f;
  for (int h = 0; h < H; ++h) {
    float dot = 0.0f;
    for (int d = 0; d < D; ++d)
      dot += ld(q, (t * H + h) * D + d) * ld(k, d);
    s += ld(w, t * H + h) * ws * fmaxf(dot * ks, 0.0f);
  }
  return s;
}

// Radix select of the K best of n > K scores score(j), j in [0, n) (four passes of 8 bits over
// the scores, recomputed rather than buffered, since n has no compile-time bound), then the
// selected indices written to out[0..K) in ascending order: every index above the K-th best, and
// as many equal to it as are missing, lower indices first. Every thread of the block calls it.
template <int K, class TO, class Score> __device__ __forceinline__ void select_top(TO *out, int n, Score score) {
  constexpr int THREADS = 128;
  __shared__ unsigned hist[256];
  __shared__ unsigned prefix, mask;
  __shared__ int remaining, base, scan[THREADS], tiesBefore;
  if (threadIdx.x == 0) {
    prefix = 0;
    mask = 0;
    remaining = K;
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
      hist[i] = 0;
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      unsigned key = score_key(score(j));
      if ((key & mask) == prefix)
        atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int above = 0, digit = 255;
      for (; digit > 0 && above + (int)hist[digit] < remaining; --digit)
        above += hist[digit];
      remaining -= above;
      prefix |= (unsigned)digit << shift;
      mask |= 255u << shift;
    }
    __syncthreads();
  }
  // prefix is now the K-th best key; `remaining` of the keys equal to it are taken.
  if (threadIdx.x == 0) {
    base = 0;
    tiesBefore = 0;
  }
  __syncthreads();
  for (int j0 = 0; j0 < n; j0 += THREADS) {
    int j = j0 + threadIdx.x;
    unsigned key = j < n ? score_key(score(j)) : 0u;
    int tie = j < n && key == prefix, above = j < n && key > prefix;
    // An inclusive scan of the ties in this chunk ranks them by index.
    scan[threadIdx.x] = tie;
    __syncthreads();
    for (int off = 1; off < THREADS; off <<= 1) {
      int v = threadIdx.x >= off ? scan[threadIdx.x - off] : 0;
      __syncthreads();
      scan[threadIdx.x] += v;
      __syncthreads();
    }
    int take = above || (tie && tiesBefore + scan[threadIdx.x] <= remaining);
    int tieTotal = scan[THREADS - 1];
    __syncthreads();
    scan[threadIdx.x] = take;
    __syncthreads();
    for (int off = 1; off < THREADS; off <<= 1) {
      int v = threadIdx.x >= off ? scan[threadIdx.x - off] : 0;
      __syncthreads();
      scan[threadIdx.x] += v;
      __syncthreads();
    }
    if (take)
      out[base + scan[threadIdx.x] - 1] = j;
    __syncthreads();
    if (threadIdx.x == 0) {
      base += scan[THREADS - 1];
      tiesBefore += tieTotal;
    }
    __syncthreads();
  }
}

// The K best keys among positions 0..pos by index_score. Fewer than K visible: all, -1 padded.
// RATE > 1: the keys are a compressed layer's, the windows complete at the query.
template <class TQ, class TW, class TKV, class TO, int H, int D, int K, int ROW, int B, int RATE = 1>
__device__ __forceinline__ void index_select(const CbcArgs &a) {
  using S = slots::IndexSelect;
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots];
  TO *out = (TO *)a.p[S::Out];
  long long t = blockIdx.x;
  int n = (positions[t] + 1) / RATE;
  const int *table = group_tables<S>(a) + (long long)slots[seq_ids[t]] * a.i[S::TableWidth];
  float ks = a.f[S::KeyScale], ws = a.f[S::WeightScale];
  if (n <= K) {
    for (int i = threadIdx.x; i < K; i += blockDim.x)
      out[t * K + i] = i < n ? i : -1;
    return;
  }
  select_top<K>(out + t * K, n,
                [&](int j) { return index_score<TQ, TW, TKV, H, D, ROW, B>(a, table, t, j, ks, ws); });
}

// Pool selection (cbc.kv.pool_select): block t scores the complete pools of KP positions ending
// at or before its query and keeps the NP best in ascending order (all when there are no more),
// expanded to their positions, then the query's open pool up to it; with BLOCKS, the pools'
// indices, then the open pool's. A pool's key: with TA (ape) per feature from the rows [k | g] of
// its tokens, softmax(g + ape) over the pool weighting k; without, the mean of the rows k. Then,
// with TN, RMS-normed by KeyNorm + NormOffset, and with NF > 0 rotated (rotate-half over its
// first 2 NF features, frequency i by FREQ[i] at the pool's first position). TW void: every
// head weighs 1.
template <class TQ, class TW, class TKV, class TA, class TO, int H, int D, int NP, int KP, int ROW, int B,
          class TN = void, int NF = 0, const float *FREQ = nullptr, bool BLOCKS = false>
__device__ __forceinline__ void pool_select(const CbcArgs &a) {
  using S = slots::PoolSelect;
  constexpr int W = BLOCKS ? NP + 1 : NP * KP + KP - 1;
  constexpr int KROW = present<TA> ? 2 * D : D; // the index_key row's elements
  const TQ *q = (const TQ *)a.p[S::Q];
  const TW *w = (const TW *)a.p[S::W];
  const TA *ape = (const TA *)a.p[S::Ape];
  const TN *knorm = (const TN *)a.p[S::KeyNorm];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots];
  long long t = blockIdx.x;
  int pos = positions[t], complete = (pos + 1) / KP;
  TO *out = (TO *)a.p[S::Out] + t * W;
  const int *table = group_tables<S>(a) + (long long)slots[seq_ids[t]] * a.i[S::TableWidth];
  float ks = a.f[S::KeyScale], ws = a.f[S::WeightScale];
  __shared__ int chosen[NP];
  int n = complete < NP ? complete : NP;
  if (complete <= NP) {
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      chosen[i] = i;
  } else {
    auto row = [&](int j) { return pool + ((long long)table[j / B] * B + j % B) * ROW + (ROW - KROW); };
    auto score = [&](int p) {
      float key[D];
      for (int f = 0; f < D; ++f) {
        float acc = 0.0f;
        if constexpr (present<TA>) {
          float m = -INFINITY, sum = 0.0f;
          for (int j = 0; j < KP; ++j)
            m = fmaxf(m, ld(row(p * KP + j), D + f) + ld(ape, j * D + f));
          for (int j = 0; j < KP; ++j) {
            const TKV *r = row(p * KP + j);
            float e = expf(ld(r, D + f) + ld(ape, j * D + f) - m);
            sum += e;
            acc += e * ld(r, f);
          }
          key[f] = acc / sum;
        } else {
          for (int j = 0; j < KP; ++j)
            acc += ld(row(p * KP + j), f);
          key[f] = acc / (float)KP;
        }
      }
      if constexpr (present<TN>) {
        float ss = 0.0f;
        for (int f = 0; f < D; ++f)
          ss += key[f] * key[f];
        float inv = rsqrtf(ss / (float)D + a.f[S::Eps]);
        for (int f = 0; f < D; ++f)
          key[f] *= inv * (ld(knorm, f) + a.f[S::NormOffset]);
      }
      for (int i = 0; i < NF; ++i) {
        float angle = (float)(p * KP) * FREQ[i], c = cosf(angle), sn = sinf(angle);
        float x1 = key[i], x2 = key[i + NF];
        key[i] = x1 * c - x2 * sn;
        key[i + NF] = x2 * c + x1 * sn;
      }
      float s = 0.0f;
      for (int h = 0; h < H; ++h) {
        float dot = 0.0f;
        for (int f = 0; f < D; ++f)
          dot += ld(q, (t * H + h) * D + f) * key[f];
        float wh = 1.0f;
        if constexpr (present<TW>)
          wh = ld(w, t * H + h);
        s += wh * ws * fmaxf(dot * ks, 0.0f);
      }
      return s;
    };
    select_top<NP>(chosen, complete, score);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < W; i += blockDim.x) {
    int v = -1;
    if constexpr (BLOCKS) {
      if (i < n)
        v = chosen[i];
      else if (i == n && complete * KP <= pos)
        v = complete;
    } else if (i < NP * KP) {
      if (i / KP < n)
        v = chosen[i / KP] * KP + i % KP;
    } else if (complete * KP + (i - NP * KP) <= pos) {
      v = complete * KP + (i - NP * KP);
    }
    out[i] = v;
  }
}

// Block selection (cbc.kv.block_select): block (token t, head h) scores each visible block of
// BS positions by the maximum of q[t, h] . k_j over its keys j <= pos (the LOCAL blocks ending
// at the query's own score +inf) and keeps the K best, ascending; fewer than K visible: all, -1
// padded.
template <class TQ, class TKV, class TO, int H, int D, int BS, int K, int LOCAL, int ROW, int B>
__device__ __forceinline__ void block_select(const CbcArgs &a) {
  using S = slots::BlockSelect;
  const TQ *q = (const TQ *)a.p[S::Q];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  const int *positions = (const int *)a.p[S::Positions];
  const int *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots];
  long long t = blockIdx.x;
  int h = blockIdx.y, pos = positions[t], nb = pos / BS + 1;
  TO *out = (TO *)a.p[S::Out] + (t * H + h) * K;
  if (nb <= K) {
    for (int i = threadIdx.x; i < K; i += blockDim.x)
      out[i] = i < nb ? i : -1;
    return;
  }
  const int *table = group_tables<S>(a) + (long long)slots[seq_ids[t]] * a.i[S::TableWidth];
  auto score = [&](int b) {
    if (b >= nb - LOCAL)
      return INFINITY;
    float best = -INFINITY;
    for (int j = b * BS; j < b * BS + BS && j <= pos; ++j) {
      const TKV *k = pool + ((long long)table[j / B] * B + j % B) * ROW + (ROW - D);
      float dot = 0.0f;
      for (int d = 0; d < D; ++d)
        dot += ld(q, (t * H + h) * D + d) * ld(k, d);
      best = fmaxf(best, dot);
    }
    return best;
  };
  select_top<K>(out, nb, score);
}

} // namespace cbc

#endif
