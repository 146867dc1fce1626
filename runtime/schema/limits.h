// The largest sizes cbc accepts, in one place for both sides of the artefact: the front end
// refuses a config that exceeds one (exit 2, naming the key) and the loader refuses an artefact
// that does, so nothing that compiles is rejected later by `dump` or `run`, and no product of
// sizes overflows 64-bit arithmetic. Each bound is far above any published model.
#ifndef CBC_RUNTIME_SCHEMA_LIMITS_H
#define CBC_RUNTIME_SCHEMA_LIMITS_H

#include <cstdint>

namespace cbc::limits {

// One dimension of a weight or activation (hidden, intermediate, head, latent, state sizes).
inline constexpr int64_t kMaxDim = int64_t(1) << 20;
// Features of one attention (or state) head: the RoPE tables the artefact keeps grow with it,
// and the kernels take it as a compile-time constant.
inline constexpr int64_t kMaxHeadDim = int64_t(1) << 14;
// Vocabulary rows.
inline constexpr int64_t kMaxVocab = int64_t(1) << 24;
// Decoder layers.
inline constexpr int64_t kMaxLayers = 4096;
// Attention (or state) heads per layer, and routed experts per layer.
inline constexpr int64_t kMaxHeads = int64_t(1) << 14;
inline constexpr int64_t kMaxExperts = int64_t(1) << 16;
// Positions (token indices are int32 in the step ABI).
inline constexpr int64_t kMaxPositions = (int64_t(1) << 31) - 1;
// Tokens per cache block.
inline constexpr int64_t kMaxBlockSize = 1024;
// Ranks of a tensor-parallel group (cbc compile --tp).
inline constexpr int64_t kMaxRanks = 1024;
// Elements of one weight tensor (2^40: 2 TB in bf16), so byte counts stay far from overflow.
inline constexpr int64_t kMaxTensorElems = int64_t(1) << 40;

} // namespace cbc::limits

#endif
