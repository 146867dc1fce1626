// Feed-forward blocks: the dense MLP (gated or not), routed experts and the shared expert. The
// tensor names come from the spec (Names, ExpertNaming): the family fills them.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

Value StepBuilder::denseMlp(int64_t layer, Value x, const std::string &module) {
  const Names &nm = spec_.names;
  int64_t I = spec_.layers[layer].intermediate ? spec_.layers[layer].intermediate : spec_.mlp.intermediate;
  int64_t H = spec_.hidden_size;
  auto name = [&](const std::string &tensor) {
    return module.empty() ? mlpName(layer, tensor) : hf(layer, module + "." + tensor);
  };
  // Program names: "mlp." for the layer's one MLP, else the module's name.
  const std::string base = module.empty() ? "mlp" : module;
  if (!spec_.mlp.gated) {
    Value bup, bdown;
    if (spec_.mlp.bias) {
      bup = weight(prog(layer, base + ".up_bias"), {I}, name(nm.up + ".bias"));
      bdown = weight(prog(layer, base + ".down_bias"), {H}, name(nm.down + ".bias"));
    }
    bool t = spec_.linears_transposed;
    Value wup = weight(prog(layer, base + ".up"), {I, H}, {.parts = {{name(nm.up + ".weight")}}, .transpose = t});
    Value up = linear(x, wup, bup);
    Value h = spec_.mlp.act == FfnActivation::Xielu ? xielu(up, prog(layer, base + ".act."), name("act_fn."))
                                                    : act(up, toDialect(spec_.mlp.act));
    Value wdown = weight(prog(layer, base + ".down"), {H, I}, {.parts = {{name(nm.down + ".weight")}}, .transpose = t});
    return linear(h, wdown, bdown);
  }
  // Multipliers on the gate projection's output and on the MLP's output.
  auto guScales = scales({{I, spec_.mup.mlp_gate}, {I, 1.0}});
  auto downScales = scales({{H, spec_.mup.mlp_down}});
  std::vector<std::string> gateUp = nm.gate_up.empty()
                                        ? std::vector<std::string>{name(nm.gate + ".weight"), name(nm.up + ".weight")}
                                        : std::vector<std::string>{name(nm.gate_up + ".weight")};
  Value wgu = weight(prog(layer, base + ".gate_up"), {2 * I, H}, {.parts = {gateUp}, .row_scales = guScales});
  Value bgu, bdown;
  if (spec_.mlp.bias) {
    std::vector<std::string> biases = nm.gate_up.empty()
                                          ? std::vector<std::string>{name(nm.gate + ".bias"), name(nm.up + ".bias")}
                                          : std::vector<std::string>{name(nm.gate_up + ".bias")};
    bgu = weight(prog(layer, base + ".gate_up_bias"), {2 * I}, {.parts = {biases}, .row_scales = guScales});
    bdown = weight(prog(layer, base + ".down_bias"), {H}, {.parts = {{name(nm.down + ".bias")}}, .row_scales = downScales});
  }
  Value gu = linear(x, wgu, bgu);
  if (std::optional<double> q = spec_.layers[layer].gate_quantile) {
    // Activation sparsity on the gate half, the quantile in the weight dtype as transformers has it.
    SmallVector<Value> halves = split(gu, {I, I});
    Value gate = GaussianTopkOp::create(b_, loc_, halves[0].getType(), halves[0], b_.getF64FloatAttr(toWeightDtype(*q)))
                     .getResult();
    gu = ConcatOp::create(b_, loc_, rows(2 * I), ValueRange{gate, halves[1]}).getResult();
  }
  Value g = glu(gu, I, gluAct(spec_.mlp.act, spec_.mlp.limit, spec_.mlp.alpha, spec_.mlp.up_offset),
                spec_.mlp.glu == GateUpLayout::Interleaved ? GluLayout::interleaved : GluLayout::halves);
  if (!nm.ffn_sub_norm.empty())
    g = norm(g, weight(prog(layer, base + ".sub_norm"), {I}, name(nm.ffn_sub_norm + ".weight")));
  Value wdown = weight(prog(layer, base + ".down"), {H, I}, {.parts = {{name(nm.down + ".weight")}}, .row_scales = downScales});
  Value out = linear(g, wdown, bdown);
  if (spec_.mlp.global_scale)
    out = mul(out, weight(prog(layer, base + ".global_scale"), {1}, name("global_scale")));
  return out;
}

Value StepBuilder::sharedExpert(int64_t layer, Value x) {
  int64_t I = spec_.moe.shared_intermediate, H = spec_.hidden_size;
  const ExpertTensors &se = spec_.moe.names.shared;
  FfnActivation a = spec_.moe.shared_act.value_or(spec_.moe.act);
  if (!spec_.moe.gated) {
    // Ungated: down(act(up x)).
    Value bup, bdown;
    if (!se.gate_up_bias.empty()) {
      bup = weight(prog(layer, "moe.shared.up_bias"), {I}, hf(layer, se.gate_up_bias[0]));
      bdown = weight(prog(layer, "moe.shared.down_bias"), {H}, hf(layer, se.down_bias));
    }
    Value up = linear(x, weight(prog(layer, "moe.shared.up"), {I, H}, hf(layer, se.gate_up[0])), bup);
    Value h = act(up, toDialect(a));
    return linear(h, weight(prog(layer, "moe.shared.down"), {H, I}, hf(layer, se.down[0])), bdown);
  }
  // gate and up, or one fused [gate | up] tensor.
  std::vector<std::string> gateUp;
  for (const std::string &name : se.gate_up)
    gateUp.push_back(hf(layer, name));
  Value wgu = weight(prog(layer, "moe.shared.gate_up"), {2 * I, H}, {.parts = {gateUp}});
  Value bgu, bdown;
  if (!se.gate_up_bias.empty()) {
    bgu = weight(prog(layer, "moe.shared.gate_up_bias"), {2 * I},
                 {.parts = {{hf(layer, se.gate_up_bias[0]), hf(layer, se.gate_up_bias[1])}}});
    bdown = weight(prog(layer, "moe.shared.down_bias"), {H}, hf(layer, se.down_bias));
  }
  Value g = glu(linear(x, wgu, bgu), I, gluAct(a, spec_.moe.limit, spec_.moe.alpha, spec_.moe.up_offset));
  Value out = linear(g, weight(prog(layer, "moe.shared.down"), {H, I}, hf(layer, se.down[0])), bdown);
  if (!spec_.moe.names.shared_gate.empty()) {
    Value gate = linear(x, weight(prog(layer, "moe.shared.gate"), {1, H}, hf(layer, spec_.moe.names.shared_gate)));
    out = GateOp::create(b_, loc_, rows(H), out, gate).getResult();
  }
  return out;
}

// The router scores E routed experts and then S sinks; the expert tensors hold the sinks (the
// shared experts' [S, I, H] gate and up projections, interleaved per expert) before the fused
// routed experts, as the route numbers them. Every weight carries the learned global scale.
Value StepBuilder::sinkMoeMlp(int64_t layer, Value x) {
  const MoeSpec &m = spec_.moe;
  const ExpertNaming &n = m.names;
  int64_t E = m.num_experts, S = m.sinks, I = m.intermediate, H = spec_.hidden_size;
  Value router = weight(prog(layer, "moe.router"), {E + S, H}, hf(layer, n.router));
  Value selectionBias;
  if (!n.selection_bias.empty())
    selectionBias = fp32Weight(prog(layer, "moe.selection_bias"), {E}, hf(layer, n.selection_bias));
  auto route = MoeRouteOp::create(b_, loc_, TypeRange{rows(S + m.top_k), rowsI32(S + m.top_k)}, linear(x, router),
                                  selectionBias, Value(), Value(), b_.getI64IntegerAttr(m.top_k),
                                  RouteScoreAttr::get(b_.getContext(), RouteScore::sigmoid), b_.getBoolAttr(false),
                                  b_.getF64FloatAttr(0.0), b_.getF64FloatAttr(m.scaling), RouteGroupsAttr(),
                                  b_.getI64IntegerAttr(S), b_.getF64FloatAttr(0.0), b_.getBoolAttr(false));
  Value w = route.getWeights();
  if (!n.global_scale.empty())
    w = mul(w, fp32Weight(prog(layer, "moe.global_scale"), {1}, hf(layer, n.global_scale)));
  // [gate_0..gate_S-1 | up_0..up_S-1] rows regrouped into gate_i, up_i per sink; or, in the hub's
  // layout, one [S, 2I, H] tensor of interleaved gate and up rows as the routed experts'.
  bool interleaved = n.glu == GateUpLayout::Interleaved;
  SmallVector<int64_t> regroup = {2};
  regroup.append(S, I);
  std::vector<std::string> gateUp;
  for (const std::string &t : n.shared.gate_up)
    gateUp.push_back(hf(layer, t));
  gateUp.push_back(hf(layer, n.experts.gate_up[0]));
  Value wgu = weight(prog(layer, "moe.gate_up"), {S + E, 2 * I, H},
                     {.parts = {gateUp}, .regroup = interleaved ? SmallVector<int64_t>{} : regroup, .flatten = !interleaved});
  Value wd = weight(prog(layer, "moe.down"), {S + E, H, I},
                    {.parts = {{hf(layer, n.shared.down[0]), hf(layer, n.experts.down[0])}}});
  auto layout = GluLayoutAttr::get(b_.getContext(), interleaved ? GluLayout::interleaved : GluLayout::halves);
  return MoeExpertsOp::create(b_, loc_, rows(H), x, route.getIds(), w, wgu, wd, Value(), Value(), gluAct(m.act), layout,
                              UnitAttr(), b_.getI64IntegerAttr(0), UnitAttr(), b_.getI64IntegerAttr(0))
      .getResult();
}

// RouterMlpSpec's router; its state r carries from one MoE layer to the next.
Value StepBuilder::routerMlp(int64_t layer, Value x, int64_t columns) {
  const RouterMlpSpec &rm = spec_.moe.router_mlp;
  int64_t R = rm.hidden, H = spec_.hidden_size;
  auto tensor = [&](const std::string &name) { return hf(layer, rm.module + "." + name); };
  auto dense = [&](Value in, const std::string &name, int64_t out, int64_t width) {
    std::string p = "moe.router." + name.substr(name.rfind('.') + 1);
    return linear(in, weight(prog(layer, p), {out, width}, tensor(name + ".weight")),
                  weight(prog(layer, p + "_bias"), {out}, tensor(name + ".bias")));
  };
  Value r = dense(x, "down_proj", R, H);
  if (routerState_)
    r = add(r, mul(routerState_, weight(prog(layer, "moe.router.state_scale"), {R}, tensor("router_states_scale"))));
  routerState_ = r;
  Value h = norm(r, weight(prog(layer, "moe.router.norm"), {R}, tensor("router_mlp.norm.weight")));
  h = act(dense(h, "router_mlp.fc1", R, R), Activation::gelu);
  h = act(dense(h, "router_mlp.fc2", R, R), Activation::gelu);
  return linear(h, weight(prog(layer, "moe.router.out"), {columns, R}, tensor("router_mlp.out_proj.weight")));
}

Value StepBuilder::moeMlp(int64_t layer, Value x) {
  const MoeSpec &m = spec_.moe;
  if (m.sinks > 0)
    return sinkMoeMlp(layer, x);
  const ExpertNaming &n = m.names;
  int64_t E = m.num_experts, I = m.intermediate, H = spec_.hidden_size;
  // Expert e's tensors ("{e}" in a per-expert name is its index).
  auto layerNames = [&](const std::vector<std::string> &patterns, int64_t e) {
    std::vector<std::string> out;
    for (std::string name : patterns) {
      if (size_t at = name.find("{e}"); at != std::string::npos)
        name.replace(at, 3, std::to_string(e));
      out.push_back(hf(layer, name));
    }
    return out;
  };
  // A fused tensor holds every expert; per-expert tensors are stacked at load.
  WeightRef gateUp{.stack = !n.fused, .transpose = n.transposed, .mxfp4 = n.mxfp4}, down = gateUp;
  for (int64_t e = 0; e < (n.fused ? 1 : E); ++e) {
    gateUp.parts.push_back(layerNames(n.experts.gate_up, e));
    down.parts.push_back(layerNames(n.experts.down, e));
  }
  if (n.row_blocks) {
    // [gate blocks | up blocks] regrouped expert by expert into [E, 2I, H]; down read as
    // [E, I, H] and transposed.
    gateUp.regroup = {2};
    gateUp.regroup.append(E, I);
    gateUp.flatten = down.flatten = down.transpose = true;
  }
  // The expert biases' weight refs come before the router's, as they always have in the IR.
  Value gateUpBias, downBias;
  if (!n.experts.gate_up_bias.empty())
    gateUpBias = weight(prog(layer, "moe.gate_up_bias"), {E, 2 * I}, {.parts = {layerNames(n.experts.gate_up_bias, 0)}});
  if (!n.experts.down_bias.empty())
    downBias = weight(prog(layer, "moe.down_bias"), {E, H}, hf(layer, n.experts.down_bias));
  // The router scores the routed experts, then the identity (zero) experts, then the null ones.
  int64_t routed = E + m.zero_experts + m.null_experts;
  bool mlpRouter = m.router_mlp.hidden > 0;
  Value router, routerBias, selectionBias, table;
  // A hash-routed layer looks its experts up by token: its router has no selection bias.
  bool hashed = spec_.layers[layer].hash_routing;
  if (!mlpRouter)
    router = weight(prog(layer, "moe.router"), {routed, H}, hf(layer, n.router));
  if (!n.router_bias.empty())
    routerBias = weight(prog(layer, "moe.router_bias"), {routed}, hf(layer, n.router_bias));
  if (hashed)
    table = fp32Weight(prog(layer, "moe.route_table"), {spec_.vocab_size, m.top_k}, hf(layer, n.route_table));
  else if (!n.selection_bias.empty())
    selectionBias = fp32Weight(prog(layer, "moe.selection_bias"), {routed},
                               {.parts = {{hf(layer, n.selection_bias)}}, .flatten = n.selection_bias_row});
  Value logits = mlpRouter ? routerMlp(layer, x, routed) : linear(x, router, routerBias);
  if (m.router_softcap > 0)
    logits = SoftcapOp::create(b_, loc_, logits.getType(), logits, b_.getF64FloatAttr(m.router_softcap)).getResult();
  RouteGroupsAttr groups;
  if (m.groups.count > 0)
    groups = RouteGroupsAttr::get(b_.getContext(), m.groups.count, m.groups.keep,
                                  toDialect(m.groups.score), toDialect(m.groups.fill));
  auto route = MoeRouteOp::create(b_, loc_, TypeRange{rows(m.top_k), rowsI32(m.top_k)}, logits, selectionBias,
                                  hashed ? tokens_ : Value(), table, b_.getI64IntegerAttr(m.top_k),
                                  RouteScoreAttr::get(b_.getContext(), toDialect(m.score)),
                                  b_.getBoolAttr(m.renorm), b_.getF64FloatAttr(m.renorm_eps),
                                  b_.getF64FloatAttr(m.scaling), groups, b_.getI64IntegerAttr(0),
                                  b_.getF64FloatAttr(m.threshold), b_.getBoolAttr(m.bias_on_logits));
  Value wgu = weight(prog(layer, "moe.gate_up"), {E, m.gated ? 2 * I : I, H}, gateUp);
  Value wd = weight(prog(layer, "moe.down"), {E, H, I}, down);
  auto layout = GluLayoutAttr::get(b_.getContext(), toDialect(n.glu));
  Value out = MoeExpertsOp::create(b_, loc_, rows(H), x, route.getIds(), route.getWeights(), wgu, wd, gateUpBias,
                                   downBias, gluAct(m.act, m.limit, m.alpha, m.up_offset), layout,
                                   m.gated ? UnitAttr() : b_.getUnitAttr(),
                                   b_.getI64IntegerAttr(m.zero_experts),
                                   m.scale_input ? b_.getUnitAttr() : UnitAttr(),
                                   b_.getI64IntegerAttr(m.null_experts))
                  .getResult();
  if (!n.output_bias.empty())
    out = add(out, weight(prog(layer, "moe.output_bias"), {H}, hf(layer, n.output_bias)));
  if (m.shared_intermediate > 0)
    out = add(out, sharedExpert(layer, x));
  if (m.plus_dense)
    out = add(out, denseMlp(layer, x));
  if (!m.output_norm.empty())
    out = layerNorm(layer, m.output_norm, out);
  return out;
}

} // namespace cbc::hf::lower
