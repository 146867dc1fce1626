#include "frontends/hf_config/lower_to_cbc.h"

#include "dialects/cbc/CbcOps.h"
#include "runtime/schema/step_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>

namespace cbc::hf {

using namespace mlir;

namespace {

// Emits the step, one decoder layer at a time, naming every weight by its HF tensor names.
class StepBuilder {
public:
  StepBuilder(const ModelSpec &spec, MLIRContext &ctx, const LowerOptions &options)
      : spec_(spec), b_(&ctx), loc_(b_.getUnknownLoc()) {
    if (options.weight_dtype == "f32")
      wtype_ = b_.getF32Type();
    else if (options.weight_dtype == "f16")
      wtype_ = b_.getF16Type();
    else
      wtype_ = b_.getBF16Type();
  }

  OwningOpRef<ModuleOp> build();

private:
  // ---- types and weights ----
  RankedTensorType rows(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, b_.getF32Type());
  }
  RankedTensorType rowsI32(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, b_.getI32Type());
  }
  Value weight(const std::string &name, ArrayRef<int64_t> shape,
               const std::vector<std::vector<std::string>> &parts, bool stack = false,
               bool transpose = false, ArrayRef<int64_t> regroup = {}, int64_t blockDiag = 0,
               ArrayRef<double> rowScales = {}, bool mxfp4 = false) {
    // A program name met before (a shared block's weights) is the same weight.
    auto type = RankedTensorType::get(shape, wtype_);
    if (auto it = weights_.find(name); it != weights_.end()) {
      assert(it->second.getType() == type && "one program weight name, two shapes");
      return it->second;
    }
    SmallVector<Attribute> partAttrs;
    for (const auto &names : parts) {
      SmallVector<Attribute> n;
      for (const auto &s : names)
        n.push_back(b_.getStringAttr(s));
      partAttrs.push_back(b_.getArrayAttr(n));
    }
    auto op = WeightRefOp::create(b_, loc_, type, b_.getStringAttr(name), b_.getArrayAttr(partAttrs),
                                  WeightCombineAttr::get(b_.getContext(), stack ? WeightCombine::stack : WeightCombine::none),
                                  transpose ? b_.getUnitAttr() : UnitAttr(),
                                  mxfp4 ? DequantAttr::get(b_.getContext(), Dequant::mxfp4) : DequantAttr(),
                                  regroup.empty() ? DenseI64ArrayAttr() : b_.getDenseI64ArrayAttr(regroup),
                                  blockDiag ? b_.getI64IntegerAttr(blockDiag) : IntegerAttr(),
                                  rowScales.empty() ? DenseF64ArrayAttr() : b_.getDenseF64ArrayAttr(rowScales));
    weights_[name] = op.getResult();
    return op.getResult();
  }
  // [rows, factor] runs for a weight's row_scales; none when every factor is 1.
  static SmallVector<double> scales(std::initializer_list<std::pair<int64_t, double>> runs) {
    SmallVector<double> out;
    bool any = false;
    for (auto [rows, factor] : runs) {
      if (rows == 0)
        continue;
      out.append({(double)rows, factor});
      any |= factor != 1.0;
    }
    if (!any)
      out.clear();
    return out;
  }
  Value weight(const std::string &name, ArrayRef<int64_t> shape, const std::string &hfName) {
    return weight(name, shape, std::vector<std::vector<std::string>>{{hfName}});
  }
  ActivationAttr actAttr(Activation a) { return ActivationAttr::get(b_.getContext(), a); }
  // A spec's activation name, already validated by the parser.
  ActivationAttr actAttr(const std::string &name) { return actAttr(symbolizeActivation(name).value()); }
  // A gated unit's activation: a plain one, or the clamped form with its limit and alpha.
  Attribute gluAct(const std::string &name, double limit = 0, double alpha = 0) {
    if (name == "clamped_swiglu")
      return ClampedSwigluAttr::get(b_.getContext(), llvm::APFloat(limit), llvm::APFloat(alpha));
    return actAttr(name);
  }
  Value glu(Value x, int64_t width, Attribute act, GluLayout layout = GluLayout::halves) {
    return GluOp::create(b_, loc_, rows(width), x, act, GluLayoutAttr::get(b_.getContext(), layout)).getResult();
  }
  // Small parameters transformers reads in fp32 whatever the model dtype.
  Value fp32Weight(const std::string &name, ArrayRef<int64_t> shape, const std::string &hfName) {
    auto saved = wtype_;
    wtype_ = b_.getF32Type();
    Value w = weight(name, shape, hfName);
    wtype_ = saved;
    return w;
  }
  std::string hf(int64_t layer, const std::string &rest) {
    return spec_.prefix + "layers." + std::to_string(layer) + "." + rest;
  }
  std::string mlpName(int64_t layer, const std::string &rest) {
    return hf(layer, spec_.names.mlp + "." + rest);
  }
  std::string prog(int64_t layer, const std::string &rest) {
    return "layers." + std::to_string(layer) + "." + rest;
  }

  // ---- pieces ----
  Value norm(Value x, Value w, std::optional<int64_t> group = std::nullopt) {
    auto width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
    auto op = RmsNormOp::create(b_, loc_, rows(width), x, w, b_.getF64FloatAttr(spec_.norm_eps),
                                   b_.getF64FloatAttr(spec_.norm_offset),
                                   group ? b_.getI64IntegerAttr(*group) : IntegerAttr());
    return op.getResult();
  }
  Value layerNorm(int64_t layer, const std::string &hfName, Value x) {
    Value w = weight(prog(layer, hfName), {spec_.hidden_size}, hf(layer, hfName + ".weight"));
    return norm(x, w);
  }
  Value linear(Value x, Value w, Value bias = {}) {
    auto n = llvm::cast<RankedTensorType>(w.getType()).getDimSize(0);
    return LinearOp::create(b_, loc_, rows(n), x, w, bias).getResult();
  }
  // Where an attention block's tensors are: the HF prefix of its module and the program-name
  // prefix (both ending in '.'), its input width and, for Zamba2's shared blocks, this layer's
  // adapter slot ("n.", empty for none).
  struct AttnSite {
    std::string hf, prog;
    int64_t in = 0;
    std::string adapterSlot;
  };
  AttnSite attnSite(int64_t layer) {
    return {hf(layer, spec_.names.attn + "."), prog(layer, "attn."), spec_.hidden_size, ""};
  }
  Value attention(int64_t layer, Value x) { return attention(layer, x, attnSite(layer)); }
  Value attention(int64_t layer, Value x, const AttnSite &site);
  Value gatedDeltaNet(int64_t layer, Value x);
  Value shortConv(int64_t layer, Value x);
  Value mamba2(int64_t layer, Value x) { return mamba2(layer, x, spec_.names.mamba); }
  Value mamba2(int64_t layer, Value x, const std::string &module);
  Value mamba1(int64_t layer, Value x) { return mamba1(layer, x, spec_.names.mamba); }
  Value mamba1(int64_t layer, Value x, const std::string &module);
  Value sharedBlock(int64_t layer, Value x);
  Value conv1d(int64_t layer, Value x, Value w, Value bias, StringRef act) {
    return StateConv1dOp::create(b_, loc_, x.getType(), x, w, bias, cuSeqlens_, slots_, hasInitial_,
                                 b_.getI64IntegerAttr(layer), actAttr(act.str()), b_.getStringAttr("conv"))
        .getResult();
  }
  Value act(Value x, StringRef kind, double scale = 1.0) {
    return ActOp::create(b_, loc_, x.getType(), x, actAttr(kind.str()), b_.getF64FloatAttr(scale)).getResult();
  }
  Value mixer(int64_t layer, Value x);
  std::string attn(int64_t layer, const std::string &rest) {
    return hf(layer, spec_.names.attn + "." + rest);
  }
  Value split(Value x, ArrayRef<int64_t> widths) {
    SmallVector<Type> types;
    for (int64_t w : widths)
      types.push_back(rows(w));
    return SplitOp::create(b_, loc_, types, x).getResult(0);
  }
  SmallVector<Value> splitAll(Value x, ArrayRef<int64_t> widths) {
    SmallVector<Type> types;
    for (int64_t w : widths)
      types.push_back(rows(w));
    auto op = SplitOp::create(b_, loc_, types, x);
    return SmallVector<Value>(op.getResults().begin(), op.getResults().end());
  }
  Value mul(Value x, Value g) {
    auto width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
    return MulOp::create(b_, loc_, rows(width), x, g).getResult();
  }
  Value denseMlp(int64_t layer, Value x);
  Value moeMlp(int64_t layer, Value x);
  Value sharedExpert(int64_t layer, Value x);
  Value rope(const RopeSpec &r, Value x);
  Value add(Value a, Value b) { return AddOp::create(b_, loc_, a, b).getResult(); }

  const ModelSpec &spec_;
  std::map<std::string, Value> weights_; // program weights by name
  Value embeddings_;                     // the embedding rows (Zamba's shared blocks read them)
  OpBuilder b_;
  Location loc_;
  Type wtype_;
  // step arguments
  Value tokens_, positions_, seqIds_, cuSeqlens_, kvLens_, blockTables_, logitRows_, promptLens_, slots_,
      hasInitial_;
};

Value StepBuilder::rope(const RopeSpec &r, Value x) {
  auto width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
  bool dynamic = r.dynamic_factor != 0, longRope = !r.inv_freq_long.empty();
  auto schedule = RopeAttr::get(
      b_.getContext(), spec_.attn.head_dim, r.rotary_dim,
      r.pairing == "interleaved" ? RopePairing::interleaved : RopePairing::half,
      b_.getDenseF32ArrayAttr(r.inv_freq), llvm::APFloat(r.attention_factor),
      longRope ? b_.getDenseF32ArrayAttr(r.inv_freq_long) : DenseF32ArrayAttr(), longRope ? r.long_after : 0,
      llvm::APFloat(dynamic ? r.theta : 0.0), llvm::APFloat(dynamic ? r.dynamic_factor : 0.0),
      dynamic ? r.dynamic_max_positions : 0);
  return RopeOp::create(b_, loc_, rows(width), x, positions_, seqIds_, promptLens_, schedule).getResult();
}

Value StepBuilder::attention(int64_t layer, Value x, const AttnSite &site) {
  const AttentionSpec &a = spec_.attn;
  const Names &n = spec_.names;
  const LayerSpec &L = spec_.layers[layer];
  int64_t D = a.head_dim, qw = a.num_heads * D, kw = a.num_kv_heads * D;
  int64_t gw = a.output_gate ? qw : 0; // the per-head output gate rides in q_proj
  int64_t H = spec_.hidden_size, in = site.in;
  // Multipliers on the input (the weights only) and on k (weight and bias).
  const Multipliers &mu = spec_.mup;
  auto wScales = scales({{qw, mu.attn_in}, {gw, mu.attn_in}, {kw, mu.attn_in * mu.key}, {kw, mu.attn_in}});
  auto bScales = scales({{qw, 1.0}, {gw, 1.0}, {kw, mu.key}, {kw, 1.0}});

  // One fused q|k|v projection: a single GEMM per layer.
  Value wqkv, bqkv;
  if (!n.qkv.empty()) {
    wqkv = weight(site.prog + "qkv", {qw + 2 * kw, in}, {{site.hf + n.qkv + ".weight"}}, false, false,
                  {}, 0, wScales);
  } else {
    // q_proj interleaves [q | gate] per head; regrouping makes it [q all | gate all].
    SmallVector<int64_t> regroup;
    if (a.output_gate)
      regroup = {a.num_heads, D, D};
    wqkv = weight(site.prog + "qkv", {qw + gw + 2 * kw, in},
                  {{site.hf + "q_proj.weight", site.hf + "k_proj.weight",
                    site.hf + "v_proj.weight"}},
                  false, false, regroup, 0, wScales);
    if (a.qkv_bias)
      bqkv = weight(site.prog + "qkv_bias", {qw + gw + 2 * kw},
                    {{site.hf + "q_proj.bias", site.hf + "k_proj.bias", site.hf + "v_proj.bias"}},
                    false, false, regroup, 0, bScales);
  }
  Value qkv = linear(x, wqkv, bqkv);
  if (!site.adapterSlot.empty()) {
    // Zamba2: each of q, k and v adds a rank-r adapter of the input; the three down
    // projections stack into one GEMM, the three up projections sit on a block diagonal.
    int64_t r = spec_.shared.adapter_rank;
    auto piece = [&](const char *which, int p) {
      return site.hf + "linear_" + which + "_adapter_list." + site.adapterSlot + std::to_string(p) + ".weight";
    };
    Value down = weight(prog(layer, "attn.adapter_down"), {3 * r, in},
                        {{piece("q", 0), piece("k", 0), piece("v", 0)}});
    Value up = weight(prog(layer, "attn.adapter_up"), {qw + 2 * kw, 3 * r},
                      {{piece("q", 1), piece("k", 1), piece("v", 1)}}, false, false, {}, 3);
    qkv = add(qkv, linear(linear(x, down), up));
  }
  SmallVector<Value> parts = a.output_gate ? splitAll(qkv, {qw, gw, kw, kw}) : splitAll(qkv, {qw, kw, kw});
  Value q = parts[0], k = parts[a.output_gate ? 2 : 1], v = parts[a.output_gate ? 3 : 2];
  if (a.qk_norm) {
    // Per head, or over the whole projection (OLMo).
    int64_t qg = a.qk_norm_whole ? qw : D, kg = a.qk_norm_whole ? kw : D;
    q = norm(q, weight(site.prog + "q_norm", {qg}, site.hf + n.q_norm + ".weight"), qg);
    k = norm(k, weight(site.prog + "k_norm", {kg}, site.hf + n.k_norm + ".weight"), kg);
  }
  if (a.rope) {
    q = rope(L.rope, q);
    k = rope(L.rope, k);
  }

  auto retention = L.window > 0 ? RetentionAttr::get(b_.getContext(), RetentionKind::window, L.window)
                                 : RetentionAttr::all(b_.getContext());
  KvAppendOp::create(b_, loc_, k, v, positions_, seqIds_, slots_, blockTables_,
                     b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(a.num_kv_heads),
                     b_.getI64IntegerAttr(D), retention, IntegerAttr());
  Value sinks;
  if (a.sinks)
    sinks = weight(site.prog + "sinks", {a.num_heads}, site.hf + "sinks");
  Value o = KvAttentionOp::create(b_, loc_, rows(qw), q, positions_, seqIds_, cuSeqlens_, kvLens_,
                                  slots_, blockTables_, sinks, b_.getI64IntegerAttr(layer),
                                  b_.getI64IntegerAttr(a.num_heads), b_.getI64IntegerAttr(a.num_kv_heads),
                                  b_.getI64IntegerAttr(D), b_.getF64FloatAttr(a.scale), retention,
                                  a.softcap > 0 ? b_.getF64FloatAttr(a.softcap) : FloatAttr(), IntegerAttr())
                .getResult();
  if (a.output_gate)
    o = GateOp::create(b_, loc_, rows(qw), o, parts[1]).getResult();
  auto oScales = scales({{H, mu.attn_out}});
  Value wo = weight(site.prog + "o", {H, qw}, {{site.hf + n.o_proj + ".weight"}}, false, false, {}, 0,
                    oScales);
  Value bo;
  if (a.o_bias)
    bo = weight(site.prog + "o_bias", {H}, {{site.hf + n.o_proj + ".bias"}}, false, false, {}, 0, oScales);
  return linear(o, wo, bo);
}

// A gated delta net: projections, a causal conv over q|k|v with a per-request state, the gated
// delta rule with a per-request state, a gated norm and the output projection.
Value StepBuilder::gatedDeltaNet(int64_t layer, Value x) {
  const GdnSpec &g = spec_.gdn;
  int64_t H = spec_.hidden_size, kd = g.k_heads * g.k_dim, vd = g.v_heads * g.v_dim, r = g.v_heads / g.k_heads;
  int64_t C = 2 * kd + vd, nv = g.v_heads;
  auto m = [&](const std::string &rest) { return hf(layer, spec_.names.linear_attn + "." + rest); };
  Value qkv, z, b, a;
  switch (g.projections) {
  case GdnSpec::Projections::Grouped: {
    // in_proj_qkvz holds [q | k | v | z] per key head, in_proj_ba holds [b | a] per key head.
    Value wqkvz = weight(prog(layer, "gdn.qkvz"), {C + vd, H}, {{m("in_proj_qkvz.weight")}}, false,
                         false, {g.k_heads, g.k_dim, g.k_dim, r * g.v_dim, r * g.v_dim});
    Value wba = weight(prog(layer, "gdn.ba"), {2 * nv, H}, {{m("in_proj_ba.weight")}}, false, false,
                       {g.k_heads, r, r});
    auto p1 = splitAll(linear(x, wqkvz), {C, vd});
    auto p2 = splitAll(linear(x, wba), {nv, nv});
    qkv = p1[0], z = p1[1], b = p2[0], a = p2[1];
    break;
  }
  case GdnSpec::Projections::Flat:
  case GdnSpec::Projections::Separate: {
    std::vector<std::string> names =
        g.projections == GdnSpec::Projections::Flat
            ? std::vector<std::string>{m("in_proj_qkv.weight"), m("in_proj_z.weight"), m("in_proj_b.weight"),
                                       m("in_proj_a.weight")}
            : std::vector<std::string>{m("q_proj.weight"), m("k_proj.weight"), m("v_proj.weight"),
                                       m("g_proj.weight"), m("b_proj.weight"), m("a_proj.weight")};
    Value w = weight(prog(layer, "gdn.in"), {C + vd + 2 * nv, H}, {names});
    auto p = splitAll(linear(x, w), {C, vd, nv, nv});
    qkv = p[0], z = p[1], b = p[2], a = p[3];
    break;
  }
  }
  std::vector<std::string> convNames = g.projections == GdnSpec::Projections::Separate
                                           ? std::vector<std::string>{m("q_conv1d.weight"), m("k_conv1d.weight"),
                                                                      m("v_conv1d.weight")}
                                           : std::vector<std::string>{m("conv1d.weight")};
  Value convW = weight(prog(layer, "gdn.conv"), {C, 1, g.conv_kernel}, {convNames});
  Value conv = conv1d(layer, qkv, convW, Value(), "silu");
  auto qkvParts = splitAll(conv, {kd, kd, vd});
  Value aLog = fp32Weight(prog(layer, "gdn.A_log"), {nv}, m("A_log"));
  Value dtBias = fp32Weight(prog(layer, "gdn.dt_bias"), {nv}, m("dt_bias"));
  Value o = GatedDeltaOp::create(b_, loc_, rows(vd), qkvParts[0], qkvParts[1], qkvParts[2], a, b, aLog, dtBias,
                                 cuSeqlens_, slots_, hasInitial_, b_.getI64IntegerAttr(layer),
                                 b_.getI64IntegerAttr(g.k_heads), b_.getI64IntegerAttr(g.v_heads),
                                 b_.getI64IntegerAttr(g.k_dim), b_.getI64IntegerAttr(g.v_dim),
                                 b_.getF64FloatAttr(g.beta_scale), b_.getUnitAttr(), b_.getStringAttr("recurrent"))
                .getResult();
  Value normW = weight(prog(layer, "gdn.norm"), {g.v_dim}, m(g.projections == GdnSpec::Projections::Separate
                                                                 ? "o_norm.weight" : "norm.weight"));
  o = RmsNormGatedOp::create(b_, loc_, rows(vd), o, z, normW, b_.getF64FloatAttr(g.norm_eps),
                             b_.getF64FloatAttr(0.0), b_.getI64IntegerAttr(g.v_dim), actAttr(Activation::silu),
                             NormGateOrderAttr::get(b_.getContext(), NormGateOrder::norm_gate))
          .getResult();
  std::string outName = g.projections == GdnSpec::Projections::Separate ? "o_proj.weight" : "out_proj.weight";
  return linear(o, weight(prog(layer, "gdn.out"), {H, vd}, m(outName)));
}

// LFM2's gated short convolution: y = out_proj(C * conv(B * x)).
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
  auto bcx = splitAll(linear(x, weight(prog(layer, "conv.in"), {3 * H, H}, m("in_proj.weight")), inBias),
                      {H, H, H});
  Value bx = mul(bcx[0], bcx[2]);
  Value convW = weight(prog(layer, "conv.conv"), {H, 1, c.kernel}, m("conv.weight"));
  Value y = conv1d(layer, bx, convW, convBias, "none");
  y = mul(bcx[1], y);
  return linear(y, weight(prog(layer, "conv.out"), {H, H}, m("out_proj.weight")), outBias);
}

// Mamba2: in_proj -> [z | xBC | dt]; a causal conv (SiLU) over xBC -> [x | B | C]; the SSD
// scan; a gated norm of y by z; out_proj.
Value StepBuilder::mamba2(int64_t layer, Value x, const std::string &module) {
  const Mamba2Spec &s = spec_.mamba2;
  int64_t H = spec_.hidden_size, I = s.intermediate(), GN = s.groups * s.state, C = I + 2 * GN;
  auto m = [&](const std::string &rest) { return hf(layer, module + "." + rest); };
  // Multipliers (Falcon-H1): on the input (weight only), per in_proj section, on the output.
  const Multipliers &mu = spec_.mup;
  auto inScales = [&](double in) {
    return scales({{I, in * mu.ssm[0]}, {I, in * mu.ssm[1]}, {GN, in * mu.ssm[2]}, {GN, in * mu.ssm[3]},
                   {s.heads, in * mu.ssm[4]}});
  };
  auto outScales = scales({{H, mu.ssm_out}});
  Value inBias, outBias, convBias;
  if (s.bias)
    inBias = weight(prog(layer, "mamba.in_bias"), {I + C + s.heads}, {{m("in_proj.bias")}}, false, false, {}, 0,
                    inScales(1.0));
  if (s.out_bias)
    outBias = weight(prog(layer, "mamba.out_bias"), {H}, {{m("out_proj.bias")}}, false, false, {}, 0, outScales);
  if (s.conv_bias)
    convBias = weight(prog(layer, "mamba.conv_bias"), {C}, m("conv1d.bias"));
  Value win = weight(prog(layer, "mamba.in"), {I + C + s.heads, H}, {{m("in_proj.weight")}}, false, false, {}, 0,
                     inScales(mu.ssm_in));
  auto zxd = splitAll(linear(x, win, inBias), {I, C, s.heads});
  Value xbc = conv1d(layer, zxd[1], weight(prog(layer, "mamba.conv"), {C, 1, s.conv_kernel}, m("conv1d.weight")),
                     convBias, "silu");
  auto parts = splitAll(xbc, {I, GN, GN});
  Value aLog = fp32Weight(prog(layer, "mamba.A_log"), {s.heads}, m("A_log"));
  Value dtBias = fp32Weight(prog(layer, "mamba.dt_bias"), {s.heads}, m("dt_bias"));
  Value d = fp32Weight(prog(layer, "mamba.D"), {s.heads}, m("D"));
  Value y = SsdOp::create(b_, loc_, rows(I), parts[0], zxd[2], parts[1], parts[2], aLog, dtBias, d, cuSeqlens_,
                          slots_, hasInitial_, b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(s.heads),
                          b_.getI64IntegerAttr(s.head_dim), b_.getI64IntegerAttr(s.groups),
                          b_.getI64IntegerAttr(s.state), b_.getF64FloatAttr(s.dt_min), b_.getF64FloatAttr(s.dt_max),
                          b_.getStringAttr("recurrent"))
                .getResult();
  int64_t group = I / s.norm_groups;
  if (s.gated_norm)
    y = RmsNormGatedOp::create(b_, loc_, rows(I), y, zxd[0], weight(prog(layer, "mamba.norm"), {I}, m("norm.weight")),
                               b_.getF64FloatAttr(s.norm_eps), b_.getF64FloatAttr(0.0), b_.getI64IntegerAttr(group),
                               actAttr(Activation::silu),
                               NormGateOrderAttr::get(b_.getContext(), s.norm_before_gate ? NormGateOrder::norm_gate
                                                                                          : NormGateOrder::gate_norm))
            .getResult();
  else
    y = mul(y, act(zxd[0], "silu")); // no norm: y * silu(z)
  return linear(y, weight(prog(layer, "mamba.out"), {H, I}, {{m("out_proj.weight")}}, false, false, {}, 0, outScales),
                outBias);
}

// Mamba: in_proj -> [x | z]; a causal conv (SiLU) over x; x_proj -> [dt | B | C] (optionally
// RMS-normed); dt_proj without its bias (the scan adds it); the selective scan gated by z.
Value StepBuilder::mamba1(int64_t layer, Value x, const std::string &module) {
  const Mamba1Spec &s = spec_.mamba1;
  int64_t H = spec_.hidden_size, I = s.intermediate, N = s.state, R = s.dt_rank, nh = s.heads, hd = I / nh;
  auto m = [&](const std::string &rest) { return hf(layer, module + "." + rest); };
  // Zamba's multi-head form: in_proj interleaves x and z rows per channel (regrouped into
  // [x | z]); each head has its own x_proj [R + 2N, hd] and dt_proj [hd, R], placed on block
  // diagonals so that each is one GEMM, x_proj's rows regrouped into [dt | B | C] of all heads.
  bool multi = nh > 1;
  SmallVector<int64_t> inRegroup;
  if (multi)
    inRegroup = {I, 1, 1};
  Value inBias, outBias, convBias;
  if (s.bias) {
    inBias = weight(prog(layer, "mamba.in_bias"), {2 * I}, {{m("in_proj.bias")}}, false, false, inRegroup);
    outBias = weight(prog(layer, "mamba.out_bias"), {H}, m("out_proj.bias"));
  }
  if (s.conv_bias)
    convBias = weight(prog(layer, "mamba.conv_bias"), {I}, m("conv1d.bias"));
  auto xz = splitAll(
      linear(x, weight(prog(layer, "mamba.in"), {2 * I, H}, {{m("in_proj.weight")}}, false, false, inRegroup), inBias),
      {I, I});
  Value xs = conv1d(layer, xz[0], weight(prog(layer, "mamba.conv"), {I, 1, s.conv_kernel}, m("conv1d.weight")),
                    convBias, "silu");
  Value xproj = multi ? weight(prog(layer, "mamba.x_proj"), {nh * (R + 2 * N), I}, {{m("x_proj_weight")}}, false,
                               false, {nh, R, N, N}, nh)
                      : weight(prog(layer, "mamba.x_proj"), {R + 2 * N, I}, m("x_proj.weight"));
  auto dbc = splitAll(linear(xs, xproj), {nh * R, nh * N, nh * N});
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
  Value dtProj = multi ? weight(prog(layer, "mamba.dt_proj"), {I, nh * R}, {{m("dt_proj_weight")}}, false, false,
                               {}, nh)
                        : weight(prog(layer, "mamba.dt_proj"), {I, R}, m("dt_proj.weight"));
  Value dt = linear(dbc[0], dtProj);
  // Zamba keeps A_log [heads, hd, N], dt_proj_bias and D [heads, hd]: the same values per channel.
  SmallVector<int64_t> aShape = multi ? SmallVector<int64_t>{nh, hd, N} : SmallVector<int64_t>{I, N};
  SmallVector<int64_t> cShape = multi ? SmallVector<int64_t>{nh, hd} : SmallVector<int64_t>{I};
  Value aLog = fp32Weight(prog(layer, "mamba.A_log"), aShape, m("A_log"));
  Value dtBias = fp32Weight(prog(layer, "mamba.dt_bias"), cShape, m(multi ? "dt_proj_bias" : "dt_proj.bias"));
  Value d = fp32Weight(prog(layer, "mamba.D"), cShape, m("D"));
  Value y = SelectiveScanOp::create(b_, loc_, rows(I), xs, dt, dbc[1], dbc[2], aLog, dtBias, d, xz[1], cuSeqlens_,
                                    slots_, hasInitial_, b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(s.groups),
                                    b_.getI64IntegerAttr(N), b_.getStringAttr("recurrent"))
                .getResult();
  return linear(y, weight(prog(layer, "mamba.out"), {H, I}, m("out_proj.weight")), outBias);
}

Value StepBuilder::mixer(int64_t layer, Value x) {
  switch (spec_.layers[layer].kind) {
  case LayerKind::LinearAttention:
    return gatedDeltaNet(layer, x);
  case LayerKind::ShortConv:
    return shortConv(layer, x);
  case LayerKind::Mamba2:
    return mamba2(layer, x);
  case LayerKind::Mamba1:
    return mamba1(layer, x);
  case LayerKind::FullAttention:
  case LayerKind::SlidingAttention:
    return attention(layer, x);
  case LayerKind::ParallelHybrid:
    return add(mamba2(layer, x), attention(layer, x));
  case LayerKind::SharedBlock:
    return sharedBlock(layer, x);
  case LayerKind::None:
    break;
  }
  llvm_unreachable("a layer without a mixer has no mixer to lower");
}

// Zamba's hybrid layer, given the residual stream x: shared block b = n % blocks (n the
// layer's ordinal among the hybrid layers) on rms_norm([x | embeddings]) -- attention, its
// pre_ff_layernorm, a gated MLP, no residuals inside --, then the layer's own `linear`; the
// result t only enters the layer's Mamba mixer: mamba(norm(x + t)). The block's tensors are
// stored under the first hybrid layer using it when the blocks are tied, else under each layer.
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
  Value wgu = z.fused_gate_up
                  ? weight(p + "mlp.gate_up", {2 * I, H}, ff + "gate_up_proj.weight")
                  : weight(p + "mlp.gate_up", {2 * I, H}, {{ff + "gate_proj.weight", ff + "up_proj.weight"}});
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

Value StepBuilder::denseMlp(int64_t layer, Value x) {
  const Names &nm = spec_.names;
  int64_t I = spec_.mlp.intermediate, H = spec_.hidden_size;
  if (!spec_.mlp.gated) {
    Value bup, bdown;
    if (spec_.mlp.bias) {
      bup = weight(prog(layer, "mlp.up_bias"), {I}, mlpName(layer, nm.up + ".bias"));
      bdown = weight(prog(layer, "mlp.down_bias"), {H}, mlpName(layer, nm.down + ".bias"));
    }
    Value up = linear(x, weight(prog(layer, "mlp.up"), {I, H}, mlpName(layer, nm.up + ".weight")), bup);
    return linear(act(up, spec_.mlp.act), weight(prog(layer, "mlp.down"), {H, I}, mlpName(layer, nm.down + ".weight")),
                  bdown);
  }
  // Multipliers (Falcon-H1) on the gate projection's output and on the MLP's output.
  auto guScales = scales({{I, spec_.mup.mlp_gate}, {I, 1.0}});
  auto downScales = scales({{H, spec_.mup.mlp_down}});
  Value wgu;
  if (!nm.gate_up.empty())
    wgu = weight(prog(layer, "mlp.gate_up"), {2 * I, H}, {{mlpName(layer, nm.gate_up + ".weight")}}, false, false,
                 {}, 0, guScales);
  else
    wgu = weight(prog(layer, "mlp.gate_up"), {2 * I, H},
                 {{mlpName(layer, nm.gate + ".weight"), mlpName(layer, nm.up + ".weight")}}, false, false, {}, 0,
                 guScales);
  Value bgu, bdown;
  if (spec_.mlp.bias) {
    bgu = weight(prog(layer, "mlp.gate_up_bias"), {2 * I},
                 {{mlpName(layer, nm.gate + ".bias"), mlpName(layer, nm.up + ".bias")}}, false, false, {}, 0,
                 guScales);
    bdown = weight(prog(layer, "mlp.down_bias"), {H}, {{mlpName(layer, nm.down + ".bias")}}, false, false, {}, 0,
                   downScales);
  }
  Value gu = linear(x, wgu, bgu);
  Value act = glu(gu, I, gluAct(spec_.mlp.act));
  Value wdown = weight(prog(layer, "mlp.down"), {H, I}, {{mlpName(layer, nm.down + ".weight")}}, false, false, {}, 0,
                       downScales);
  return linear(act, wdown, bdown);
}

Value StepBuilder::sharedExpert(int64_t layer, Value x) {
  int64_t I = spec_.moe.shared_intermediate, H = spec_.hidden_size;
  const ExpertTensors &se = spec_.moe.names.shared;
  if (!spec_.moe.gated) {
    // Ungated: down(act(up x)) (Nemotron-H's shared_experts).
    Value bup, bdown;
    if (!se.gate_up_bias.empty()) {
      bup = weight(prog(layer, "moe.shared.up_bias"), {I}, hf(layer, se.gate_up_bias[0]));
      bdown = weight(prog(layer, "moe.shared.down_bias"), {H}, hf(layer, se.down_bias));
    }
    Value up = linear(x, weight(prog(layer, "moe.shared.up"), {I, H}, hf(layer, se.gate_up[0])), bup);
    return linear(act(up, spec_.moe.act), weight(prog(layer, "moe.shared.down"), {H, I}, hf(layer, se.down[0])),
                  bdown);
  }
  Value wgu = weight(prog(layer, "moe.shared.gate_up"), {2 * I, H},
                     {{hf(layer, se.gate_up[0]), hf(layer, se.gate_up[1])}});
  Value act = glu(linear(x, wgu), I, gluAct(spec_.moe.act));
  Value out = linear(act, weight(prog(layer, "moe.shared.down"), {H, I}, hf(layer, se.down[0])));
  if (!spec_.moe.names.shared_gate.empty()) {
    Value g = linear(x, weight(prog(layer, "moe.shared.gate"), {1, H}, hf(layer, spec_.moe.names.shared_gate)));
    out = GateOp::create(b_, loc_, rows(H), out, g).getResult();
  }
  return out;
}

Value StepBuilder::moeMlp(int64_t layer, Value x) {
  const MoeSpec &m = spec_.moe;
  const ExpertNaming &n = m.names;
  int64_t E = m.num_experts, I = m.intermediate, H = spec_.hidden_size;
  auto layerNames = [&](const std::vector<std::string> &patterns, int64_t e) {
    std::vector<std::string> out;
    for (std::string name : patterns) {
      if (size_t at = name.find("{e}"); at != std::string::npos)
        name.replace(at, 3, std::to_string(e));
      out.push_back(hf(layer, name));
    }
    return out;
  };
  std::vector<std::vector<std::string>> gateUp, down;
  for (int64_t e = 0; e < (n.fused ? 1 : E); ++e) { // a fused tensor holds every expert
    gateUp.push_back(layerNames(n.experts.gate_up, e));
    down.push_back(layerNames(n.experts.down, e));
  }
  // The expert biases' weight refs come before the router's, as they always have in the IR.
  Value gateUpBias, downBias;
  if (!n.experts.gate_up_bias.empty())
    gateUpBias = weight(prog(layer, "moe.gate_up_bias"), {E, 2 * I}, {layerNames(n.experts.gate_up_bias, 0)});
  if (!n.experts.down_bias.empty())
    downBias = weight(prog(layer, "moe.down_bias"), {E, H}, hf(layer, n.experts.down_bias));
  Value router = weight(prog(layer, "moe.router"), {E, H}, hf(layer, n.router));
  Value routerBias, selectionBias;
  if (!n.router_bias.empty())
    routerBias = weight(prog(layer, "moe.router_bias"), {E}, hf(layer, n.router_bias));
  if (!n.selection_bias.empty())
    selectionBias = fp32Weight(prog(layer, "moe.selection_bias"), {E}, hf(layer, n.selection_bias));
  Value logits = linear(x, router, routerBias);
  auto route = MoeRouteOp::create(b_, loc_, TypeRange{rows(m.top_k), rowsI32(m.top_k)}, logits, selectionBias,
                                  b_.getI64IntegerAttr(m.top_k),
                                  RouteScoreAttr::get(b_.getContext(), symbolizeRouteScore(m.score).value()),
                                  b_.getBoolAttr(m.renorm), b_.getF64FloatAttr(m.renorm_eps),
                                  b_.getF64FloatAttr(m.scaling));
  Value wgu = weight(prog(layer, "moe.gate_up"), {E, m.gated ? 2 * I : I, H}, gateUp, !n.fused, n.transposed, {},
                     0, {}, n.mxfp4);
  Value wd = weight(prog(layer, "moe.down"), {E, H, I}, down, !n.fused, n.transposed, {}, 0, {}, n.mxfp4);
  GluLayout layout = symbolizeGluLayout(n.glu).value();
  Value out = MoeExpertsOp::create(b_, loc_, rows(H), x, route.getIds(), route.getWeights(), wgu, wd, gateUpBias,
                                   downBias, gluAct(m.act, m.limit, m.alpha),
                                   GluLayoutAttr::get(b_.getContext(), layout),
                                   m.gated ? UnitAttr() : b_.getUnitAttr())
                  .getResult();
  if (m.shared_intermediate > 0)
    out = AddOp::create(b_, loc_, out, sharedExpert(layer, x)).getResult();
  if (m.plus_dense)
    out = AddOp::create(b_, loc_, out, denseMlp(layer, x)).getResult();
  return out;
}

OwningOpRef<ModuleOp> StepBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc_);
  b_.setInsertionPointToEnd(module->getBody());

  auto idx = RankedTensorType::get({ShapedType::kDynamic}, b_.getI32Type());
  auto tables = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}, b_.getI32Type());
  SmallVector<Type> argTypes;
  for (int i = 0; i < kNumStepArgs; ++i)
    argTypes.push_back((StepArg)i == StepArg::BlockTables ? Type(tables) : Type(idx));
  auto logitsType = rows(spec_.vocab_size);
  auto func = func::FuncOp::create(b_, loc_, "step", b_.getFunctionType(argTypes, {logitsType}));
  for (int i = 0; i < kNumStepArgs; ++i)
    func.setArgAttr(i, "cbc.name", b_.getStringAttr(stepArgName((StepArg)i)));
  Block *body = func.addEntryBlock();
  b_.setInsertionPointToStart(body);
  auto arg = [&](StepArg a) { return body->getArgument((int)a); };
  tokens_ = arg(StepArg::Tokens);
  positions_ = arg(StepArg::Positions);
  seqIds_ = arg(StepArg::SeqIds);
  cuSeqlens_ = arg(StepArg::CuSeqlens);
  kvLens_ = arg(StepArg::KvLens);
  blockTables_ = arg(StepArg::BlockTables);
  logitRows_ = arg(StepArg::LogitRows);
  promptLens_ = arg(StepArg::PromptLens);
  slots_ = arg(StepArg::Slots);
  hasInitial_ = arg(StepArg::HasInitialState);

  int64_t H = spec_.hidden_size, V = spec_.vocab_size;
  std::string embedName = spec_.prefix + spec_.names.embed + ".weight";
  Value table = weight("embed", {V, H}, embedName);
  // Gemma rounds the embedding scale to the weight dtype before multiplying; Python-float
  // multipliers (Granite, Falcon-H1) are not rounded.
  double embedScale = spec_.embed_scale;
  if (auto ft = llvm::dyn_cast<FloatType>(wtype_); ft && spec_.embed_scale_rounded) {
    llvm::APFloat scale((float)embedScale);
    bool lost;
    scale.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    scale.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
    embedScale = scale.convertToFloat();
  }
  Value x = EmbedOp::create(b_, loc_, rows(H), tokens_, table, b_.getF64FloatAttr(embedScale))
                .getResult();
  embeddings_ = x;
  const Names &nm = spec_.names;
  for (int64_t l = 0; l < spec_.num_layers; ++l) {
    const LayerSpec &L = spec_.layers[l];
    bool post = L.post_norm, hasMixer = L.kind != LayerKind::None;
    // Pre-norm (x + f(norm(x))), sandwich (x + norm(f(norm(x)))) or post-norm (x + norm(f(x))).
    if (hasMixer) {
      // A shared-block layer norms its own inputs (it reads the residual stream itself).
      bool raw = post || L.kind == LayerKind::SharedBlock;
      Value h = mixer(l, raw ? x : layerNorm(l, nm.input_norm, x));
      if (spec_.sandwich_norms || post)
        h = layerNorm(l, nm.post_attn_norm, h);
      if (spec_.residual_scale != 1.0)
        h = act(h, "none", spec_.residual_scale);
      x = AddOp::create(b_, loc_, x, h).getResult();
    }
    if (L.mlp) {
      // A feed-forward-only layer has a single norm, the input norm.
      const std::string &normName = !hasMixer ? nm.input_norm : spec_.sandwich_norms ? nm.pre_ff_norm : nm.post_attn_norm;
      Value m = post ? x : layerNorm(l, normName, x);
      m = L.moe ? moeMlp(l, m) : denseMlp(l, m);
      if (spec_.sandwich_norms || post)
        m = layerNorm(l, nm.post_ff_norm, m);
      if (spec_.residual_scale != 1.0)
        m = act(m, "none", spec_.residual_scale);
      x = AddOp::create(b_, loc_, x, m).getResult();
    }
  }
  // The LM head runs only on each request's last row.
  x = RowsGatherOp::create(b_, loc_, rows(H), x, logitRows_).getResult();
  x = norm(x, weight("final_norm", {H}, spec_.prefix + nm.final_norm + ".weight"));
  Value head = spec_.tie_word_embeddings ? table : weight("lm_head", {V, H}, spec_.lm_head);
  Value logits = linear(x, head);
  if (spec_.logits_scale != 1.0)
    logits = act(logits, "none", spec_.logits_scale);
  if (spec_.final_softcap > 0)
    logits = SoftcapOp::create(b_, loc_, logits, b_.getF64FloatAttr(spec_.final_softcap)).getResult();
  func::ReturnOp::create(b_, loc_, logits);

  // Model metadata the runtime needs; the artefact writer copies it out.
  SmallVector<WeightAliasAttr> aliases;
  auto alias = [&](const std::string &from, const std::string &to) {
    aliases.push_back(WeightAliasAttr::get(b_.getContext(), from, to));
  };
  if (!spec_.outer_model_type.empty()) {
    // Older multimodal checkpoints name the decoder "language_model.model.".
    alias(spec_.prefix, "language_model.model.");
    alias("lm_head.", "language_model.lm_head.");
  }
  for (const auto &[from, to] : spec_.weight_aliases)
    alias(from, to);
  auto meta = ModelAttr::get(b_.getContext(), spec_.model_type, spec_.outer_model_type, V, H, spec_.num_layers,
                             spec_.max_positions, spec_.eos_token_ids, spec_.bos_token_id, spec_.dtype,
                             spec_.quantization, aliases);
  (*module)->setAttr("cbc.model", meta);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> lowerToCbc(const ModelSpec &spec, MLIRContext &ctx,
                                 const LowerOptions &options) {
  ctx.loadDialect<CbcDialect, func::FuncDialect>();
  return StepBuilder(spec, ctx, options).build();
}

} // namespace cbc::hf
