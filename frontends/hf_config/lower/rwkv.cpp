// RWKV (RwkvSpec): the time mix and the channel mix, each reading its input mixed with the
// previous token's, and the layer around them.
#include "frontends/hf_config/lower/step_builder.h"

#include <cmath>

namespace cbc::hf::lower {

using namespace mlir;

// h * mix + shifted * (1 - mix), as shifted + (h - shifted) * mix, given diff = h - shifted; mix
// is a [1, 1, H] parameter.
Value StepBuilder::tokenMix(int64_t layer, Value shifted, Value diff, const std::string &module,
                            const std::string &name) {
  int64_t H = spec_.hidden_size;
  Value mix = weight(prog(layer, module + "." + name), {H}, {.parts = {{hf(layer, module + "." + name)}}, .flatten = true});
  return add(shifted, mul(diff, mix));
}

// The previous token's h, the request's carried row before its first.
Value StepBuilder::previousToken(int64_t layer, Value h, const std::string &state) {
  return StateShiftOp::create(b_, loc_, rows(spec_.hidden_size), h, Value(), cuSeqlens_, stateIn_, stateOut_, hasInitial_,
                              b_.getI64IntegerAttr(layer), b_.getStringAttr(state))
      .getResult();
}

// A layer's output projection, divided by 2^(layer / rescale_every) as transformers rescales it.
Value StepBuilder::rwkvOutput(int64_t layer, Value x, const std::string &name, int64_t in) {
  const RwkvSpec &w = spec_.rwkv;
  int64_t H = spec_.hidden_size;
  double scale = w.rescale_every > 0 ? std::ldexp(1.0, -(int)(layer / w.rescale_every)) : 1.0;
  return linear(x, weight(prog(layer, name), {H, in},
                          {.parts = {{hf(layer, name + ".weight")}}, .row_scales = scales({{H, scale}})}));
}

Value StepBuilder::rwkvTimeMix(int64_t layer, Value h) {
  const RwkvSpec &w = spec_.rwkv;
  int64_t H = spec_.hidden_size, A = w.attention_size;
  const std::string m = spec_.names.attn;
  Value shifted = previousToken(layer, h, "attn_shift"), diff = add(h, scaleBy(shifted, -1.0));
  auto project = [&](const char *mix, const char *name) {
    return linear(tokenMix(layer, shifted, diff, m, mix),
                  weight(prog(layer, m + "." + name), {A, H}, hf(layer, m + "." + name + ".weight")));
  };
  Value k = project("time_mix_key", "key"), v = project("time_mix_value", "value");
  Value r = act(project("time_mix_receptance", "receptance"), Activation::sigmoid);
  Value decay = fp32Weight(prog(layer, m + ".time_decay"), {A}, hf(layer, m + ".time_decay"));
  Value first = fp32Weight(prog(layer, m + ".time_first"), {A}, hf(layer, m + ".time_first"));
  Value wkv = WkvOp::create(b_, loc_, rows(A), k, v, decay, first, cuSeqlens_, stateIn_, stateOut_, hasInitial_,
                            b_.getI64IntegerAttr(layer), b_.getStringAttr("wkv"))
                  .getResult();
  return rwkvOutput(layer, mul(r, wkv), m + ".output", A);
}

Value StepBuilder::rwkvChannelMix(int64_t layer, Value h) {
  int64_t H = spec_.hidden_size, I = spec_.rwkv.intermediate;
  const std::string m = spec_.names.mlp;
  Value shifted = previousToken(layer, h, "ffn_shift"), diff = add(h, scaleBy(shifted, -1.0));
  Value k = linear(tokenMix(layer, shifted, diff, m, "time_mix_key"),
                   weight(prog(layer, m + ".key"), {I, H}, hf(layer, m + ".key.weight")));
  k = act(k, Activation::relu2);
  Value r = linear(tokenMix(layer, shifted, diff, m, "time_mix_receptance"),
                   weight(prog(layer, m + ".receptance"), {H, H}, hf(layer, m + ".receptance.weight")));
  return mul(act(r, Activation::sigmoid), rwkvOutput(layer, k, m + ".value", I));
}

Value StepBuilder::rwkvLayer(int64_t layer, Value x) {
  const Names &nm = spec_.names;
  if (layer == 0)
    x = layerNorm(layer, "pre_ln", x);
  x = add(x, rwkvTimeMix(layer, layerNorm(layer, nm.input_norm, x)));
  x = add(x, rwkvChannelMix(layer, layerNorm(layer, nm.post_attn_norm, x)));
  if (int64_t every = spec_.rwkv.rescale_every; every > 0 && (layer + 1) % every == 0)
    x = scaleBy(x, 0.5);
  return x;
}

} // namespace cbc::hf::lower
