// Multi-head latent attention. The cache keeps, per token, the normed latent and the roped key
// that all heads share; kv_b_proj's key half is absorbed into the query and its value half
// applied to the attended latents, both per head (cbc.math.head_linear), so no step
// up-projects the cache.
#include "frontends/hf_config/lower/step_builder.h"

#include <cmath>

namespace cbc::hf::lower {

using namespace mlir;

// [q_nope of every head | q_rope of every head]: q_b_proj (or q_proj) rows regrouped from the
// checkpoint's per-head [nope | rope] order.
// With query_gate, q_b_proj reads [norm(q_a) | q_a] and each head's rows end in its output gate:
// [q_nope all | q_rope all | gate all] after regrouping.
// The MLA geometry of latent-attention layer `layer`.
const MlaSpec &StepBuilder::layerMla(int64_t layer) const {
  auto it = spec_.layer_mla.find(layer);
  return it == spec_.layer_mla.end() ? spec_.mla : it->second;
}

Value StepBuilder::latentQuery(int64_t layer, Value x, const AttnSite &site, Value *qResid, Value *gate) {
  const MlaSpec &m = layerMla(layer);
  int64_t H = layerAttention(layer).num_heads, qw = H * (m.nope_dim + m.rope_dim);
  SmallVector<int64_t> regroup = {H, m.nope_dim, m.rope_dim};
  if (m.query_gate)
    regroup.push_back(m.v_dim);
  if (m.rope_dim == 0 && !m.query_gate) // every head's rows are its nope part already
    regroup.clear();
  if (m.q_lora_rank == 0)
    return linear(x, weight(site.prog + "q", {qw, site.in}, {.parts = {{site.hf + "q_proj.weight"}}, .regroup = regroup}));
  Value qaBias;
  if (m.bias)
    qaBias = weight(site.prog + "q_a_bias", {m.q_lora_rank}, site.hf + "q_a_proj.bias");
  Value qa = linear(x, weight(site.prog + "q_a", {m.q_lora_rank, site.in}, site.hf + "q_a_proj.weight"), qaBias);
  Value qaNormed = norm(qa, weight(site.prog + "q_a_norm", {m.q_lora_rank}, site.hf + "q_a_layernorm.weight"),
                        std::nullopt, m.norm_eps);
  if (qResid)
    *qResid = qaNormed;
  if (m.query_gate) {
    int64_t gw = H * m.v_dim;
    Value qin = ConcatOp::create(b_, loc_, rows(2 * m.q_lora_rank), ValueRange{qaNormed, qa}).getResult();
    Value qg = weight(site.prog + "q_gate", {qw + gw, 2 * m.q_lora_rank},
                      {.parts = {{site.hf + "q_b_proj.weight"}}, .regroup = regroup});
    SmallVector<Value> parts = split(linear(qin, qg), {qw, gw});
    if (gate)
      *gate = parts[1];
    return parts[0];
  }
  Value qb = weight(site.prog + "q_b", {qw, m.q_lora_rank},
                    {.parts = {{site.hf + "q_b_proj.weight"}}, .regroup = regroup, .row_scales = scales({{qw, m.q_scale}})});
  return linear(qaNormed, qb);
}

Value StepBuilder::latentAttention(Value x, const AttnSite &site, int64_t layer, int64_t cacheLayer) {
  const MlaSpec &m = layerMla(layer);
  const LayerSpec &L = spec_.layers[layer];
  const AttentionSpec a = layerAttention(layer);
  int64_t H = a.num_heads, r = m.kv_lora_rank;
  Value qResid, outGate;
  Value q = latentQuery(layer, x, site, &qResid, &outGate);
  if (m.position_beta != 0)
    q = PositionScaleOp::create(b_, loc_, rows(H * (m.nope_dim + m.rope_dim)), q, positions_,
                                b_.getF64FloatAttr(m.position_beta), b_.getI64IntegerAttr(m.position_period),
                                b_.getI64IntegerAttr(0))
            .getResult();
  SmallVector<Value> qParts = split(q, {H * m.nope_dim, H * m.rope_dim});
  Value qRope = qParts[1];
  // A NoPE layer still has the shared key part, unrotated (Kimi Linear).
  bool rotates = m.rope_dim > 0 && !L.nope;
  if (rotates)
    qRope = rope(L.rope, qRope);
  if (!m.log_position_scale.empty()) {
    qParts[0] = headPositionScale(qParts[0], site, "q", H);
    if (m.rope_dim > 0)
      qRope = headPositionScale(qRope, site, "q", H);
  }
  auto retention = L.window > 0 ? RetentionAttr::get(b_.getContext(), RetentionKind::window, L.window)
                                 : RetentionAttr::all(b_.getContext());
  // A reader of another layer's latents (kv_layer) keeps no rows of its own.
  int64_t readLayer = L.kv_layer >= 0 ? L.kv_layer : cacheLayer;
  if (L.kv_layer < 0) {
    Value kvaBias;
    if (m.bias)
      kvaBias = weight(site.prog + "kv_a_bias", {r + m.rope_dim}, site.hf + "kv_a_proj_with_mqa.bias");
    Value kva = weight(site.prog + "kv_a", {r + m.rope_dim, site.in}, site.hf + "kv_a_proj_with_mqa.weight");
    SmallVector<Value> kvParts = split(linear(x, kva, kvaBias), {r, m.rope_dim});
    Value latentNorm = weight(site.prog + "kv_a_norm", {r},
                              {.parts = {{site.hf + "kv_a_layernorm.weight"}}, .row_scales = scales({{r, m.latent_scale}})});
    Value latent = norm(kvParts[0], latentNorm, std::nullopt, m.norm_eps);
    Value kRope = kvParts[1];
    if (m.k_rope_norm)
      kRope = norm(kRope, weight(site.prog + "k_rope_norm", {m.rope_dim}, site.hf + "k_rope_only_layernorm.weight"),
                   std::nullopt, m.norm_eps);
    if (rotates)
      kRope = rope(L.rope, kRope);
    KvAppendOp::create(b_, loc_, latent, kRope, positions_, seqIds_, slots_, blockTables_,
                       b_.getI64IntegerAttr(cacheLayer), b_.getI64IntegerAttr(1), b_.getI64IntegerAttr(r), retention,
                       IntegerAttr(), b_.getUnitAttr());
  }
  Value selection, sinks;
  if (m.indexer.heads > 0)
    selection = indexerSelection(x, qResid, site, layer, cacheLayer);
  if (m.sinks)
    sinks = weight(site.prog + "sinks", {H}, site.hf + spec_.names.sinks);
  // kv_b_proj: per head [nope key rows | value rows] over the latent.
  Value kvb = weight(site.prog + "kv_b", {H * (m.nope_dim + m.v_dim), r}, site.hf + "kv_b_proj.weight");
  auto headLinear = [&](Value in, int64_t offset, int64_t count, bool transpose) {
    int64_t width = H * (transpose ? r : count);
    return HeadLinearOp::create(b_, loc_, rows(width), in, kvb, b_.getI64IntegerAttr(H), b_.getI64IntegerAttr(offset),
                                b_.getI64IntegerAttr(count), transpose ? b_.getUnitAttr() : UnitAttr())
        .getResult();
  };
  Value qLatent = headLinear(qParts[0], 0, m.nope_dim, true);
  Value o = KvLatentAttentionOp::create(b_, loc_, rows(H * r), qLatent, qRope, positions_, seqIds_, cuSeqlens_,
                                        kvLens_, slots_, blockTables_, b_.getI64IntegerAttr(readLayer),
                                        b_.getI64IntegerAttr(H), b_.getI64IntegerAttr(r),
                                        b_.getI64IntegerAttr(m.rope_dim), b_.getF64FloatAttr(a.scale),
                                        retention, IntegerAttr(), sinks, selection, Value(),
                                        b_.getI64IntegerAttr(0), IntegerAttr(), IntegerAttr())
                .getResult();
  o = headLinear(o, m.nope_dim, m.v_dim, false);
  if (m.head_gate)
    o = GateOp::create(b_, loc_, rows(H * m.v_dim), o,
                       linear(x, weight(site.prog + "head_gate", {H, site.in}, site.hf + "g_proj.weight")))
            .getResult();
  // A per-element output gate from its own projection (Names::attn_gate, HY-V4's linear_gate).
  if (!spec_.names.attn_gate.empty())
    outGate = linear(x, weight(site.prog + "gate", {H * m.v_dim, site.in}, site.hf + spec_.names.attn_gate + ".weight"));
  if (outGate) // per element, in fp32 like the reference
    o = GateOp::create(b_, loc_, rows(H * m.v_dim), o, outGate).getResult();
  Value oBias;
  if (m.bias)
    oBias = weight(site.prog + "o_bias", {spec_.hidden_size}, site.hf + spec_.names.o_proj + ".bias");
  return linear(o, weight(site.prog + "o", {spec_.hidden_size, H * m.v_dim}, site.hf + spec_.names.o_proj + ".weight"),
                oBias);
}

// The rows x of `heads` heads times scale_h * log(1 + position) + bias_h, the two vectors
// MlaSpec::log_position_scale and log_position_bias under the site.
Value StepBuilder::headPositionScale(Value x, const AttnSite &site, const std::string &name, int64_t heads) {
  const MlaSpec &m = spec_.mla;
  Value scale = fp32Weight(site.prog + name + "_log_scale", {heads}, site.hf + m.log_position_scale);
  Value bias = fp32Weight(site.prog + name + "_log_bias", {heads}, site.hf + m.log_position_bias);
  return HeadPositionScaleOp::create(b_, loc_, x.getType(), x, positions_, scale, bias).getResult();
}

// The lightning indexer: q = wq_b(q_resid) [heads, d], k = LayerNorm(wk x) [d], both roped on
// their first rope_dim features (or their last, IndexerSpec::rope_last); the key joins the layer's cache rows and each query keeps the
// topk best of score = sum_h (w_h(x) H^-1/2) relu(q_h . k d^-1/2). A shared-indexer layer
// reuses the previous layer's selection and keeps no key.
Value StepBuilder::indexerSelection(Value x, Value qResid, const AttnSite &site, int64_t layer, int64_t cacheLayer) {
  const MlaSpec &m = layerMla(layer);
  const IndexerSpec &ix = m.indexer;
  const LayerSpec &L = spec_.layers[layer];
  if (L.shared_indexer)
    return selection_;
  int64_t H = ix.heads, D = ix.head_dim;
  std::string w = site.hf + "indexer.";
  Value q;
  if (ix.query_norm) {
    Value qIn = LayerNormOp::create(b_, loc_, rows(site.in), x,
                                    weight(site.prog + "index_q_norm", {site.in}, w + "q_input_norm.weight"),
                                    weight(site.prog + "index_q_norm_bias", {site.in}, w + "q_input_norm.bias"),
                                    b_.getF64FloatAttr(ix.norm_eps), b_.getF64FloatAttr(0.0), IntegerAttr())
                    .getResult();
    q = linear(qIn, weight(site.prog + "index_q", {H * D, site.in}, w + "wq_b.weight"));
  } else {
    q = linear(qResid, weight(site.prog + "index_q", {H * D, m.q_lora_rank}, w + "wq_b.weight"));
  }
  if (!m.log_position_scale.empty()) // before the ReLU, so never folded into wq_b
    q = headPositionScale(q, {w, site.prog + "index_", site.in}, "q", H);
  Value k = linear(x, weight(site.prog + "index_k", {D, site.in}, w + "wk.weight"));
  k = LayerNormOp::create(b_, loc_, rows(D), k, weight(site.prog + "index_k_norm", {D}, w + "k_norm.weight"),
                          weight(site.prog + "index_k_norm_bias", {D}, w + "k_norm.bias"), b_.getF64FloatAttr(ix.norm_eps),
                          b_.getF64FloatAttr(0.0), IntegerAttr())
          .getResult();
  if (m.rope_dim > 0 && !L.nope) {
    int64_t offset = ix.rope_last ? D - m.rope_dim : 0;
    q = rope(L.rope, q, D, ix.rope_pairing, offset);
    k = rope(L.rope, k, D, ix.rope_pairing, offset);
  }
  Value headWeights = linear(x, weight(site.prog + "index_w", {H, site.in}, w + "weights_proj.weight"));
  if (ix.pool > 0)
    return selection_ = poolSelection(ix, x, q, k, headWeights, site, cacheLayer);
  KvIndexAppendOp::create(b_, loc_, k, positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(cacheLayer),
                          b_.getI64IntegerAttr(D), IntegerAttr());
  auto selType = RankedTensorType::get({ShapedType::kDynamic, ix.topk}, b_.getI32Type());
  selection_ = KvIndexSelectOp::create(b_, loc_, selType, q, headWeights, positions_, seqIds_, cuSeqlens_, kvLens_,
                                       slots_, blockTables_, b_.getI64IntegerAttr(cacheLayer), b_.getI64IntegerAttr(H),
                                       b_.getI64IntegerAttr(D), b_.getI64IntegerAttr(ix.topk),
                                       b_.getF64FloatAttr(1.0 / std::sqrt((double)D)),
                                       b_.getF64FloatAttr(1.0 / std::sqrt((double)H)), IntegerAttr())
                   .getResult();
  return selection_;
}

// The k-pooled indexer (IndexerSpec::pool): each token caches [k | gate], gate its pooling
// logits; a query keeps the topk / pool best complete pools and its own open pool.
Value StepBuilder::poolSelection(const IndexerSpec &ix, Value x, Value q, Value k, Value headWeights,
                                 const AttnSite &site, int64_t cacheLayer) {
  int64_t H = ix.heads, D = ix.head_dim, P = ix.pool;
  std::string w = site.hf + "indexer.";
  Value gate = linear(x, weight(site.prog + "index_pool_gate", {D, site.in}, w + "index_kpool_compress_gate"));
  Value row = ConcatOp::create(b_, loc_, rows(2 * D), ValueRange{k, gate}).getResult();
  KvIndexAppendOp::create(b_, loc_, row, positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(cacheLayer),
                          b_.getI64IntegerAttr(2 * D), IntegerAttr());
  Value ape = weight(site.prog + "index_pool_ape", {P, D}, w + "index_kpool_compress_ape");
  auto selType = RankedTensorType::get({ShapedType::kDynamic, ix.topk + P - 1}, b_.getI32Type());
  return KvPoolSelectOp::create(b_, loc_, selType, q, headWeights, positions_, seqIds_, cuSeqlens_, kvLens_, slots_,
                                blockTables_, ape, Value(), b_.getI64IntegerAttr(cacheLayer), b_.getI64IntegerAttr(H),
                                b_.getI64IntegerAttr(D), b_.getI64IntegerAttr(ix.topk / P), b_.getI64IntegerAttr(P),
                                b_.getF64FloatAttr(1.0 / std::sqrt((double)D)),
                                b_.getF64FloatAttr(1.0 / std::sqrt((double)H)), IntegerAttr(), FloatAttr(),
                                b_.getF64FloatAttr(0.0), DenseF32ArrayAttr(), UnitAttr())
      .getResult();
}

} // namespace cbc::hf::lower
