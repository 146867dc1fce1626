// Attention with a relative-position bias computed from the hidden state and no RoPE (Inkling):
// q, k, v and the relative features r from one GEMM; k and v through residual depthwise convs;
// per-head q/k norms; the bias table bias[t, h, d] = r[t, h] . proj[:, d] for each backward
// distance d below the extent, added to the scores by the paged attention; on full layers an
// optional log-position scale on q and the bias. A layer may have its own head counts.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

Value StepBuilder::residualConv(int64_t layer, Value h, const std::string &module, const std::string &state) {
  int64_t C = llvm::cast<RankedTensorType>(h.getType()).getDimSize(1);
  int64_t K = module == "attn_sconv" || module == "mlp_sconv" ? spec_.branch_conv_kernel : spec_.attn.kv_conv_kernel;
  // transformers keeps these convs in fp32 (_keep_in_fp32_modules_strict): fp32 weights, and the
  // residual sum rounded once.
  Value w = fp32Weight(prog(layer, module), {C, 1, K}, hf(layer, module + "." + spec_.names.conv_weight));
  return conv1d(layer, h, w, Value(), Activation::none, state, /*residual=*/true);
}

// The bias table [T, heads * extent]: every head maps its rel_dim features r through the layer's
// one [rel_dim, extent] profile bank.
Value StepBuilder::relativeBias(const AttnSite &site, Value r, int64_t heads, int64_t extent) {
  int64_t R = spec_.attn.rel_dim;
  std::vector<std::string> bank(heads, site.hf + "rel_logits_proj.proj");
  Value proj = weight(site.prog + "rel_proj", {heads * R, extent}, {.parts = {bank}});
  return HeadLinearOp::create(b_, loc_, rows(heads * extent), r, proj, b_.getI64IntegerAttr(heads),
                              b_.getI64IntegerAttr(0), b_.getI64IntegerAttr(R), b_.getUnitAttr())
      .getResult();
}

// x * (1 + alpha * log(max((p + 1) / floor, 1))), the full layers' log scaling.
Value StepBuilder::logPositionScale(Value x) {
  const AttentionSpec &a = spec_.attn;
  return PositionScaleOp::create(b_, loc_, x.getType(), x, positions_, b_.getF64FloatAttr(a.log_scale_alpha),
                                 b_.getI64IntegerAttr(a.log_scale_floor), b_.getI64IntegerAttr(1),
                                 PositionScaleFormAttr::get(b_.getContext(), PositionScaleForm::log_ratio))
      .getResult();
}

Value StepBuilder::relativeAttention(int64_t layer, Value x, const AttnSite &site) {
  const AttentionSpec &a = spec_.attn;
  const LayerSpec &L = spec_.layers[layer];
  int64_t heads = L.num_heads ? L.num_heads : a.num_heads, kvHeads = L.num_kv_heads ? L.num_kv_heads : a.num_kv_heads;
  int64_t D = L.head_dim ? L.head_dim : a.head_dim, R = a.rel_dim;
  int64_t qw = heads * D, kw = kvHeads * D, rw = heads * R, H = spec_.hidden_size;
  // The bias reaches as far as the window on sliding layers, rel_extent on full ones.
  int64_t extent = L.window > 0 ? L.window : a.rel_extent;
  auto hfName = [&](const std::string &rest) { return site.hf + rest; };
  const Names &nm = spec_.names;
  Value w = weight(site.prog + "qkvr", {qw + 2 * kw + rw, H},
                   {.parts = {{hfName(nm.q_proj + ".weight"), hfName(nm.k_proj + ".weight"),
                               hfName(nm.v_proj + ".weight"), hfName(nm.r_proj + ".weight")}}});
  SmallVector<Value> parts = split(linear(x, w), {qw, kw, kw, rw});
  Value q = parts[0], k = parts[1], v = parts[2], r = parts[3];
  if (a.kv_conv_kernel > 0) {
    std::string attn = spec_.names.attn + ".";
    k = residualConv(layer, k, attn + "k_sconv", "k_conv");
    v = residualConv(layer, v, attn + "v_sconv", "v_conv");
  }
  q = norm(q, weight(site.prog + "q_norm", {D}, hfName(spec_.names.q_norm + ".weight")), D);
  k = norm(k, weight(site.prog + "k_norm", {D}, hfName(spec_.names.k_norm + ".weight")), D);
  Value bias = relativeBias(site, r, heads, extent);
  if (L.window == 0 && a.log_scale_floor > 0) {
    q = logPositionScale(q);
    bias = logPositionScale(bias);
  }
  auto retention = L.window > 0 ? RetentionAttr::get(b_.getContext(), RetentionKind::window, L.window)
                                : RetentionAttr::all(b_.getContext());
  KvAppendOp::create(b_, loc_, k, v, positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(layer),
                     b_.getI64IntegerAttr(kvHeads), b_.getI64IntegerAttr(D), retention, IntegerAttr());
  Value o = KvAttentionOp::create(b_, loc_, rows(qw), q, positions_, seqIds_, cuSeqlens_, kvLens_, slots_,
                                  blockTables_, Value(), bias, Value(), Value(), Value(), b_.getI64IntegerAttr(layer),
                                  b_.getI64IntegerAttr(heads), b_.getI64IntegerAttr(kvHeads),
                                  b_.getI64IntegerAttr(D), b_.getF64FloatAttr(a.scale_inverse_dim ? 1.0 / (double)D : a.scale), retention, FloatAttr(),
                                  IntegerAttr(), b_.getI64IntegerAttr(extent), b_.getI64IntegerAttr(0),
                                  b_.getI64IntegerAttr(0), DenseF32ArrayAttr())
                .getResult();
  return linear(o, weight(site.prog + "o", {H, qw}, hfName(spec_.names.o_proj + ".weight")));
}

} // namespace cbc::hf::lower
