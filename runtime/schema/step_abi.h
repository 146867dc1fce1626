// The contract between the compiler and the runtime that is not in model.fbs: the artefact's
// format version, the step's arguments in order, and the per-step integers kernels may read.
// The lowering, the artefact writer and both backends use these enums; the artefact stores
// them as their integer values.
#ifndef CBC_RUNTIME_SCHEMA_STEP_ABI_H
#define CBC_RUNTIME_SCHEMA_STEP_ABI_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace cbc {

// Bumped whenever a field changes what the runtime must do with the artefact, because a reader
// of an older version would ignore the new field silently (FlatBuffers skips unknown fields).
// 2: weight transforms block_diag and row_scales. 3: typed instructions (an opcode and one
// parameter table per op), step arguments and per-step integers by enum, MXFP4 as a transform.
// 4: the integrity trailer after the FlatBuffer (runtime/schema/integrity.h). 5: the cache's one
// memory model: cache groups of three kinds, the states in a state group, state ops reading and
// writing state units (the step arguments state_in and state_out) and starting their tables with
// a StateSite; parameter tables' mandatory fields are `required`. 6: multimodal prompts: the
// step arguments inject_rows, inject_embeds, rope_positions and key_ends, RoPE sections, an
// attention's key ends, the model's injected token. 7: residual streams (cbc.stream.*), sinks on
// latent attention, a RoPE's rotary_offset, the clamped SwiGLU's up_offset (SwigluClamp grew), and
// the state ops cbc.state.wkv (RWKV) and cbc.state.rg_lru (Griffin). 8: per-token sink logits on
// an attention, a convolution's per-token taps, lag order and scale, the soft-capped SwiGLU. 9: a
// convolution's dilation, mean pooling, a key norm and RoPE and block output in a pool selection,
// per-row norm weights, the mean collapse of streams, cbc.math.group_dot, cbc.state.ngram_embed.
// 10: compressed retention, cbc.state.window_pool, compressed entries on a latent attention,
// sqrt-softplus scores and table (hash) routing.
constexpr uint32_t kFormatVersion = 10;

// The step function's arguments, in order.
enum class StepArg : uint8_t {
  Tokens,          // [T] token ids
  Positions,       // [T]
  SeqIds,          // [T] each token's request row
  CuSeqlens,       // [R + 1] where each request's rows start
  KvLens,          // [R] each request's cached length after the step
  BlockTables,     // [groups, slots, blocks] the cache manager's persistent tables
  LogitRows,       // [L] the rows whose logits are sampled
  PromptLens,      // [R] each request's original prompt length
  Slots,           // [R] each request's slot: its row of the block tables
  HasInitialState, // [R] whether a request's states carry over from an earlier step
  StateIn,         // [R] the state-group unit each request's states are read from
  StateOut,        // [R] the unit they are left in (the same unless after a fork or for a rollback)
  InjectRows,      // [J] the step rows whose embeddings a request gives (images, audio)
  InjectEmbeds,    // [J, hidden] f32: those rows' embeddings, in the order of inject_rows
  RopePositions,   // [3 * T] multimodal RoPE: every token's first position component, then second, third
  KeyEnds,         // [T] the end of the keys each token attends to: position + 1, or its image's end
};
constexpr int kNumStepArgs = 16;

// The integers a launch may read per step, besides its constants.
enum class RuntimeVar : uint8_t {
  NumTokens,
  NumRequests,
  NumLogitRows,
  TableWidth,
  TableSlots,
  AttnSplits,
  MaxTokens,
  // Tiles of kPrefillTileTokens tokens over the step's prefill chunks (those of two or more
  // tokens): the grid bound of the tiled prefill attention. 0 in a decode step, whose launches
  // of the prefill kernels are then empty and left out (of CUDA Graphs too).
  PrefillTiles,
  NumInjected, // J: rows of the step whose embeddings are given
  Rank,        // this process's rank of its tensor-parallel group (0 in a group of one)
};
constexpr int kNumRuntimeVars = 10;
constexpr int kPrefillTileTokens = 16;

// RuntimeVar::PrefillTiles of a step with these request row starts (cu_seqlens, R + 1 entries).
inline int64_t prefillTiles(const int32_t *cuSeqlens, int64_t requests) {
  int64_t tiles = 0;
  for (int64_t r = 0; r < requests; ++r) {
    int64_t n = cuSeqlens[r + 1] - cuSeqlens[r];
    if (n >= 2)
      tiles += (n + kPrefillTileTokens - 1) / kPrefillTileTokens;
  }
  return tiles;
}

constexpr std::string_view kStepArgNames[kNumStepArgs] = {
    "tokens",     "positions",   "seq_ids", "cu_seqlens", "kv_lens",          "block_tables",
    "logit_rows", "prompt_lens", "slots",   "has_initial_state", "state_in", "state_out",
    "inject_rows", "inject_embeds", "rope_positions", "key_ends"};
constexpr std::string_view kRuntimeVarNames[kNumRuntimeVars] = {
    "num_tokens", "num_requests", "num_logit_rows", "table_width", "table_slots", "attn_splits",
    "max_tokens", "prefill_tiles", "num_injected", "rank"};

constexpr std::string_view stepArgName(StepArg a) { return kStepArgNames[(int)a]; }
constexpr std::string_view runtimeVarName(RuntimeVar v) { return kRuntimeVarNames[(int)v]; }

inline std::optional<StepArg> stepArgNamed(std::string_view name) {
  for (int i = 0; i < kNumStepArgs; ++i)
    if (kStepArgNames[i] == name)
      return (StepArg)i;
  return std::nullopt;
}

} // namespace cbc

#endif
