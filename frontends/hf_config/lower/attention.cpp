// Attention over the paged cache: the q|k|v projection (fused, regrouped, with optional biases,
// multipliers and rank-r adapters), q/k norms, RoPE, the cache write, paged attention with
// optional sinks and softcap, the optional output gate and the output projection; or a mixture of
// attention heads, whose routed experts project q and the output.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

// headDim / pairing: a rope over heads other than the attention's (the sparse attention indexer).
RopeAttr StepBuilder::ropeSchedule(const RopeSpec &r, int64_t headDim, std::optional<RotaryPairing> pairing,
                                   int64_t offset, bool inverse) {
  bool dynamic = r.dynamic_factor != 0, longRope = !r.inv_freq_long.empty();
  // A reversed rotation turns by -angle: the same frequencies, negated.
  auto freqs = [&](const std::vector<float> &f) {
    std::vector<float> out(f);
    if (spec_.attn.rope_reversed != inverse)
      for (float &v : out)
        v = -v;
    return b_.getDenseF32ArrayAttr(out);
  };
  return RopeAttr::get(b_.getContext(), headDim ? headDim : spec_.attn.head_dim, r.rotary_dim,
                       toDialect(pairing.value_or(r.pairing)), freqs(r.inv_freq), llvm::APFloat(r.attention_factor),
                       longRope ? freqs(r.inv_freq_long) : DenseF32ArrayAttr(), longRope ? r.long_after : 0,
                       llvm::APFloat(dynamic ? r.theta : 0.0), llvm::APFloat(dynamic ? r.dynamic_factor : 0.0),
                       dynamic ? r.dynamic_max_positions : 0, r.sections, offset);
}

Value StepBuilder::rope(const RopeSpec &r, Value x, int64_t headDim, std::optional<RotaryPairing> pairing,
                        int64_t offset, bool inverse) {
  auto width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
  RopeAttr schedule = ropeSchedule(r, headDim, pairing, offset, inverse);
  // LeRoPE: one learned log-scale per frequency, shared by every rotation of the model.
  Value freqLogScale;
  if (!spec_.rope_log_scale.empty())
    freqLogScale = fp32Weight("rope_log_scale", {r.rotary_dim / 2}, spec_.rope_log_scale);
  return RopeOp::create(b_, loc_, rows(width), x, positions_, seqIds_, promptLens_,
                        r.sections.empty() ? Value() : ropePositions_, freqLogScale, schedule)
      .getResult();
}

AttentionSpec StepBuilder::layerAttention(int64_t layer) const {
  AttentionSpec a = spec_.attn;
  const LayerSpec &L = spec_.layers[layer];
  a.num_heads = L.num_heads ? L.num_heads : a.num_heads;
  a.num_kv_heads = L.num_kv_heads ? L.num_kv_heads : a.num_kv_heads;
  a.head_dim = L.head_dim ? L.head_dim : a.head_dim;
  a.sinks = L.sinks.value_or(a.sinks);
  a.o_bias = L.o_bias.value_or(a.o_bias);
  a.scale *= L.scale_factor;
  return a;
}

// The width of a value head (and of each head of the attention output).
static int64_t valueDim(const AttentionSpec &a) { return a.v_head_dim ? a.v_head_dim : a.head_dim; }

// The output gate's width: one per head or one per element of q.
static int64_t gateWidth(const AttentionSpec &a) {
  return !a.output_gate ? 0 : a.gate_per_head ? a.num_heads : a.num_heads * a.head_dim;
}

// A LayerNorm over each of `heads` heads of `dim` features: one weight (and bias) for every
// head, or with qk_norm_per_head each head's own weight.
Value StepBuilder::qkLayerNorm(Value x, const AttnSite &site, const std::string &module, int64_t heads, int64_t dim) {
  const AttentionSpec &a = spec_.attn;
  std::string hfName = site.hf + module, progName = site.prog + module;
  Value w, b;
  if (a.qk_norm_per_head) {
    std::vector<std::string> perHead;
    for (int64_t h = 0; h < heads; ++h)
      perHead.push_back(hfName + ".norms." + std::to_string(h) + ".weight");
    w = weight(progName, {heads * dim}, {.parts = {perHead}});
  } else {
    w = weight(progName, {dim}, hfName + ".weight");
  }
  if (a.qk_norm_bias)
    b = weight(progName + "_bias", {a.qk_norm_per_head ? heads * dim : dim}, hfName + ".bias");
  return LayerNormOp::create(b_, loc_, rows(heads * dim), x, w, b, b_.getF64FloatAttr(spec_.norm_eps),
                             b_.getF64FloatAttr(0.0), b_.getI64IntegerAttr(dim))
      .getResult();
}

// [q | gate | k | v] rows (gate only with an output gate), one GEMM per layer. The gate rows
// come interleaved per head with q_proj's or, with Names::attn_gate, from their own projection.
Value StepBuilder::qkvProjection(int64_t layer, Value x, const AttnSite &site) {
  const AttentionSpec a = layerAttention(layer);
  const Names &n = spec_.names;
  int64_t D = a.head_dim, qw = a.num_heads * D, kw = a.num_kv_heads * D, vw = a.num_kv_heads * valueDim(a);
  int64_t gw = gateWidth(a);
  int64_t in = site.in;
  // A layer reading another's cache projects q alone; one whose v is its k has no v_proj (the
  // separate projections only: no fused checkpoint shares K/V).
  const LayerSpec &L = spec_.layers[layer];
  size_t projections = L.kv_layer >= 0 ? 1 : L.value_is_key ? 2 : 3;
  kw = projections > 1 ? kw : 0;
  vw = projections > 2 ? vw : 0;
  // Multipliers on the input (the weights only) and on k (weight and bias).
  const Multipliers &mu = spec_.mup;
  double vs = a.value_scale;
  auto wScales = a.gate_leads
                     ? scales({{gw, mu.attn_in}, {qw, mu.attn_in}, {kw, mu.attn_in * mu.key}, {vw, mu.attn_in * vs}})
                     : scales({{qw, mu.attn_in}, {gw, mu.attn_in}, {kw, mu.attn_in * mu.key}, {vw, mu.attn_in * vs}});
  auto bScales = scales({{qw, 1.0}, {gw, 1.0}, {kw, mu.key}, {vw, vs}});
  Value wqkv, bqkv;
  if (!n.qkv.empty()) {
    // One fused tensor, its rows in the checkpoint's order ([gate | q | k | v] with gate_leads,
    // or per KV group, regrouped to [q | k | v]); biases, where there are any, are the fused
    // tensor's own or per projection.
    SmallVector<int64_t> regroup;
    if (a.qkv_grouped)
      regroup = {a.num_kv_heads, qw / a.num_kv_heads, D, valueDim(a)};
    if (int64_t n = a.qkv_shards) // regrouped to [q | v | k], which attention() splits so
      regroup = {n, qw / n, vw / n, kw / n};
    wqkv = weight(site.prog + "qkv", {qw + gw + kw + vw, in},
                  {.parts = {{site.hf + n.qkv + ".weight"}},
                   .transpose = spec_.linears_transposed,
                   .regroup = regroup,
                   .row_scales = wScales});
    if (a.qkv_bias && !n.qkv_bias.empty()) {
      bqkv = weight(site.prog + "qkv_bias", {qw + gw + kw + vw},
                    {.parts = {{site.hf + n.qkv_bias}}, .regroup = regroup});
    } else if (a.qkv_bias) {
      std::vector<std::string> biases = {site.hf + n.q_proj + ".bias", site.hf + n.k_proj + ".bias", site.hf + n.v_proj + ".bias"};
      if (a.gate_leads)
        biases.insert(biases.begin(), site.hf + n.attn_gate + ".bias");
      bqkv = weight(site.prog + "qkv_bias", {qw + gw + kw + vw}, {.parts = {biases}});
    }
  } else {
    // q_proj interleaves [q | gate] per head; regrouping makes it [q all | gate all].
    SmallVector<int64_t> regroup;
    std::vector<std::string> names = {site.hf + n.q_proj + ".weight", site.hf + n.k_proj + ".weight",
                                      site.hf + n.v_proj + ".weight"};
    names.resize(projections);
    if (a.output_gate && !n.attn_gate.empty())
      names.insert(names.begin() + 1, site.hf + n.attn_gate + ".weight");
    else if (a.output_gate)
      regroup = {a.num_heads, D, D};
    wqkv = weight(site.prog + "qkv", {qw + gw + kw + vw, in},
                  {.parts = {names},
                   .regroup = regroup,
                   .row_scales = wScales});
    if (a.qkv_bias) {
      std::vector<std::string> biases = {site.hf + n.q_proj + ".bias", site.hf + n.k_proj + ".bias", site.hf + n.v_proj + ".bias"};
      biases.resize(projections);
      if (a.output_gate && !n.attn_gate.empty())
        biases.insert(biases.begin() + 1, site.hf + n.attn_gate + ".bias");
      bqkv = weight(site.prog + "qkv_bias", {qw + gw + kw + vw},
                    {.parts = {biases}, .regroup = regroup, .row_scales = bScales});
    }
  }
  Value qkv = linear(x, wqkv, bqkv);
  if (site.adapter_slot.empty())
    return qkv;
  // Shared-block adapters: each of q, k and v adds a rank-r adapter of the input; the three
  // down projections stack into one GEMM, the three up projections sit on a block diagonal.
  int64_t r = spec_.shared.adapter_rank;
  auto piece = [&](const char *which, int p) {
    return site.hf + "linear_" + which + "_adapter_list." + site.adapter_slot + std::to_string(p) + ".weight";
  };
  Value down = weight(prog(layer, "attn.adapter_down"), {3 * r, in},
                      {.parts = {{piece("q", 0), piece("k", 0), piece("v", 0)}}});
  Value up = weight(prog(layer, "attn.adapter_up"), {qw + 2 * kw, 3 * r},
                    {.parts = {{piece("q", 1), piece("k", 1), piece("v", 1)}}, .block_diag = 3});
  return add(qkv, linear(linear(x, down), up));
}

// Differential attention's value rows: KV head j holds [v_(j mod h) | v_(h + j mod h)], h = kv / 2
// (DiffLlama's two halves of v, each repeated to every KV head).
Value StepBuilder::pairValueHeads(Value v, int64_t kvHeads, int64_t dim) {
  SmallVector<Value> heads = split(v, SmallVector<int64_t>(kvHeads, dim));
  SmallVector<Value> paired;
  for (int64_t j = 0, h = kvHeads / 2; j < kvHeads; ++j)
    paired.append({heads[j % h], heads[h + j % h]});
  return ConcatOp::create(b_, loc_, rows(2 * kvHeads * dim), paired).getResult();
}

// The first half of the heads minus lambda times the second, each of 2 * dim, then a weightless
// RMS norm per head and the factor 1 - lambda_init.
Value StepBuilder::differentialHeads(Value o, const AttnSite &site, int64_t dim, double lambdaInit) {
  auto lambda = [&](const char *which) {
    return weight(site.prog + "lambda_" + which, {dim}, site.hf + "lambda_" + which);
  };
  int64_t width = llvm::cast<RankedTensorType>(o.getType()).getDimSize(1) / 2;
  o = DiffHeadsOp::create(b_, loc_, rows(width), o, lambda("q1"), lambda("k1"), lambda("q2"), lambda("k2"),
                          b_.getF64FloatAttr(lambdaInit))
          .getResult();
  return scaleBy(norm(o, Value(), 2 * dim), 1.0 - lambdaInit);
}

// Writes k and v to the layer's cache and attends q over it, with the layer's sinks if it has
// them: the output is `width` wide.
Value StepBuilder::cachedAttention(int64_t layer, const AttentionSpec &a, const AttnSite &site, Value q, Value k,
                                   Value v, int64_t width, const BlockSelection &selection) {
  const LayerSpec &L = spec_.layers[layer];
  auto retention = L.window > 0  ? RetentionAttr::get(b_.getContext(), RetentionKind::window, L.window)
                   : L.chunk > 0 ? RetentionAttr::get(b_.getContext(), RetentionKind::chunk, L.chunk)
                                 : RetentionAttr::all(b_.getContext());
  // A layer sharing another's KV attends over that layer's cache and writes none of its own.
  int64_t cacheLayer = L.kv_layer >= 0 ? L.kv_layer : layer;
  if (L.kv_layer < 0)
    KvAppendOp::create(b_, loc_, k, v, positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(layer),
                       b_.getI64IntegerAttr(a.num_kv_heads), b_.getI64IntegerAttr(a.head_dim), retention, IntegerAttr());
  Value sinks;
  if (a.sinks)
    sinks = weight(site.prog + "sinks", {a.num_heads}, site.hf + spec_.names.sinks);
  return KvAttentionOp::create(b_, loc_, rows(width), q, positions_, seqIds_, cuSeqlens_, kvLens_, slots_,
                               blockTables_, sinks, Value(), selection.blocks,
                               L.image_bidirectional ? keyEnds_ : Value(), Value(), b_.getI64IntegerAttr(cacheLayer),
                               b_.getI64IntegerAttr(a.num_heads), b_.getI64IntegerAttr(a.num_kv_heads),
                               b_.getI64IntegerAttr(a.head_dim), b_.getF64FloatAttr(a.scale), retention,
                               a.softcap > 0 ? b_.getF64FloatAttr(a.softcap) : FloatAttr(), IntegerAttr(),
                               b_.getI64IntegerAttr(0), b_.getI64IntegerAttr(selection.heads),
                               b_.getI64IntegerAttr(selection.block),
                               a.alibi_slopes.empty() ? DenseF32ArrayAttr() : b_.getDenseF32ArrayAttr(a.alibi_slopes))
      .getResult();
}

// The indexer's normed, roped queries and key; the key is cached as the layer's index_key row
// and the queries pick their blocks over the cached keys (QSA's pooled blocks: qsaIndexer).
BlockSelection StepBuilder::blockIndexer(int64_t layer, Value x, const AttnSite &site) {
  const BlockIndexerSpec &ix = spec_.attn.block_indexer;
  if (ix.pooled)
    return qsaIndexer(layer, x, site);
  int64_t Hi = ix.heads, Di = ix.head_dim;
  std::string hfi = site.hf + "indexer.", progi = site.prog + "indexer.";
  Value iq = linear(x, weight(progi + "q", {Hi * Di, site.in}, hfi + "q_proj.weight"));
  Value ik = linear(x, weight(progi + "k", {Di, site.in}, hfi + "k_proj.weight"));
  iq = norm(iq, weight(progi + "q_norm", {Di}, hfi + "q_norm.weight"), Di);
  ik = norm(ik, weight(progi + "k_norm", {Di}, hfi + "k_norm.weight"), Di);
  const RopeSpec &r = spec_.layers[layer].rope;
  iq = rope(r, iq, Di);
  ik = rope(r, ik, Di);
  KvIndexAppendOp::create(b_, loc_, ik, positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(layer),
                          b_.getI64IntegerAttr(Di), IntegerAttr());
  Value blocks = KvBlockSelectOp::create(b_, loc_, rowsI32(Hi * ix.topk), iq, positions_, seqIds_, cuSeqlens_,
                                         kvLens_, slots_, blockTables_, b_.getI64IntegerAttr(layer),
                                         b_.getI64IntegerAttr(Hi), b_.getI64IntegerAttr(Di),
                                         b_.getI64IntegerAttr(ix.block), b_.getI64IntegerAttr(ix.topk),
                                         b_.getI64IntegerAttr(ix.local), IntegerAttr())
                     .getResult();
  return {blocks, Hi, ix.block};
}

// `blocks` blocks of `per` heads of `dim` features, regrouped head-major: block b's head h moves
// to place h * blocks + b.
Value StepBuilder::transposeHeads(Value x, int64_t blocks, int64_t per, int64_t dim) {
  SmallVector<Value> heads = split(x, SmallVector<int64_t>(blocks * per, dim));
  SmallVector<Value> moved;
  for (int64_t h = 0; h < per; ++h)
    for (int64_t b = 0; b < blocks; ++b)
      moved.push_back(heads[b * per + h]);
  return ConcatOp::create(b_, loc_, rows(blocks * per * dim), moved).getResult();
}

// A mixture of attention heads: each of the token's top_k expert choices projects a block of
// kv-head-many query heads that reads the kv heads in order (query head c * kv + j reads kv head
// j), and projects its block of the output back, mixed by the routing weights. Regrouped
// head-major (j * top_k + c) the query heads read their kv heads as grouped-query attention does.
Value StepBuilder::headExpertsAttention(int64_t layer, Value x, const AttnSite &site) {
  const AttentionSpec a = layerAttention(layer);
  const HeadExpertsSpec &m = a.head_experts;
  int64_t D = a.head_dim, KV = a.num_kv_heads, E = m.experts, K = m.top_k, H = spec_.hidden_size;
  Value router = weight(site.prog + "router", {E, H}, site.hf + m.router);
  auto route = MoeRouteOp::create(b_, loc_, TypeRange{rows(K), rowsI32(K)}, linear(x, router), Value(),
                                  Value(), Value(), b_.getI64IntegerAttr(K), RouteScoreAttr::get(b_.getContext(), RouteScore::topk_softmax),
                                  b_.getBoolAttr(false), b_.getF64FloatAttr(0.0), b_.getF64FloatAttr(1.0),
                                  RouteGroupsAttr(), b_.getI64IntegerAttr(0), b_.getF64FloatAttr(0.0),
                                  b_.getBoolAttr(false));
  Value wq = weight(site.prog + "q_experts", {E, KV * D, H}, site.hf + m.q);
  Value q = MoeSlotLinearOp::create(b_, loc_, rows(K * KV * D), x, route.getIds(), wq, Value()).getResult();
  SmallVector<Value> kv = split(linear(x, weight(site.prog + "kv", {2 * KV * D, H}, site.hf + m.kv)), {KV * D, KV * D});
  const RopeSpec &r = spec_.layers[layer].rope;
  q = rope(r, transposeHeads(q, K, KV, D), D);
  Value o = cachedAttention(layer, a, site, q, rope(r, kv[0], D), kv[1], K * KV * D);
  Value wo = weight(site.prog + "o_experts", {E, H, KV * D}, site.hf + m.o);
  o = MoeSlotLinearOp::create(b_, loc_, rows(H), transposeHeads(o, KV, K, D), route.getIds(), wo, route.getWeights())
          .getResult();
  return add(o, weight(site.prog + "o_bias", {H}, site.hf + m.o_bias));
}

Value StepBuilder::attention(int64_t layer, Value x, const AttnSite &site) {
  if (spec_.attn.rel_dim > 0)
    return relativeAttention(layer, x, site);
  if (spec_.attn.head_experts.experts > 0)
    return headExpertsAttention(layer, x, site);
  if (spec_.attn.cca.t0 > 0)
    return ccaAttention(layer, x, site);
  const AttentionSpec a = layerAttention(layer);
  const Names &n = spec_.names;
  const LayerSpec &L = spec_.layers[layer];
  int64_t D = a.head_dim, qw = a.num_heads * D, kw = a.num_kv_heads * D;
  // Differential attention caches two value heads per KV head: the output heads are twice as wide.
  int64_t cachedDim = (a.differential ? 2 : 1) * valueDim(a);
  int64_t vw = a.num_kv_heads * valueDim(a), ow = a.num_heads * cachedDim;
  int64_t H = spec_.hidden_size;
  Value qkv = qkvProjection(layer, x, site);
  if (a.clip_qkv > 0)
    qkv = ClampOp::create(b_, loc_, qkv.getType(), qkv, b_.getF64FloatAttr(a.clip_qkv)).getResult();
  // [q | gate | k | v], or [gate | q | k | v] with gate_leads; no gate without an output gate.
  int64_t gw = gateWidth(a);
  bool ownKv = L.kv_layer < 0;
  SmallVector<Value> parts = a.gate_leads ? split(qkv, {gw, qw, kw, vw})
                             : a.output_gate ? split(qkv, {qw, gw, kw, vw})
                             : a.qkv_shards  ? split(qkv, {qw, vw, kw})
                             : !ownKv        ? SmallVector<Value>{qkv, Value(), Value()}
                             : L.value_is_key ? split(qkv, {qw, kw})
                                             : split(qkv, {qw, kw, vw});
  if (L.value_is_key)
    parts.push_back(parts[1]);
  if (a.qkv_shards)
    std::swap(parts[1], parts[2]); // [q | v | k]
  Value gate = a.gate_leads ? parts[0] : a.output_gate ? parts[1] : Value();
  if (!n.attn_gate_bias.empty())
    gate = add(gate, weight(site.prog + "gate_bias", {a.num_heads}, site.hf + n.attn_gate_bias));
  Value q = parts[a.gate_leads ? 1 : 0], k = parts[a.output_gate ? 2 : 1], v = parts[a.output_gate ? 3 : 2];
  // Per head, or over the whole projection; before RoPE, or after it.
  auto qkNorms = [&] {
    if (a.qk_layer_norm) {
      q = qkLayerNorm(q, site, n.q_norm, a.num_heads, D);
      if (ownKv)
        k = qkLayerNorm(k, site, n.k_norm, a.num_kv_heads, D);
      return;
    }
    int64_t qg = a.qk_norm_whole ? qw : D, kg = a.qk_norm_whole ? kw : D;
    q = norm(q, weight(site.prog + "q_norm", {qg}, site.hf + n.q_norm + ".weight"), qg);
    if (ownKv)
      k = norm(k, weight(site.prog + "k_norm", {kg}, site.hf + n.k_norm + ".weight"), kg);
  };
  if (a.qk_norm && !a.qk_norm_after_rope)
    qkNorms();
  bool roped = a.rope && !L.nope;
  if (roped) {
    q = rope(L.rope, q, D);
    if (ownKv)
      k = rope(L.rope, k, D);
    if (a.qk_l2_norm) {
      q = norm(q, Value(), D);
      k = norm(k, Value(), D);
    }
  } else if (a.temperature_beta != 0) {
    q = PositionScaleOp::create(b_, loc_, rows(qw), q, positions_, b_.getF64FloatAttr(a.temperature_beta),
                                b_.getI64IntegerAttr(a.temperature_period), b_.getI64IntegerAttr(1),
                                PositionScaleFormAttr::get(b_.getContext(), toDialect(a.temperature_form)))
            .getResult();
  }
  if (roped && a.query_scale_beta != 0)
    q = PositionScaleOp::create(b_, loc_, rows(qw), q, positions_, b_.getF64FloatAttr(a.query_scale_beta),
                                b_.getI64IntegerAttr(a.query_scale_period), b_.getI64IntegerAttr(0))
            .getResult();
  if (a.qk_norm && a.qk_norm_after_rope)
    qkNorms();

  if (a.differential)
    v = pairValueHeads(v, a.num_kv_heads, valueDim(a));
  if (a.v_norm && ownKv)
    v = norm(v, Value(), valueDim(a));
  BlockSelection selection = L.block_sparse ? blockIndexer(layer, x, site) : BlockSelection{};
  Value o;
  if (a.key_bias) {
    // Each key's bias as one more key feature, each query's as 1 / scale, so q . k gains the
    // bias over the scale; eight features keep the heads whole 16-byte chunks.
    constexpr int64_t kPad = 8;
    Value dtBias = a.qkv_bias ? weight(site.prog + "dt_bias", {a.num_kv_heads}, site.hf + "dt_proj.bias") : Value();
    Value dt = linear(v, weight(site.prog + "dt", {a.num_kv_heads, vw}, site.hf + "dt_proj.weight"), dtBias);
    Value bias = act(mul(act(dt, Activation::softplus), weight(site.prog + "A", {a.num_kv_heads}, site.hf + "A")),
                     Activation::exp);
    q = HeadPadOp::create(b_, loc_, rows(qw + a.num_heads * kPad), q, Value(), b_.getI64IntegerAttr(a.num_heads),
                          b_.getI64IntegerAttr(kPad), b_.getF64FloatAttr(1.0 / a.scale))
            .getResult();
    k = HeadPadOp::create(b_, loc_, rows(kw + a.num_kv_heads * kPad), k, bias, b_.getI64IntegerAttr(a.num_kv_heads),
                          b_.getI64IntegerAttr(kPad), b_.getF64FloatAttr(0.0))
            .getResult();
    AttentionSpec padded = a;
    padded.v_head_dim = valueDim(a);
    padded.head_dim = D + kPad;
    o = cachedAttention(layer, padded, site, q, k, v, ow, selection);
  } else {
    o = cachedAttention(layer, a, site, q, k, v, ow, selection);
  }
  if (a.output_gate && a.gate_softplus)
    o = mul(o, act(gate, Activation::softplus));
  else if (a.output_gate)
    o = GateOp::create(b_, loc_, rows(ow), o, gate).getResult();
  if (a.differential) {
    o = differentialHeads(o, site, valueDim(a), L.lambda_init);
    ow /= 2;
  }
  if (!n.attn_sub_norm.empty())
    o = norm(o, weight(site.prog + "sub_norm", {ow}, site.hf + n.attn_sub_norm + ".weight"));
  auto oScales = scales({{H, spec_.mup.attn_out}});
  Value wo = weight(site.prog + "o", {H, ow},
                    {.parts = {{site.hf + n.o_proj + ".weight"}},
                     .transpose = spec_.linears_transposed,
                     .row_scales = oScales});
  Value bo;
  if (a.o_bias)
    bo = weight(site.prog + "o_bias", {H},
                {.parts = {{site.hf + (n.o_bias.empty() ? n.o_proj + ".bias" : n.o_bias)}}, .row_scales = oScales});
  return linear(o, wo, bo);
}

} // namespace cbc::hf::lower
