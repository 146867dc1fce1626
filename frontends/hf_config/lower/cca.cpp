// Compressed convolutional attention (CcaSpec): q and k through two stacked causal convolutions
// with per-request conv states, residual q/k mixing across each KV head's group, value heads
// half from the current token and half from the previous one (a per-request shift state), q/k
// scaled to a fixed norm with a learned key temperature, then RoPE and paged attention.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

// Each of `heads` heads of `dim` features, repeated `times` times in place.
Value StepBuilder::repeatHeads(Value x, int64_t heads, int64_t dim, int64_t times) {
  SmallVector<Value> pieces = split(x, SmallVector<int64_t>(heads, dim)), repeated;
  for (Value h : pieces)
    repeated.append(times, h);
  return ConcatOp::create(b_, loc_, rows(heads * dim * times), repeated).getResult();
}

// The mean of each run of `group` consecutive heads of `dim` features.
Value StepBuilder::meanHeads(Value x, int64_t heads, int64_t dim, int64_t group) {
  SmallVector<Value> pieces = split(x, SmallVector<int64_t>(heads, dim)), means;
  for (int64_t j = 0; j < heads / group; ++j) {
    Value sum = pieces[j * group];
    for (int64_t i = 1; i < group; ++i)
      sum = add(sum, pieces[j * group + i]);
    means.push_back(group == 1 ? sum : scaleBy(sum, 1.0 / (double)group));
  }
  return means.size() == 1 ? means[0] : ConcatOp::create(b_, loc_, rows(heads / group * dim), means).getResult();
}

Value StepBuilder::ccaAttention(int64_t layer, Value x, const AttnSite &site) {
  const AttentionSpec a = layerAttention(layer);
  const CcaSpec &cca = a.cca;
  int64_t D = a.head_dim, Hq = a.num_heads, KV = a.num_kv_heads, g = Hq / KV, H = spec_.hidden_size;
  int64_t qw = Hq * D, kw = KV * D, C = qw + kw, half = kw / 2;
  std::string p = site.hf + "qkv_proj.";
  auto names = [&](const char *suffix) {
    std::vector<std::string> out;
    for (const char *proj : {"q_proj", "k_proj", "v_proj_current", "v_proj_delayed"})
      out.push_back(p + proj + suffix);
    return out;
  };
  // [q | k | v_current | v_delayed] in one GEMM.
  Value bias, delayedBias;
  if (a.qkv_bias) {
    bias = weight(site.prog + "qkv_bias", {C + kw}, {.parts = {names(".bias")}});
    delayedBias = weight(site.prog + "v_delayed_bias", {half}, p + "v_proj_delayed.bias");
  }
  Value qkv = linear(x, weight(site.prog + "qkv", {C + kw, H}, {.parts = {names(".weight")}}), bias);
  SmallVector<Value> parts = split(qkv, {C, half, half});
  SmallVector<Value> qk = split(parts[0], {qw, kw});
  // Residual mixing: q's head h adds k's head h / g, halved; k's head j is the mean of its group.
  Value qMix = scaleBy(add(qk[0], repeatHeads(qk[1], KV, D, g)), 0.5);
  Value kMix = meanHeads(qMix, Hq, D, g);
  // The convolutions over q|k; the grouped one sees the depthwise one's bias before the first row.
  Value b0 = weight(site.prog + "conv0_bias", {C}, p + "conv_qk_depthwise.bias");
  Value conv = conv1d(layer, parts[0], weight(site.prog + "conv0", {C, 1, cca.t0}, p + "conv_qk_depthwise.weight"),
                      b0, Activation::none, "cca_conv0");
  conv = conv1d(layer, conv, weight(site.prog + "conv1", {C, D, cca.t1}, p + "conv_qk_grouped.weight"),
                weight(site.prog + "conv1_bias", {C}, p + "conv_qk_grouped.bias"), Activation::none, "cca_conv1",
                false, b0);
  SmallVector<Value> qkConv = split(conv, {qw, kw});
  Value q = add(qkConv[0], qMix), k = add(qkConv[1], kMix);
  // Values: the current token's half, then the previous token's.
  Value delayed = StateShiftOp::create(b_, loc_, rows(half), parts[2], delayedBias, cuSeqlens_, stateIn_, stateOut_,
                                       hasInitial_, b_.getI64IntegerAttr(layer), b_.getStringAttr("cca_shift"))
                      .getResult();
  Value v = ConcatOp::create(b_, loc_, rows(kw), ValueRange{parts[1], delayed}).getResult();
  q = norm(q, Value(), D, cca.norm_eps);
  k = mul(norm(k, Value(), D, cca.norm_eps), weight(site.prog + "key_temp", {KV}, site.hf + "qk_norm.temp"));
  const RopeSpec &r = spec_.layers[layer].rope;
  Value o = cachedAttention(layer, a, site, rope(r, q, D), rope(r, k, D), v, qw);
  Value bo = a.o_bias ? weight(site.prog + "o_bias", {H}, site.hf + spec_.names.o_proj + ".bias") : Value();
  return linear(o, weight(site.prog + "o", {H, qw}, site.hf + spec_.names.o_proj + ".weight"), bo);
}

} // namespace cbc::hf::lower
