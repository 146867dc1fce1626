// The contract between the kernel templates and the emitter that launches them: the argument
// struct, each kernel's named argument slots, the variant enums that appear as template
// arguments, and the launch shapes the device code assumes. Plain C++ with no includes: the
// emitter includes it, and the generated source carries it verbatim (through the prelude), so
// that both sides read the same names.
//
// Each kernel's slots are a struct with three unscoped enums: `Ptr` indexes CbcArgs::p, `Int`
// CbcArgs::i and `Flt` CbcArgs::f. The last enumerator counts the slots. A kernel with a
// variable number of pointers (split, concat) lets its last named pointer slot start a run.
#ifndef CBC_CODEGEN_CUDA_KERNELS_SLOTS_H
#define CBC_CODEGEN_CUDA_KERNELS_SLOTS_H

// Shape rules the emitter and the device code both evaluate: constexpr functions that NVRTC
// (which takes no host functions) sees as host-device ones.
#if defined(__CUDACC__)
#define CBC_SHAPE_FN __host__ __device__ constexpr
#else
#define CBC_SHAPE_FN constexpr
#endif

namespace cbc::kernels {

// The launch arguments every kernel takes by value. The runtime's declaration
// (runtime/schema/kernel_abi.h) must have the same layout; the emitter checks it.
struct CbcArgs {
  void *p[24];
  long long i[16];
  float f[16];
};

// Template arguments: one enumerator per value of the dialect enum of the same meaning.
enum class Act { none, silu, gelu, gelu_tanh, relu, relu2, sigmoid, softplus, exp, signed_sqrt };
enum class Glu { halves, interleaved }; // where a GLU's gate and up columns sit
// What an expert or a GLU applies to its gate g and up u: act(g) * u, act(u) (no gate), or
// the clamped SwiGLU over limit and alpha.
enum class Unit { gated, ungated, clamped_swiglu, softcapped_swiglu };
enum class Pairing { half, interleaved };
enum class Retention { all, window, chunk };
enum class Score { softmax, topk_softmax, sigmoid, sparsemixer, sqrt_softplus };
enum class GroupScore { top2_sum, max }; // group-limited routing: a group scored by its best two or best
enum class GroupFill { neg_inf, zero };   // the selection score of the experts of dropped groups
enum class GateOrder { norm_gate, gate_norm };

// Launch shapes shared by the emitter (block and grid) and the device code (loops and shared
// arrays sized by them).
inline constexpr int kAttentionWarps = 4;
// The lanes a row of `chunks` chunks is spread over: a power of two, at most a warp.
CBC_SHAPE_FN int decodeLanes(int chunks) {
  int lanes = 1;
  while (lanes < chunks && lanes < 32)
    lanes *= 2;
  return lanes;
}
// Decode attention (attention.cuh): a block takes a KV head's G query heads or, where the warps'
// partial values would pass 32 KiB of static shared memory or q and the accumulators about 128
// registers a lane (heads 512 wide, or 12 and more query heads of 128 on one KV head, which spill
// otherwise), the largest divisor of G that fits. `vec`: the elements a lane loads at once.
CBC_SHAPE_FN int decodeHeadsPerBlock(int G, int D, int DV, int vec) {
  int kch = D / vec, vch = DV / vec, lanes = decodeLanes(kch > vch ? kch : vch);
  int regs = (kch + lanes - 1) / lanes * vec / 2 + (vch + lanes - 1) / lanes * vec;
  int gb = 1;
  for (int d = 1; d <= G; ++d)
    if (G % d == 0 && kAttentionWarps * d * DV * 4 <= 32 * 1024 && d * regs <= 128)
      gb = d;
  return gb;
}
// Tiled prefill attention (attention_prefill.cuh): a block takes a tile of TT tokens of one
// request times GB query heads of one kv head's group, 16 rows a warp, and WN warps share each
// 16 rows' value columns (WN > 1 only where one warp's accumulators would pass 256 fp32
// columns). At most 8 warps, so that any register count launches; TT is a multiple of the step
// ABI's 16-token tile, so that the step's tile count bounds the grid.
CBC_SHAPE_FN int prefillColumnGroups(int DV) {
  int tiles = (DV + 15) / 16, wn = 1; // 16-column tiles of the (padded) values
  while (tiles / wn > 16 || tiles % wn != 0)
    ++wn;
  return wn;
}
CBC_SHAPE_FN int prefillHeadsPerBlock(int G, int DV) {
  int gb = 1;
  for (int d = 1; d <= 8 / prefillColumnGroups(DV) && d <= G; ++d)
    if (G % d == 0)
      gb = d;
  return gb;
}
CBC_SHAPE_FN int prefillTileTokens(int GB) { return GB >= 3 ? 16 : 64 / GB; }
CBC_SHAPE_FN int prefillWarps(int G, int DV) {
  return prefillHeadsPerBlock(G, DV) * prefillTileTokens(prefillHeadsPerBlock(G, DV)) / 16 * prefillColumnGroups(DV);
}
inline constexpr int kAttentionPlanThreads = 256;
inline constexpr int kHeadLinearTokens = 8, kHeadLinearThreads = 128; // tokens and outputs per block
// The tokens a head_linear block stages for IN inputs each: kHeadLinearTokens, fewer for wide
// heads so that the staged floats stay within 48 KiB of shared memory (DeepSeek-V4's groups of 4096).
CBC_SHAPE_FN int headLinearTokens(long long in) {
  long long fit = 12288 / (in > 0 ? in : 1);
  return fit >= kHeadLinearTokens ? kHeadLinearTokens : fit > 0 ? (int)fit : 1;
}
// MoE expert GEMMs (moe.cuh): tiles of kMoeTileM positions of one expert x kMoeTileN weight
// rows (gate_up: kMoeTileN / 2 gated units), kMoeTileK columns a pipeline slice.
inline constexpr int kMoeTileM = 64, kMoeTileN = 64, kMoeTileK = 32, kMoeThreads = 128;
inline constexpr int kSsdThreads = 128, kSsdRows = 16; // threads, head_dim rows per block
inline constexpr int kGatedDeltaWarps = 4, kGatedDeltaCols = 32;
inline constexpr int kLightningWarps = 4, kLightningCols = 32;
inline constexpr int kKdaWarps = 4, kKdaCols = 32;

// The chunked scans (gated_delta_chunked, kda_chunked, ssd_chunked): chunks of CH tokens whose
// products run on tensor cores, a block's tiles in static shared memory (at most 48 KB without
// an opt-in) and its slice of the state in mma accumulators. The emitter picks the tiles with
// the functions below (the kernels assert that their shared structs fit the same bound); 0
// means the chunked form does not fit and the token-recurrent kernel takes every request. The
// functions are constexpr on both sides: NVRTC treats an unannotated function as host code.
#ifdef __CUDACC__
#define CBC_SHAPE_FN __host__ __device__ constexpr
#else
#define CBC_SHAPE_FN constexpr
#endif
inline constexpr int kScanChunkSmemBytes = 48 * 1024;
inline constexpr int kScanChunkThreads = 128;
CBC_SHAPE_FN int roundUp16(int v) { return (v + 15) / 16 * 16; }
// Bytes of the delta rule's chunked shared struct (delta_chunked.cuh: bf16 tiles, A and T in
// fp32, per-row scalars and per-state-row decays), without a kernel's own part.
CBC_SHAPE_FN int deltaChunkBytes(int dk, int ch) {
  int dkp = roundUp16(dk), ldk = dkp + 8, ldv = kGatedDeltaCols + 8, ldc = ch + 8;
  int q = 2 * ch * ldk > 4 * ch * (ch + 1) ? 2 * ch * ldk : 4 * ch * (ch + 1); // q's rows or the solve's T
  int tiles = q + 2 * (ch * ldk + ch * ldv + kGatedDeltaCols * ldk + 3 * ch * ldc);
  int solve = 4 * ch * (ch + 1) > 4 * ch * ldv ? 4 * ch * (ch + 1) : 4 * ch * ldv;
  return tiles + solve + 4 * (6 * ch + dkp) + 64;
}
// gated_delta_chunked adds the running sums; KDA a bf16 tile and the per-channel sums in fp32.
CBC_SHAPE_FN int gatedDeltaChunkBytes(int dk, int ch) { return deltaChunkBytes(dk, ch) + 4 * ch; }
CBC_SHAPE_FN int kdaChunkBytes(int dk, int ch) {
  return deltaChunkBytes(dk, ch) + 2 * ch * (roundUp16(dk) + 8) + 4 * ch * (roundUp16(dk) + 1);
}
// The chunk length: 32 tokens, or 16 where 32 do not fit; 0 for key heads above 256 (the state
// slice would take more than 64 accumulator registers a thread).
CBC_SHAPE_FN int gatedDeltaChunk(int dk) {
  if (dk > 256)
    return 0;
  return gatedDeltaChunkBytes(dk, 32) <= kScanChunkSmemBytes   ? 32
         : gatedDeltaChunkBytes(dk, 16) <= kScanChunkSmemBytes ? 16
                                                                : 0;
}
// KDA's chunks are 16 tokens: its per-channel decays need more shared memory a row.
CBC_SHAPE_FN int kdaChunk(int dk) { return dk <= 256 && kdaChunkBytes(dk, 16) <= kScanChunkSmemBytes ? 16 : 0; }
// ssd_chunked: blocks of PT head_dim rows; bytes of the shared struct.
CBC_SHAPE_FN int ssdChunkBytes(int n, int pt, int ch) {
  int ldn = roundUp16(n) + 8;
  return 2 * (ch * (pt + 8) + 2 * ch * ldn + pt * ldn + ch * (ch + 8)) + 8 * ch + 64;
}
// Head_dim rows per block: 32 (16 for head_dim <= 16) while the state slice keeps at most 32
// accumulators a thread, else 16 up to 64 of them; 0 beyond.
CBC_SHAPE_FN int ssdChunkRows(int p, int n) {
  int np = roundUp16(n);
  if (p > 16 && 32 * np <= 32 * kScanChunkThreads)
    return 32;
  return 16 * np <= 64 * kScanChunkThreads ? 16 : 0;
}
CBC_SHAPE_FN int ssdChunk(int p, int n) {
  int pt = ssdChunkRows(p, n);
  if (pt == 0)
    return 0;
  return ssdChunkBytes(n, pt, 32) <= kScanChunkSmemBytes   ? 32
         : ssdChunkBytes(n, pt, 16) <= kScanChunkSmemBytes ? 16
                                                            : 0;
}

namespace slots {

// Rows 0: no oov_row; else ids at or past Rows read row OovRow. Held > 0: the table is rank
// Rank's Held rows of a vocabulary-parallel one, and other ranks' ids read zeros.
struct Embed {
  enum Ptr { Tokens, Table, Out, NumPtr };
  enum Int { Offset, Rows, OovRow, Held, Rank, NumInt };
  enum Flt { Scale, NumFlt };
};
struct Gather {
  enum Ptr { X, Rows, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
struct Inject { // Embeds: [Injected, W] f32 rows for the token rows Rows (ascending)
  enum Ptr { X, Rows, Embeds, Out, NumPtr };
  enum Int { Injected, NumInt };
  enum Flt { NumFlt };
};
// Greedy sampling: the runtime launches it itself, with the logits and the token ids first.
struct Argmax {
  enum Ptr { Logits, Tokens, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};

struct LayerNorm {
  enum Ptr { X, Out, Weight, Bias, NumPtr };
  enum Int { RowGroups, NumInt }; // groups per row with per-feature weights, else 0
  enum Flt { Eps, Offset, NumFlt };
};
struct RmsNorm {
  enum Ptr { X, Out, Weight, NumPtr };
  enum Int { RowGroups, NumInt }; // groups per row with per-feature weights, else 0
  enum Flt { Eps, Offset, NumFlt };
};
struct GroupDot {
  enum Ptr { A, B, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Scale, NumFlt };
};
struct AddRmsNorm {
  enum Ptr { Lhs, Rhs, Sum, Normed, Weight, NumPtr };
  enum Int { NumInt };
  enum Flt { Eps, Offset, NumFlt };
};
struct RmsNormGated {
  enum Ptr { X, Z, Out, Weight, NumPtr };
  enum Int { NumInt };
  enum Flt { Eps, Offset, NumFlt };
};

// Collectives (comm.cuh): `Parts` is the workspace the backend gathered every rank's rows of
// the input into ([ranks][Rows][W]); `Rows` the rows of the step.
struct RankSum {
  enum Ptr { Parts, Bias, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
struct RankColumns {
  enum Ptr { Parts, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};

// Elementwise kernels: `Rows` is the number of rows of the output.
struct Add {
  enum Ptr { Lhs, Rhs, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
struct Act {
  enum Ptr { X, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Scale, NumFlt };
};
struct Softcap {
  enum Ptr { X, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Cap, NumFlt };
};
struct Clamp {
  enum Ptr { X, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Limit, NumFlt };
};
struct HcWeights {
  enum Ptr { Mixes, Base, Scale, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Magnitude, Eps, PostEps, NumFlt };
};
struct StreamCollapse {
  enum Ptr { Streams, Weights, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
struct StreamExpand {
  enum Ptr { Block, Streams, Weights, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
struct DiffHeads {
  enum Ptr { X, Q1, K1, Q2, K2, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { LambdaInit, NumFlt };
};
struct L2Clip { // Scale: one factor per feature of the row (null: none)
  enum Ptr { X, Scale, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { Threshold, Eps, NumFlt };
};
struct StreamAttend {
  enum Ptr { Sources, Query, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { Eps, NumFlt };
};
struct MatchRms {
  enum Ptr { X, Ref, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { Floor, NumFlt };
};
struct HeadPad {
  enum Ptr { X, Extra, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Value, NumFlt };
};
struct GaussianTopk {
  enum Ptr { X, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { Multiplier, NumFlt };
};
struct ActQuant {
  enum Ptr { X, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
struct Xielu {
  enum Ptr { X, AlphaP, AlphaN, Beta, Eps, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
// x * sigmoid(g) and x * g, g per element or per row.
struct Gate {
  enum Ptr { X, G, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
using Mul = Gate;
struct Glu {
  enum Ptr { X, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Limit, Alpha, UpOffset, NumFlt };
};
struct Split {
  enum Ptr { X, Parts, NumPtr = Parts }; // then one output per part
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
struct Concat {
  enum Ptr { Out, Parts, NumPtr = Parts }; // then one input per part
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};

// A matrix product per head: `Rows` tokens.
struct HeadLinear {
  enum Ptr { X, W, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
struct PositionScale {
  enum Ptr { X, Positions, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Beta, NumFlt };
};
struct HeadPositionScale { // Scale, Bias: one entry per head
  enum Ptr { X, Positions, Scale, Bias, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { NumFlt };
};
struct SinusoidalPosition { // Step: -ln(base) / (D / 2 - 1), rounded to fp32 by the host
  enum Ptr { Positions, Out, NumPtr };
  enum Int { Rows, NumInt };
  enum Flt { Step, NumFlt };
};

struct Rope { // SectionPositions [3, Tokens]: multimodal RoPE's positions (null without);
              // FreqLogScale [RD / 2]: LeRoPE's learned log-scales (null without)
  enum Ptr { X, Positions, SeqIds, PromptLens, SectionPositions, FreqLogScale, Out, NumPtr };
  enum Int { Tokens, NumInt };
  enum Flt { AttentionFactor, DynamicBase, DynamicFactor, NumFlt };
};

// The paged cache: `Tables` holds every group's tables, `Group` picks this layer's, and
// `TableSlots` x `TableWidth` is the size of one group's.
struct KvAppend {
  enum Ptr { K, V, Positions, SeqIds, Slots, Tables, Pool, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { NumFlt };
};
// Decode attention runs the requests whose chunk is one token (CuSeqlens tells), or every token
// where the kernel has no prefill form; the prefill forms take the tiles of AttentionPlan's
// plan and write the result themselves (Out, Sinks).
struct Attention { // KeyEnds: null, or [T] the end of each token's keys (else its position + 1)
  enum Ptr { Q, Positions, SeqIds, Slots, Tables, Pool, Partials, DistanceBias, CuSeqlens, Selection, KeyEnds, NumPtr };
  enum Int { Group, TableSlots, TableWidth, Splits, NumInt };
  enum Flt { ScoreScale, ScoreCap, NumFlt };
};
struct LatentAttention {
  enum Ptr { QLatent, QRope, Positions, SeqIds, Slots, Tables, Pool, Partials, Selection, CuSeqlens, NumPtr };
  enum Int { Group, TableSlots, TableWidth, Splits, NumInt };
  enum Flt { ScoreScale, NumFlt };
};
struct LatentEntries { // Selection: [T, K] entry indices (null: every complete entry); Sinks: null without
  enum Ptr { QLatent, Positions, SeqIds, Slots, Tables, Pool, EntryPool, Selection, Sinks, Out, NumPtr };
  enum Int { Group, EntryGroup, TableSlots, TableWidth, NumInt };
  enum Flt { ScoreScale, NumFlt };
};
struct AttentionPlan { // Plan: the tile count, then (request, first token) per tile
  enum Ptr { CuSeqlens, Plan, NumPtr };
  enum Int { Requests, NumInt };
  enum Flt { NumFlt };
};
struct AttentionPrefill { // KeyEnds: as Attention's
  enum Ptr { Q, Positions, Slots, Tables, Pool, Plan, CuSeqlens, Out, Sinks, DistanceBias, KeyEnds, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { ScoreScale, ScoreCap, NumFlt };
};
struct LatentAttentionPrefill {
  enum Ptr { QLatent, QRope, Positions, Slots, Tables, Pool, Plan, CuSeqlens, Out, Sinks, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { ScoreScale, NumFlt };
};
struct IndexAppend {
  enum Ptr { Key, Positions, SeqIds, Slots, Tables, Pool, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { NumFlt };
};
struct IndexSelect {
  enum Ptr { Q, W, Positions, SeqIds, Slots, Tables, Pool, Out, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { KeyScale, WeightScale, NumFlt };
};
struct PoolSelect { // Ape [pool, head_dim], KeyNorm [head_dim]: null when absent
  enum Ptr { Q, W, Positions, SeqIds, Slots, Tables, Pool, Ape, Out, KeyNorm, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { KeyScale, WeightScale, Eps, NormOffset, NumFlt };
};
struct BlockSelect {
  enum Ptr { Q, Positions, SeqIds, Slots, Tables, Pool, Out, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { NumFlt };
};
struct AttentionCombine { // Sinks: [H], or [T, H] sink logits per query row
  enum Ptr { Partials, Out, Sinks, CuSeqlens, NumPtr };
  enum Int { Splits, NumInt };
  enum Flt { NumFlt };
};
struct RopeAppend {
  enum Ptr { Qkv, Positions, SeqIds, PromptLens, Slots, Tables, QNorm, KNorm, QOut, Pool, NumPtr };
  enum Int { Group, TableSlots, TableWidth, NumInt };
  enum Flt { Eps, NormOffset, AttentionFactor, DynamicBase, DynamicFactor, NumFlt };
};

// Experts: `Plan` is the moe_plan workspace (offsets per expert, then the permutation), `Tiles`
// its table of the GEMMs' tiles.
struct MoeRoute { // Tokens, Table: hash routing's token ids and [vocab, K] expert ids (else null)
  enum Ptr { Logits, Weights, Ids, Bias, Tokens, Table, NumPtr };
  enum Int { NumInt };
  enum Flt { RenormEps, Scaling, Threshold, NumFlt };
};
struct MoePlan { // Rank: the experts are rank Rank's E of an expert-parallel layer (else 0)
  enum Ptr { Ids, Plan, Tiles, NumPtr };
  enum Int { Rows, Rank, NumInt };
  enum Flt { NumFlt };
};
struct MoeGateUp {
  enum Ptr { Plan, X, W, Bias, Act, Weights, Tiles, NumPtr }; // Weights: with SCALE_IN only
  enum Int { NumInt };
  enum Flt { Limit, Alpha, UpOffset, NumFlt };
};
struct MoeDown {
  enum Ptr { Plan, Act, W, Bias, Out, Tiles, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
struct MoeSlotLinear {
  enum Ptr { Plan, X, W, Out, Tiles, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
struct MoeCombine { // Ids and X: for the identity experts; Rank as MoePlan's
  enum Ptr { Plan, Partial, Weights, Out, Ids, X, NumPtr };
  enum Int { Rows, Rank, NumInt };
  enum Flt { NumFlt };
};

// Per-request recurrences: the request metadata and the state pool follow the inputs. A request
// reads its state from unit StateIn[r] of the pool and leaves it in unit StateOut[r].
struct Conv1d { // Taps [T, TW]: per-token taps (null: none); Scale multiplies the result
  enum Ptr { X, Weight, Bias, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, Initial, Taps, NumPtr };
  enum Int { NumInt };
  enum Flt { Scale, NumFlt };
};
struct WindowPool { // Norm: null without one; the RoPE scalars of the entries' rotation
  enum Ptr { X, Positions, Ape, Norm, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { Eps, AttentionFactor, DynamicBase, DynamicFactor, NumFlt };
};
struct NgramEmbed {
  enum Ptr { Tokens, Table, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { Eos, NumInt };
  enum Flt { NumFlt };
};
struct Shift {
  enum Ptr { X, Initial, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
struct RgLru {
  enum Ptr { X, InputGate, RecurrentGate, Param, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
struct Mlstm {
  enum Ptr { Q, K, V, InputGate, ForgetGate, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { Eps, NumFlt };
};
struct Wkv {
  enum Ptr { K, V, TimeDecay, TimeFirst, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
// The token-recurrent kernel (gated_delta, kda, ssd) takes the requests with at most
// RecurrentMax tokens in the step, the chunked one (same slots) the others: both are launched,
// and each block decides from cu_seqlens on the device, so no launch depends on the step's
// request lengths (decode steps replay as CUDA Graphs).
struct GatedDelta {
  enum Ptr { Q, K, V, A, B, ALog, DtBias, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { RecurrentMax, NumInt };
  enum Flt { BetaScale, QScale, NumFlt };
};
struct Kda {
  enum Ptr { Q, K, V, F, B, ALog, DtBias, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { RecurrentMax, NumInt };
  enum Flt { LowerBound, QScale, NumFlt };
};
struct Ssd {
  enum Ptr { X, Dt, B, C, ALog, DtBias, D, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { RecurrentMax, NumInt };
  enum Flt { DtMin, DtMax, NumFlt };
};
struct SelectiveScan {
  enum Ptr { X, Dt, B, C, ALog, DtBias, D, Z, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { NumInt };
  enum Flt { NumFlt };
};
struct Lightning { // the decay rates are a table in the kernel's template arguments, Rank's from Rank * H
  enum Ptr { Q, K, V, CuSeqlens, StateIn, StateOut, HasInitial, Pool, Out, NumPtr };
  enum Int { Rank, NumInt };
  enum Flt { NumFlt };
};

} // namespace slots
} // namespace cbc::kernels

#endif
