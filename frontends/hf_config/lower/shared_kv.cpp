// Shared-key-value attention over a window plus compressed memories (LayerKind::SharedKv,
// SharedKvSpec; tensor names as DeepSeek-V4's checkpoints hold them, attn.wq_a and so on): one roped key row per token, read as key and value through cbc.kv.latent_attention
// with no separate rope part; compressed layers pool windows of tokens into entries
// (cbc.state.window_pool) kept in a cache layer of their own with compressed retention.
#include "frontends/hf_config/lower/step_builder.h"

#include <cmath>

namespace cbc::hf::lower {

using namespace mlir;

// The entries of `rate` tokens a compressed layer keeps: [kv | gate] of every token pooled per
// window with the learned position bias, normed and rotated at the window's first position.
Value StepBuilder::windowPool(Value x, Value ape, Value normW, int64_t rate, int64_t dim, const RopeSpec &r,
                              int64_t stateLayer, const std::string &state) {
  int64_t offset = dim - r.rotary_dim; // the rotated features are the last ones
  RopeAttr schedule = ropeSchedule(r, dim, RotaryPairing::Interleaved, offset, false);
  bool overlap = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1) == 4 * dim;
  return WindowPoolOp::create(b_, loc_, rows(dim), x, positions_, ape, normW, cuSeqlens_, stateIn_, stateOut_,
                              hasInitial_, b_.getI64IntegerAttr(stateLayer), b_.getI64IntegerAttr(rate),
                              b_.getI64IntegerAttr(dim), overlap ? b_.getUnitAttr() : UnitAttr(),
                              b_.getF64FloatAttr(spec_.norm_eps), schedule, b_.getStringAttr(state))
      .getResult();
}

// The layer's compressed entries, appended to cache layer `entriesLayer` as their windows close.
Value StepBuilder::compressedEntries(int64_t layer, Value x, const AttnSite &site, const RopeSpec &r,
                                     int64_t entriesLayer) {
  const LayerSpec &L = spec_.layers[layer];
  int64_t D = spec_.attn.head_dim, R = L.compress_rate, S = L.compress_indexed ? 2 : 1;
  std::string c = site.hf + "compressor.", pc = site.prog + "compressor.";
  Value kvGate = linear(x, weight(pc + "kv_gate", {2 * S * D, site.in}, {.parts = {{c + "wkv.weight", c + "wgate.weight"}}}));
  Value ape = fp32Weight(pc + "ape", {R, S * D}, c + "ape");
  Value entries = windowPool(kvGate, ape, fp32Weight(pc + "norm", {D}, c + "norm.weight"), R, D, r, layer, "window");
  auto retention = RetentionAttr::get(b_.getContext(), RetentionKind::compressed, R);
  Value none = split(entries, {D, 0})[1];
  KvAppendOp::create(b_, loc_, entries, none, positions_, seqIds_, slots_, blockTables_,
                     b_.getI64IntegerAttr(entriesLayer), b_.getI64IntegerAttr(1), b_.getI64IntegerAttr(D), retention,
                     IntegerAttr(), b_.getUnitAttr());
  return entries;
}

// The indexer of an indexed (CSA) layer: its own pooled keys beside the entries, and per query
// the index_topk best entries by sum_h w_h relu(q_h . key) / sqrt(index_head_dim).
Value StepBuilder::entrySelection(int64_t layer, Value x, Value qResid, const AttnSite &site, const RopeSpec &r,
                                  int64_t entriesLayer) {
  const SharedKvSpec &s = spec_.shared_kv;
  int64_t R = spec_.layers[layer].compress_rate, Hi = s.index_heads, Di = s.index_head_dim;
  std::string c = site.hf + "indexer.", pc = site.prog + "indexer.";
  Value kvGate = linear(x, weight(pc + "kv_gate", {4 * Di, site.in},
                                  {.parts = {{c + "compressor.wkv.weight", c + "compressor.wgate.weight"}}}));
  Value keys = windowPool(kvGate, fp32Weight(pc + "ape", {R, 2 * Di}, c + "compressor.ape"),
                          fp32Weight(pc + "norm", {Di}, c + "compressor.norm.weight"), R, Di, r, layer, "index_window");
  auto retention = RetentionAttr::get(b_.getContext(), RetentionKind::compressed, R);
  KvIndexAppendOp::create(b_, loc_, keys, positions_, seqIds_, slots_, blockTables_,
                          b_.getI64IntegerAttr(entriesLayer), b_.getI64IntegerAttr(Di), IntegerAttr(), retention);
  Value q = linear(qResid, weight(pc + "q_b", {Hi * Di, s.q_lora_rank}, c + "wq_b.weight"));
  q = rope(r, q, Di, RotaryPairing::Interleaved, Di - r.rotary_dim);
  Value w = linear(x, weight(pc + "weights", {Hi, site.in}, c + "weights_proj.weight"));
  return KvIndexSelectOp::create(b_, loc_, rowsI32(s.index_topk), q, w, positions_, seqIds_, cuSeqlens_, kvLens_,
                                 slots_, blockTables_, b_.getI64IntegerAttr(entriesLayer), b_.getI64IntegerAttr(Hi),
                                 b_.getI64IntegerAttr(Di), b_.getI64IntegerAttr(s.index_topk),
                                 b_.getF64FloatAttr(1.0 / std::sqrt((double)Di)),
                                 b_.getF64FloatAttr(1.0 / std::sqrt((double)Hi)), IntegerAttr(), retention)
      .getResult();
}

Value StepBuilder::sharedKvAttention(int64_t layer, Value x) {
  const LayerSpec &L = spec_.layers[layer];
  const SharedKvSpec &s = spec_.shared_kv;
  const AttnSite site = attnSite(layer);
  int64_t H = spec_.attn.num_heads, D = spec_.attn.head_dim, offset = D - L.rope.rotary_dim;
  Value qResid = norm(linear(x, weight(site.prog + "q_a", {s.q_lora_rank, site.in}, site.hf + "wq_a.weight")),
                      fp32Weight(site.prog + "q_a_norm", {s.q_lora_rank}, site.hf + "q_norm.weight"));
  Value q = linear(qResid, weight(site.prog + "q_b", {H * D, s.q_lora_rank}, site.hf + "wq_b.weight"));
  q = rope(L.rope, norm(q, Value(), D), D, RotaryPairing::Interleaved, offset);
  Value kv = norm(linear(x, weight(site.prog + "kv", {D, site.in}, site.hf + "wkv.weight")),
                  fp32Weight(site.prog + "kv_norm", {D}, site.hf + "norm.weight"));
  kv = rope(L.rope, kv, D, RotaryPairing::Interleaved, offset);
  auto window = RetentionAttr::get(b_.getContext(), RetentionKind::window, L.window);
  Value none = split(kv, {D, 0})[1];
  KvAppendOp::create(b_, loc_, kv, none, positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(layer),
                     b_.getI64IntegerAttr(1), b_.getI64IntegerAttr(D), window, IntegerAttr(), b_.getUnitAttr());
  // The entries live in a cache layer of their own, numbered after the decoder's layers.
  int64_t entriesLayer = spec_.num_layers + layer;
  Value selection;
  if (L.compress_rate > 0) {
    compressedEntries(layer, x, site, L.rope, entriesLayer);
    if (L.compress_indexed)
      selection = entrySelection(layer, x, qResid, site, L.rope, entriesLayer);
  }
  Value sinks = fp32Weight(site.prog + "sinks", {H}, site.hf + spec_.names.sinks);
  Value qNone = split(q, {H * D, 0})[1];
  Value o = KvLatentAttentionOp::create(
                b_, loc_, rows(H * D), q, qNone, positions_, seqIds_, cuSeqlens_, kvLens_, slots_, blockTables_,
                b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(H), b_.getI64IntegerAttr(D), b_.getI64IntegerAttr(0),
                b_.getF64FloatAttr(1.0 / std::sqrt((double)D)), window, IntegerAttr(), sinks, Value(), selection,
                b_.getI64IntegerAttr(L.compress_rate),
                L.compress_rate > 0 ? b_.getI64IntegerAttr(entriesLayer) : IntegerAttr(), IntegerAttr())
                .getResult();
  // The values carry the keys' rotation: turn each head's output back by its query's angle.
  o = rope(L.rope, o, D, RotaryPairing::Interleaved, offset, /*inverse=*/true);
  int64_t G = s.o_groups, Rk = s.o_lora_rank;
  Value grouped = HeadLinearOp::create(b_, loc_, rows(G * Rk), o,
                                       weight(site.prog + "o_a", {G * Rk, H * D / G}, site.hf + "wo_a.weight"),
                                       b_.getI64IntegerAttr(G), b_.getI64IntegerAttr(0), b_.getI64IntegerAttr(Rk),
                                       UnitAttr())
                      .getResult();
  return linear(grouped, weight(site.prog + "o_b", {spec_.hidden_size, G * Rk}, site.hf + "wo_b.weight"));
}

} // namespace cbc::hf::lower
