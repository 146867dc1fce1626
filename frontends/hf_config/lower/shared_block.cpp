// A hybrid layer built around a block of weights shared between layers: attention and an MLP
// over [residual stream | embeddings], whose output only feeds the layer's own Mamba mixer.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

// Given the residual stream x: shared block b = n % blocks (n the layer's ordinal among the
// hybrid layers) on rms_norm([x | embeddings]) -- attention, its pre_ff_layernorm, a gated MLP,
// no residuals inside --, then the layer's own `linear`; the result t only enters the layer's
// Mamba mixer: mamba(norm(x + t)). The block's tensors are stored under the first hybrid layer
// using it when the blocks are tied, else under each layer.
Value StepBuilder::sharedBlock(int64_t layer, Value x) {
  const SharedBlockSpec &z = spec_.shared;
  int64_t H = spec_.hidden_size, I = spec_.mlp.intermediate, n = 0;
  std::vector<int64_t> hybrid;
  for (int64_t l = 0; l < spec_.num_layers; ++l)
    if (spec_.layers[l].kind == LayerKind::SharedBlock)
      hybrid.push_back(l);
  while (hybrid[n] != layer)
    ++n;
  int64_t block = n % z.blocks, owner = z.tied ? hybrid[block] : layer;
  std::string h = hf(owner, z.module + "."), slot = std::to_string(n) + ".";
  std::string p = z.tied ? "shared." + std::to_string(block) + "." : prog(layer, "shared.");

  Value a = ConcatOp::create(b_, loc_, rows(2 * H), ValueRange{x, embeddings_}).getResult();
  a = norm(a, weight(p + "input_layernorm", {2 * H}, h + "input_layernorm.weight"));
  Value o = attention(layer, a, {h + "self_attn.", p + "attn.", 2 * H, z.attn_adapters ? slot : ""});
  Value t = norm(o, weight(p + "pre_ff_layernorm", {H}, h + "pre_ff_layernorm.weight"));
  std::string ff = h + "feed_forward.";
  std::vector<std::string> gateUp = z.fused_gate_up
                                        ? std::vector<std::string>{ff + "gate_up_proj.weight"}
                                        : std::vector<std::string>{ff + "gate_proj.weight", ff + "up_proj.weight"};
  Value wgu = weight(p + "mlp.gate_up", {2 * I, H}, {.parts = {gateUp}});
  Value bgu, bdown;
  if (z.mlp_bias) {
    bgu = weight(p + "mlp.gate_up_bias", {2 * I}, ff + "gate_up_proj.bias");
    bdown = weight(p + "mlp.down_bias", {H}, ff + "down_proj.bias");
  }
  Value gu = linear(t, wgu, bgu);
  if (z.mlp_adapters) {
    int64_t r = z.adapter_rank;
    std::string ad = ff + "gate_up_proj_adapter_list." + slot;
    Value down = weight(prog(layer, "mlp.adapter_down"), {r, H}, ad + "0.weight");
    Value up = weight(prog(layer, "mlp.adapter_up"), {2 * I, r}, ad + "1.weight");
    gu = add(gu, linear(linear(t, down), up));
  }
  Value g = glu(gu, I, gluAct(spec_.mlp.act));
  t = linear(g, weight(p + "mlp.down", {H, I}, ff + "down_proj.weight"), bdown);
  t = linear(t, weight(prog(layer, "linear"), {H, H}, hf(layer, "linear.weight")));
  Value u = norm(add(x, t), weight(prog(layer, "mamba_decoder.input_layernorm"), {H},
                                   hf(layer, "mamba_decoder.input_layernorm.weight")));
  return z.mamba == LayerKind::Mamba2 ? mamba2(layer, u, "mamba_decoder.mamba")
                                      : mamba1(layer, u, "mamba_decoder.mamba");
}

} // namespace cbc::hf::lower
