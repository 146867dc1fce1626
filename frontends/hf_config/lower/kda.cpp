// Kimi delta attention: the delta rule with a log decay per key channel (cbc.state.kda), fed by
// short convolutions over q, k and v, and gated per head on the way out.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

// One projection of x to [q | k | v | f | b | g] (f and g the gates' rank-head_dim inputs when
// low rank), the conv over q|k|v with SiLU, the scan, then o_proj(rms_norm(o) * w * sigmoid(g))
// with the norm over each head.
Value StepBuilder::kdaAttention(int64_t layer, Value x) {
  const KdaSpec &s = spec_.kda;
  int64_t H = spec_.hidden_size, W = s.heads * s.head_dim, d = s.head_dim;
  int64_t gw = s.low_rank ? d : W; // the gates' projection widths
  auto m = [&](const std::string &rest) { return hf(layer, spec_.names.attn + "." + rest); };
  std::vector<std::string> in = {m("q_proj.weight"), m("k_proj.weight"), m("v_proj.weight")};
  if (s.low_rank)
    in.insert(in.end(), {m("f_a_proj.weight"), m("b_proj.weight"), m("g_a_proj.weight")});
  else
    in.insert(in.end(), {m("f_proj.weight"), m("b_proj.weight"), m("g_proj.weight")});
  Value w = weight(prog(layer, "kda.in"), {3 * W + 2 * gw + s.heads, H}, {.parts = {in}});
  auto p = split(linear(x, w), {3 * W, gw, s.heads, gw});
  Value f = p[1], gate = p[3];
  if (s.low_rank) {
    f = linear(f, weight(prog(layer, "kda.f_b"), {W, d}, m("f_b_proj.weight")));
    gate = linear(gate, weight(prog(layer, "kda.g_b"), {W, d}, m("g_b_proj.weight")));
  }
  // The checkpoint keeps one depthwise kernel per projection; they concatenate as q|k|v does.
  Value convW = weight(prog(layer, "kda.conv"), {3 * W, 1, s.conv_kernel},
                       {.parts = {{m("q_conv1d.weight"), m("k_conv1d.weight"), m("v_conv1d.weight")}}});
  auto qkv = split(conv1d(layer, p[0], convW, Value(), Activation::silu), {W, W, W});
  SmallVector<int64_t> aLogShape = s.a_log_4d ? SmallVector<int64_t>{1, 1, s.heads, 1} : SmallVector<int64_t>{s.heads};
  Value aLog = fp32Weight(prog(layer, "kda.A_log"), aLogShape, m("A_log"));
  Value dtBias = fp32Weight(prog(layer, "kda.dt_bias"), {W}, m("dt_bias"));
  auto gateKind = s.bounded ? DecayGate::bounded_sigmoid : DecayGate::softplus;
  Value o = KdaOp::create(b_, loc_, rows(W), qkv[0], qkv[1], qkv[2], f, p[2], aLog, dtBias, cuSeqlens_, stateIn_,
                          stateOut_, hasInitial_, b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(s.heads),
                          b_.getI64IntegerAttr(d), b_.getI64IntegerAttr(d),
                          DecayGateAttr::get(b_.getContext(), gateKind),
                          s.bounded ? b_.getF64FloatAttr(s.lower_bound) : FloatAttr(), b_.getStringAttr("recurrent"))
                .getResult();
  Value normW = weight(prog(layer, "kda.norm"), {d}, m("o_norm.weight"));
  o = RmsNormGatedOp::create(b_, loc_, rows(W), o, gate, normW, b_.getF64FloatAttr(s.norm_eps), b_.getF64FloatAttr(0.0),
                             b_.getI64IntegerAttr(d), actAttr(Activation::sigmoid),
                             NormGateOrderAttr::get(b_.getContext(), NormGateOrder::norm_gate))
          .getResult();
  return linear(o, weight(prog(layer, "kda.out"), {H, W}, m(spec_.names.o_proj + ".weight")));
}

} // namespace cbc::hf::lower
