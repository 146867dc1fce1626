// The helpers every mixer's lowering shares: types, weight references, names and small ops.
#include "frontends/hf_config/lower/step_builder.h"

namespace cbc::hf::lower {

using namespace mlir;

StepBuilder::StepBuilder(const ModelSpec &spec, MLIRContext &ctx, const LowerOptions &options)
    : spec_(spec), b_(&ctx), loc_(b_.getUnknownLoc()) {
  if (options.weight_dtype == "f32")
    wtype_ = b_.getF32Type();
  else if (options.weight_dtype == "f16")
    wtype_ = b_.getF16Type();
  else
    wtype_ = b_.getBF16Type();
}

RankedTensorType StepBuilder::rows(int64_t width) {
  return RankedTensorType::get({ShapedType::kDynamic, width}, b_.getF32Type());
}

RankedTensorType StepBuilder::rowsI32(int64_t width) {
  return RankedTensorType::get({ShapedType::kDynamic, width}, b_.getI32Type());
}

Value StepBuilder::weight(const std::string &name, ArrayRef<int64_t> shape, const WeightRef &ref) {
  MLIRContext *ctx = b_.getContext();
  // MXFP4 blocks of 32 codes along each row, each with a power-of-two scale.
  Attribute format = ref.mxfp4 ? QuantAttr::get(ctx, QuantScheme::mxfp4, {1, 32}, b_.getType<Float8E8M0FNUType>())
                               : Attribute();
  auto type = RankedTensorType::get(shape, wtype_, format);
  // A program name met before (a shared block's weights) is the same weight.
  if (auto it = weights_.find(name); it != weights_.end()) {
    assert(it->second.getType() == type && "one program weight name, two shapes");
    return it->second;
  }
  SmallVector<Attribute> parts;
  for (const auto &names : ref.parts) {
    SmallVector<Attribute> n;
    for (const auto &s : names)
      n.push_back(b_.getStringAttr(s));
    parts.push_back(b_.getArrayAttr(n));
  }
  auto op = WeightRefOp::create(
      b_, loc_, type, b_.getStringAttr(name), b_.getArrayAttr(parts),
      WeightCombineAttr::get(ctx, ref.stack ? WeightCombine::stack : WeightCombine::none),
      ref.transpose ? b_.getUnitAttr() : UnitAttr(), DequantAttr(),
      ref.regroup.empty() ? DenseI64ArrayAttr() : b_.getDenseI64ArrayAttr(ref.regroup),
      ref.block_diag ? b_.getI64IntegerAttr(ref.block_diag) : IntegerAttr(),
      ref.row_scales.empty() ? DenseF64ArrayAttr() : b_.getDenseF64ArrayAttr(ref.row_scales),
      ref.flatten ? b_.getUnitAttr() : UnitAttr(), TypeAttr(), ShardAttr());
  weights_[name] = op.getResult();
  return op.getResult();
}

Value StepBuilder::fp32Weight(const std::string &name, ArrayRef<int64_t> shape, const WeightRef &ref) {
  auto saved = wtype_;
  wtype_ = b_.getF32Type();
  Value w = weight(name, shape, ref);
  wtype_ = saved;
  return w;
}

SmallVector<double> StepBuilder::scales(std::initializer_list<std::pair<int64_t, double>> runs) {
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

// The module of decoder layer `layer`: <layers>.<n>, or with recurrent stacks the stack layer
// that cache layer runs (one weight set for all its calls).
std::string StepBuilder::layerModule(int64_t layer) const {
  const RecurrentStacksSpec &st = spec_.stacks;
  if (st.depth == 0)
    return spec_.names.layers + "." + std::to_string(layer);
  bool high = layer / st.depth % (st.inner + 1) == st.inner;
  return (high ? st.high : st.low) + ".layers." + std::to_string(layer % st.depth);
}

std::string StepBuilder::hf(int64_t layer, const std::string &rest) const {
  return spec_.prefix + layerModule(layer) + "." + rest;
}

// An empty Names::mlp: the MLP's projections sit in the layer itself (OPT's fc1, fc2).
std::string StepBuilder::mlpName(int64_t layer, const std::string &rest) const {
  return hf(layer, spec_.names.mlp.empty() ? rest : spec_.names.mlp + "." + rest);
}

std::string StepBuilder::prog(int64_t layer, const std::string &rest) const {
  return (spec_.stacks.depth ? layerModule(layer) : "layers." + std::to_string(layer)) + "." + rest;
}

AttnSite StepBuilder::attnSite(int64_t layer) const {
  return {hf(layer, spec_.names.attn + "."), prog(layer, "attn."), spec_.hidden_size, ""};
}

ActivationAttr StepBuilder::actAttr(Activation a) { return ActivationAttr::get(b_.getContext(), a); }

Attribute StepBuilder::gluAct(FfnActivation a, double limit, double alpha, double upOffset) {
  if (a == FfnActivation::ClampedSwiglu)
    return ClampedSwigluAttr::get(b_.getContext(), llvm::APFloat(limit), llvm::APFloat(alpha), llvm::APFloat(upOffset));
  if (a == FfnActivation::SoftcappedSwiglu)
    return SoftcappedSwigluAttr::get(b_.getContext(), llvm::APFloat(limit), llvm::APFloat(alpha));
  return actAttr(toDialect(a));
}

Value StepBuilder::glu(Value x, int64_t width, Attribute act, GluLayout layout) {
  return GluOp::create(b_, loc_, rows(width), x, act, GluLayoutAttr::get(b_.getContext(), layout)).getResult();
}

Value StepBuilder::norm(Value x, Value w, std::optional<int64_t> group, std::optional<double> eps) {
  auto width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
  return RmsNormOp::create(b_, loc_, rows(width), x, w, b_.getF64FloatAttr(eps.value_or(spec_.norm_eps)),
                           b_.getF64FloatAttr(spec_.norm_offset),
                           group ? b_.getI64IntegerAttr(*group) : IntegerAttr())
      .getResult();
}

Value StepBuilder::layerNorm(int64_t layer, const std::string &hfName, Value x) {
  return modelNorm(prog(layer, hfName), hf(layer, hfName), x, spec_.layer_norm_eps.value_or(spec_.norm_eps));
}

Value StepBuilder::modelNorm(const std::string &progName, const std::string &hfName, Value x, double eps) {
  int64_t H = spec_.hidden_size;
  if (spec_.norm_kind == NormKind::Rms)
    return norm(x, spec_.norm_weight ? weight(progName, {H}, hfName + ".weight") : Value(), std::nullopt, eps);
  Value w = spec_.norm_weight ? weight(progName, {H}, hfName + ".weight") : Value();
  Value b = spec_.norm_bias ? weight(progName + "_bias", {H}, hfName + ".bias") : Value();
  return LayerNormOp::create(b_, loc_, rows(H), x, w, b, b_.getF64FloatAttr(eps), b_.getF64FloatAttr(spec_.norm_offset),
                             IntegerAttr())
      .getResult();
}

Value StepBuilder::layerNorm(int64_t layer, const std::string &hfName, Value x, bool gated) {
  if (!gated)
    return layerNorm(layer, hfName, x);
  const NormGateSpec &g = spec_.norm_gate;
  int64_t H = spec_.hidden_size;
  std::string p = hfName + ".", hfp = hfName + ".";
  Value y = norm(x, weight(prog(layer, p + "norm"), {H}, hf(layer, hfp + g.weight)));
  Value down = weight(prog(layer, p + "gate_down"), {g.rank, H}, hf(layer, hfp + g.down));
  Value up = weight(prog(layer, p + "gate_up"), {H, g.rank}, hf(layer, hfp + g.up));
  // The gate reads the normed y, not x.
  Value gate = linear(act(linear(y, down), Activation::silu), up);
  return GateOp::create(b_, loc_, rows(H), y, gate).getResult();
}

Value StepBuilder::linear(Value x, Value w, Value bias) {
  auto n = llvm::cast<RankedTensorType>(w.getType()).getDimSize(0);
  return LinearOp::create(b_, loc_, rows(n), x, w, bias).getResult();
}

Value StepBuilder::conv1d(int64_t layer, Value x, Value w, Value bias, Activation act, StringRef state,
                          bool residual, Value initial, const ConvExtras &extras) {
  return StateConv1dOp::create(b_, loc_, x.getType(), x, w, bias, initial, extras.taps, cuSeqlens_, stateIn_,
                               stateOut_, hasInitial_, b_.getI64IntegerAttr(layer), actAttr(act),
                               residual ? b_.getUnitAttr() : UnitAttr(),
                               extras.lag_order ? b_.getUnitAttr() : UnitAttr(), b_.getF64FloatAttr(extras.scale),
                               b_.getI64IntegerAttr(extras.dilation), b_.getStringAttr(state))
      .getResult();
}

Value StepBuilder::act(Value x, Activation kind) {
  return ActOp::create(b_, loc_, x.getType(), x, actAttr(kind), b_.getF64FloatAttr(1.0)).getResult();
}

Value StepBuilder::xielu(Value x, const std::string &progPrefix, const std::string &hfPrefix) {
  // beta and eps are stored 0-dimensional (buffers), which the loader reads as [1].
  auto param = [&](const char *name) { return weight(progPrefix + name, {1}, hfPrefix + name); };
  return XieluOp::create(b_, loc_, x.getType(), x, param("alpha_p"), param("alpha_n"), param("beta"), param("eps"))
      .getResult();
}

Value StepBuilder::scaleBy(Value x, double factor) {
  return ActOp::create(b_, loc_, x.getType(), x, actAttr(Activation::none), b_.getF64FloatAttr(factor)).getResult();
}

SmallVector<Value> StepBuilder::split(Value x, ArrayRef<int64_t> widths) {
  // A kernel launch passes one pointer per output (runtime/schema/kernel_abi.h has room for 24):
  // more pieces split in two levels, runs of 16 first.
  constexpr size_t kRun = 16;
  if (widths.size() > kRun) {
    SmallVector<int64_t> runs;
    for (size_t i = 0; i < widths.size(); i += kRun) {
      int64_t w = 0;
      for (size_t j = i; j < std::min(widths.size(), i + kRun); ++j)
        w += widths[j];
      runs.push_back(w);
    }
    SmallVector<Value> out;
    SmallVector<Value> parts = split(x, runs);
    for (size_t r = 0; r < parts.size(); ++r)
      out.append(split(parts[r], widths.slice(r * kRun, std::min(kRun, widths.size() - r * kRun))));
    return out;
  }
  SmallVector<Type> types;
  for (int64_t w : widths)
    types.push_back(rows(w));
  auto op = SplitOp::create(b_, loc_, types, x);
  return SmallVector<Value>(op.getResults().begin(), op.getResults().end());
}

Value StepBuilder::mul(Value x, Value g) {
  auto width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
  return MulOp::create(b_, loc_, rows(width), x, g).getResult();
}

Value StepBuilder::add(Value a, Value b) { return AddOp::create(b_, loc_, a.getType(), a, b).getResult(); }

} // namespace cbc::hf::lower
