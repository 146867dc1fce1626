// Mixture of experts. moe_route: one warp per token scores the experts and picks k. The experts
// run as grouped GEMMs: moe_plan groups the (token, choice) pairs by expert in token order,
// moe_gate_up and moe_down run every expert's rows in tiles (the GLU fused into the first),
// and moe_combine mixes each token's k results in choice order (identity experts, which the
// plan leaves out, straight from the input row).
#ifndef CBC_CODEGEN_CUDA_KERNELS_MOE_CUH
#define CBC_CODEGEN_CUDA_KERNELS_MOE_CUH

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

// Router logits [T, E] -> k weights and expert ids per token. TB is the selection bias's type
// (void: none); G > 0 limits the choice to the KEEP best of G expert groups.
template <class TL, class TB, int E, int K, Score SC, bool RENORM, int G = 0, int KEEP = 0,
          GroupScore GS = GroupScore::top2_sum, GroupFill GF = GroupFill::neg_inf>
__device__ __forceinline__ void moe_route(const CbcArgs &a) {
  using S = slots::MoeRoute;
  constexpr int EL = (E + 31) / 32;
  const TL *logits = (const TL *)a.p[S::Logits];
  float *weights = (float *)a.p[S::Weights];
  int *ids = (int *)a.p[S::Ids];
  const TB *bias = (const TB *)a.p[S::Bias];
  long long t = blockIdx.x;
  int lane = threadIdx.x;
  float v[EL], key[EL];
  for (int e = 0; e < EL; ++e) {
    int x = lane + 32 * e;
    v[e] = x < E ? ld(logits, t * E + x) : -INFINITY;
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
  for (int e = 0; e < EL; ++e) {
    key[e] = v[e];
    if constexpr (present<TB>)
      if (lane + 32 * e < E)
        key[e] = v[e] + ld(bias, lane + 32 * e);
  }
  if constexpr (G > 0)
    route_mask_groups<E, EL, G, KEEP, GS, GF>(key);
  float chosen[K];
  int chosenId[K];
  route_top_k<E, K, EL>(v, key, chosen, chosenId);
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
// [T * K] (token * K + choice -> position). One thread per expert counts and then places its
// pairs in token order.
template <int E, int K> __device__ __forceinline__ void moe_plan(const CbcArgs &a) {
  using S = slots::MoePlan;
  const int *ids = (const int *)a.p[S::Ids];
  int *offsets = (int *)a.p[S::Plan];
  int *perm = offsets + E + 1;
  int *where = perm + a.i[S::Rows] * K;
  long long n = a.i[S::Rows] * K;
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int c = 0;
    for (long long i = 0; i < n; ++i)
      c += ids[i] == e;
    offsets[e + 1] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    offsets[0] = 0;
    for (int e = 0; e < E; ++e)
      offsets[e + 1] += offsets[e];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int p = offsets[e];
    for (long long i = 0; i < n; ++i)
      if (ids[i] == e) {
        perm[p] = (int)i;
        where[i] = p;
        ++p;
      }
  }
}

// Tile blockIdx.x of the grid maps to (expert, first row) by walking the experts' tile
// counts; false when the tile is past the last expert's rows.
template <int E> __device__ __forceinline__ bool moe_tile(const int *offsets, int &expert, int &row0, int &rowEnd) {
  int tile = blockIdx.x;
  expert = -1;
  row0 = 0;
  for (int e = 0, seen = 0; e < E; ++e) {
    int rows = offsets[e + 1] - offsets[e], tiles = (rows + kMoeTileM - 1) / kMoeTileM;
    if (tile < seen + tiles) {
      expert = e;
      row0 = offsets[e] + (tile - seen) * kMoeTileM;
      break;
    }
    seen += tiles;
  }
  if (expert < 0)
    return false;
  rowEnd = offsets[expert + 1];
  return true;
}

// gate_up is [E, GU, H] with GU = I (ungated) or 2I rows; the unit's result, rounded to TR (the
// dtype the down projection would read), goes to the fp32 act workspace [T * K, I]. With
// SCALE_IN each row is the token's input times its routing weight.
template <class TX, class TW, class TB, class TR, int E, int I, int H, int K, Glu L, Unit U, Act A,
          bool SCALE_IN = false>
__device__ __forceinline__ void moe_gate_up(const CbcArgs &a) {
  using S = slots::MoeGateUp;
  constexpr int TM = kMoeTileM, TN = kMoeTileN, TK = kMoeTileK;
  constexpr bool ungated = U == Unit::ungated, inter = L == Glu::interleaved;
  constexpr int GU = ungated ? I : 2 * I;
  static_assert(kMoeThreads / TN * 2 == TM, "each thread accumulates two rows of the tile");
  const int *offsets = (const int *)a.p[S::Plan];
  int expert, row0, rowEnd;
  if (!moe_tile<E>(offsets, expert, row0, rowEnd))
    return;
  const int *perm = offsets + E + 1;
  const TX *x = (const TX *)a.p[S::X];
  const TW *w = (const TW *)a.p[S::W] + (long long)expert * GU * H;
  const TB *bias = (const TB *)a.p[S::Bias];
  float *act = (float *)a.p[S::Act];
  __shared__ float xs[TM][TK + 1], gs[TN][TK + 1], us[TN][TK + 1];
  int col0 = blockIdx.y * TN;
  int r = threadIdx.x / TN, c = threadIdx.x % TN; // 8 rows x 32 cols of threads, 2 rows each
  float accg[2] = {0.0f, 0.0f}, accu[2] = {0.0f, 0.0f};
  for (int k0 = 0; k0 < H; k0 += TK) {
    for (int idx = threadIdx.x; idx < TM * TK; idx += blockDim.x) {
      int rr = idx / TK, kk = idx % TK, row = row0 + rr;
      float v = row < rowEnd && k0 + kk < H ? ld(x, (long long)(perm[row] / K) * H + k0 + kk) : 0.0f;
      if constexpr (SCALE_IN)
        v *= row < rowEnd ? ((const float *)a.p[S::Weights])[perm[row]] : 0.0f;
      xs[rr][kk] = v;
    }
    for (int idx = threadIdx.x; idx < TN * TK; idx += blockDim.x) {
      int cc = idx / TK, kk = idx % TK, col = col0 + cc;
      bool ok = col < I && k0 + kk < H;
      int gr = inter ? 2 * col : col, ur = ungated ? col : inter ? 2 * col + 1 : I + col;
      if constexpr (!ungated)
        gs[cc][kk] = ok ? ld(w, (long long)gr * H + k0 + kk) : 0.0f;
      us[cc][kk] = ok ? ld(w, (long long)ur * H + k0 + kk) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < TK; ++kk)
      for (int q = 0; q < 2; ++q) {
        if constexpr (!ungated)
          accg[q] += xs[r * 2 + q][kk] * gs[c][kk];
        accu[q] += xs[r * 2 + q][kk] * us[c][kk];
      }
    __syncthreads();
  }
  int col = col0 + c;
  if (col >= I)
    return;
  float limit = a.f[S::Limit], alpha = a.f[S::Alpha];
  for (int q = 0; q < 2; ++q) {
    int row = row0 + r * 2 + q;
    if (row >= rowEnd)
      continue;
    float g = accg[q], u = accu[q];
    if constexpr (present<TB>) {
      if constexpr (!ungated)
        g += ld(bias, (long long)expert * GU + (inter ? 2 * col : col));
      u += ld(bias, (long long)expert * GU + (ungated ? col : inter ? 2 * col + 1 : I + col));
    }
    act[(long long)row * I + col] = round_to<TR>(glu_unit<U, A>(g, u, limit, alpha));
  }
}

// down is [E, H, I]; the fp32 results go to the out workspace [T * K, H].
template <class TW, class TB, int E, int I, int H> __device__ __forceinline__ void moe_down(const CbcArgs &a) {
  using S = slots::MoeDown;
  constexpr int TM = kMoeTileM, TN = kMoeTileN, TK = kMoeTileK;
  const int *offsets = (const int *)a.p[S::Plan];
  int expert, row0, rowEnd;
  if (!moe_tile<E>(offsets, expert, row0, rowEnd))
    return;
  const float *act = (const float *)a.p[S::Act];
  const TW *w = (const TW *)a.p[S::W] + (long long)expert * H * I;
  const TB *bias = (const TB *)a.p[S::Bias];
  float *out = (float *)a.p[S::Out];
  __shared__ float xs[TM][TK + 1], ws_[TN][TK + 1];
  int col0 = blockIdx.y * TN;
  int r = threadIdx.x / TN, c = threadIdx.x % TN;
  float acc[2] = {0.0f, 0.0f};
  for (int k0 = 0; k0 < I; k0 += TK) {
    for (int idx = threadIdx.x; idx < TM * TK; idx += blockDim.x) {
      int rr = idx / TK, kk = idx % TK, row = row0 + rr;
      xs[rr][kk] = row < rowEnd && k0 + kk < I ? act[(long long)row * I + k0 + kk] : 0.0f;
    }
    for (int idx = threadIdx.x; idx < TN * TK; idx += blockDim.x) {
      int cc = idx / TK, kk = idx % TK, col = col0 + cc;
      ws_[cc][kk] = col < H && k0 + kk < I ? ld(w, (long long)col * I + k0 + kk) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < TK; ++kk)
      for (int q = 0; q < 2; ++q)
        acc[q] += xs[r * 2 + q][kk] * ws_[c][kk];
    __syncthreads();
  }
  int col = col0 + c;
  if (col >= H)
    return;
  for (int q = 0; q < 2; ++q) {
    int row = row0 + r * 2 + q;
    if (row >= rowEnd)
      continue;
    float b = 0.0f;
    if constexpr (present<TB>)
      b = ld(bias, (long long)expert * H + col);
    out[(long long)row * H + col] = acc[q] + b;
  }
}

// Z > 0: ids E .. E + Z - 1 are identity experts, which mix in the input row x (of type TX).
// With SCALE_IN the weights already scaled the experts' inputs, so their outputs add as they are.
template <class TO, int E, int K, int H, int Z = 0, class TX = float, bool SCALE_IN = false>
__device__ __forceinline__ void moe_combine(const CbcArgs &a) {
  using S = slots::MoeCombine;
  const int *offsets = (const int *)a.p[S::Plan];
  const int *where = offsets + E + 1 + a.i[S::Rows] * K;
  const float *out = (const float *)a.p[S::Partial];
  const float *weights = (const float *)a.p[S::Weights];
  const int *ids = (const int *)a.p[S::Ids];
  const TX *x = (const TX *)a.p[S::X];
  TO *y = (TO *)a.p[S::Out];
  long long t = blockIdx.x;
  for (int h = threadIdx.x; h < H; h += blockDim.x) {
    float v = 0.0f;
    for (int j = 0; j < K; ++j) {
      if constexpr (Z > 0)
        if (ids[t * K + j] >= E) {
          v += weights[t * K + j] * ld(x, t * H + h);
          continue;
        }
      v += (SCALE_IN ? 1.0f : weights[t * K + j]) * out[(long long)where[t * K + j] * H + h];
    }
    st(y, t * H + h, v);
  }
}

} // namespace cbc

#endif
