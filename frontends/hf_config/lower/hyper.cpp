// Hyper-connections (HyperSpec): the residual streams side by side in one [T, N * hidden] row,
// each block reading them through cbc.stream.collapse and returning through cbc.stream.expand,
// with the coefficients cbc.stream.hc_weights computes per token from the streams themselves.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

// The streams at the start: the embeddings, once per stream.
Value StepBuilder::hyperStreams(Value x) {
  SmallVector<Value> copies(spec_.hyper.streams, x);
  return ConcatOp::create(b_, loc_, rows(spec_.hyper.streams * spec_.hidden_size), copies).getResult();
}

// The coefficients of one site from the streams: <prefix>fn over their weightless RMS norm, then
// <prefix>base and <prefix>scale. `prog` and `prefix` name the site's program and checkpoint
// tensors. The three are read in fp32, as transformers keeps them in a bf16 model.
Value StepBuilder::hyperWeights(Value streams, HcKind kind, const std::string &prog, const std::string &prefix) {
  const HyperSpec &h = spec_.hyper;
  int64_t N = h.streams, W = kind == HcKind::collapse ? N : kind == HcKind::independent ? 2 * N : (2 + N) * N;
  Value mixes = linear(norm(streams, Value(), std::nullopt, h.norm_eps),
                       fp32Weight(prog + "fn", {W, N * spec_.hidden_size}, prefix + "fn"));
  Value base = fp32Weight(prog + "base", {W}, prefix + "base");
  Value scale = fp32Weight(prog + "scale", {(int64_t)kind + 1}, prefix + "scale");
  bool head = kind == HcKind::collapse;
  return StreamHcWeightsOp::create(b_, loc_, rows(W), mixes, base, scale, HcKindAttr::get(b_.getContext(), kind),
                                   b_.getI64IntegerAttr(N), b_.getF64FloatAttr(head ? 1.0 : h.magnitude),
                                   b_.getF64FloatAttr(h.eps), b_.getF64FloatAttr(head ? 0.0 : h.post_eps),
                                   b_.getI64IntegerAttr(kind == HcKind::manifold ? h.sinkhorn_iters : 0))
      .getResult();
}

// One block between the streams: `block` reads their mix and its output rejoins them.
Value StepBuilder::hyperBlock(int64_t l, Value streams, const std::string &site, const std::string &prefix,
                              const std::function<Value(Value)> &block) {
  const HyperSpec &h = spec_.hyper;
  HcKind kind = h.manifold ? HcKind::manifold : HcKind::independent;
  Value w = hyperWeights(streams, kind, prog(l, site + "."), hf(l, prefix));
  auto count = b_.getI64IntegerAttr(h.streams);
  Value in = StreamCollapseOp::create(b_, loc_, rows(spec_.hidden_size), streams, w, count, b_.getI64IntegerAttr(0))
                 .getResult();
  return StreamExpandOp::create(b_, loc_, streams.getType(), block(in), streams, w, count,
                                b_.getI64IntegerAttr(h.streams), h.manifold ? b_.getUnitAttr() : UnitAttr())
      .getResult();
}

// A pre-norm layer whose two residual adds are hyper-connections.
Value StepBuilder::hyperLayer(int64_t l, Value x) {
  if (spec_.hyper.rank > 0)
    return gatedResidualLayer(l, x);
  const LayerSpec &L = spec_.layers[l];
  const Names &nm = spec_.names;
  x = hyperBlock(l, x, "hc_attn", spec_.hyper.attn, [&](Value h) { return mixer(l, layerNorm(l, nm.input_norm, h)); });
  return hyperBlock(l, x, "hc_ffn", spec_.hyper.ffn, [&](Value h) {
    h = layerNorm(l, nm.post_attn_norm, h);
    return L.moe ? moeMlp(l, h) : denseMlp(l, h);
  });
}

// The streams mixed into one row for the final norm and the head.
Value StepBuilder::hyperHead(Value streams) {
  if (spec_.hyper.rank > 0)
    return gatedMix(streams, "hc_head.", spec_.prefix + spec_.hyper.head, nullptr);
  if (spec_.hyper.mean_head) {
    SmallVector<int64_t> widths(spec_.hyper.streams, spec_.hidden_size);
    SmallVector<Value> parts = split(streams, widths);
    Value sum = parts[0];
    for (size_t n = 1; n < parts.size(); ++n)
      sum = add(sum, parts[n]);
    return ActOp::create(b_, loc_, sum.getType(), sum, ActivationAttr::get(b_.getContext(), Activation::none),
                         b_.getF64FloatAttr(1.0 / (double)spec_.hyper.streams))
        .getResult();
  }
  Value w = hyperWeights(streams, HcKind::collapse, "hc_head.", spec_.prefix + spec_.hyper.head);
  return StreamCollapseOp::create(b_, loc_, rows(spec_.hidden_size), streams, w,
                                  b_.getI64IntegerAttr(spec_.hyper.streams), b_.getI64IntegerAttr(0))
      .getResult();
}

} // namespace cbc::hf::lower
