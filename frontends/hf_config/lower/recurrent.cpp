// Mixers with a per-request state instead of a cache: the gated delta net, lightning attention,
// the gated short convolution, and the Mamba2 (SSD) and Mamba1 (selective scan) mixers.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

// A gated delta net: projections, a causal conv over q|k|v with a per-request state, the gated
// delta rule with a per-request state, a gated norm and the output projection.
Value StepBuilder::gatedDeltaNet(int64_t layer, Value x) {
  const GdnSpec &g = spec_.gdn;
  int64_t H = spec_.hidden_size, kd = g.k_heads * g.k_dim, vd = g.v_heads * g.v_dim, r = g.v_heads / g.k_heads;
  int64_t C = 2 * kd + vd, nv = g.v_heads;
  bool separate = g.projections == GdnSpec::Projections::Separate;
  auto m = [&](const std::string &rest) { return hf(layer, spec_.names.linear_attn + "." + rest); };
  Value qkv, z, b, a;
  if (g.projections == GdnSpec::Projections::Grouped) {
    // in_proj_qkvz holds [q | k | v | z] per key head, in_proj_ba holds [b | a] per key head.
    Value wqkvz = weight(prog(layer, "gdn.qkvz"), {C + vd, H},
                         {.parts = {{m("in_proj_qkvz.weight")}},
                          .regroup = {g.k_heads, g.k_dim, g.k_dim, r * g.v_dim, r * g.v_dim}});
    Value wba = weight(prog(layer, "gdn.ba"), {2 * nv, H},
                       {.parts = {{m("in_proj_ba.weight")}}, .regroup = {g.k_heads, r, r}});
    auto p1 = split(linear(x, wqkvz), {C, vd});
    auto p2 = split(linear(x, wba), {nv, nv});
    qkv = p1[0], z = p1[1], b = p2[0], a = p2[1];
  } else {
    std::vector<std::string> names =
        separate ? std::vector<std::string>{m("q_proj.weight"), m("k_proj.weight"), m("v_proj.weight"),
                                            m("g_proj.weight"), m("b_proj.weight"), m("a_proj.weight")}
                 : std::vector<std::string>{m("in_proj_qkv.weight"), m("in_proj_z.weight"), m("in_proj_b.weight"),
                                            m("in_proj_a.weight")};
    Value w = weight(prog(layer, "gdn.in"), {C + vd + 2 * nv, H}, {.parts = {names}});
    auto p = split(linear(x, w), {C, vd, nv, nv});
    qkv = p[0], z = p[1], b = p[2], a = p[3];
  }
  std::vector<std::string> convNames = separate ? std::vector<std::string>{m("q_conv1d.weight"), m("k_conv1d.weight"),
                                                                          m("v_conv1d.weight")}
                                                : std::vector<std::string>{m("conv1d.weight")};
  Value convW = weight(prog(layer, "gdn.conv"), {C, 1, g.conv_kernel}, {.parts = {convNames}});
  auto qkvParts = split(conv1d(layer, qkv, convW, Value(), Activation::silu), {kd, kd, vd});
  Value aLog = fp32Weight(prog(layer, "gdn.A_log"), {nv}, m("A_log"));
  Value dtBias = fp32Weight(prog(layer, "gdn.dt_bias"), {nv}, m("dt_bias"));
  Value o = GatedDeltaOp::create(b_, loc_, rows(vd), qkvParts[0], qkvParts[1], qkvParts[2], a, b, aLog, dtBias,
                                 cuSeqlens_, stateIn_, stateOut_, hasInitial_, b_.getI64IntegerAttr(layer),
                                 b_.getI64IntegerAttr(g.k_heads), b_.getI64IntegerAttr(g.v_heads),
                                 b_.getI64IntegerAttr(g.k_dim), b_.getI64IntegerAttr(g.v_dim),
                                 b_.getF64FloatAttr(g.beta_scale), b_.getUnitAttr(), b_.getStringAttr("recurrent"))
                .getResult();
  Value normW = weight(prog(layer, "gdn.norm"), {g.v_dim}, m(separate ? "o_norm.weight" : "norm.weight"));
  o = RmsNormGatedOp::create(b_, loc_, rows(vd), o, z, normW, b_.getF64FloatAttr(g.norm_eps),
                             b_.getF64FloatAttr(0.0), b_.getI64IntegerAttr(g.v_dim),
                             actAttr(g.sigmoid_gate ? Activation::sigmoid : Activation::silu),
                             NormGateOrderAttr::get(b_.getContext(), NormGateOrder::norm_gate))
          .getResult();
  return linear(o, weight(prog(layer, "gdn.out"), {H, vd}, m(separate ? "o_proj.weight" : "out_proj.weight")));
}

// Lightning attention: q|k|v = silu(qkv_proj x), regrouped from per-head [q | k | v] rows to
// [q | k | v] blocks; the decayed linear attention with a per-request state; an RMSNorm over all
// heads; a sigmoid gate from output_gate; out_proj.
Value StepBuilder::lightningAttention(int64_t layer, Value x) {
  const LightningSpec &g = spec_.lightning;
  int64_t H = spec_.hidden_size, d = g.head_dim, W = g.heads * g.head_dim;
  auto m = [&](const std::string &rest) { return hf(layer, spec_.names.attn + "." + rest); };
  Value wqkv = weight(prog(layer, "lightning.qkv"), {3 * W, H},
                      {.parts = {{m("qkv_proj.weight")}}, .regroup = {g.heads, d, d, d}});
  auto qkv = split(act(linear(x, wqkv), Activation::silu), {W, W, W});
  const std::vector<double> &decay = spec_.layers[layer].lightning_decay;
  Value o = LightningOp::create(b_, loc_, rows(W), qkv[0], qkv[1], qkv[2], cuSeqlens_, stateIn_, stateOut_,
                                hasInitial_, b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(g.heads),
                                b_.getI64IntegerAttr(d), b_.getDenseF64ArrayAttr(decay), IntegerAttr(),
                                b_.getStringAttr("recurrent"))
                .getResult();
  o = norm(o, weight(prog(layer, "lightning.norm"), {W}, m("norm.weight")), std::nullopt, g.norm_eps);
  Value gate = linear(x, weight(prog(layer, "lightning.gate"), {W, H}, m("output_gate.weight")));
  o = GateOp::create(b_, loc_, rows(W), o, gate).getResult();
  return linear(o, weight(prog(layer, "lightning.out"), {H, W}, m("out_proj.weight")));
}

// Griffin's recurrent block (GriffinSpec).
Value StepBuilder::griffinBlock(int64_t layer, Value x) {
  const GriffinSpec &g = spec_.griffin;
  int64_t H = spec_.hidden_size, W = g.width;
  auto m = [&](const std::string &rest) { return hf(layer, spec_.names.attn + "." + rest); };
  auto p = [&](const std::string &rest) { return prog(layer, "griffin." + rest); };
  auto dense = [&](Value in, const std::string &name, int64_t out, int64_t inWidth) {
    return linear(in, weight(p(name), {out, inWidth}, m(name + ".weight")), weight(p(name + "_bias"), {out}, m(name + ".bias")));
  };
  Value y = act(dense(x, "linear_y", W, H), Activation::gelu_tanh);
  Value convW = weight(p("conv_1d"), {W, 1, g.conv_kernel}, m("conv_1d.weight"));
  Value xb = conv1d(layer, dense(x, "linear_x", W, H), convW, weight(p("conv_1d_bias"), {W}, m("conv_1d.bias")),
                    Activation::none);
  // Each gate is x @ W[h] per head block of [heads, W / heads, W / heads]: the blocks on a
  // diagonal, transposed to [out, in].
  auto gate = [&](const std::string &name) {
    Value w = weight(p(name), {W, W},
                     {.parts = {{m("rg_lru." + name + "_weight")}}, .transpose = true, .block_diag = g.heads});
    Value b = weight(p(name + "_bias"), {W}, {.parts = {{m("rg_lru." + name + "_bias")}}, .flatten = true});
    return linear(xb, w, b);
  };
  Value inputGate = gate("input_gate"), recurrentGate = gate("recurrent_gate");
  Value param = fp32Weight(p("recurrent_param"), {W}, m("rg_lru.recurrent_param"));
  Value h = RgLruOp::create(b_, loc_, rows(W), xb, inputGate, recurrentGate, param, cuSeqlens_, stateIn_, stateOut_,
                            hasInitial_, b_.getI64IntegerAttr(layer), b_.getStringAttr("recurrent"))
                .getResult();
  return dense(mul(h, y), "linear_out", H, W);
}

// xLSTM's mLSTM layer (XlstmSpec).
Value StepBuilder::mlstmLayer(int64_t layer, Value x) {
  const XlstmSpec &w = spec_.xlstm;
  int64_t H = spec_.hidden_size, NH = w.heads, QK = w.qk_dim, V = w.v_dim;
  auto names = [&](const std::vector<std::string> &tensors) {
    std::vector<std::string> out;
    for (const std::string &t : tensors)
      out.push_back(hf(layer, spec_.names.attn + "." + t));
    return out;
  };
  auto p = [&](const std::string &rest) { return prog(layer, "mlstm." + rest); };
  auto qkvo = split(linear(x, weight(p("qkvo"), {2 * QK + 2 * V, H}, {.parts = {names(w.qkvo)}})), {QK, QK, V, V});
  std::vector<std::string> biases;
  for (const std::string &g : w.gates)
    biases.push_back(g.substr(0, g.rfind('.')) + ".bias");
  Value gates = linear(x, weight(p("gates"), {2 * NH, H}, {.parts = {names(w.gates)}}),
                       weight(p("gates_bias"), {2 * NH}, {.parts = {names(biases)}}));
  gates = SoftcapOp::create(b_, loc_, gates.getType(), gates, b_.getF64FloatAttr(w.gate_cap)).getResult();
  auto ifg = split(gates, {NH, NH});
  Value h = MlstmOp::create(b_, loc_, rows(V), qkvo[0], qkvo[1], qkvo[2], ifg[0], ifg[1], cuSeqlens_, stateIn_,
                            stateOut_, hasInitial_, b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(NH),
                            b_.getI64IntegerAttr(QK / NH), b_.getI64IntegerAttr(V / NH), b_.getF64FloatAttr(w.eps),
                            b_.getStringAttr("recurrent"))
                .getResult();
  Value normW = weight(p("multihead_norm"), {V}, hf(layer, spec_.names.attn + ".multihead_norm.weight"));
  Value normed = LayerNormOp::create(b_, loc_, h.getType(), h, normW, Value(), b_.getF64FloatAttr(spec_.norm_eps),
                                     b_.getF64FloatAttr(0.0), b_.getI64IntegerAttr(V / NH))
                     .getResult();
  Value gated = mul(act(qkvo[3], Activation::sigmoid), normed);
  return linear(gated, weight(p("out_proj"), {H, V}, hf(layer, spec_.names.attn + ".out_proj.weight")));
}

// A gated short convolution: y = out_proj(C * conv(B * x)) with [B | C | x] = in_proj(x).
Value StepBuilder::shortConv(int64_t layer, Value x) {
  const ShortConvSpec &c = spec_.short_conv;
  int64_t H = spec_.hidden_size;
  auto m = [&](const std::string &rest) { return hf(layer, spec_.names.conv + "." + rest); };
  Value inBias, outBias, convBias;
  if (c.bias) {
    inBias = weight(prog(layer, "conv.in_bias"), {3 * H}, m("in_proj.bias"));
    outBias = weight(prog(layer, "conv.out_bias"), {H}, m("out_proj.bias"));
    convBias = weight(prog(layer, "conv.conv_bias"), {H}, m("conv.bias"));
  }
  auto bcx = split(linear(x, weight(prog(layer, "conv.in"), {3 * H, H}, m("in_proj.weight")), inBias), {H, H, H});
  Value bx = mul(bcx[0], bcx[2]);
  Value convW = weight(prog(layer, "conv.conv"), {H, 1, c.kernel}, m("conv.weight"));
  Value y = mul(bcx[1], conv1d(layer, bx, convW, convBias, Activation::none));
  return linear(y, weight(prog(layer, "conv.out"), {H, H}, m("out_proj.weight")), outBias);
}

// Mamba2: in_proj -> [z | xBC | dt]; a causal conv (SiLU) over xBC -> [x | B | C]; the SSD
// scan; a gated norm of y by z; out_proj.
Value StepBuilder::mamba2(int64_t layer, Value x, const std::string &module) {
  const Mamba2Spec &s = spec_.mamba2;
  int64_t H = spec_.hidden_size, I = s.intermediate(), GN = s.groups * s.state, C = I + 2 * GN;
  auto m = [&](const std::string &rest) { return hf(layer, module + "." + rest); };
  // Multipliers: on the input (weight only), per in_proj section, on the output.
  const Multipliers &mu = spec_.mup;
  auto inScales = [&](double in) {
    return scales({{I, in * mu.ssm[0]}, {I, in * mu.ssm[1]}, {GN, in * mu.ssm[2]}, {GN, in * mu.ssm[3]},
                   {s.heads, in * mu.ssm[4]}});
  };
  auto outScales = scales({{H, mu.ssm_out}});
  Value inBias, outBias, convBias;
  if (s.bias)
    inBias = weight(prog(layer, "mamba.in_bias"), {I + C + s.heads},
                    {.parts = {{m("in_proj.bias")}}, .row_scales = inScales(1.0)});
  if (s.out_bias)
    outBias = weight(prog(layer, "mamba.out_bias"), {H}, {.parts = {{m("out_proj.bias")}}, .row_scales = outScales});
  if (s.conv_bias)
    convBias = weight(prog(layer, "mamba.conv_bias"), {C}, m("conv1d.bias"));
  Value win = weight(prog(layer, "mamba.in"), {I + C + s.heads, H},
                     {.parts = {{m("in_proj.weight")}}, .row_scales = inScales(mu.ssm_in)});
  auto zxd = split(linear(x, win, inBias), {I, C, s.heads});
  Value xbc = conv1d(layer, zxd[1], weight(prog(layer, "mamba.conv"), {C, 1, s.conv_kernel}, m("conv1d.weight")),
                     convBias, Activation::silu);
  auto parts = split(xbc, {I, GN, GN});
  Value aLog = fp32Weight(prog(layer, "mamba.A_log"), {s.heads}, m("A_log"));
  Value dtBias = fp32Weight(prog(layer, "mamba.dt_bias"), {s.heads}, m("dt_bias"));
  Value d = fp32Weight(prog(layer, "mamba.D"), {s.heads}, m("D"));
  Value y = SsdOp::create(b_, loc_, rows(I), parts[0], zxd[2], parts[1], parts[2], aLog, dtBias, d, cuSeqlens_,
                          stateIn_, stateOut_, hasInitial_, b_.getI64IntegerAttr(layer),
                          b_.getI64IntegerAttr(s.heads), b_.getI64IntegerAttr(s.head_dim), b_.getI64IntegerAttr(s.groups),
                          b_.getI64IntegerAttr(s.state), b_.getF64FloatAttr(s.dt_min), b_.getF64FloatAttr(s.dt_max),
                          b_.getStringAttr("recurrent"))
                .getResult();
  if (s.gated_norm) {
    auto order = s.norm_before_gate ? NormGateOrder::norm_gate : NormGateOrder::gate_norm;
    y = RmsNormGatedOp::create(b_, loc_, rows(I), y, zxd[0], weight(prog(layer, "mamba.norm"), {I}, m("norm.weight")),
                               b_.getF64FloatAttr(s.norm_eps), b_.getF64FloatAttr(0.0),
                               b_.getI64IntegerAttr(I / s.norm_groups), actAttr(Activation::silu),
                               NormGateOrderAttr::get(b_.getContext(), order))
            .getResult();
  } else {
    y = mul(y, act(zxd[0], Activation::silu)); // no norm: y * silu(z)
  }
  return linear(y, weight(prog(layer, "mamba.out"), {H, I}, {.parts = {{m("out_proj.weight")}}, .row_scales = outScales}),
                outBias);
}

// Mamba: in_proj -> [x | z]; a causal conv (SiLU) over x; x_proj -> [dt | B | C] (optionally
// RMS-normed); dt_proj without its bias (the scan adds it); the selective scan gated by z.
Value StepBuilder::mamba1(int64_t layer, Value x, const std::string &module) {
  const Mamba1Spec &s = spec_.mamba1;
  int64_t H = spec_.hidden_size, I = s.intermediate, N = s.state, R = s.dt_rank, nh = s.heads, hd = I / nh;
  auto m = [&](const std::string &rest) { return hf(layer, module + "." + rest); };
  // The multi-head form: in_proj interleaves x and z rows per channel (regrouped into [x | z]);
  // each head has its own x_proj [R + 2N, hd] and dt_proj [hd, R], placed on block diagonals so
  // that each is one GEMM, x_proj's rows regrouped into [dt | B | C] of all heads.
  bool multi = nh > 1;
  SmallVector<int64_t> inRegroup;
  if (multi)
    inRegroup = {I, 1, 1};
  Value inBias, outBias, convBias;
  if (s.bias) {
    inBias = weight(prog(layer, "mamba.in_bias"), {2 * I}, {.parts = {{m("in_proj.bias")}}, .regroup = inRegroup});
    outBias = weight(prog(layer, "mamba.out_bias"), {H}, m("out_proj.bias"));
  }
  if (s.conv_bias)
    convBias = weight(prog(layer, "mamba.conv_bias"), {I}, m("conv1d.bias"));
  Value win = weight(prog(layer, "mamba.in"), {2 * I, H}, {.parts = {{m("in_proj.weight")}}, .regroup = inRegroup});
  auto xz = split(linear(x, win, inBias), {I, I});
  Value xs = conv1d(layer, xz[0], weight(prog(layer, "mamba.conv"), {I, 1, s.conv_kernel}, m("conv1d.weight")),
                    convBias, Activation::silu);
  Value xproj = multi ? weight(prog(layer, "mamba.x_proj"), {nh * (R + 2 * N), I},
                               {.parts = {{m("x_proj_weight")}}, .regroup = {nh, R, N, N}, .block_diag = nh})
                      : weight(prog(layer, "mamba.x_proj"), {R + 2 * N, I}, m("x_proj.weight"));
  auto dbc = split(linear(xs, xproj), {nh * R, nh * N, nh * N});
  if (s.dt_bc_norm != Mamba1Spec::DtBcNorm::None) {
    bool weighted = s.dt_bc_norm == Mamba1Spec::DtBcNorm::Weighted;
    const char *names[] = {"dt_layernorm", "b_layernorm", "c_layernorm"};
    for (int i = 0; i < 3; ++i) {
      Value w = weighted ? weight(prog(layer, std::string("mamba.") + names[i]), {i ? N : R},
                                  m(std::string(names[i]) + ".weight"))
                         : Value();
      dbc[i] = RmsNormOp::create(b_, loc_, dbc[i].getType(), dbc[i], w, b_.getF64FloatAttr(s.dt_bc_eps),
                                 b_.getF64FloatAttr(0.0), IntegerAttr())
                   .getResult();
    }
  }
  Value dtProj = multi ? weight(prog(layer, "mamba.dt_proj"), {I, nh * R},
                                {.parts = {{m("dt_proj_weight")}}, .block_diag = nh})
                       : weight(prog(layer, "mamba.dt_proj"), {I, R}, m("dt_proj.weight"));
  Value dt = linear(dbc[0], dtProj);
  // The multi-head form keeps A_log [heads, hd, N], dt_proj_bias and D [heads, hd]: the same
  // values per channel.
  SmallVector<int64_t> aShape = multi ? SmallVector<int64_t>{nh, hd, N} : SmallVector<int64_t>{I, N};
  SmallVector<int64_t> cShape = multi ? SmallVector<int64_t>{nh, hd} : SmallVector<int64_t>{I};
  Value aLog = fp32Weight(prog(layer, "mamba.A_log"), aShape, m("A_log"));
  Value dtBias = fp32Weight(prog(layer, "mamba.dt_bias"), cShape, m(multi ? "dt_proj_bias" : "dt_proj.bias"));
  Value d = fp32Weight(prog(layer, "mamba.D"), cShape, m("D"));
  Value y = SelectiveScanOp::create(b_, loc_, rows(I), xs, dt, dbc[1], dbc[2], aLog, dtBias, d, xz[1], cuSeqlens_,
                                    stateIn_, stateOut_, hasInitial_, b_.getI64IntegerAttr(layer),
                                    b_.getI64IntegerAttr(s.groups), b_.getI64IntegerAttr(N), b_.getStringAttr("recurrent"))
                .getResult();
  return linear(y, weight(prog(layer, "mamba.out"), {H, I}, m("out_proj.weight")), outBias);
}

} // namespace cbc::hf::lower
