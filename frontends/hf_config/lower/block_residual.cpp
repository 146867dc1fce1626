// Block attention residuals (ModelSpec::attn_res_block) and the clipped attention that comes
// with them (AttentionSpec::qk_clip): no residual stream, each block's inputs attend per token
// over the embedding, the finished blocks' sums and the running sum (cbc.stream.attend); the
// attention clips q, k and the relative states by their L2 norms, takes its sink logits per
// token, gates its output per element and runs its k/v through scaled short convs, dynamic ones
// (taps per token) on full layers.
#include "frontends/hf_config/lower/step_builder.h"

#include <cmath>

namespace cbc::hf::lower {

using namespace mlir;

// Q queries (stored [H], or [Q, H] for Q > 1) over the sources side by side in `stacked`, each
// result [T, H].
SmallVector<Value> StepBuilder::attendSources(Value stacked, const std::string &progName, const std::string &hfName,
                                              int64_t queries) {
  int64_t H = spec_.hidden_size, N = llvm::cast<RankedTensorType>(stacked.getType()).getDimSize(1) / H;
  SmallVector<int64_t> shape = queries == 1 ? SmallVector<int64_t>{H} : SmallVector<int64_t>{queries, H};
  // transformers keeps the queries in fp32 (_keep_in_fp32_modules_strict).
  Value query = fp32Weight(progName, shape, hfName);
  Value out = StreamAttendOp::create(b_, loc_, rows(queries * H), stacked, query, b_.getI64IntegerAttr(N),
                                     b_.getF64FloatAttr(1e-6))
                  .getResult();
  return queries == 1 ? SmallVector<Value>{out} : split(out, SmallVector<int64_t>(queries, H));
}

// The final norm's input from the gathered rows of the stacked sources.
Value StepBuilder::blockResidualHead(Value stacked) {
  return attendSources(stacked, "final_input", spec_.prefix + "attn_res.output_query", 1)[0];
}

// (x + conv(x)) * scale over a [C, K] (or [C, 1, K]) depthwise weight, with its state, in fp32.
Value StepBuilder::scaledConv(int64_t layer, Value x, const std::string &hfName, const std::string &state,
                              const ConvExtras &extras, bool lagMajor) {
  int64_t C = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1), K = spec_.attn.kv_conv_kernel;
  // A lag-major table [K, C] is read transposed: row c holds channel c's taps, the current one first.
  Value w = lagMajor ? fp32Weight(prog(layer, state), {C, K}, {.parts = {{hfName}}, .transpose = true})
                     : fp32Weight(prog(layer, state), {C, 1, K}, hfName);
  return conv1d(layer, x, w, Value(), Activation::none, state, /*residual=*/true, Value(), extras);
}

Value StepBuilder::l2Clip(Value x, int64_t group, double threshold, Value scale) {
  return L2ClipOp::create(b_, loc_, x.getType(), x, scale, b_.getI64IntegerAttr(group),
                          b_.getF64FloatAttr(threshold), b_.getF64FloatAttr(1e-6))
      .getResult();
}

// The attention of a layer from its q, k and v inputs (one input on sliding layers).
Value StepBuilder::clippedAttention(int64_t layer, Value xq, Value xk, Value xv) {
  const AttentionSpec &a = spec_.attn;
  const LayerSpec &L = spec_.layers[layer];
  AttnSite site = attnSite(layer);
  int64_t heads = L.num_heads ? L.num_heads : a.num_heads, kvHeads = L.num_kv_heads ? L.num_kv_heads : a.num_kv_heads;
  int64_t D = L.head_dim ? L.head_dim : a.head_dim, R = a.rel_dim, K = a.kv_conv_kernel, H = spec_.hidden_size;
  int64_t qw = heads * D, kw = kvHeads * D, rw = heads * R, extent = L.window > 0 ? L.window : a.rel_extent;
  bool full = L.window == 0;
  auto name = [&](const std::string &rest) { return site.hf + rest; };
  // Everything the query input feeds, in one GEMM.
  Value qSide = linear(xq, weight(site.prog + "qrgs", {qw + rw + qw + heads, H},
                                  {.parts = {{name("wq_du.weight"), name("wr_du.weight"), name("gate_attn.weight"),
                                              name("attn_sink_proj.weight")}}}));
  SmallVector<Value> qParts = split(qSide, {qw, rw, qw, heads});
  Value q = qParts[0], r = qParts[1], gate = qParts[2], sinks = qParts[3];
  Value k = linear(xk, weight(site.prog + "k", {kw, H}, name("wk_dv.weight")));
  Value v = linear(xv, weight(site.prog + "v", {kw, H}, name("wv_dv.weight")));
  auto kvConv = [&](Value x, Value input, const std::string &which) {
    std::string module = which + "_sconv", state = which + "_conv";
    if (!full)
      return scaledConv(layer, x, name(module + ".weight"), state, {.scale = 1.0 / std::sqrt((double)K + 1)}, false);
    // Taps per token from the k or v input, K per KV head, added to the static ones.
    Value taps = linear(input, weight(prog(layer, "attn." + which + "_taps"), {kvHeads * K, H},
                                      name(module + ".weight_proj")));
    ConvExtras extras{.taps = taps, .lag_order = true, .scale = 1.0 / std::sqrt(2.0 * (double)K + 1)};
    return scaledConv(layer, x, name(module + ".static_w"), state, extras, true);
  };
  k = l2Clip(kvConv(k, xk, "k"), D, a.qk_clip);
  v = norm(kvConv(v, xv, "v"), Value(), D);
  q = l2Clip(q, D, a.qk_clip, fp32Weight(site.prog + "q_clip", {qw}, {.parts = {{name("q_l2_clip.scale")}}, .flatten = true}));
  r = l2Clip(r, R, a.rel_clip, fp32Weight(site.prog + "rel_clip", {rw}, {.parts = {{name("rel_l2_clip.scale")}}, .flatten = true}));
  if (full) { // the clips bound the norms before the log scaling
    q = logPositionScale(q);
    r = logPositionScale(r);
  }
  Value bias = relativeBias(site, r, heads, extent);
  auto retention = full ? RetentionAttr::all(b_.getContext())
                        : RetentionAttr::get(b_.getContext(), RetentionKind::window, L.window);
  KvAppendOp::create(b_, loc_, k, v, positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(layer),
                     b_.getI64IntegerAttr(kvHeads), b_.getI64IntegerAttr(D), retention, IntegerAttr());
  Value o = KvAttentionOp::create(b_, loc_, rows(qw), q, positions_, seqIds_, cuSeqlens_, kvLens_, slots_,
                                  blockTables_, Value(), bias, Value(), Value(), sinks, b_.getI64IntegerAttr(layer),
                                  b_.getI64IntegerAttr(heads), b_.getI64IntegerAttr(kvHeads), b_.getI64IntegerAttr(D),
                                  b_.getF64FloatAttr(1.0 / std::sqrt((double)D)), retention, FloatAttr(),
                                  IntegerAttr(), b_.getI64IntegerAttr(extent), b_.getI64IntegerAttr(0),
                                  b_.getI64IntegerAttr(0), DenseF32ArrayAttr())
                .getResult();
  o = GateOp::create(b_, loc_, rows(qw), o, gate).getResult();
  return linear(o, weight(site.prog + "o", {H, qw}, name("wo_ud.weight")));
}

// The layers over block attention residuals; returns the final sources side by side, which the
// head reads through blockResidualHead once it has gathered its rows.
Value StepBuilder::blockResidualLayers(Value embeddings) {
  int64_t K = spec_.branch_conv_kernel;
  double convScale = 1.0 / std::sqrt((double)K + 1);
  std::string res = spec_.prefix + "attn_res.";
  SmallVector<Value> done; // the finished sources: the embedding, then each block's sum
  Value partial = embeddings;
  auto with = [&](Value p) { // the sources side by side: done, then p
    SmallVector<Value> all(done);
    all.push_back(p);
    return all.size() == 1 ? p : ConcatOp::create(b_, loc_, rows((int64_t)all.size() * spec_.hidden_size), all).getResult();
  };
  for (int64_t l = 0; l < spec_.num_layers; ++l) {
    bool full = spec_.layers[l].window == 0, boundary = l % spec_.attn_res_block == 0;
    std::string n = std::to_string(l);
    // Layer 0 reads the embedding itself; the others attend (three queries on full layers).
    SmallVector<Value> in = l == 0 ? SmallVector<Value>(full ? 3 : 1, partial)
                                   : attendSources(with(partial), prog(l, "attn_input"),
                                                   res + "attn_queries." + std::to_string(l - 1), full ? 3 : 1);
    Value h = full ? clippedAttention(l, layerNorm(l, "q_input_norm", in[0]), layerNorm(l, "k_input_norm", in[1]),
                                      layerNorm(l, "v_input_norm", in[2]))
                   : [&] {
                       Value x = layerNorm(l, spec_.names.input_norm, in[0]);
                       return clippedAttention(l, x, x, x);
                     }();
    h = scaledConv(l, h, hf(l, "attn_sconv.weight"), "attn_conv", {.scale = convScale}, false);
    if (boundary) { // the block so far becomes a source; the attention output starts the next sum
      done.push_back(partial);
      partial = h;
    } else {
      partial = add(partial, h);
    }
    Value m = attendSources(with(partial), prog(l, "mlp_input"), res + "mlp_queries." + n, 1)[0];
    m = moeMlp(l, layerNorm(l, spec_.names.post_attn_norm, m));
    partial = add(partial, scaledConv(l, m, hf(l, "mlp_sconv.weight"), "mlp_conv", {.scale = convScale}, false));
  }
  return with(partial);
}

} // namespace cbc::hf::lower
