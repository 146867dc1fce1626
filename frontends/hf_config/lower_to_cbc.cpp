#include "frontends/hf_config/lower_to_cbc.h"

#include "dialects/cbc/CbcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace cbc::hf {

using namespace mlir;

const std::vector<std::string> &stepArgumentNames() {
  static const std::vector<std::string> names = {
      "tokens", "positions", "seq_ids", "cu_seqlens", "kv_lens", "block_tables",
      "logit_rows", "prompt_lens", "slots", "has_initial_state"};
  return names;
}

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
               bool transpose = false) {
    SmallVector<Attribute> partAttrs;
    for (const auto &names : parts) {
      SmallVector<Attribute> n;
      for (const auto &s : names)
        n.push_back(b_.getStringAttr(s));
      partAttrs.push_back(b_.getArrayAttr(n));
    }
    auto op = WeightRefOp::create(b_, loc_, RankedTensorType::get(shape, wtype_),
                                     b_.getStringAttr(name), b_.getArrayAttr(partAttrs),
                                     b_.getStringAttr(stack ? "stack" : "none"),
                                     transpose ? b_.getUnitAttr() : UnitAttr());
    return op.getResult();
  }
  Value weight(const std::string &name, ArrayRef<int64_t> shape, const std::string &hfName) {
    return weight(name, shape, std::vector<std::vector<std::string>>{{hfName}});
  }
  std::string hf(int64_t layer, const std::string &rest) {
    return spec_.prefix + "layers." + std::to_string(layer) + "." + rest;
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
  Value attention(int64_t layer, Value x);
  Value denseMlp(int64_t layer, Value x);
  Value moeMlp(int64_t layer, Value x);
  Value sharedExpert(int64_t layer, Value x);
  Value rope(const RopeSpec &r, Value x);

  const ModelSpec &spec_;
  OpBuilder b_;
  Location loc_;
  Type wtype_;
  // step arguments
  Value tokens_, positions_, seqIds_, cuSeqlens_, kvLens_, blockTables_, logitRows_, promptLens_, slots_;
};

Value StepBuilder::rope(const RopeSpec &r, Value x) {
  auto width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
  auto op = RopeOp::create(b_, loc_, rows(width), x, positions_, seqIds_, promptLens_,
      b_.getI64IntegerAttr(spec_.attn.head_dim), b_.getI64IntegerAttr(r.rotary_dim),
      b_.getStringAttr(r.pairing), b_.getDenseF32ArrayAttr(r.inv_freq),
      b_.getF64FloatAttr(r.attention_factor),
      r.inv_freq_long.empty() ? DenseF32ArrayAttr() : b_.getDenseF32ArrayAttr(r.inv_freq_long),
      r.inv_freq_long.empty() ? IntegerAttr() : b_.getI64IntegerAttr(r.long_after),
      r.dynamic_factor ? b_.getF64FloatAttr(r.theta) : FloatAttr(),
      r.dynamic_factor ? b_.getF64FloatAttr(r.dynamic_factor) : FloatAttr(),
      r.dynamic_factor ? b_.getI64IntegerAttr(r.dynamic_max_positions) : IntegerAttr());
  return op.getResult();
}

Value StepBuilder::attention(int64_t layer, Value x) {
  const AttentionSpec &a = spec_.attn;
  const LayerSpec &L = spec_.layers[layer];
  int64_t qw = a.num_heads * a.head_dim, kw = a.num_kv_heads * a.head_dim;
  int64_t H = spec_.hidden_size;

  // One fused q|k|v projection: a single GEMM per layer.
  Value wqkv, bqkv;
  if (spec_.weight_style == WeightStyle::Phi3) {
    wqkv = weight(prog(layer, "attn.qkv"), {qw + 2 * kw, H}, hf(layer, "self_attn.qkv_proj.weight"));
  } else {
    wqkv = weight(prog(layer, "attn.qkv"), {qw + 2 * kw, H},
                  {{hf(layer, "self_attn.q_proj.weight"), hf(layer, "self_attn.k_proj.weight"),
                    hf(layer, "self_attn.v_proj.weight")}});
    if (a.qkv_bias)
      bqkv = weight(prog(layer, "attn.qkv_bias"), {qw + 2 * kw},
                    {{hf(layer, "self_attn.q_proj.bias"), hf(layer, "self_attn.k_proj.bias"),
                      hf(layer, "self_attn.v_proj.bias")}});
  }
  Value qkv = linear(x, wqkv, bqkv);
  auto split = SplitOp::create(b_, loc_, TypeRange{rows(qw), rows(kw), rows(kw)}, qkv);
  Value q = split.getResult(0), k = split.getResult(1), v = split.getResult(2);
  if (a.qk_norm) {
    q = norm(q, weight(prog(layer, "attn.q_norm"), {a.head_dim}, hf(layer, "self_attn.q_norm.weight")),
             a.head_dim);
    k = norm(k, weight(prog(layer, "attn.k_norm"), {a.head_dim}, hf(layer, "self_attn.k_norm.weight")),
             a.head_dim);
  }
  q = rope(L.rope, q);
  k = rope(L.rope, k);

  auto optI64 = [&](int64_t v) { return v > 0 ? b_.getI64IntegerAttr(v) : IntegerAttr(); };
  KvAppendOp::create(b_, loc_, k, v, positions_, seqIds_, slots_, blockTables_,
                        b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(a.num_kv_heads),
                        b_.getI64IntegerAttr(a.head_dim), optI64(L.window), IntegerAttr(),
                        IntegerAttr());
  Value sinks;
  if (a.sinks)
    sinks = weight(prog(layer, "attn.sinks"), {a.num_heads}, hf(layer, "self_attn.sinks"));
  Value o = KvAttentionOp::create(b_, loc_, rows(qw), q, positions_, seqIds_, cuSeqlens_, kvLens_, slots_, blockTables_, sinks,
                 b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(a.num_heads),
                 b_.getI64IntegerAttr(a.num_kv_heads), b_.getI64IntegerAttr(a.head_dim),
                 b_.getF64FloatAttr(a.scale), optI64(L.window), IntegerAttr(),
                 a.softcap > 0 ? b_.getF64FloatAttr(a.softcap) : FloatAttr(), IntegerAttr())
                .getResult();
  Value wo = weight(prog(layer, "attn.o"), {H, qw}, hf(layer, "self_attn.o_proj.weight"));
  Value bo;
  if (a.o_bias)
    bo = weight(prog(layer, "attn.o_bias"), {H}, hf(layer, "self_attn.o_proj.bias"));
  return linear(o, wo, bo);
}

Value StepBuilder::denseMlp(int64_t layer, Value x) {
  int64_t I = spec_.mlp.intermediate, H = spec_.hidden_size;
  Value wgu;
  if (spec_.weight_style == WeightStyle::Phi3)
    wgu = weight(prog(layer, "mlp.gate_up"), {2 * I, H}, hf(layer, "mlp.gate_up_proj.weight"));
  else
    wgu = weight(prog(layer, "mlp.gate_up"), {2 * I, H},
                 {{hf(layer, "mlp.gate_proj.weight"), hf(layer, "mlp.up_proj.weight")}});
  Value bgu, bdown;
  if (spec_.mlp.bias) {
    bgu = weight(prog(layer, "mlp.gate_up_bias"), {2 * I},
                 {{hf(layer, "mlp.gate_proj.bias"), hf(layer, "mlp.up_proj.bias")}});
    bdown = weight(prog(layer, "mlp.down_bias"), {H}, hf(layer, "mlp.down_proj.bias"));
  }
  Value gu = linear(x, wgu, bgu);
  Value act = GluOp::create(b_, loc_, rows(I), gu, b_.getStringAttr(spec_.mlp.act),
                               b_.getStringAttr("halves"), FloatAttr(), FloatAttr())
                  .getResult();
  Value wdown = weight(prog(layer, "mlp.down"), {H, I}, hf(layer, "mlp.down_proj.weight"));
  return linear(act, wdown, bdown);
}

Value StepBuilder::sharedExpert(int64_t layer, Value x) {
  int64_t I = spec_.moe.shared_intermediate, H = spec_.hidden_size;
  Value wgu = weight(prog(layer, "moe.shared.gate_up"), {2 * I, H},
                     {{hf(layer, "mlp.shared_expert.gate_proj.weight"),
                       hf(layer, "mlp.shared_expert.up_proj.weight")}});
  Value act = GluOp::create(b_, loc_, rows(I), linear(x, wgu), b_.getStringAttr(spec_.moe.act),
                               b_.getStringAttr("halves"), FloatAttr(), FloatAttr())
                  .getResult();
  Value out = linear(act, weight(prog(layer, "moe.shared.down"), {H, I},
                                 hf(layer, "mlp.shared_expert.down_proj.weight")));
  if (spec_.moe.shared_gate) {
    Value g = linear(x, weight(prog(layer, "moe.shared.gate"), {1, H},
                               hf(layer, "mlp.shared_expert_gate.weight")));
    out = GateOp::create(b_, loc_, rows(H), out, g, b_.getStringAttr("sigmoid")).getResult();
  }
  return out;
}

Value StepBuilder::moeMlp(int64_t layer, Value x) {
  const MoeSpec &m = spec_.moe;
  int64_t E = m.num_experts, I = m.intermediate, H = spec_.hidden_size;
  std::string routerName;
  std::vector<std::vector<std::string>> gateUp, down;
  Value gateUpBias, downBias;
  bool transpose = false;
  switch (spec_.expert_style) {
  case ExpertStyle::Mixtral:
    routerName = hf(layer, "block_sparse_moe.gate.weight");
    for (int64_t e = 0; e < E; ++e) {
      std::string p = hf(layer, "block_sparse_moe.experts." + std::to_string(e) + ".");
      gateUp.push_back({p + "w1.weight", p + "w3.weight"});
      down.push_back({p + "w2.weight"});
    }
    break;
  case ExpertStyle::Qwen:
    routerName = hf(layer, "mlp.gate.weight");
    for (int64_t e = 0; e < E; ++e) {
      std::string p = hf(layer, "mlp.experts." + std::to_string(e) + ".");
      gateUp.push_back({p + "gate_proj.weight", p + "up_proj.weight"});
      down.push_back({p + "down_proj.weight"});
    }
    break;
  case ExpertStyle::GptOss:
    routerName = hf(layer, "mlp.router.weight");
    gateUp = {{hf(layer, "mlp.experts.gate_up_proj")}};
    down = {{hf(layer, "mlp.experts.down_proj")}};
    transpose = true;
    gateUpBias = weight(prog(layer, "moe.gate_up_bias"), {E, 2 * I},
                        hf(layer, "mlp.experts.gate_up_proj_bias"));
    downBias = weight(prog(layer, "moe.down_bias"), {E, H}, hf(layer, "mlp.experts.down_proj_bias"));
    break;
  case ExpertStyle::None:
    llvm_unreachable("MoE layer without an expert style");
  }
  Value router = weight(prog(layer, "moe.router"), {E, H}, routerName);
  Value routerBias;
  if (m.router_bias)
    routerBias = weight(prog(layer, "moe.router_bias"), {E}, hf(layer, "mlp.router.bias"));
  Value logits = linear(x, router, routerBias);
  auto route = MoeRouteOp::create(b_, loc_, TypeRange{rows(m.top_k), rowsI32(m.top_k)}, logits,
                                     b_.getI64IntegerAttr(m.top_k), b_.getStringAttr(m.score),
                                     b_.getBoolAttr(m.renorm), b_.getF64FloatAttr(1.0));
  // A single fused tensor (gpt-oss) is already [E, ...]; per-expert tensors are stacked.
  bool stacked = gateUp.size() > 1 || spec_.expert_style != ExpertStyle::GptOss;
  Value wgu = weight(prog(layer, "moe.gate_up"), {E, 2 * I, H}, gateUp, stacked, transpose);
  Value wd = weight(prog(layer, "moe.down"), {E, H, I}, down, stacked, transpose);
  bool gptOss = m.act == "gpt_oss";
  Value out = MoeExpertsOp::create(b_, loc_, rows(H), x, route.getIds(), route.getWeights(), wgu, wd, gateUpBias,
                   downBias, b_.getStringAttr(m.act),
                   b_.getStringAttr(gptOss ? "interleaved" : "halves"),
                   gptOss ? b_.getF64FloatAttr(m.limit) : FloatAttr(),
                   gptOss ? b_.getF64FloatAttr(m.alpha) : FloatAttr())
                  .getResult();
  if (m.shared_intermediate > 0)
    out = AddOp::create(b_, loc_, out, sharedExpert(layer, x)).getResult();
  return out;
}

OwningOpRef<ModuleOp> StepBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc_);
  b_.setInsertionPointToEnd(module->getBody());

  auto idx = RankedTensorType::get({ShapedType::kDynamic}, b_.getI32Type());
  auto tables = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}, b_.getI32Type());
  SmallVector<Type> argTypes;
  for (const std::string &name : stepArgumentNames())
    argTypes.push_back(name == "block_tables" ? Type(tables) : Type(idx));
  auto logitsType = rows(spec_.vocab_size);
  auto func = func::FuncOp::create(b_, loc_, "step", b_.getFunctionType(argTypes, {logitsType}));
  for (auto [i, name] : llvm::enumerate(stepArgumentNames()))
    func.setArgAttr(i, "cbc.name", b_.getStringAttr(name));
  Block *body = func.addEntryBlock();
  b_.setInsertionPointToStart(body);
  tokens_ = body->getArgument(0);
  positions_ = body->getArgument(1);
  seqIds_ = body->getArgument(2);
  cuSeqlens_ = body->getArgument(3);
  kvLens_ = body->getArgument(4);
  blockTables_ = body->getArgument(5);
  logitRows_ = body->getArgument(6);
  promptLens_ = body->getArgument(7);
  slots_ = body->getArgument(8);

  int64_t H = spec_.hidden_size, V = spec_.vocab_size;
  std::string embedName = spec_.prefix + "embed_tokens.weight";
  Value table = weight("embed", {V, H}, embedName);
  // transformers rounds the embedding scale to the weight dtype before multiplying.
  double embedScale = spec_.embed_scale;
  if (auto ft = llvm::dyn_cast<FloatType>(wtype_)) {
    llvm::APFloat scale((float)embedScale);
    bool lost;
    scale.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    scale.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
    embedScale = scale.convertToFloat();
  }
  Value x = EmbedOp::create(b_, loc_, rows(H), tokens_, table, b_.getF64FloatAttr(embedScale))
                .getResult();
  for (int64_t l = 0; l < spec_.num_layers; ++l) {
    Value h = attention(l, layerNorm(l, "input_layernorm", x));
    if (spec_.sandwich_norms)
      h = layerNorm(l, "post_attention_layernorm", h);
    x = AddOp::create(b_, loc_, x, h).getResult();
    Value m = layerNorm(l, spec_.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm", x);
    m = spec_.layers[l].moe ? moeMlp(l, m) : denseMlp(l, m);
    if (spec_.sandwich_norms)
      m = layerNorm(l, "post_feedforward_layernorm", m);
    x = AddOp::create(b_, loc_, x, m).getResult();
  }
  // The LM head runs only on each request's last row.
  x = RowsGatherOp::create(b_, loc_, rows(H), x, logitRows_).getResult();
  x = norm(x, weight("final_norm", {H}, spec_.prefix + "norm.weight"));
  Value head = spec_.tie_word_embeddings ? table : weight("lm_head", {V, H}, spec_.lm_head);
  Value logits = linear(x, head);
  if (spec_.final_softcap > 0)
    logits = SoftcapOp::create(b_, loc_, logits, b_.getF64FloatAttr(spec_.final_softcap)).getResult();
  func::ReturnOp::create(b_, loc_, logits);

  // Model metadata the runtime needs; the artefact writer copies it out.
  SmallVector<NamedAttribute> meta;
  meta.push_back(b_.getNamedAttr("model_type", b_.getStringAttr(spec_.model_type)));
  meta.push_back(b_.getNamedAttr("vocab_size", b_.getI64IntegerAttr(V)));
  meta.push_back(b_.getNamedAttr("hidden_size", b_.getI64IntegerAttr(H)));
  meta.push_back(b_.getNamedAttr("num_layers", b_.getI64IntegerAttr(spec_.num_layers)));
  meta.push_back(b_.getNamedAttr("max_positions", b_.getI64IntegerAttr(spec_.max_positions)));
  meta.push_back(b_.getNamedAttr("eos_token_ids", b_.getDenseI64ArrayAttr(spec_.eos_token_ids)));
  meta.push_back(b_.getNamedAttr("bos_token_id", b_.getI64IntegerAttr(spec_.bos_token_id)));
  meta.push_back(b_.getNamedAttr("checkpoint_dtype", b_.getStringAttr(spec_.dtype)));
  if (!spec_.quantization.empty())
    meta.push_back(b_.getNamedAttr("quantization", b_.getStringAttr(spec_.quantization)));
  if (!spec_.outer_model_type.empty()) {
    meta.push_back(b_.getNamedAttr("outer_model_type", b_.getStringAttr(spec_.outer_model_type)));
    // Older multimodal checkpoints name the decoder "language_model.model.".
    meta.push_back(b_.getNamedAttr(
        "weight_aliases",
        b_.getArrayAttr({b_.getArrayAttr({b_.getStringAttr(spec_.prefix),
                                          b_.getStringAttr("language_model.model.")}),
                         b_.getArrayAttr({b_.getStringAttr("lm_head."),
                                          b_.getStringAttr("language_model.lm_head.")})})));
  }
  (*module)->setAttr("cbc.model", b_.getDictionaryAttr(meta));
  return module;
}

} // namespace

OwningOpRef<ModuleOp> lowerToCbc(const ModelSpec &spec, MLIRContext &ctx,
                                 const LowerOptions &options) {
  ctx.loadDialect<CbcDialect, func::FuncDialect>();
  return StepBuilder(spec, ctx, options).build();
}

} // namespace cbc::hf
