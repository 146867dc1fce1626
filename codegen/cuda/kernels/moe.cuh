// Mixture of experts. moe_route: one warp per token scores the experts and picks k. The experts
// run as grouped GEMMs: moe_plan groups the (token, choice) pairs by expert in token order and
// lists the tiles, moe_gate_up and moe_down run every expert's rows in tiles on the tensor
// cores (mma_tile.cuh; the GLU fused into the first), and moe_combine mixes each token's k
// results in choice order (identity experts, which the plan leaves out, straight from the input
// row). The GEMMs' grids are sized by the step's token count alone and find their tiles in the
// plan, so a decode step replays in one CUDA Graph whatever the routing.
#ifndef CBC_CODEGEN_CUDA_KERNELS_MOE_CUH
#define CBC_CODEGEN_CUDA_KERNELS_MOE_CUH

#include "codegen/cuda/kernels/mma_tile.cuh"
#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// The k rounds of argmax over the keys, lower ids first on ties: chosen[j] gets the (unbiased)
// score of the j-th choice and chosenId[j] its expert.
template <int E, int K, int EL>
__device__ __forceinline__ void route_top_k(float (&v)[EL], float (&key)[EL], float (&chosen)[K], int (&chosenId)[K]) {
  int lane = threadIdx.x;
  for (int j = 0; j < K; ++j) {
    float best = -INFINITY, bestV = 0.0f;
    int bestId = 0x7fffffff;
    for (int e = 0; e < EL; ++e) {
      int x = lane + 32 * e;
      if (x < E && (key[e] > best || (key[e] == best && x < bestId))) {
        best = key[e];
        bestV = v[e];
        bestId = x;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      float ob = __shfl_xor_sync(0xffffffffu, best, o);
      float ov = __shfl_xor_sync(0xffffffffu, bestV, o);
      int oi = __shfl_xor_sync(0xffffffffu, bestId, o);
      if (ob > best || (ob == best && oi < bestId)) {
        best = ob;
        bestV = ov;
        bestId = oi;
      }
    }
    chosen[j] = bestV;
    chosenId[j] = bestId;
    for (int e = 0; e < EL; ++e)
      if (lane + 32 * e == bestId)
        key[e] = -INFINITY;
  }
}

// Group-limited choice: G groups of E / G consecutive experts, each scored by its two best keys
// (or its best); the experts of all but the KEEP best groups (ties: the lower group) get the
// fill as their key.
template <int E, int EL, int G, int KEEP, GroupScore GS, GroupFill GF>
__device__ __forceinline__ void route_mask_groups(float (&key)[EL]) {
  constexpr int PER = E / G;
  __shared__ float keys[E], groupScore[G];
  int lane = threadIdx.x;
  for (int e = 0; e < EL; ++e)
    if (lane + 32 * e < E)
      keys[lane + 32 * e] = key[e];
  __syncthreads();
  for (int g = lane; g < G; g += 32) {
    float best = -INFINITY, second = -INFINITY;
    for (int i = 0; i < PER; ++i) {
      float c = keys[g * PER + i];
      if (c > best) {
        second = best;
        best = c;
      } else if (c > second) {
        second = c;
      }
    }
    groupScore[g] = GS == GroupScore::max ? best : best + second;
  }
  __syncthreads();
  for (int e = 0; e < EL; ++e) {
    int x = lane + 32 * e, g = x / PER, rank = 0;
    if (x >= E)
      continue;
    for (int h = 0; h < G; ++h)
      rank += groupScore[h] > groupScore[g] || (groupScore[h] == groupScore[g] && h < g);
    if (rank >= KEEP)
      key[e] = GF == GroupFill::zero ? 0.0f : -INFINITY;
  }
}

// Sparsemixer weights: round j weighs its expert, of logit m, by its softmax over
// the experts not chosen before it whose relative gap (m - l) / max(|l|, m) stays within the
// threshold (a NaN gap keeps the expert). Every lane holds the same chosen ids after the top k.
template <int E, int K, int EL>
__device__ __forceinline__ void route_sparsemixer(const float (&v)[EL], float (&chosen)[K], const int (&chosenId)[K],
                                                  float threshold) {
  int lane = threadIdx.x;
  for (int j = 0; j < K; ++j) {
    float m = chosen[j], sum = 0.0f;
    for (int e = 0; e < EL; ++e) {
      int x = lane + 32 * e;
      bool before = false;
      for (int i = 0; i < j; ++i)
        before |= chosenId[i] == x;
      if (x < E && !before && !((m - v[e]) / fmaxf(fabsf(v[e]), m) > threshold))
        sum += expf(v[e] - m);
    }
    chosen[j] = 1.0f / warp_sum(sum);
  }
}

// Router logits [T, E] -> k weights and expert ids per token. TB is the selection bias's type
// (void: none), added to the scores or, with BIAS_ON_LOGITS, to the raw logits; G > 0 limits
// the choice to the KEEP best of G expert groups. TT (void: none) is a routing table's type: the
// experts are then Table[Tokens[t]], weighted by their scores (an id outside the experts weighs
// nothing; the CPU backend refuses it).
template <class TL, class TB, int E, int K, Score SC, bool RENORM, int G = 0, int KEEP = 0,
          GroupScore GS = GroupScore::top2_sum, GroupFill GF = GroupFill::neg_inf, bool BIAS_ON_LOGITS = false,
          class TT = void>
__device__ __forceinline__ void moe_route(const CbcArgs &a) {
  using S = slots::MoeRoute;
  constexpr int EL = (E + 31) / 32;
  const TL *logits = (const TL *)a.p[S::Logits];
  float *weights = (float *)a.p[S::Weights];
  int *ids = (int *)a.p[S::Ids];
  const TB *bias = (const TB *)a.p[S::Bias];
  long long t = blockIdx.x;
  int lane = threadIdx.x;
  float v[EL], key[EL], raw[EL];
  for (int e = 0; e < EL; ++e) {
    int x = lane + 32 * e;
    v[e] = raw[e] = x < E ? ld(logits, t * E + x) : -INFINITY;
  }
  if constexpr (SC == Score::softmax) {
    float mx = -INFINITY;
    for (int e = 0; e < EL; ++e)
      mx = fmaxf(mx, v[e]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int e = 0; e < EL; ++e) {
      v[e] = (lane + 32 * e) < E ? expf(v[e] - mx) : 0.0f;
      sum += v[e];
    }
    sum = warp_sum(sum);
    for (int e = 0; e < EL; ++e)
      v[e] = (lane + 32 * e) < E ? v[e] / sum : -INFINITY;
  }
  if constexpr (SC == Score::sigmoid)
    for (int e = 0; e < EL; ++e)
      v[e] = (lane + 32 * e) < E ? 1.0f / (1.0f + expf(-v[e])) : -INFINITY;
  if constexpr (SC == Score::sqrt_softplus) // softplus as torch computes it: linear above 20
    for (int e = 0; e < EL; ++e)
      v[e] = (lane + 32 * e) < E ? sqrtf(v[e] > 20.0f ? v[e] : log1pf(expf(v[e]))) : -INFINITY;
  for (int e = 0; e < EL; ++e) {
    key[e] = v[e];
    if constexpr (present<TB>)
      if (lane + 32 * e < E)
        key[e] = (BIAS_ON_LOGITS ? raw[e] : v[e]) + ld(bias, lane + 32 * e);
  }
  if constexpr (G > 0)
    route_mask_groups<E, EL, G, KEEP, GS, GF>(key);
  float chosen[K];
  int chosenId[K];
  if constexpr (present<TT>) {
    int token = ((const int *)a.p[S::Tokens])[t];
    for (int j = 0; j < K; ++j) {
      int id = (int)ld((const TT *)a.p[S::Table], (long long)token * K + j);
      bool valid = id >= 0 && id < E;
      float val = 0.0f;
      for (int e = 0; e < EL; ++e) { // the score lives in lane id % 32, register id / 32
        float x = __shfl_sync(0xffffffffu, v[e], valid ? id % 32 : 0);
        if (valid && e == id / 32)
          val = x;
      }
      chosen[j] = val;
      chosenId[j] = valid ? id : 0;
    }
  } else {
    route_top_k<E, K, EL>(v, key, chosen, chosenId);
  }
  if constexpr (SC == Score::sparsemixer)
    route_sparsemixer<E, K, EL>(v, chosen, chosenId, a.f[S::Threshold]);
  if (lane == 0) {
    if constexpr (SC == Score::topk_softmax) {
      float mx = chosen[0], sum = 0.0f;
      for (int j = 0; j < K; ++j) {
        chosen[j] = expf(chosen[j] - mx);
        sum += chosen[j];
      }
      for (int j = 0; j < K; ++j)
        chosen[j] /= sum;
    } else if constexpr (RENORM) {
      float sum = 0.0f;
      for (int j = 0; j < K; ++j)
        sum += chosen[j];
      for (int j = 0; j < K; ++j)
        chosen[j] /= sum + a.f[S::RenormEps];
    }
    for (int j = 0; j < K; ++j) {
      weights[t * K + j] = chosen[j] * a.f[S::Scaling];
      ids[t * K + j] = chosenId[j];
    }
  }
}

// Sigmoid routing with NS sink experts: logits [T, E + NS], the sinks last. Each token takes the
// sinks (ids 0..NS-1, weights first) and its K best routed experts by sigmoid + bias (ids NS + e),
// all weighted by their sigmoid over the sum of the NS + K sigmoids, times the scaling.
template <class TL, class TB, int E, int NS, int K> __device__ __forceinline__ void moe_route_sinks(const CbcArgs &a) {
  using S = slots::MoeRoute;
  constexpr int EL = (E + 31) / 32, W = NS + K;
  const TL *logits = (const TL *)a.p[S::Logits];
  float *weights = (float *)a.p[S::Weights];
  int *ids = (int *)a.p[S::Ids];
  const TB *bias = (const TB *)a.p[S::Bias];
  long long t = blockIdx.x;
  int lane = threadIdx.x;
  float v[EL], key[EL];
  for (int e = 0; e < EL; ++e) {
    int x = lane + 32 * e;
    v[e] = x < E ? 1.0f / (1.0f + expf(-ld(logits, t * (E + NS) + x))) : -INFINITY;
    key[e] = v[e];
    if constexpr (present<TB>)
      if (x < E)
        key[e] = v[e] + ld(bias, x);
  }
  float chosen[K];
  int chosenId[K];
  route_top_k<E, K, EL>(v, key, chosen, chosenId);
  if (lane == 0) {
    float sink[NS], sum = 0.0f;
    for (int i = 0; i < NS; ++i) {
      sink[i] = 1.0f / (1.0f + expf(-ld(logits, t * (E + NS) + E + i)));
      sum += sink[i];
    }
    for (int j = 0; j < K; ++j)
      sum += chosen[j];
    float f = a.f[S::Scaling] / sum;
    for (int i = 0; i < NS; ++i) {
      weights[t * W + i] = sink[i] * f;
      ids[t * W + i] = i;
    }
    for (int j = 0; j < K; ++j) {
      weights[t * W + NS + j] = chosen[j] * f;
      ids[t * W + NS + j] = NS + chosenId[j];
    }
  }
}

// The plan: offsets [E + 1], then perm [T * K] (position -> token * K + choice), then where
// [T * K] (token * K + choice -> position); and the tile table: (expert, first position) of
// each tile of kMoeTileM positions of one expert, experts in order, then (-1, 0) up to the
// bound the GEMMs' grids are sized by, ceil(T * K / kMoeTileM) + E. One block: the pairs are
// counted and placed by shared-memory atomics, so a prefill's T * K pairs cost T * K / 256
// steps a thread. Within an expert the positions are in no particular order; no result
// depends on it (a position's GEMM rows are its own, and the combine finds it through where).
template <int E, int K> __device__ __forceinline__ void moe_plan(const CbcArgs &a) {
  using S = slots::MoePlan;
  constexpr int TM = kMoeTileM;
  const int *ids = (const int *)a.p[S::Ids];
  int *offsets = (int *)a.p[S::Plan];
  int *tiles = (int *)a.p[S::Tiles];
  int *perm = offsets + E + 1;
  int *where = perm + a.i[S::Rows] * K;
  long long n = a.i[S::Rows] * K;
  const int first = (int)a.i[S::Rank] * E; // this rank's first expert
  __shared__ unsigned cursor[E];
  __shared__ int firstTile[E + 1];
  for (int e = threadIdx.x; e < E; e += blockDim.x)
    cursor[e] = 0;
  __syncthreads();
  for (long long i = threadIdx.x; i < n; i += blockDim.x) {
    int e = ids[i] - first;
    if (e >= 0 && e < E) // other ranks' experts, and the identity experts the combine takes, are left out
      atomicAdd(&cursor[e], 1u);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int rows = 0, tile = 0;
    for (int e = 0; e < E; ++e) {
      int c = (int)cursor[e];
      offsets[e] = rows;
      firstTile[e] = tile;
      cursor[e] = (unsigned)rows;
      rows += c;
      tile += (c + TM - 1) / TM;
    }
    offsets[E] = rows;
    firstTile[E] = tile;
  }
  __syncthreads();
  for (long long i = threadIdx.x; i < n; i += blockDim.x) {
    int e = ids[i] - first;
    if (e >= 0 && e < E) {
      int p = (int)atomicAdd(&cursor[e], 1u);
      perm[p] = (int)i;
      where[i] = p;
    }
  }
  long long bound = (n + TM - 1) / TM + E;
  for (long long t = threadIdx.x; t < bound; t += blockDim.x) {
    int e = -1, row0 = 0;
    if (t < firstTile[E]) {
      // The expert whose tiles hold t: the last with firstTile[e] <= t.
      int lo = 0, hi = E - 1;
      while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (firstTile[mid] <= t)
          lo = mid;
        else
          hi = mid - 1;
      }
      e = lo;
      row0 = offsets[e] + (int)(t - firstTile[e]) * TM;
    }
    tiles[2 * t] = e;
    tiles[2 * t + 1] = row0;
  }
}

// The experts' GEMM tiles: 64 positions of one expert x 64 weight rows, 4 warps of 32 x 32,
// slices of 32 columns. All-bf16 operands pipeline 4 slices deep (a decode step's tile reads
// 64 weight rows and one or two positions: bandwidth, so keep copies in flight); split fp32
// operands take twice the shared memory a slice and pipeline 2 deep. 40 KB either way.
using MoeMma = MmaTile<kMoeTileM, kMoeTileN, kMoeTileK, 2, 2>;
template <class TA, class TW> constexpr int kMoeStages = kBf16Parts<TA> + kBf16Parts<TW> == 2 ? 4 : 2;
static_assert(MoeMma::kThreads == kMoeThreads, "the launch's block is the tile's warps");

struct MoeTile {
  int expert, row0, rows; // rows: positions row0 .. row0 + rows - 1
};

// Tile blockIdx.y of the plan's table; false past the last tile. The grid's x is the weight's
// column blocks, so that consecutive blocks share their tile's positions, and an expert's
// consecutive tiles its weight, in L2.
__device__ __forceinline__ bool moe_tile(const int *offsets, const int *tiles, MoeTile &t) {
  t.expert = tiles[2 * blockIdx.y];
  if (t.expert < 0)
    return false;
  t.row0 = tiles[2 * blockIdx.y + 1];
  int left = offsets[t.expert + 1] - t.row0;
  t.rows = left < kMoeTileM ? left : kMoeTileM;
  return true;
}

// gate_up's staged weight row j (of kMoeTileN) for a gated unit: rows 16 q .. 16 q + 7 are the
// gates of units 8 q .. 8 q + 7 of the block, the next 8 their ups, so that a warp's
// accumulator fragments 2 q' and 2 q' + 1 hold the gate and the up of the same units.
__device__ __forceinline__ int gated_unit(int j) { return 8 * (j >> 4) + (j & 7); }
__device__ __forceinline__ bool gated_is_up(int j) { return (j >> 3) & 1; }

// gate_up is [E, GU, H] with GU = I (ungated) or 2I rows; the unit's result goes to the act
// workspace [T * K, I] of TR (the dtype the down projection reads). With SCALE_IN each row is
// the token's input times its routing weight, applied to the products (gate and up are linear
// in the input) before the biases. Grid: ceil(I / units per block) x tiles.
template <class TX, class TW, class TB, class TR, int E, int I, int H, int K, Glu L, Unit U, Act A,
          bool SCALE_IN = false>
__device__ __forceinline__ void moe_gate_up(const CbcArgs &a) {
  using S = slots::MoeGateUp;
  using Sh = MoeMma;
  constexpr bool ungated = U == Unit::ungated, inter = L == Glu::interleaved;
  constexpr int GU = ungated ? I : 2 * I, UNITS = ungated ? Sh::BN : Sh::BN / 2, ST = kMoeStages<TX, TW>;
  const int *offsets = (const int *)a.p[S::Plan];
  MoeTile tile;
  if (!moe_tile(offsets, (const int *)a.p[S::Tiles], tile))
    return;
  const int *perm = offsets + E + 1;
  const TX *x = (const TX *)a.p[S::X];
  const TW *w = (const TW *)a.p[S::W] + (long long)tile.expert * GU * H;
  int u0 = blockIdx.x * UNITS;
  auto wRow = [&](int u, bool up) { return ungated ? u : inter ? 2 * u + up : up * I + u; };
  const TX *aRows[Sh::RA];
  const TW *wRows[Sh::RW];
  for (int j = 0; j < Sh::RA; ++j) {
    int r = staged_row<Sh>(j);
    aRows[j] = r < tile.rows ? x + (long long)(perm[tile.row0 + r] / K) * H : nullptr;
  }
  for (int j = 0; j < Sh::RW; ++j) {
    int r = staged_row<Sh>(j), u = u0 + (ungated ? r : gated_unit(r));
    wRows[j] = u < I ? w + (long long)wRow(u, !ungated && gated_is_up(r)) * H : nullptr;
  }
  __shared__ TileRows<Sh::BM, Sh::BK, kBf16Parts<TX>> sa[ST];
  __shared__ TileRows<Sh::BN, Sh::BK, kBf16Parts<TW>> sw[ST];
  float acc[Sh::MF][Sh::NF][4] = {};
  mma_tile<Sh, H, ST>(sa, sw, aRows, wRows, aligned16(x), aligned16(w), active_frags<Sh>(tile.rows), acc);

  const TB *bias = (const TB *)a.p[S::Bias];
  long long b0 = (long long)tile.expert * GU;
  TR *act = (TR *)a.p[S::Act];
  float limit = a.f[S::Limit], alpha = a.f[S::Alpha], offset = a.f[S::UpOffset];
  for (int m = 0; m < Sh::MF; ++m)
    for (int i = 0; i < 4; ++i) {
      int r = frag_row<Sh>(m, i);
      if (r >= tile.rows)
        continue;
      long long p = tile.row0 + r;
      float scale = 1.0f;
      if constexpr (SCALE_IN)
        scale = ((const float *)a.p[S::Weights])[perm[p]];
      // Gated: fragment n is a gate when n is even, and n + 1 holds the ups of its units.
      for (int n = 0; n < Sh::NF; n += ungated ? 1 : 2) {
        int c = frag_col<Sh>(n, i), u = u0 + (ungated ? c : gated_unit(c));
        if (u >= I)
          continue;
        float g = 0.0f, v = acc[m][ungated ? n : n + 1][i] * scale;
        if constexpr (!ungated)
          g = acc[m][n][i] * scale;
        if constexpr (present<TB>) {
          if constexpr (!ungated)
            g += ld(bias, b0 + wRow(u, false));
          v += ld(bias, b0 + wRow(u, !ungated));
        }
        st(act, p * I + u, glu_unit<U, A>(g, v, limit, alpha, offset));
      }
    }
}

// Which row a GEMM row of the plan's position p reads or writes: the position's own (the act and
// out workspaces), its (token, choice) pair's perm[p], or its token's perm[p] / K.
enum class MoeRow { Position, Pair, Token };
template <MoeRow R, int K> __device__ __forceinline__ long long moe_row(const int *perm, long long p) {
  if constexpr (R == MoeRow::Position)
    return p;
  else if constexpr (R == MoeRow::Pair)
    return perm[p];
  else
    return perm[p] / K;
}

// One expert linear layer over the plan's tiles: w is [E, N, KD] (bias [E, N] of TB); position
// p reads row moe_row<RX>(p) of x [., KD] and writes row moe_row<RY>(p) of y [., N].
// Grid: ceil(N / kMoeTileN) x tiles.
template <class TX, class TW, class TB, class TY, int E, int N, int KD, int K, MoeRow RX, MoeRow RY>
__device__ __forceinline__ void moe_linear(const int *offsets, const int *tiles, const TX *x, const TW *wAll,
                                           const TB *bias, TY *y) {
  using Sh = MoeMma;
  constexpr int ST = kMoeStages<TX, TW>;
  MoeTile tile;
  if (!moe_tile(offsets, tiles, tile))
    return;
  const int *perm = offsets + E + 1;
  const TW *w = wAll + (long long)tile.expert * N * KD;
  int col0 = blockIdx.x * Sh::BN;
  const TX *aRows[Sh::RA];
  const TW *wRows[Sh::RW];
  for (int j = 0; j < Sh::RA; ++j) {
    int r = staged_row<Sh>(j);
    aRows[j] = r < tile.rows ? x + moe_row<RX, K>(perm, tile.row0 + r) * KD : nullptr;
  }
  for (int j = 0; j < Sh::RW; ++j) {
    int c = col0 + staged_row<Sh>(j);
    wRows[j] = c < N ? w + (long long)c * KD : nullptr;
  }
  __shared__ TileRows<Sh::BM, Sh::BK, kBf16Parts<TX>> sa[ST];
  __shared__ TileRows<Sh::BN, Sh::BK, kBf16Parts<TW>> sw[ST];
  float acc[Sh::MF][Sh::NF][4] = {};
  mma_tile<Sh, KD, ST>(sa, sw, aRows, wRows, aligned16(x), aligned16(w), active_frags<Sh>(tile.rows), acc);

  for (int m = 0; m < Sh::MF; ++m)
    for (int i = 0; i < 4; ++i) {
      int r = frag_row<Sh>(m, i);
      if (r >= tile.rows)
        continue;
      long long row = moe_row<RY, K>(perm, tile.row0 + r);
      for (int n = 0; n < Sh::NF; ++n) {
        int c = col0 + frag_col<Sh>(n, i);
        if (c >= N)
          continue;
        float b = 0.0f;
        if constexpr (present<TB>)
          b = ld(bias, (long long)tile.expert * N + c);
        st(y, row * N + c, acc[m][n][i] + b);
      }
    }
}

// down is [E, H, I], reading the act workspace [T * K, I] of TA; the fp32 results go to the
// out workspace [T * K, H].
template <class TA, class TW, class TB, int E, int I, int H> __device__ __forceinline__ void moe_down(const CbcArgs &a) {
  using S = slots::MoeDown;
  moe_linear<TA, TW, TB, float, E, H, I, 1, MoeRow::Position, MoeRow::Position>(
      (const int *)a.p[S::Plan], (const int *)a.p[S::Tiles], (const TA *)a.p[S::Act], (const TW *)a.p[S::W],
      (const TB *)a.p[S::Bias], (float *)a.p[S::Out]);
}

// One linear layer per (token, choice) pair: w is [E, N, KD]. Without MIX a position reads its
// token's row of x [T, KD] and writes the pair's block of the result [T, K N] (TY); with MIX it
// reads the pair's block of x [T, K KD] and writes fp32 to the out workspace [T K, N], which
// moe_combine mixes.
template <class TX, class TW, class TY, int E, int N, int KD, int K, bool MIX>
__device__ __forceinline__ void moe_slot_linear(const CbcArgs &a) {
  using S = slots::MoeSlotLinear;
  constexpr MoeRow RX = MIX ? MoeRow::Pair : MoeRow::Token, RY = MIX ? MoeRow::Position : MoeRow::Pair;
  moe_linear<TX, TW, void, TY, E, N, KD, K, RX, RY>((const int *)a.p[S::Plan], (const int *)a.p[S::Tiles],
                                                     (const TX *)a.p[S::X], (const TW *)a.p[S::W], nullptr,
                                                     (TY *)a.p[S::Out]);
}

// Z > 0: ids E .. E + Z - 1 are identity experts, which mix in the input row x (of type TX).
// With SCALE_IN the weights already scaled the experts' inputs, so their outputs add as they are.
// NUL > 0: the ids after those are null experts, which add nothing. R > 1: the E experts are
// rank Rank's of R ranks' (ids from E * R on are the identity and null experts, which rank 0
// alone adds), and the others' choices add nothing here.
template <class TO, int E, int K, int H, int Z = 0, class TX = float, bool SCALE_IN = false, int NUL = 0, int R = 1>
__device__ __forceinline__ void moe_combine(const CbcArgs &a) {
  using S = slots::MoeCombine;
  const int *offsets = (const int *)a.p[S::Plan];
  const int *where = offsets + E + 1 + a.i[S::Rows] * K;
  const float *out = (const float *)a.p[S::Partial];
  const float *weights = (const float *)a.p[S::Weights];
  const int *ids = (const int *)a.p[S::Ids];
  const TX *x = (const TX *)a.p[S::X];
  TO *y = (TO *)a.p[S::Out];
  const int rank = (int)a.i[S::Rank];
  long long t = blockIdx.x;
  for (int h = threadIdx.x; h < H; h += blockDim.x) {
    float v = 0.0f;
    for (int j = 0; j < K; ++j) {
      int id = ids[t * K + j];
      if constexpr (Z > 0 || NUL > 0)
        if (id >= E * R) {
          if (id < E * R + Z && rank == 0)
            v += weights[t * K + j] * ld(x, t * H + h);
          continue;
        }
      if constexpr (R > 1)
        if (id / E != rank)
          continue;
      v += (SCALE_IN ? 1.0f : weights[t * K + j]) * out[(long long)where[t * K + j] * H + h];
    }
    st(y, t * H + h, v);
  }
}

} // namespace cbc

#endif
