// The step's skeleton: its arguments (runtime/schema/step_abi.h), the embedding, the residual
// stream through every decoder layer (pre-norm, sandwich or post-norm), the LM head on each
// request's last row and the model's metadata.
#include "frontends/hf_config/lower/step_builder.h"
#include "runtime/schema/step_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>

namespace cbc::hf {

using namespace mlir;

namespace lower {

func::FuncOp StepBuilder::declareStep(ModuleOp module) {
  b_.setInsertionPointToEnd(module.getBody());
  auto idx = RankedTensorType::get({ShapedType::kDynamic}, b_.getI32Type());
  auto tables =
      RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}, b_.getI32Type());
  SmallVector<Type> argTypes;
  for (int i = 0; i < kNumStepArgs; ++i)
    argTypes.push_back((StepArg)i == StepArg::BlockTables    ? Type(tables)
                       : (StepArg)i == StepArg::InjectEmbeds ? Type(rows(spec_.hidden_size))
                                                             : Type(idx));
  auto func = func::FuncOp::create(b_, loc_, "step", b_.getFunctionType(argTypes, {rows(spec_.vocab_size)}));
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
  stateIn_ = arg(StepArg::StateIn);
  stateOut_ = arg(StepArg::StateOut);
  injectRows_ = arg(StepArg::InjectRows);
  injectEmbeds_ = arg(StepArg::InjectEmbeds);
  ropePositions_ = arg(StepArg::RopePositions);
  keyEnds_ = arg(StepArg::KeyEnds);
  return func;
}

// The embedding rows; `table` is the embedding weight (a tied head reuses it).
Value StepBuilder::embed(Value &table) {
  int64_t H = spec_.hidden_size, E = spec_.embed_dim ? spec_.embed_dim : H;
  table = weight("embed", {spec_.padded_vocab ? spec_.padded_vocab : spec_.vocab_size, E},
                 spec_.prefix + spec_.names.embed + ".weight");
  embeddings_ = EmbedOp::create(b_, loc_, rows(E), tokens_, table, b_.getF64FloatAttr(embedScale(spec_.embed_scale)),
                                b_.getI64IntegerAttr(0), IntegerAttr(), b_.getI64IntegerAttr(1))
                    .getResult();
  if (!spec_.embed_proj.empty())
    embeddings_ = linear(embeddings_, weight("embed_proj", {H, E}, spec_.prefix + spec_.embed_proj + ".weight"));
  if (spec_.positions.kind != AbsolutePositions::None)
    embeddings_ = add(embeddings_, absolutePositions());
  if (const std::string &affine = spec_.names.embed_affine; !affine.empty()) {
    embeddings_ = add(embeddings_, weight("embed_bias", {H}, spec_.prefix + affine + "_bias"));
    embeddings_ = mul(embeddings_, weight("embed_scale", {H}, spec_.prefix + affine + "_scale"));
  }
  if (spec_.embed_norm) {
    const Names &nm = spec_.names;
    std::string module = spec_.prefix + (nm.embed_norm.empty() ? nm.embed + ".embed_norm" : nm.embed_norm);
    embeddings_ = spec_.norm_kind == NormKind::Rms
                      ? norm(embeddings_, spec_.norm_weight ? weight("embed_norm", {H}, module + ".weight") : Value())
                      : modelNorm("embed_norm", module, embeddings_);
  }
  // A multimodal model's encoders' rows replace its placeholder tokens' embeddings last: they
  // take neither the table's scale nor its norm (transformers scatters them into the output of
  // the embedding module).
  if (spec_.injects_embeddings)
    embeddings_ = RowsInjectOp::create(b_, loc_, rows(H), embeddings_, injectRows_, injectEmbeds_).getResult();
  return embeddings_;
}

// A multiplier the checkpoint's dtype holds (a tensor buffer, not a Python float), rounded to it.
double StepBuilder::toWeightDtype(double value) const {
  auto ft = llvm::dyn_cast<FloatType>(wtype_);
  if (!ft)
    return value;
  llvm::APFloat rounded((float)value);
  bool lost;
  rounded.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
  rounded.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return rounded.convertToFloat();
}

// Some families round the embedding scale to the weight dtype before multiplying; Python-float
// multipliers are not rounded.
double StepBuilder::embedScale(double scale) const { return spec_.embed_scale_rounded ? toWeightDtype(scale) : scale; }

// PerLayerInputSpec's inputs, one [T, dim] slice per layer: the token's rows of the per-layer
// table and the projected embeddings, normed per slice, summed and scaled by 2^-1/2.
void StepBuilder::perLayerInputs() {
  const PerLayerInputSpec &p = spec_.per_layer_inputs;
  int64_t L = spec_.num_layers, D = p.dim, H = spec_.hidden_size;
  Value table = weight("per_layer.embed", {p.vocab, L * D}, spec_.prefix + p.embed + ".weight");
  // A table shorter than the vocabulary: the ids past it read row 0 (Gemma 3n's masking).
  IntegerAttr oov = p.vocab < spec_.vocab_size ? b_.getI64IntegerAttr(0) : IntegerAttr();
  Value byToken = EmbedOp::create(b_, loc_, rows(L * D), tokens_, table,
                                  b_.getF64FloatAttr(embedScale(std::sqrt((double)D))), b_.getI64IntegerAttr(0), oov,
                                  b_.getI64IntegerAttr(1))
                      .getResult();
  Value projected = linear(embeddings_, weight("per_layer.projection", {L * D, H}, spec_.prefix + p.projection + ".weight"));
  auto factor = [&](double f) { return p.scales_rounded ? toWeightDtype(f) : f; };
  projected = norm(scaleBy(projected, factor(1.0 / std::sqrt((double)H))),
                   weight("per_layer.norm", {D}, spec_.prefix + p.norm + ".weight"), D);
  SmallVector<Value> slices =
      split(scaleBy(add(projected, byToken), factor(1.0 / std::sqrt(2.0))), SmallVector<int64_t>(L, D));
  perLayerSlices_.assign(slices.begin(), slices.end());
}

// The per-layer input's branch on x: norm(projection(act(gate(x)) * the layer's input slice)).
Value StepBuilder::perLayerBranch(int64_t l, Value x) {
  const PerLayerInputSpec &p = spec_.per_layer_inputs;
  int64_t D = p.dim, H = spec_.hidden_size;
  Value g = act(linear(x, weight(prog(l, "per_layer.gate"), {D, H}, hf(l, p.gate + ".weight"))),
                toDialect(spec_.mlp.act));
  Value h = linear(mul(g, perLayerSlices_[l]),
                   weight(prog(l, "per_layer.projection"), {H, D}, hf(l, p.layer_projection + ".weight")));
  return norm(h, weight(prog(l, "per_layer.norm"), {H}, hf(l, p.layer_norm + ".weight")));
}

// After the layer's blocks: the per-layer input's gated branch, then the layer's learned scalar.
Value StepBuilder::layerEpilogue(int64_t l, Value x) {
  if (spec_.per_layer_inputs.dim > 0)
    x = add(x, perLayerBranch(l, x));
  if (!spec_.names.layer_scalar.empty())
    x = mul(x, weight(prog(l, "layer_scalar"), {1}, hf(l, spec_.names.layer_scalar)));
  return x;
}

// Learned rows of a position table, or sinusoidal ones computed from the position.
Value StepBuilder::absolutePositions() {
  const PositionEmbeddingSpec &p = spec_.positions;
  int64_t H = spec_.hidden_size;
  if (p.kind == AbsolutePositions::Sinusoidal)
    return SinusoidalPositionOp::create(
               b_, loc_, rows(H), positions_, b_.getI64IntegerAttr(p.offset), b_.getF64FloatAttr(10000.0),
               p.padding_row ? b_.getI64IntegerAttr(*p.padding_row) : IntegerAttr(),
               SinusoidFormAttr::get(b_.getContext(), p.power ? SinusoidForm::power : SinusoidForm::log_step))
        .getResult();
  Value table = weight("positions", {p.rows, H}, spec_.prefix + p.table);
  return EmbedOp::create(b_, loc_, rows(H), positions_, table, b_.getF64FloatAttr(1.0),
                         b_.getI64IntegerAttr(p.offset), IntegerAttr(), b_.getI64IntegerAttr(1))
      .getResult();
}

// Pre-norm (x + f(norm(x))), sandwich (x + norm(f(norm(x)))) or post-norm (x + norm(f(x))), for
// the mixer and then the feed-forward block, each where the layer has one; each add may weigh
// the stream and the branch (LayerSpec's alpha and beta).
Value StepBuilder::decoderLayer(int64_t l, Value x) {
  if (spec_.altup.streams > 0)
    return altUpLayer(l, x);
  if (spec_.hyper.streams > 0)
    return hyperLayer(l, x);
  if (spec_.layers[l].kind == LayerKind::Rwkv)
    return rwkvLayer(l, x);
  return layerEpilogue(l, decoderBlocks(l, x));
}

Value StepBuilder::decoderBlocks(int64_t l, Value x) {
  if (spec_.dual_sublayers)
    return dualSublayerLayer(l, x);
  if (spec_.layers[l].normed_residual)
    return normedResidualLayer(l, x);
  const LayerSpec &L = spec_.layers[l];
  const Names &nm = spec_.names;
  bool post = L.post_norm, hasMixer = L.kind != LayerKind::None;
  // alpha * x + beta * h, beta with the model's residual scale, x times a learned vector where
  // the layer has one; or the affine form of `site`.
  auto residual = [&](Value h, double alpha, double beta, const std::string &site = "",
                      const std::string &scale = "") {
    if (!site.empty())
      return affineResidual(l, site, x, h);
    beta *= spec_.residual_scale;
    Value r = alpha == 1.0 ? x : scaleBy(x, alpha);
    if (!scale.empty())
      r = mul(r, weight(prog(l, scale), {spec_.hidden_size}, hf(l, scale)));
    return add(r, beta == 1.0 ? h : scaleBy(h, beta));
  };
  if (L.norm_after_add) {
    x = layerNorm(l, nm.input_norm, add(x, mixer(l, x)));
    return layerNorm(l, nm.post_attn_norm, add(x, L.moe ? moeMlp(l, x) : denseMlp(l, x)));
  }
  if (L.parallel) {
    Value h = layerNorm(l, nm.input_norm, x);
    Value a = mixer(l, h);
    if (L.parallel_norms)
      h = layerNorm(l, nm.post_attn_norm, x);
    Value m = L.moe ? moeMlp(l, h) : denseMlp(l, h);
    x = residual(a, L.mixer_alpha, L.mixer_beta);
    return residual(m, L.mlp_alpha, L.mlp_beta);
  }
  if (hasMixer) {
    // A shared-block layer norms its own inputs (it reads the residual stream itself).
    bool raw = post || L.kind == LayerKind::SharedBlock || !L.input_norm;
    Value h = mixer(l, raw ? x : layerNorm(l, nm.input_norm, x, L.gated_input_norm));
    if (spec_.sandwich_norms || post)
      h = layerNorm(l, nm.post_attn_norm, h);
    if (spec_.branch_conv_kernel > 0)
      h = residualConv(l, h, "attn_sconv", "attn_conv");
    x = residual(h, L.mixer_alpha, L.mixer_beta, nm.affine_mixer, nm.mixer_residual_scale);
  }
  if (L.mlp) {
    // A feed-forward-only layer has a single norm, the input norm.
    const std::string &normName = !hasMixer ? nm.input_norm : spec_.sandwich_norms ? nm.pre_ff_norm : nm.post_attn_norm;
    Value m = post ? x : layerNorm(l, normName, x, L.gated_ff_norm);
    m = L.moe ? moeMlp(l, m) : denseMlp(l, m);
    if (spec_.sandwich_norms || post)
      m = layerNorm(l, nm.post_ff_norm, m);
    if (spec_.branch_conv_kernel > 0)
      m = residualConv(l, m, "mlp_sconv", "mlp_conv");
    x = residual(m, L.mlp_alpha, L.mlp_beta, nm.affine_mlp, nm.mlp_residual_scale);
  }
  return x;
}

Value StepBuilder::affineResidual(int64_t l, const std::string &site, Value x, Value f) {
  int64_t H = spec_.hidden_size;
  auto vec = [&](const char *name) {
    return weight(prog(l, site + "." + name), {H}, hf(l, site + "." + name));
  };
  Value branch = mul(add(f, vec("hidden_states_bias")), vec("hidden_states_scale"));
  return add(branch, mul(add(x, vec("residual_bias")), vec("residual_scale")));
}

// The residual stream carries the normed input: h = norm(x); x = alpha h + beta mixer(h); then
// the same for the feed-forward block with the post-attention norm and its own (alpha, beta).
Value StepBuilder::normedResidualLayer(int64_t l, Value x) {
  const LayerSpec &L = spec_.layers[l];
  auto mix = [&](Value h, Value f, double alpha, double beta) {
    return add(alpha == 1.0 ? h : scaleBy(h, alpha), beta == 1.0 ? f : scaleBy(f, beta));
  };
  Value h = layerNorm(l, spec_.names.input_norm, x);
  x = mix(h, mixer(l, h), L.mixer_alpha, L.mixer_beta);
  if (!L.mlp)
    return x;
  h = layerNorm(l, spec_.names.post_attn_norm, x);
  return mix(h, L.moe ? moeMlp(l, h) : denseMlp(l, h), L.mlp_alpha, L.mlp_beta);
}

// Two latent-attention sublayers, each followed by its own dense MLP (modules `.0` and `.1`); the
// layer's MoE reads the first sublayer's MLP input and its output joins the residual stream at
// the end of the layer. Sublayer i keeps cache layer 2 * layer + i.
Value StepBuilder::dualSublayerLayer(int64_t l, Value x) {
  Value moeOut;
  for (int64_t i = 0; i < 2; ++i) {
    std::string n = std::to_string(i);
    AttnSite site{hf(l, spec_.names.attn + "." + n + "."), prog(l, "attn" + n + "."), spec_.hidden_size, ""};
    x = add(x, latentAttention(layerNorm(l, spec_.names.input_norm + "." + n, x), site, l, 2 * l + i));
    Value y = layerNorm(l, spec_.names.post_attn_norm + "." + n, x);
    if (i == 0)
      moeOut = moeMlp(l, y);
    x = add(x, denseMlp(l, y, "mlps." + n));
  }
  return add(x, moeOut);
}

Value StepBuilder::mixer(int64_t layer, Value x) {
  switch (spec_.layers[layer].kind) {
  case LayerKind::LinearAttention:
    return gatedDeltaNet(layer, x);
  case LayerKind::Lightning:
    return lightningAttention(layer, x);
  case LayerKind::Rwkv:
    return rwkvTimeMix(layer, x);
  case LayerKind::RgLru:
    return griffinBlock(layer, x);
  case LayerKind::Mlstm:
    return mlstmLayer(layer, x);
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
  case LayerKind::LatentAttention:
    return latentAttention(layer, x);
  case LayerKind::Kda:
    return kdaAttention(layer, x);
  case LayerKind::SharedKv:
    return sharedKvAttention(layer, x);
  case LayerKind::None:
    break;
  }
  llvm_unreachable("a layer without a mixer has no mixer to lower");
}

// The LM head runs only on each request's last row.
Value StepBuilder::head(Value x, Value table) {
  int64_t H = spec_.hidden_size;
  int64_t width = llvm::cast<RankedTensorType>(x.getType()).getDimSize(1);
  x = RowsGatherOp::create(b_, loc_, rows(width), x, logitRows_).getResult();
  if (spec_.altup.streams > 0) // row-wise: the gathered rows alone
    x = altUpCollapse(x);
  if (spec_.hyper.streams > 0)
    x = hyperHead(x);
  if (spec_.attn_res_block > 0)
    x = blockResidualHead(x);
  if (!spec_.names.final_norm.empty()) // post-norm layers end normed (the original GPT)
    x = modelNorm("final_norm", spec_.prefix + spec_.names.final_norm, x);
  if (const std::string &t = spec_.head_transform; !t.empty()) {
    Value bias = spec_.head_transform_bias ? weight("head_transform.dense_bias", {H}, t + ".dense.bias") : Value();
    x = linear(x, weight("head_transform.dense", {H, H}, t + ".dense.weight"), bias);
    x = modelNorm("head_transform.norm", t + ".norm", act(x, toDialect(spec_.head_transform_act)));
  }
  int64_t E = spec_.embed_dim ? spec_.embed_dim : H;
  if (!spec_.head_proj.empty())
    x = linear(x, weight("head_proj", {E, H}, spec_.prefix + spec_.head_proj + ".weight"));
  int64_t rows = spec_.padded_vocab ? spec_.padded_vocab : spec_.vocab_size;
  Value head = spec_.tie_word_embeddings ? table : weight("lm_head", {rows, E}, spec_.lm_head);
  Value bias = spec_.lm_head_bias.empty() ? Value() : weight("lm_head_bias", {rows}, spec_.lm_head_bias);
  Value logits = linear(x, head, bias);
  if (rows != spec_.vocab_size) // a padded head: the logits keep the first vocab_size columns
    logits = split(logits, {spec_.vocab_size, rows - spec_.vocab_size})[0];
  if (spec_.logits_scale != 1.0)
    logits = scaleBy(logits, spec_.logits_scale);
  if (spec_.final_softcap > 0)
    logits = SoftcapOp::create(b_, loc_, logits.getType(), logits, b_.getF64FloatAttr(spec_.final_softcap))
                 .getResult();
  return logits;
}

// Model metadata the runtime needs; the artefact writer copies it out.
Attribute StepBuilder::modelAttr() {
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
  return ModelAttr::get(b_.getContext(), spec_.model_type, spec_.outer_model_type, spec_.vocab_size,
                        spec_.hidden_size, spec_.num_layers, spec_.max_positions, spec_.eos_token_ids,
                        spec_.bos_token_id, spec_.dtype, toDialect(spec_.quantization), spec_.fp8_block, aliases,
                        spec_.injected_token_id);
}

// A block-scaled FP8 checkpoint (transformers' FineGrainedFP8) stores the matrix of every linear
// layer in FP8 but the LM head, and the published ones keep their routers in bf16: those GEMM
// matrices are declared FP8 here (a weight used in any other way is not). Which tensors are FP8
// stays the checkpoint's to say: the loader dequantises exactly those stored F8_E4M3.
void StepBuilder::declareFp8Weights(Block &step) {
  auto isMatrix = [](Operation &op, Value w) {
    if (auto l = dyn_cast<LinearOp>(op))
      return l.getWeight() == w && !llvm::any_of(l->getUsers(), [](Operation *u) { return isa<MoeRouteOp>(u); });
    if (auto h = dyn_cast<HeadLinearOp>(op))
      return h.getWeight() == w;
    if (auto e = dyn_cast<MoeExpertsOp>(op))
      return e.getGateUp() == w || e.getDown() == w;
    return false;
  };
  llvm::MapVector<Value, bool> matrixOnly;
  for (Operation &op : step)
    for (Value v : op.getOperands())
      if (v.getDefiningOp<WeightRefOp>()) {
        auto [it, fresh] = matrixOnly.try_emplace(v, true);
        it->second = it->second && isMatrix(op, v);
      }
  auto it = weights_.find("lm_head");
  Value lmHead = it == weights_.end() ? Value() : it->second;
  auto fp8 = QuantAttr::get(b_.getContext(), QuantScheme::fp8_e4m3, spec_.fp8_block, b_.getF32Type());
  for (auto [w, only] : matrixOnly)
    if (only && w != lmHead) {
      auto t = llvm::cast<RankedTensorType>(w.getType());
      w.setType(RankedTensorType::get(t.getShape(), t.getElementType(), fp8));
    }
}

// BitLinear layers quantise their input rows to int8 before the product: every linear layer of
// the step but the LM head (its own weight or the tied embedding) reads its input through
// cbc.math.act_quant, one per distinct input (the fused q|k|v and gate|up GEMMs read one).
void StepBuilder::quantizeLinearInputs(Block &step) {
  llvm::DenseMap<Value, Value> quantized;
  OpBuilder::InsertionGuard guard(b_);
  auto isHead = [&](Value w) {
    for (const char *name : {"lm_head", "embed"})
      if (auto it = weights_.find(name); it != weights_.end() && it->second == w)
        return true;
    return false;
  };
  for (LinearOp op : llvm::to_vector(step.getOps<LinearOp>())) {
    if (isHead(op.getWeight()))
      continue;
    Value x = op.getX();
    auto [it, fresh] = quantized.try_emplace(x, Value());
    if (fresh) {
      b_.setInsertionPoint(op);
      it->second = ActQuantOp::create(b_, loc_, x.getType(), x).getResult();
    }
    op.getXMutable().assign(it->second);
  }
}

// RecurrentStacksSpec's loop, unrolled: cache layers in call order. Each call ends in a
// weightless norm; the last high-stack call leaves its own to the head's final norm (the model's
// norms are weightless, and a row-wise norm commutes with the gather).
Value StepBuilder::recurrentStacks(Value zH) {
  const RecurrentStacksSpec &st = spec_.stacks;
  int64_t H = spec_.hidden_size, layer = 0;
  auto stack = [&](Value x, bool last) {
    for (int64_t i = 0; i < st.depth; ++i)
      x = decoderLayer(layer++, x);
    return last ? x : norm(x, Value());
  };
  // z_L starts as a learned row, the same for every token.
  Value init = weight("stacks.low_init", {H}, spec_.prefix + st.low_init);
  Value zL;
  for (int64_t h = 0; h < st.outer; ++h) {
    for (int64_t l = 0; l < st.inner; ++l)
      zL = stack(zL ? add(zL, zH) : AddOp::create(b_, loc_, rows(H), zH, init).getResult(), false);
    zH = stack(add(zH, zL), h + 1 == st.outer);
  }
  return zH;
}

OwningOpRef<ModuleOp> StepBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc_);
  declareStep(*module);
  Value table;
  Value x = embed(table);
  if (spec_.per_layer_inputs.dim > 0)
    perLayerInputs();
  if (spec_.altup.streams > 0)
    x = altUpStreams(x);
  if (spec_.hyper.streams > 0)
    x = hyperStreams(x);
  if (spec_.stacks.depth > 0)
    x = recurrentStacks(x);
  else if (spec_.attn_res_block > 0)
    x = blockResidualLayers(x);
  else
    for (int64_t l = 0; l < spec_.num_layers; ++l)
      x = decoderLayer(l, x);
  func::ReturnOp::create(b_, loc_, head(x, table));
  if (spec_.quantization == Quantization::Fp8)
    declareFp8Weights(*b_.getInsertionBlock());
  if (spec_.quantization == Quantization::BitNet)
    quantizeLinearInputs(*b_.getInsertionBlock());
  (*module)->setAttr("cbc.model", modelAttr());
  return module;
}

} // namespace lower

OwningOpRef<ModuleOp> lowerToCbc(const ModelSpec &spec, MLIRContext &ctx, const LowerOptions &options) {
  ctx.loadDialect<CbcDialect, func::FuncDialect>();
  return lower::StepBuilder(spec, ctx, options).build();
}

} // namespace cbc::hf
