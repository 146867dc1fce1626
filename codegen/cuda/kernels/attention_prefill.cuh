// Paged prefill attention in the flash-attention-2 shape, for the requests whose chunk of the
// step has two or more tokens (attention.cuh's decode kernels take the one-token chunks).
//
// attention_plan lists the step's tiles: TT consecutive tokens of one request's chunk. Block
// (tile, head block) of attention_prefill takes the tile's tokens times GB query heads of one
// kv head's group as ROWS = TT * GB rows, 16 a warp, and walks the keys its rows can see in
// tiles of KT keys: K and V rows are gathered through the block table into shared memory
// (cp.async, double-buffered where shared memory allows), S = Q K^T and O += P V run on the
// tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulators; K fragments by ldmatrix, V by
// ldmatrix.trans), and the causal and retention masks and the online softmax stay in fp32
// registers in the accumulators' layout, as flash-attention 2 does. Each K/V tile is read once
// for the GB heads. The result, the sinks merged, is written directly. latent_attention_prefill
// is the same over cached rows [latent | k_rope] with the latent as the value.
//
// Rows are head-major: row r of a tile is token r % TT of head r / TT, so a warp's 16 rows are
// 16 consecutive tokens of one head (TT is a multiple of 16), and a warp none of whose rows
// see a key tile skips its products. Head widths that are not multiples of 16 are padded with
// zeros in the fragments (D) or computed and dropped (DV); rows that are not whole 16-byte
// chunks are gathered element by element instead of by cp.async. Where DV is too wide for one
// warp's accumulators (DV > 256, the MLA latent), WN warps share each 16 rows, each with its
// DV / WN value columns (each computes the 16 rows' scores itself).
//
// fp32 caches (the fp32 test configuration) run the same tiles with the two products as fp32
// FMAs in the same fragment layout: the tensor cores take no fp32 inputs.
#ifndef CBC_CODEGEN_CUDA_KERNELS_ATTENTION_PREFILL_CUH
#define CBC_CODEGEN_CUDA_KERNELS_ATTENTION_PREFILL_CUH

#include "codegen/cuda/kernels/attention.cuh"
#include "codegen/cuda/kernels/prelude.cuh"
#include "codegen/cuda/kernels/warp.cuh"

namespace cbc {

// The plan of the step's prefill tiles of TT tokens: plan[0] = the count, then per tile its
// request and first token, requests in order. One block; a scan over the requests' tile counts.
template <int TT> __device__ __forceinline__ void attention_plan(const CbcArgs &a) {
  using S = slots::AttentionPlan;
  const int *cu = (const int *)a.p[S::CuSeqlens];
  int *plan = (int *)a.p[S::Plan];
  long long requests = a.i[S::Requests];
  __shared__ int warpTotal[32], carry;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0)
    carry = 0;
  __syncthreads();
  for (long long r0 = 0; r0 < requests; r0 += blockDim.x) {
    long long r = r0 + threadIdx.x;
    int n = r < requests ? cu[r + 1] - cu[r] : 0, tiles = n >= 2 ? (n + TT - 1) / TT : 0, sum = tiles;
    #pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      int x = __shfl_up_sync(0xffffffffu, sum, o);
      if (lane >= o)
        sum += x;
    }
    if (lane == 31)
      warpTotal[warp] = sum;
    __syncthreads();
    int first = carry + sum - tiles;
    for (int w = 0; w < warp; ++w)
      first += warpTotal[w];
    for (int k = 0; k < tiles; ++k) {
      plan[1 + 2 * (first + k)] = (int)r;
      plan[2 + 2 * (first + k)] = cu[r] + k * TT;
    }
    __syncthreads(); // everyone has read carry and warpTotal
    if (threadIdx.x == blockDim.x - 1)
      carry = first + tiles;
    __syncthreads();
  }
  if (threadIdx.x == 0)
    plan[0] = carry;
}

// The tile shape of one prefill kernel instance. D and DV: the key and value widths (the MLA
// latent: D = L + R, DV = L, the values read from the key rows). KT keys a tile and NBUF
// buffers, the largest that fit 47 KiB of static shared memory, double buffers first.
template <class TKV, int D, int DV, int GB, int TT, int WN, bool LATENT> struct PrefillShape {
  static constexpr bool MMA = same<TKV, bf16>, VALUE_IN_KEY = LATENT;
  static constexpr int KD = D, VD = DV;
  static constexpr int TOK = TT, HEADS = GB, ROWS = GB * TT, WM = ROWS / 16, WARPS = WM * WN;
  static constexpr int DP = (D + 15) / 16 * 16, DVP = (DV + 15) / 16 * 16, DVW = DVP / WN;
  // Row strides: 16-byte multiples, staggered by 16 bytes so ldmatrix's 8 rows hit 8 bank groups.
  static constexpr int KS = DP + 16 / (int)sizeof(TKV), VS = LATENT ? KS : DVP + 16 / (int)sizeof(TKV);
  static constexpr int KEYB = (KS + (LATENT ? 0 : VS)) * (int)sizeof(TKV); // one key of a buffer
  static constexpr int PB = MMA ? 0 : WARPS * 16 * 4;                     // fp32: P rows per key
  static constexpr int BUDGET = 47 * 1024;
  static constexpr int KT = 64 * (2 * KEYB + PB) <= BUDGET ? 64 : 32 * (2 * KEYB + PB) <= BUDGET ? 32 : 16;
  static constexpr int NBUF = KT * (2 * KEYB + PB) <= BUDGET ? 2 : 1;
  static constexpr bool QREG = MMA && DP <= 128; // q's fragments kept in registers, else re-read
  static constexpr int SMEM16 = (NBUF * KT * KEYB + KT * PB + 15) / 16; // shared memory in uint4
  static_assert(WARPS <= 8, "a prefill block has at most 8 warps (the emitter keeps wider values on decode)");
  static_assert(TT % 16 == 0 && DVP % (16 * WN) == 0, "prefill tiles are whole 16-row, 16-column blocks");
  static_assert(KT * (NBUF * KEYB + PB) <= BUDGET, "a prefill key tile does not fit in shared memory");
};


// Block blockIdx.x's tile: its request r and tokens [t0, t1); false past the plan's tiles.
template <int TT> __device__ __forceinline__ bool prefill_tile(const int *plan, const int *cu, int &r, int &t0, int &t1) {
  int tile = blockIdx.x;
  if (tile >= plan[0])
    return false;
  r = plan[1 + 2 * tile];
  t0 = plan[2 + 2 * tile];
  t1 = t0 + TT < cu[r + 1] ? t0 + TT : cu[r + 1];
  return true;
}

// What a lane knows of its rows g and g + 8 of its warp: tokens, positions (-1: past the
// tile's end), first visible keys and the ends of their keys; the warp's head in the block, and
// the keys [warpLo, warpHi) any of its rows sees. A chunk's positions are consecutive (the step
// ABI) and its key ends never decrease (an image's rows end at the image's end, text rows after
// their own position), so its first and last rows bound the rest.
struct PrefillRows {
  long long t[2];
  int pos[2], lo[2], end[2], head, warpLo, warpHi;
};
// keyEnds: null (each row's keys end after itself) or the step's key ends.
template <class PS, Retention R, int TOKENS>
__device__ __forceinline__ PrefillRows prefill_rows(const int *positions, const int *keyEnds, int t0, int t1) {
  int lane = threadIdx.x & 31, wm = (threadIdx.x >> 5) % PS::WM, first = t0 + wm * 16 % PS::TOK;
  PrefillRows w;
  w.head = wm * 16 / PS::TOK;
  #pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    w.t[hf] = first + (lane >> 2) + 8 * hf;
    w.pos[hf] = w.t[hf] < t1 ? positions[w.t[hf]] : -1;
    w.lo[hf] = w.t[hf] < t1 ? first_visible<R, TOKENS>(w.pos[hf]) : 0x7fffffff;
    w.end[hf] = w.t[hf] < t1 ? (keyEnds ? keyEnds[w.t[hf]] : w.pos[hf] + 1) : 0;
  }
  int last = first + 15 < t1 - 1 ? first + 15 : t1 - 1;
  w.warpLo = first < t1 ? first_visible<R, TOKENS>(positions[first]) : 0;
  w.warpHi = first < t1 ? (keyEnds ? keyEnds[last] : positions[last] + 1) : 0;
  return w;
}

// Two bf16 at an even element index as one register (a 4-byte aligned load).
__device__ __forceinline__ unsigned ld_bf16x2(const bf16 *p) {
#ifdef CBC_SIMT
  unsigned v;
  std::memcpy(&v, p, 4);
  return v;
#else
  return *reinterpret_cast<const unsigned *>(p);
#endif
}

// Orders a warp's shared-memory accesses (the shim's shuffles are warp barriers).
__device__ __forceinline__ void warp_sync() {
#ifdef CBC_SIMT
  (void)__shfl_sync(0xffffffffu, 0, 0);
#else
  __syncwarp();
#endif
}

// Gathers keys [j0, j0 + KT) into one buffer (kb, and vb unless the values are in the key
// rows); keys from jhi on are zeros, so that masked products stay finite. rowOf(j, value) is key
// j's key or value row. ASYNC: bf16 rows of whole 16-byte chunks, by cp.async; otherwise
// element by element.
template <class PS, bool ASYNC, class TKV, class RowOf>
__device__ __forceinline__ void prefill_load(TKV *kb, TKV *vb, int j0, int jhi, RowOf rowOf) {
  constexpr int KC = ASYNC ? PS::KD / 8 : PS::KD, VC = PS::VALUE_IN_KEY ? 0 : ASYNC ? PS::VD / 8 : PS::VD;
  constexpr int CH = KC + VC, E = ASYNC ? 8 : 1;
  for (int idx = threadIdx.x; idx < PS::KT * CH; idx += blockDim.x) {
    int key = idx / CH, c = idx % CH, j = j0 + key;
    bool isK = c < KC;
    TKV *dst = isK ? kb + key * PS::KS + c * E : vb + key * PS::VS + (c - KC) * E;
    if constexpr (ASYNC) {
      if (j < jhi)
        cp_async16(dst, rowOf(j, !isK) + (isK ? c : c - KC) * E);
      else
        *reinterpret_cast<uint4 *>(dst) = uint4{0u, 0u, 0u, 0u};
    } else {
      if (j < jhi)
        *dst = rowOf(j, !isK)[isK ? c : c - KC];
      else
        *dst = TKV(); // bf16 and float value-initialise to +0
    }
  }
}

// Lane (g, t)'s A fragment of q for k-step ks: rows g and g + 8 of its warp, columns
// ks * 16 + 2t (+ 8) and the next. qPair(hf, col) is row half hf's pair at col, col + 1.
template <class QPair> __device__ __forceinline__ void prefill_qfrag(unsigned a[4], int ks, QPair qPair) {
  int tq = threadIdx.x & 3;
  #pragma unroll
  for (int rr = 0; rr < 4; ++rr)
    a[rr] = qPair(rr & 1, ks * 16 + 2 * tq + 8 * (rr >> 1));
}

// S = Q K^T for the warp's 16 rows and the buffer's KT keys, on the tensor cores.
template <class PS, class QPair>
__device__ __forceinline__ void prefill_qk_mma(float (&s)[PS::KT / 8][4], const unsigned (&qf)[PS::QREG ? PS::DP / 16 : 1][4],
                                               const bf16 *kb, QPair qPair) {
  int lane = threadIdx.x & 31;
  #pragma unroll
  for (int n = 0; n < PS::KT / 8; ++n)
    s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
  #pragma unroll
  for (int ks = 0; ks < PS::DP / 16; ++ks) {
    unsigned a[4];
    if constexpr (PS::QREG)
      a[0] = qf[ks][0], a[1] = qf[ks][1], a[2] = qf[ks][2], a[3] = qf[ks][3];
    else
      prefill_qfrag(a, ks, qPair);
    #pragma unroll
    for (int np = 0; np < PS::KT / 16; ++np) {
      unsigned b[4]; // keys np*16 (+8), columns ks*16 (+8): the B fragments of two key octets
      ldmatrix_x4(b, kb + (np * 16 + (lane >> 4) * 8 + (lane & 7)) * PS::KS + ks * 16 + ((lane >> 3) & 1) * 8);
      mma_m16n8k16_bf16(s[2 * np], a, b, s[2 * np]);
      mma_m16n8k16_bf16(s[2 * np + 1], a, b + 2, s[2 * np + 1]);
    }
  }
}

// The same product in fp32, each lane its own fragment elements.
template <class PS, class QAt>
__device__ __forceinline__ void prefill_qk_f32(float (&s)[PS::KT / 8][4], const float *kb, QAt qAt) {
  int tq = threadIdx.x & 3;
  #pragma unroll
  for (int n = 0; n < PS::KT / 8; ++n)
    s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
  for (int k = 0; k < PS::KD; ++k) {
    float q0 = qAt(0, k), q1 = qAt(1, k);
    #pragma unroll
    for (int n = 0; n < PS::KT / 8; ++n)
      #pragma unroll
      for (int e = 0; e < 2; ++e) {
        float kv = kb[(n * 8 + 2 * tq + e) * PS::KS + k];
        s[n][e] += q0 * kv;
        s[n][2 + e] += q1 * kv;
      }
  }
}

// The scores of keys j0.. (score(hf, s, j) scales, caps and biases), masked to each row's
// visible keys, then the online-softmax step: s becomes p, the running max m and this lane's
// share l of the denominators are updated and the accumulators rescaled.
template <class PS, class Score>
__device__ __forceinline__ void prefill_softmax(float (&s)[PS::KT / 8][4], float (&o)[PS::DVW / 8][4], float (&m)[2],
                                                float (&l)[2], const PrefillRows &w, int j0, Score score) {
  int tq = threadIdx.x & 3;
  #pragma unroll
  for (int n = 0; n < PS::KT / 8; ++n)
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
      int hf = i >> 1, j = j0 + n * 8 + 2 * tq + (i & 1);
      float v = score(hf, s[n][i], j);
      s[n][i] = j >= w.lo[hf] && j < w.end[hf] ? v : -INFINITY;
    }
  #pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float mx = -INFINITY;
    #pragma unroll
    for (int n = 0; n < PS::KT / 8; ++n)
      mx = fmaxf(mx, fmaxf(s[n][2 * hf], s[n][2 * hf + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row that has seen no key yet keeps max -inf: exponents then are taken against 0.
    float mn = fmaxf(m[hf], mx), ref = mn == -INFINITY ? 0.0f : mn, corr = expf(m[hf] - ref), sum = 0.0f;
    m[hf] = mn;
    #pragma unroll
    for (int n = 0; n < PS::KT / 8; ++n)
      #pragma unroll
      for (int e = 0; e < 2; ++e) {
        float p = expf(s[n][2 * hf + e] - ref);
        s[n][2 * hf + e] = p;
        sum += p;
      }
    l[hf] = l[hf] * corr + sum;
    #pragma unroll
    for (int n = 0; n < PS::DVW / 8; ++n)
      o[n][2 * hf] *= corr, o[n][2 * hf + 1] *= corr;
  }
}

// O += P V for the warp's 16 rows and value columns [col0, col0 + DVW), on the tensor cores:
// P's accumulator layout is the A fragment layout, two key octets a k-step.
template <class PS>
__device__ __forceinline__ void prefill_pv_mma(float (&o)[PS::DVW / 8][4], const float (&s)[PS::KT / 8][4],
                                               const bf16 *vb, int col0) {
  int lane = threadIdx.x & 31;
#pragma unroll
  for (int kk = 0; kk < PS::KT / 16; ++kk) {
    unsigned a[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                     pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
    #pragma unroll
    for (int np = 0; np < PS::DVW / 16; ++np) {
      unsigned b[4]; // keys kk*16 (+8), columns np*16 (+8), transposed: two column octets' B fragments
      ldmatrix_x4_trans(b, vb + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * PS::VS + col0 + np * 16 +
                               (lane >> 4) * 8);
      mma_m16n8k16_bf16(o[2 * np], a, b, o[2 * np]);
      mma_m16n8k16_bf16(o[2 * np + 1], a, b + 2, o[2 * np + 1]);
    }
  }
}

// The same product in fp32: P goes through the warp's rows of pw (16 x KT floats).
template <class PS>
__device__ __forceinline__ void prefill_pv_f32(float (&o)[PS::DVW / 8][4], const float (&s)[PS::KT / 8][4],
                                               const float *vb, float *pw, int col0) {
  int lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  #pragma unroll
  for (int n = 0; n < PS::KT / 8; ++n)
    #pragma unroll
    for (int i = 0; i < 4; ++i)
      pw[(g + 8 * (i >> 1)) * PS::KT + n * 8 + 2 * tq + (i & 1)] = s[n][i];
  warp_sync();
  for (int k = 0; k < PS::KT; ++k) {
    float p0 = pw[g * PS::KT + k], p1 = pw[(g + 8) * PS::KT + k];
    #pragma unroll
    for (int n = 0; n < PS::DVW / 8; ++n)
      #pragma unroll
      for (int e = 0; e < 2; ++e) {
        float v = vb[k * PS::VS + col0 + n * 8 + 2 * tq + e];
        o[n][e] += p0 * v;
        o[n][2 + e] += p1 * v;
      }
  }
  warp_sync(); // before the next tile overwrites pw
}

// The rows' results: the quad's shares of each denominator summed, sink(hf, m, l, scale) merging
// a sink logit if the layer has one, then out(hf, col, value) for the real rows and columns.
template <class PS, class Sink, class Out>
__device__ __forceinline__ void prefill_store(const float (&o)[PS::DVW / 8][4], const float (&m)[2], const float (&l)[2],
                                              const PrefillRows &w, int col0, Sink sink, Out out) {
  int tq = threadIdx.x & 3;
  #pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float lt = l[hf], scale = 1.0f;
    lt += __shfl_xor_sync(0xffffffffu, lt, 1);
    lt += __shfl_xor_sync(0xffffffffu, lt, 2);
    if (w.pos[hf] < 0)
      continue;
    sink(hf, m[hf], lt, scale);
    float f = scale / lt;
    #pragma unroll
    for (int n = 0; n < PS::DVW / 8; ++n)
      #pragma unroll
      for (int e = 0; e < 2; ++e) {
        int col = col0 + n * 8 + 2 * tq + e;
        if (col < PS::VD)
          out(hf, col, o[n][2 * hf + e] * f);
      }
  }
}

// The block's walk over key tiles [jlo, jhi): loads one tile ahead where there are two buffers;
// a warp none of whose rows sees a tile skips its products (the barriers are the block's).
template <class PS, bool ASYNC, class TKV, class QPair, class QAt, class RowOf, class Score, class Sink, class Out>
__device__ __forceinline__ void prefill_run(const PrefillRows &w, int jlo, int jhi, QPair qPair, QAt qAt, RowOf rowOf,
                                            Score score, Sink sink, Out out) {
  constexpr int KT = PS::KT;
  __shared__ uint4 smem[PS::SMEM16];
  TKV *kbuf = reinterpret_cast<TKV *>(smem);
  TKV *vbuf = PS::VALUE_IN_KEY ? kbuf : kbuf + PS::NBUF * KT * PS::KS;
  float *pw = reinterpret_cast<float *>(smem + PS::NBUF * KT * PS::KEYB / 16) + (threadIdx.x >> 5) * 16 * KT;
  for (int i = threadIdx.x; i < PS::SMEM16; i += blockDim.x) // the padding columns stay zero
    smem[i] = uint4{0u, 0u, 0u, 0u};
  __syncthreads();
  int col0 = (int)(threadIdx.x >> 5) / PS::WM * PS::DVW;
  unsigned qf[PS::QREG ? PS::DP / 16 : 1][4];
  if constexpr (PS::QREG)
    #pragma unroll
    for (int ks = 0; ks < PS::DP / 16; ++ks)
      prefill_qfrag(qf[ks], ks, qPair);
  float o[PS::DVW / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  #pragma unroll
  for (int n = 0; n < PS::DVW / 8; ++n)
    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  int tiles = (jhi - jlo + KT - 1) / KT;
  auto load = [&](int tile) {
    int b = tile % PS::NBUF;
    prefill_load<PS, ASYNC>(kbuf + b * KT * PS::KS, vbuf + b * KT * PS::VS, jlo + tile * KT, jhi, rowOf);
    cp_async_commit();
  };
  if (PS::NBUF == 2 && tiles > 0)
    load(0);
  for (int it = 0; it < tiles; ++it) {
    int j0 = jlo + it * KT, b = it % PS::NBUF;
    if constexpr (PS::NBUF == 2) {
      if (it + 1 < tiles)
        load(it + 1);
      else
        cp_async_commit(); // an empty group, so that the wait below always leaves one
      cp_async_wait<1>();
    } else {
      load(it);
      cp_async_wait<0>();
    }
    __syncthreads();
    if (w.warpLo < j0 + KT && j0 < w.warpHi) {
      float s[KT / 8][4];
      if constexpr (PS::MMA)
        prefill_qk_mma<PS>(s, qf, kbuf + b * KT * PS::KS, qPair);
      else
        prefill_qk_f32<PS>(s, kbuf + b * KT * PS::KS, qAt);
      prefill_softmax<PS>(s, o, m, l, w, j0, score);
      if constexpr (PS::MMA)
        prefill_pv_mma<PS>(o, s, vbuf + b * KT * PS::VS, col0);
      else
        prefill_pv_f32<PS>(o, s, vbuf + b * KT * PS::VS, pw, col0);
    }
    __syncthreads(); // the next load overwrites this buffer
  }
  prefill_store<PS>(o, m, l, w, col0, sink, out);
}

// Prefill attention over the paged cache (cbc.kv.attention), the kernel attention's variants:
// TO the result's type, TS the sinks' (void: none), TB and BIAS the distance bias (void, 0:
// none), ALIBI the slopes of ALiBi's linear bias (null: none). Block (tile, kv head x head block).
template <class TQ, class TKV, class TO, class TS, int H, int HKV, int D, int DV, int B, Retention R, int TOKENS,
          bool SOFTCAP, class TB = void, int BIAS = 0, const float *ALIBI = nullptr, bool SR = false>
__device__ __forceinline__ void attention_prefill(const CbcArgs &a) {
  using S = slots::AttentionPrefill;
  constexpr int G = H / HKV, GB = prefillHeadsPerBlock(G, DV), TT = prefillTileTokens(GB);
  using PS = PrefillShape<TKV, D, DV, GB, TT, prefillColumnGroups(DV), false>;
  constexpr int ROW = HKV * (D + DV);
  constexpr bool ASYNC = PS::MMA && D % 8 == 0 && DV % 8 == 0;
  const int *positions = (const int *)a.p[S::Positions];
  int r, t0, t1;
  if (!prefill_tile<TT>((const int *)a.p[S::Plan], (const int *)a.p[S::CuSeqlens], r, t0, t1))
    return;
  const TQ *q = (const TQ *)a.p[S::Q];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  const TB *bias = (const TB *)a.p[S::DistanceBias];
  const int *table = (const int *)a.p[S::Tables] + a.i[S::Group] * a.i[S::TableSlots] * a.i[S::TableWidth] +
                     (long long)((const int *)a.p[S::Slots])[r] * a.i[S::TableWidth];
  float scoreScale = a.f[S::ScoreScale], cap = a.f[S::ScoreCap];
  int kvh = blockIdx.y / (G / GB);
  const int *keyEnds = (const int *)a.p[S::KeyEnds];
  PrefillRows w = prefill_rows<PS, R, TOKENS>(positions, keyEnds, t0, t1);
  long long h = kvh * G + blockIdx.y % (G / GB) * GB + w.head;
  auto qAt = [&](int hf, int col) -> float {
    return w.pos[hf] >= 0 && col < D ? ld(q, (w.t[hf] * H + h) * D + col) : 0.0f;
  };
  auto qPair = [&](int hf, int col) -> unsigned {
    if constexpr (same<TQ, bf16> && D % 2 == 0)
      return w.pos[hf] >= 0 && col < D ? ld_bf16x2(q + (w.t[hf] * H + h) * D + col) : 0u;
    else
      return pack_bf16x2(qAt(hf, col), qAt(hf, col + 1));
  };
  auto rowOf = [&](int j, bool value) {
    const TKV *row = pool + ((long long)table[j / B] * B + j % B) * ROW;
    return value ? row + HKV * D + kvh * DV : row + kvh * D;
  };
  auto score = [&](int hf, float s, int j) {
    s *= scoreScale;
    if constexpr (SOFTCAP)
      s = cap * tanhf(s / cap);
    if constexpr (present<TB>)
      if (w.pos[hf] - j >= 0 && w.pos[hf] - j < BIAS)
        s += ld(bias, (w.t[hf] * H + h) * BIAS + (w.pos[hf] - j));
    if constexpr (ALIBI != nullptr)
      s -= ALIBI[h] * (float)(w.pos[hf] - j);
    return s;
  };
  auto sink = [&](int hf, float m, float &l, float &scale) {
    if constexpr (present<TS>) {
      float sk = ld((const TS *)a.p[S::Sinks], SR ? w.t[hf] * H + h : h), mf = fmaxf(m, sk);
      scale = m == -INFINITY ? 0.0f : expf(m - mf);
      l = l * scale + expf(sk - mf);
    }
  };
  TO *out = (TO *)a.p[S::Out];
  auto put = [&](int hf, int col, float v) { st(out, (w.t[hf] * H + h) * DV + col, v); };
  prefill_run<PS, ASYNC, TKV>(w, first_visible<R, TOKENS>(positions[t0]),
                              keyEnds ? keyEnds[t1 - 1] : positions[t1 - 1] + 1, qPair, qAt, rowOf, score, sink, put);
}

// Prefill latent attention (cbc.kv.latent_attention without a selection): rows [latent (L) |
// k_rope (R)] of stride ROW, the key the whole row and the value its latent. Block (tile, head
// block); every head block reads the same rows (one latent head). TS: the sinks' type (void: none).
template <class TQ, class TKV, class TO, class TS, int H, int L, int R, int B, Retention RET, int TOKENS,
          int ROW = L + R>
__device__ __forceinline__ void latent_attention_prefill(const CbcArgs &a) {
  using S = slots::LatentAttentionPrefill;
  constexpr int D = L + R, GB = prefillHeadsPerBlock(H, L), TT = prefillTileTokens(GB);
  using PS = PrefillShape<TKV, D, L, GB, TT, prefillColumnGroups(L), true>;
  constexpr bool ASYNC = PS::MMA && D % 8 == 0 && ROW % 8 == 0;
  const int *positions = (const int *)a.p[S::Positions];
  int r, t0, t1;
  if (!prefill_tile<TT>((const int *)a.p[S::Plan], (const int *)a.p[S::CuSeqlens], r, t0, t1))
    return;
  const TQ *ql = (const TQ *)a.p[S::QLatent];
  const TQ *qr = (const TQ *)a.p[S::QRope];
  const TKV *pool = (const TKV *)a.p[S::Pool];
  const int *table = (const int *)a.p[S::Tables] + a.i[S::Group] * a.i[S::TableSlots] * a.i[S::TableWidth] +
                     (long long)((const int *)a.p[S::Slots])[r] * a.i[S::TableWidth];
  float scoreScale = a.f[S::ScoreScale];
  PrefillRows w = prefill_rows<PS, RET, TOKENS>(positions, nullptr, t0, t1);
  long long h = blockIdx.y * GB + w.head;
  // Element col of row half hf's query: the latent part, then the rope part.
  auto qPtr = [&](int hf, int col) { return col < L ? ql + (w.t[hf] * H + h) * L + col : qr + (w.t[hf] * H + h) * R + (col - L); };
  auto qAt = [&](int hf, int col) -> float { return w.pos[hf] >= 0 && col < D ? ld(qPtr(hf, col), 0) : 0.0f; };
  auto qPair = [&](int hf, int col) -> unsigned {
    if constexpr (same<TQ, bf16> && L % 2 == 0 && R % 2 == 0) // a pair never straddles the two parts
      return w.pos[hf] >= 0 && col < D ? ld_bf16x2(qPtr(hf, col)) : 0u;
    else
      return pack_bf16x2(qAt(hf, col), qAt(hf, col + 1));
  };
  auto rowOf = [&](int j, bool) { return pool + ((long long)table[j / B] * B + j % B) * ROW; };
  auto score = [&](int, float s, int) { return s * scoreScale; };
  auto sink = [&](int, float m, float &l, float &scale) {
    if constexpr (present<TS>) {
      float sk = ld((const TS *)a.p[S::Sinks], h), mf = fmaxf(m, sk);
      scale = m == -INFINITY ? 0.0f : expf(m - mf);
      l = l * scale + expf(sk - mf);
    }
  };
  TO *out = (TO *)a.p[S::Out];
  auto put = [&](int hf, int col, float v) { st(out, (w.t[hf] * H + h) * L + col, v); };
  prefill_run<PS, ASYNC, TKV>(w, first_visible<RET, TOKENS>(positions[t0]), positions[t1 - 1] + 1, qPair, qAt,
                              rowOf, score, sink, put);
}

} // namespace cbc

#endif
