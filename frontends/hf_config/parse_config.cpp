// config.json -> ModelSpec: the parsing every family shares (sizes, norms, dtype, quantisation,
// token ids, the multimodal wrappers, RoPE) around the family's own rules, which live in the
// group files under families/ and are found through the family registry.
#include "frontends/hf_config/parse_config.h"

#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/rope.h"
#include "runtime/schema/limits.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace cbc::hf {

using nlohmann::json;

bool ropeByLayerType(const ConfigReader &r) {
  return r.has("rope_parameters") && (r.raw("rope_parameters").contains("full_attention") ||
                                      r.raw("rope_parameters").contains("sliding_attention"));
}

RopeDicts ropeDictionaries(const ConfigReader &r, double defaultTheta) {
  json flat;
  if (r.has("rope_parameters")) {
    const json &rp = r.raw("rope_parameters");
    if (!rp.is_object())
      throw ConfigError(r.path("rope_parameters"), "expected an object");
    if (rp.contains("full_attention") || rp.contains("sliding_attention")) {
      RopeDicts out;
      for (const char *kind : {"full_attention", "sliding_attention"}) {
        json d = rp.contains(kind) && rp[kind].is_object() ? rp[kind] : json::object();
        if (!d.contains("rope_theta") || d["rope_theta"].is_null())
          d["rope_theta"] = r.getNumber("rope_theta", defaultTheta);
        out[kind] = d;
      }
      return out;
    }
    flat = rp;
  } else if (r.has("rope_scaling")) {
    flat = r.raw("rope_scaling");
    if (!flat.is_object())
      throw ConfigError(r.path("rope_scaling"), "expected an object");
  } else {
    flat = json::object();
  }
  if (!flat.contains("rope_theta") || flat["rope_theta"].is_null())
    flat["rope_theta"] = r.getNumber("rope_theta", defaultTheta);
  return {{"full_attention", flat}, {"sliding_attention", flat}};
}

RopeDicts ropeOrClassDefaults(const ConfigReader &r, double defaultTheta, const json &full, const json &sliding) {
  if (r.has("rope_parameters") || r.has("rope_scaling"))
    return ropeDictionaries(r, defaultTheta);
  return {{"full_attention", full}, {"sliding_attention", sliding}};
}

std::string ropePath(const ConfigReader &r, const std::string &kind, bool nested) {
  std::string base = r.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  return r.path(base + "." + (nested ? kind + "." : ""));
}

namespace {

RopeContext ropeContext(const ConfigReader &r, const ModelSpec &spec, const FamilyDefaults &d) {
  RopeContext ctx;
  ctx.head_dim = spec.attn.head_dim;
  ctx.max_positions = spec.max_positions;
  if (r.has("original_max_position_embeddings"))
    ctx.original_max_override = r.requireSize("original_max_position_embeddings");
  ctx.partial_rotary_factor = r.getNumber("partial_rotary_factor", d.partial_rotary_factor);
  ctx.partial_rotary = d.partial_rotary;
  ctx.multimodal = spec.injects_embeddings;
  return ctx;
}

// Computes each layer's RoPE from the dictionaries of its layer type, over its own head width.
void assignRope(const ConfigReader &r, ModelSpec &spec, const RopeDicts &dicts, const FamilyDefaults &d) {
  bool nested = ropeByLayerType(r);
  RopeContext ctx = ropeContext(r, spec, d);
  std::map<std::pair<std::string, int64_t>, RopeSpec> computed;
  // Every dictionary is checked, whether or not a layer of its type uses it.
  for (const auto &[kind, dict] : dicts) {
    RopeSpec rope = computeRope(ConfigReader(dict, ropePath(r, kind, nested)), ctx);
    rope.pairing = spec.attn.rope_pairing;
    computed[{kind, ctx.head_dim}] = rope;
  }
  for (LayerSpec &layer : spec.layers) {
    // Windowed latent attention (Dots3) reads the sliding dictionary too.
    // Windowed latent attention (Dots3) reads the sliding dictionary too, as do shared-kv layers
    // that keep only their window (DeepSeek-V4's sliding layers; its compressed ones read the
    // full dictionary, which its family fills with the compressors' schedule).
    bool sliding = layer.kind == LayerKind::SlidingAttention || (layer.kind == LayerKind::LatentAttention && layer.window > 0) ||
                   (layer.kind == LayerKind::SharedKv && layer.compress_rate == 0);
    std::string kind = sliding ? "sliding_attention" : "full_attention";
    RopeContext layerCtx = ctx;
    layerCtx.head_dim = layer.head_dim ? layer.head_dim : ctx.head_dim;
    nlohmann::json dict = dicts.at(kind);
    if (layer.rope_theta > 0) // the layer's own base over its type's dictionary
      dict["rope_theta"] = layer.rope_theta;
    auto key = std::make_pair(kind, layerCtx.head_dim);
    if (layer.rope_theta > 0 || !computed.count(key)) {
      RopeSpec rope = computeRope(ConfigReader(dict, ropePath(r, kind, nested)), layerCtx);
      rope.pairing = spec.attn.rope_pairing;
      if (layer.rope_theta > 0) {
        layer.rope = rope;
        continue;
      }
      computed[key] = rope;
    }
    layer.rope = computed[key];
  }
}

std::string parseDtype(const ConfigReader &r) {
  const char *key = r.has("dtype") ? "dtype" : "torch_dtype";
  std::string dtype = r.getString(key, "bfloat16");
  if (dtype != "bfloat16" && dtype != "float16" && dtype != "float32")
    throw ConfigError(r.path(key), "unsupported dtype '" + dtype +
                                       "' (supported: bfloat16, float16, float32)");
  return dtype;
}

// Block-scaled FP8 as DeepSeek-V3 publishes it (transformers' FineGrainedFP8Config): e4m3fn
// weights, a float scale per block, activations left unquantised (the loader dequantises, as
// transformers does without a GPU). Any family may ship it; which tensors are FP8 is the
// checkpoint's to say, so only the block size goes into the artefact.
std::vector<int64_t> parseFp8(const ConfigReader &q) {
  std::string fmt = q.getString("fmt", "e4m3");
  // MiniMax-M2 spells it float8_e4m3fn (transformers' FineGrainedFP8Config does not read fmt at all).
  if (fmt == "float8_e4m3fn")
    fmt = "e4m3";
  if (fmt != "e4m3")
    throw ConfigError(q.path("fmt"), "FP8 format '" + fmt + "' is not supported (supported: e4m3)");
  std::string scheme = q.getString("activation_scheme", "dynamic");
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "dynamic")
    throw ConfigError(q.path("activation_scheme"),
                      "activation scheme '" + scheme + "' is not supported (supported: dynamic)");
  std::string experts = q.getString("expert_dtype", "fp8");
  if (experts != "fp8")
    throw ConfigError(q.path("expert_dtype"), "expert format '" + experts + "' is not supported (supported: fp8)");
  // The scales are read as stored; ue8m0 only says their values are powers of two.
  std::string scales = q.getString("scale_fmt", "float");
  if (scales != "float" && scales != "ue8m0")
    throw ConfigError(q.path("scale_fmt"), "scale format '" + scales + "' is not supported (supported: float, ue8m0)");
  if (q.contains("weight_block_size") && !q.has("weight_block_size"))
    throw ConfigError(q.path("weight_block_size"),
                      "is null (one scale per tensor); cbc loads block-scaled FP8 only");
  std::vector<int64_t> block = q.has("weight_block_size") ? q.getIntList("weight_block_size")
                                                          : std::vector<int64_t>{128, 128};
  if (block.size() != 2 || block[0] <= 0 || block[1] <= 0 || block[0] > (1 << 30) || block[1] > (1 << 30))
    throw ConfigError(q.path("weight_block_size"), "must be [rows, cols], two positive integers up to 2^30");
  return block;
}

// BitNetQuantConfig as cbc loads it: BitLinear layers (packed ternary weights) everywhere but
// the LM head, without their optional input RMSNorm.
void parseBitNetQuantization(const ConfigReader &q) {
  std::string linear = q.getString("linear_class", "bitlinear");
  if (linear != "bitlinear")
    throw ConfigError(q.path("linear_class"), "'" + linear +
                                                  "' is not supported; cbc loads BitNet checkpoints of packed "
                                                  "ternary weights (linear_class bitlinear)");
  std::string mode = q.getString("quantization_mode", "offline");
  if (mode != "offline" && mode != "online")
    throw ConfigError(q.path("quantization_mode"), "must be 'online' or 'offline' (BitNetQuantConfig refuses '" +
                                                       mode + "')");
  if (q.getBool("use_rms_norm", false))
    throw ConfigError(q.path("use_rms_norm"),
                      "BitLinear's input RMSNorm is not supported; it must be false or absent");
  // Null: transformers keeps the LM head unquantised; a list replaces that default, so it must
  // name the head and nothing else for every other linear layer to be a BitLinear one.
  if (q.has("modules_to_not_convert")) {
    std::vector<std::string> kept = q.getStringList("modules_to_not_convert");
    if (kept.empty() || std::any_of(kept.begin(), kept.end(), [](const std::string &m) { return m != "lm_head"; }))
      throw ConfigError(q.path("modules_to_not_convert"),
                        "must be null or [\"lm_head\"]: cbc quantises every linear layer but the LM head");
  }
}

void parseQuantization(const ConfigReader &top, const std::string &modelType, ModelSpec &spec) {
  if (!top.has("quantization_config"))
    return;
  ConfigReader q = top.child("quantization_config");
  std::string method = q.getString("quant_method", "");
  // gpt-oss ships its experts in MXFP4; the loader dequantises them, as transformers does
  // without its Triton kernels.
  if (method == "mxfp4" && modelType == "gpt_oss") {
    spec.quantization = Quantization::Mxfp4;
    return;
  }
  if (method == "bitnet" && modelType == "bitnet") {
    parseBitNetQuantization(q);
    spec.quantization = Quantization::BitNet;
    return;
  }
  if (method == "fp8") {
    spec.fp8_block = parseFp8(q);
    spec.quantization = Quantization::Fp8;
    return;
  }
  throw ConfigError(q.path("quant_method"),
                    "quantisation '" + method + "' is not supported for " + modelType +
                        "; cbc loads bf16, fp16 or fp32 checkpoints, block-scaled FP8 (quant_method fp8), "
                        "gpt-oss MXFP4 experts and BitNet's ternary weights (quant_method bitnet)");
}

void parseTokenIds(const ConfigReader &r, const ConfigReader &top, ModelSpec &s) {
  for (const ConfigReader *src : {&r, &top}) {
    if (s.eos_token_ids.empty())
      s.eos_token_ids = src->getIntList("eos_token_id");
    if (s.bos_token_id < 0)
      s.bos_token_id = src->getInt("bos_token_id", -1);
  }
  for (int64_t id : s.eos_token_ids)
    if (id < 0 || id >= s.vocab_size)
      throw ConfigError(r.path("eos_token_id"),
                        "token id " + std::to_string(id) + " is outside the vocabulary");
}

// A size the config must state, unless a multimodal wrapper's text_config omits one that the
// config class fills in.
int64_t requiredSize(const ConfigReader &r, const FamilyDefaults &d, bool nested, const std::string &key) {
  auto it = d.text_config_sizes.find(key);
  return nested && it != d.text_config_sizes.end() ? r.getSize(key, it->second) : r.requireSize(key);
}

// Head counts and size, max positions, the dense MLP's width and activation.
void parseAttentionAndMlp(const ConfigReader &r, const FamilyDefaults &d, bool nested, ModelSpec &s) {
  auto size = [&](const std::string &key) { return requiredSize(r, d, nested, key); };
  s.attn.num_heads = size("num_attention_heads");
  s.attn.num_kv_heads = nested && d.text_config_sizes.count("num_key_value_heads")
                            ? size("num_key_value_heads")
                            : r.getSize("num_key_value_heads", d.kv_heads && !r.contains("num_key_value_heads")
                                                                   ? d.kv_heads
                                                                   : s.attn.num_heads);
  if (s.attn.num_heads % s.attn.num_kv_heads != 0)
    throw ConfigError(r.path("num_key_value_heads"),
                      "num_attention_heads (" + std::to_string(s.attn.num_heads) +
                          ") is not divisible by num_key_value_heads (" +
                          std::to_string(s.attn.num_kv_heads) + ")");
  if (d.heads_divide_hidden && s.hidden_size % s.attn.num_heads != 0)
    throw ConfigError(r.path("num_attention_heads"), "must divide hidden_size (" + std::to_string(s.hidden_size) + ")");
  int64_t derivedHeadDim = s.hidden_size / s.attn.num_heads;
  s.attn.head_dim = d.head_dim_unused ? derivedHeadDim : r.getSize("head_dim", d.head_dim ? d.head_dim : derivedHeadDim);
  if (s.attn.head_dim <= 0)
    throw ConfigError(r.path("hidden_size"), "is smaller than num_attention_heads");
  if (s.attn.head_dim > limits::kMaxHeadDim) // only a derived one: a stated head_dim is bounded as read
    throw ConfigError(r.path("hidden_size"), "gives heads of " + std::to_string(s.attn.head_dim) +
                                                 " features (hidden_size / num_attention_heads), above the largest cbc supports (" +
                                                 std::to_string(limits::kMaxHeadDim) + ")");
  s.attn.scale = 1.0 / std::sqrt((double)s.attn.head_dim);
  s.max_positions = r.getSize("max_position_embeddings", d.max_positions);
  if (d.moe_only || (d.intermediate_optional && !r.has("intermediate_size")))
    s.mlp.intermediate = 0;
  else if (d.intermediate_list && r.has("intermediate_size") && r.raw("intermediate_size").is_array())
    s.mlp.intermediate = 0; // the family sets each layer's width
  else if (d.intermediate_alias && !r.has("intermediate_size") && r.has(d.intermediate_alias))
    s.mlp.intermediate = r.requireSize(d.intermediate_alias);
  else
    s.mlp.intermediate = size("intermediate_size");
  s.mlp.act = activation(r, d.act_key, d.act);
}

void parseCommon(const ConfigReader &r, const ConfigReader &top, const FamilyDefaults &d,
                 bool nested, ModelSpec &s) {
  auto size = [&](const std::string &key) { return requiredSize(r, d, nested, key); };
  s.vocab_size = size("vocab_size");
  s.hidden_size = size("hidden_size");
  s.num_layers = d.layers_derived ? r.getSize("num_hidden_layers", 0) : size("num_hidden_layers");
  s.norm_eps = r.getNumber(d.norm_eps_key, d.norm_eps);
  if (s.norm_eps <= 0)
    throw ConfigError(r.path(d.norm_eps_key), "must be positive");
  s.tie_word_embeddings = top.getBool("tie_word_embeddings",
                                      r.getBool("tie_word_embeddings", d.tie_word_embeddings));
  s.dtype = parseDtype(r.has("dtype") || r.has("torch_dtype") ? r : top);
  parseTokenIds(r, top, s);
  if (d.attention_free)
    s.max_positions = r.getSize("max_position_embeddings", d.max_positions);
  else
    parseAttentionAndMlp(r, d, nested, s);
}

// translated: the keys of a mamba_ssm config, all of which its translation reads.
json parseRoot(const std::string &text, std::vector<std::string> &translated) {
  json root;
  try {
    root = parseConfigJson(text);
  } catch (const json::parse_error &e) {
    throw ConfigError("<file>", std::string("malformed JSON: ") + e.what());
  }
  if (!root.is_object())
    throw ConfigError("<file>", "expected a JSON object at the top level");
  if (!root.contains("model_type") && root.contains("d_model") && root.contains("ssm_cfg")) {
    for (const auto &[key, _] : root.items())
      translated.push_back(key);
    root = translateMambaSsm(root);
  }
  return root;
}

const Family &findFamily(const ConfigReader &r, const std::string &modelType) {
  auto family = families().find(modelType);
  if (family != families().end())
    return family->second;
  std::string known;
  for (const std::string &t : supportedModelTypes())
    known += (known.empty() ? "" : ", ") + t;
  throw ConfigError(r.path("model_type"), "unknown model_type '" + modelType + "' (supported: " + known + ")");
}

// PreTrainedConfig's layer types (ALLOWED_ATTN_LAYER_TYPES in transformers 5.23), with the
// legacy names it remaps before validating (_LEGACY_LAYER_TYPE_REMAP: mamba, attention,
// deepseek_sparse_attention, qwen_sparse_attention). Which of them a family runs is the
// family's to check.
const std::set<std::string> &allowedLayerTypes() {
  static const std::set<std::string> names = {
      "full_attention", "sliding_attention", "chunked_attention", "window_attention", "indexed_attention",
      "compressed_sparse_attention", "heavily_compressed_attention", "minimax_m3_sparse", "conv", "moe", "hybrid",
      "hybrid_sliding", "reference_sliding_attention", "linear_attention", "mamba", "attention",
      "deepseek_sparse_attention", "qwen_sparse_attention"};
  return names;
}

// validate_layer_type: one allowed type per layer (num_hidden_layers when the config states it;
// a family whose class defaults it checks the count itself).
void validateLayerList(const ConfigReader &r, const std::string &key, const std::set<std::string> &allowed,
                       const char *what = "layer type") {
  std::vector<std::string> names = r.getStringList(key);
  for (const std::string &n : names)
    if (!allowed.count(n)) {
      std::string list;
      for (const std::string &a : allowed)
        list += (list.empty() ? "" : ", ") + a;
      throw ConfigError(r.path(key), std::string("unknown ") + what + " '" + n + "' (transformers allows " + list + ")");
    }
  if (r.has("num_hidden_layers"))
    checkLayerCount(r, key.c_str(), names.size(), r.requireSize("num_hidden_layers"));
}

// The per-layer list keys as the family's config class treats them, before the family reads
// them: the generic validation, and read-only keys refused.
void checkLayerLists(const ConfigReader &r, const FamilyDefaults &d, const std::string &modelType) {
  bool validated = false;
  for (const auto &[key, rule] : {std::pair<std::string, LayerListRule>{"layer_types", d.layer_types},
                                  std::pair<std::string, LayerListRule>{"layers_block_type", d.layers_block_type}}) {
    if (!r.has(key) || rule == LayerListRule::Ignored)
      continue;
    if (rule == LayerListRule::ReadOnly)
      throw ConfigError(r.path(key), "cannot be set for " + modelType +
                                         ": its config class derives it (transformers refuses a config.json that sets it)");
    if (rule == LayerListRule::Validated) {
      validateLayerList(r, key, allowedLayerTypes());
      validated = true;
    }
  }
  // mlp_layer_types is validated only beside a layer_types list.
  if (validated && r.has("mlp_layer_types"))
    validateLayerList(r, "mlp_layer_types", {"dense", "sparse"}, "MLP type");
}

// xIELU's parameters are weights of each MLP, which cbc lowers for ungated dense MLPs only.
void checkXielu(const ConfigReader &r, const FamilyDefaults &d, const ModelSpec &s) {
  bool experts = std::any_of(s.layers.begin(), s.layers.end(), [](const LayerSpec &l) { return l.moe; });
  bool expertsXielu = experts && (s.moe.act == FfnActivation::Xielu || s.moe.shared_act == FfnActivation::Xielu);
  if ((s.mlp.act == FfnActivation::Xielu && s.mlp.gated) || expertsXielu)
    throw ConfigError(r.path(d.act_key), "xielu is supported only in ungated dense MLPs");
}

} // namespace

ModelSpec parseConfig(const std::string &text) {
  std::vector<std::string> translated;
  json root = parseRoot(text, translated);
  ConfigReader top(root);
  top.trackKeys();
  if (!top.has("model_type"))
    throw ConfigError("model_type", "is missing");
  ModelSpec spec;
  std::string modelType = top.getString("model_type", "");
  auto wrapper = multimodalWrappers().find(modelType);
  bool multimodal = wrapper != multimodalWrappers().end();
  // Multimodal checkpoints run text-only: the decoder is the text_config.
  ConfigReader written = multimodal ? top.child("text_config") : top;
  if (multimodal) {
    spec.outer_model_type = modelType;
    spec.injects_embeddings = true;
    modelType = written.getString("model_type", wrapper->second);
    spec.prefix = "model.language_model.";
  }
  const Family &family = findFamily(written, modelType);
  json rewritten = family.rewrite ? family.rewrite(written) : json();
  ConfigReader r = family.rewrite ? written.sameKeys(rewritten) : written;
  checkLayerLists(r, family.defaults, modelType);
  spec.model_type = modelType;
  parseQuantization(top, modelType, spec);
  parseCommon(r, top, family.defaults, multimodal, spec);
  spec.layers.assign(spec.num_layers, LayerSpec{});
  family.parse(r, spec);
  // A placeholder past the text vocabulary (Nemotron-3.5-Transcribe's audio id is the vocabulary's
  // size) is looked up as row 0, as transformers' _embed_input_ids does: the step reads 0 there.
  if (multimodal && spec.injected_token_id < 0 && top.has("audio_token_id") &&
      top.getCount("audio_token_id", 0, int64_t(1) << 31) >= spec.vocab_size)
    spec.injected_token_id = 0;
  checkXielu(r, family.defaults, spec);
  if (!family.defaults.attention_free && !family.defaults.rope_free)
    assignRope(r, spec, family.ropeDicts ? family.ropeDicts(r) : ropeDictionaries(r, family.defaults.rope_theta),
               family.defaults);
  // A translated config's own keys, not the names the translation gave them, are in the file.
  spec.config_keys = translated.empty() ? top.keysRead() : translated;
  return spec;
}

} // namespace cbc::hf
