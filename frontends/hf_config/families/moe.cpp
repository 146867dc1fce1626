// Attention decoders with routed experts: Mixtral, Qwen2-MoE, Qwen3-MoE, gpt-oss, MiniMax-M2,
// OLMoE, FlexOlmo, GLM-4.5, Solar Open, dots.llm1, ERNIE-4.5-MoE, GraniteMoE, GraniteMoeShared,
// Mellum, Hunyuan 3 (hy_v3), K-EXAONE, Granite-SWA, GraniteMoE-SWA, Phi-3.5-MoE, DBRX,
// Kolibri-1, JetMoE and Beam.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mla.h"
#include "frontends/hf_config/parse_config.h"

#include <set>

namespace cbc::hf {

namespace {

// block_sparse_moe.gate routes over experts.{e}.w1/w3/w2.
ExpertNaming mixtralNames() {
  ExpertNaming n;
  n.router = "block_sparse_moe.gate.weight";
  n.experts.gate_up = {"block_sparse_moe.experts.{e}.w1.weight", "block_sparse_moe.experts.{e}.w3.weight"};
  n.experts.down = {"block_sparse_moe.experts.{e}.w2.weight"};
  return n;
}

void parseMixtral(const ConfigReader &r, ModelSpec &s) {
  uniformWindowLayers(s, optionalWindow(r));
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_local_experts"), .experts = 8, .top_k = 2,
                   .count_name = "num_local_experts"},
               m);
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::Softmax;
  m.renorm = true;
  m.act = s.mlp.act;
  m.names = mixtralNames();
  allLayersMoe(s);
}

// Qwen2-MoE slides on the even layers below max_window_layers.
bool qwen2MoeSlides(int64_t layer, int64_t maxWindowLayers) {
  return (layer + 1) % 2 && layer < maxWindowLayers;
}

void parseQwen2Moe(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = r.getBool("qkv_bias", true);
  qwenWindowLayers(r, s, qwen2MoeSlides);
  parseQwenMoe(r, s, {.experts = 60, .top_k = 4, .intermediate = 1408, .shared_intermediate = 5632, .renorm = false});
}

void parseQwen3Moe(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  uniformWindowLayers(s, qwenWindow(r));
  parseQwenMoe(r, s, {.experts = 128, .top_k = 8, .intermediate = 768, .shared_intermediate = 0, .renorm = false});
}

// mlp.router (with a bias) over fused mlp.experts tensors: gate_up_proj [E, H, 2I] with gate and
// up interleaved, down_proj [E, I, H], and their biases.
// MXFP4 checkpoints keep each expert projection as <name>_blocks and <name>_scales.
ExpertNaming gptOssNames(bool mxfp4) {
  ExpertNaming n;
  n.router = "mlp.router.weight";
  n.router_bias = "mlp.router.bias";
  n.fused = n.transposed = true;
  auto tensor = [&](const std::string &name) {
    return mxfp4 ? std::vector<std::string>{name + "_blocks", name + "_scales"} : std::vector<std::string>{name};
  };
  n.mxfp4 = mxfp4;
  n.experts.gate_up = tensor("mlp.experts.gate_up_proj");
  n.experts.down = tensor("mlp.experts.down_proj");
  n.experts.gate_up_bias = {"mlp.experts.gate_up_proj_bias"};
  n.experts.down_bias = "mlp.experts.down_proj_bias";
  n.glu = GateUpLayout::Interleaved;
  return n;
}

void parseGptOss(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s, true);
  s.attn.sinks = true;
  alternatingLayers(r, s, windowOrClassDefault(r, 128), 2);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_local_experts"), .experts = 128, .top_k = 4,
                   .count_name = "num_local_experts"},
               m);
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::TopkSoftmax;
  m.act = FfnActivation::ClampedSwiglu;
  m.limit = r.getNumber("swiglu_limit", 7.0);
  m.alpha = r.getNumber("swiglu_alpha", 1.702);
  m.names = gptOssNames(s.quantization == Quantization::Mxfp4);
  // MXFP4 codes come in blocks of 32 along each expert row, of hidden_size or intermediate_size.
  for (auto [key, size] : {std::pair{"hidden_size", s.hidden_size}, {"intermediate_size", m.intermediate}})
    if (m.names.mxfp4 && size % 32 != 0)
      throw ConfigError(r.path(key), "must be a multiple of 32 for MXFP4 experts (blocks of 32 values), got " +
                                         std::to_string(size));
  allLayersMoe(s);
}

// gpt-oss: YaRN (factor 32 over 4096 positions) when the config names no RoPE at all.
RopeDicts gptOssRopeDicts(const ConfigReader &r) {
  if (r.has("rope_parameters") || r.has("rope_scaling"))
    return ropeDictionaries(r, 150000.0);
  nlohmann::json d = {{"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                      {"truncate", false}, {"original_max_position_embeddings", 4096},
                      {"rope_theta", r.getNumber("rope_theta", 150000.0)}};
  return {{"full_attention", d}, {"sliding_attention", d}};
}

// MiniMax-M2: q/k RMSNorms over the whole projection (all heads), partial RoPE, sigmoid routing
// steered by a correction bias and renormalised, MoE on every layer, no shared expert.
void parseMiniMaxM2(const ConfigReader &r, ModelSpec &s) {
  s.attn.qk_norm = s.attn.qk_norm_whole = true;
  uniformWindowLayers(s, 0);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_local_experts"), .experts = 256, .top_k = 8,
                   .count_name = "num_local_experts"},
               m);
  m.intermediate = r.getSize("intermediate_size", 1536);
  m.score = ExpertScoring::Sigmoid;
  m.renorm = true;
  m.act = s.mlp.act;
  m.names = mixtralNames();
  m.names.selection_bias = "block_sparse_moe.e_score_correction_bias";
  allLayersMoe(s);
}

// Released MiniMax-M2 checkpoints give partial RoPE as rotary_dim; the config class turns it into
// partial_rotary_factor = rotary_dim / head_dim unless one is given.
RopeDicts miniMaxM2RopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 5000000.0);
  if (r.has("rotary_dim")) {
    double factor = (double)r.requireSize("rotary_dim") / (double)r.getSize("head_dim", 128);
    for (auto &[kind, d] : dicts)
      if (!d.contains("partial_rotary_factor") && !r.has("partial_rotary_factor"))
        d["partial_rotary_factor"] = factor;
  }
  return dicts;
}

// OLMoE: OLMo's RMS q/k norms over the whole projection (q_norm sized hidden_size, k_norm
// hidden_size / heads x kv heads, so the heads must fill hidden_size), a softmax router over
// experts on every layer, renormalised only with norm_topk_prob (default off).
void olmoeLayers(const ConfigReader &r, ModelSpec &s, const ExpertKeys &keys) {
  attentionBiases(r, s);
  s.attn.qk_norm = s.attn.qk_norm_whole = true;
  if (s.attn.num_heads * s.attn.head_dim != s.hidden_size)
    throw ConfigError(r.path("head_dim"), "num_attention_heads x head_dim must equal hidden_size (" +
                                              std::to_string(s.hidden_size) + "): OLMoE's q_norm has that many weights");
  uniformWindowLayers(s, 0);
  MoeSpec &m = s.moe;
  parseExperts(r, keys, m);
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::Softmax;
  m.renorm = r.getBool("norm_topk_prob", false);
  m.act = s.mlp.act;
  m.names = perExpertNames(s.names, "gate", /*gated=*/true);
  allLayersMoe(s);
}

void parseOlmoe(const ConfigReader &r, ModelSpec &s) {
  refuseClipQkv(r);
  olmoeLayers(r, s, {.count = expertCountKey(r, "num_experts"), .experts = 64, .top_k = 8, .count_name = "num_experts"});
}

// FlexOlmo: OLMoE's attention and router in OLMo-2's post-norm layers (the attention and expert
// outputs normed before each residual add, no input norm).
void parseFlexOlmo(const ConfigReader &r, ModelSpec &s) {
  olmoeLayers(r, s, {.count = expertCountKey(r, "num_experts"), .experts = 7, .top_k = 5, .count_name = "num_experts"});
  for (LayerSpec &l : s.layers)
    l.post_norm = true;
}

// Solar Open: GLM-4.5's attention (q/k/v biases from attention_bias, no o bias, no q/k norms)
// and router on every layer; the config has no dense intermediate_size.
void parseSolarOpen(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = r.getBool("attention_bias", false);
  uniformWindowLayers(s, 0);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 128, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 1280, .scaling = 1.0});
  allLayersMoe(s);
}

// Mellum: Qwen3-MoE's attention and router (no shared expert) with sliding layers from
// layer_types (window sliding_window, default 1024) and MoE layers from mlp_layer_types (default
// all sparse). MellumConfig refuses more than one MTP layer, which cbc does not read.
void parseMellum(const ConfigReader &r, ModelSpec &s) {
  if (r.has("num_mtp_layers") && r.getCount("num_mtp_layers", 0) > 1)
    throw ConfigError(r.path("num_mtp_layers"), "must be at most 1 (MellumConfig refuses more)");
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  int64_t window = windowOrClassDefault(r, 1024);
  std::vector<LayerKind> kinds = r.has("layer_types")
                                     ? explicitLayerTypes(r, s.num_layers)
                                     : std::vector<LayerKind>(s.num_layers, LayerKind::FullAttention);
  setLayers(s, kinds, window);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_experts"), .experts = 64, .top_k = 8, .count_name = "num_experts"},
               m);
  m.intermediate = r.getSize("moe_intermediate_size", 896);
  m.score = ExpertScoring::Softmax;
  m.renorm = r.getBool("norm_topk_prob", true);
  m.act = s.mlp.act;
  m.names = perExpertNames(s.names, "gate", /*gated=*/true);
  moeByLayerTypes(r, s, [](int64_t) { return true; });
}

// MellumConfig: without rope_parameters, theta 5e5 on full layers and 1e4 on sliding ones,
// whatever a top-level rope_theta says.
RopeDicts mellumRopeDicts(const ConfigReader &r) {
  return ropeOrClassDefaults(r, 10000.0, {{"rope_type", "default"}, {"rope_theta", 500000.0}},
                             {{"rope_type", "default"}, {"rope_theta", 10000.0}});
}

// Hunyuan 3 (hy_v3): Llama attention with per-head q/k norms, MoE layers from mlp_layer_types
// (default: all but the first), an fp32 sigmoid router whose correction bias (on the MoE block,
// mlp.expert_bias in the checkpoint) steers the choice, always renormalised (+1e-20) and scaled
// by router_scaling_factor, plus shared experts (shared_mlp). The MTP layer is not read.
void parseHyV3(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  s.attn.qk_norm = true;
  uniformWindowLayers(s, 0);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_experts"), .experts = 192, .top_k = 8, .count_name = "num_experts"},
               m);
  m.intermediate = r.getSize("moe_intermediate_size", 1536);
  m.score = ExpertScoring::Sigmoid;
  m.renorm = true;
  m.renorm_eps = 1e-20;
  m.scaling = r.getNumber("router_scaling_factor", 2.826);
  m.act = s.mlp.act;
  m.shared_intermediate = m.intermediate * r.getCount("num_shared_experts", 1);
  ExpertNaming &n = m.names;
  n = perExpertNames(s.names, "router.gate", /*gated=*/true);
  n.selection_bias = "mlp.expert_bias";
  gatedSharedExpert(n, "mlp.shared_mlp");
  moeByLayerTypes(r, s, [](int64_t i) { return i > 0; });
}

// K-EXAONE (exaone_moe): pre-norm layers over EXAONE's attention, DeepSeek-V3's router
// (correction bias mlp.e_score_correction_bias, routed scaling 2.5) and shared experts from
// mlp_layer_types, else from first_k_dense_replace (default 1) on.
void parseExaoneMoe(const ConfigReader &r, ModelSpec &s) {
  exaoneLayers(r, s);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 64, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 1024, .scaling = 2.5,
                    .count_key = "num_experts", .shared_key = "num_shared_experts"});
  s.moe.names.selection_bias = "mlp.e_score_correction_bias";
  int64_t first = r.getInt("first_k_dense_replace", 1);
  moeByLayerTypes(r, s, [first](int64_t i) { return i >= first; });
}

// dots.llm1: Qwen3's attention (per-head q/k norms before RoPE, attention_bias on q/k/v and o),
// sliding layers from max_window_layers on (no use_sliding_window flag), and DeepSeek-V3's
// router and shared experts from first_k_dense_replace (default 0) on. Dots1Config has no
// defaults for the expert counts and top-k: transformers cannot build a model without them.
void parseDots1(const ConfigReader &r, ModelSpec &s) {
  for (const char *key : {"n_routed_experts", "n_shared_experts", "num_experts_per_tok"})
    if (!r.has(key))
      throw ConfigError(r.path(key), "is required: Dots1Config has no default for it");
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  int64_t window = windowOrClassDefault(r, 4096);
  int64_t maxWindowLayers = r.getCount("max_window_layers", 62);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [&](int64_t i) { return window > 0 && i >= maxWindowLayers; },
                                        LayerKind::SlidingAttention, LayerKind::FullAttention);
  setLayers(s, kinds, window);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 0, .top_k = 0, .groups = 1, .keep = 1, .intermediate = 1408, .shared = 0, .scaling = 1.0});
  s.moe.renorm = r.getBool("norm_topk_prob", false);
  s.moe.renorm_eps = s.moe.renorm ? 1e-20 : 0.0;
  moeFrom(r, s, 0);
}

// GLM-4.5 (GLM-4.5/4.6/4.7): GQA attention with q/k/v biases (attention_bias) but no o bias,
// optional per-head q/k norms (use_qk_norm), rotate-half RoPE on the first
// partial_rotary_factor (default 0.5) of each head, and DeepSeek-V3's router (sigmoid, a
// correction bias steering the choice, groups, renormalised, routed scaling) with shared experts
// from first_k_dense_replace on.
void parseGlm4Moe(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = r.getBool("attention_bias", false);
  s.attn.qk_norm = r.getBool("use_qk_norm", false);
  uniformWindowLayers(s, 0);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 128, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 1408, .scaling = 1.0});
  moeFrom(r, s, 1);
}

// A key under its transformers name, else under the name the config class's attribute_map
// aliases to it.
std::string aliasedKey(const ConfigReader &r, const char *key, const char *alias) {
  return !r.has(key) && r.has(alias) ? alias : key;
}

// ERNIE-4.5-MoE: ERNIE-4.5's attention (RoPE on interleaved pairs, use_bias on q/k/v/o), MoE on
// the layers i with (i + 1) % moe_layer_interval == 0 between moe_layer_start_index and
// moe_layer_end_index (-1: the last), each an fp32 softmax router whose [1, E] correction bias
// is added to the probabilities for the choice only, always renormalised, plus ungated-sum shared
// experts. use_bias also gives the dense MLPs, the shared experts and the LM head biases, but
// never the routed experts. The renormalisation divides by max(sum, moe_norm_min = 1e-12); the
// top-k sum of a softmax is at least k / E, so the clamp never binds and cbc divides by the sum.
void parseErnie45Moe(const ConfigReader &r, ModelSpec &s) {
  bool bias = r.getBool("use_bias", false);
  s.attn.qkv_bias = s.attn.o_bias = s.mlp.bias = bias;
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  uniformWindowLayers(s, 0);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = aliasedKey(r, "moe_num_experts", "num_experts"), .experts = 64, .top_k = 6,
                   .count_name = "moe_num_experts", .top_k_key = aliasedKey(r, "moe_k", "num_experts_per_tok")},
               m);
  m.intermediate = r.getSize("moe_intermediate_size", 1536);
  m.score = ExpertScoring::Softmax;
  m.renorm = true;
  m.act = s.mlp.act;
  m.shared_intermediate = m.intermediate * r.getCount("moe_num_shared_experts", 2);
  ExpertNaming &n = m.names;
  n = perExpertNames(s.names, "gate", /*gated=*/true);
  n.selection_bias = "mlp.moe_statics.e_score_correction_bias";
  n.selection_bias_row = true;
  gatedSharedExpert(n, "mlp.shared_experts");
  if (bias) {
    n.shared.gate_up_bias = {"mlp.shared_experts.gate_proj.bias", "mlp.shared_experts.up_proj.bias"};
    n.shared.down_bias = "mlp.shared_experts.down_proj.bias";
    s.lm_head_bias = "lm_head.bias";
  }
  int64_t start = r.getInt("moe_layer_start_index", 1), end = r.getInt("moe_layer_end_index", -1);
  int64_t interval = r.getSize("moe_layer_interval", 1);
  if (end == -1)
    end = s.num_layers - 1;
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].moe = (i + 1) % interval == 0 && i >= start && i <= end;
}

// GraniteMoE: Granite's multipliers (embeddings, residual branches, attention scale, logits)
// over top-k-softmax experts of intermediate_size on every layer, stored fused.
void parseGraniteMoe(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  graniteMultipliers(r, s);
  topkSoftmaxExperts(r, s, graniteNames());
}

// GraniteMoeShared: GraniteMoE plus, when shared_intermediate_size (default 0) is set, a shared
// MLP on the same normed input whose output adds to the experts'.
void parseGraniteMoeShared(const ConfigReader &r, ModelSpec &s) {
  parseGraniteMoe(r, s);
  int64_t shared = r.getCount("shared_intermediate_size", 0);
  if (shared == 0)
    return;
  s.mlp.intermediate = shared;
  graniteSharedMlpNames(s.names);
  s.moe.plus_dense = true;
}

// Granite-SWA's attention: learned sinks per head, every fourth layer (from 0) full and the
// others sliding (sliding_window, default 128), and a RoPE base per layer (layer_rope_theta; 0:
// that layer is NoPE).
void graniteSwaAttention(const ConfigReader &r, ModelSpec &s) {
  s.attn.sinks = true;
  int64_t window = windowOrClassDefault(r, 128);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [](int64_t i) { return i % 4 != 0; }, LayerKind::SlidingAttention,
                                        LayerKind::FullAttention);
  setLayers(s, kinds, window);
  if (!r.has("layer_rope_theta"))
    return;
  std::vector<double> thetas = r.getNumberList("layer_rope_theta");
  checkLayerCount(r, "layer_rope_theta", thetas.size(), s.num_layers);
  for (int64_t i = 0; i < s.num_layers; ++i) {
    if (thetas[i] < 0)
      throw ConfigError(r.path("layer_rope_theta"), "must not hold a negative base");
    s.layers[i].nope = thetas[i] == 0;
    s.layers[i].rope_theta = thetas[i];
  }
}

// Granite-SWA: Granite with Granite-SWA's attention.
void parseGraniteSwa(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  graniteMultipliers(r, s);
  graniteSwaAttention(r, s);
}

// GraniteMoE-SWA: GraniteMoeShared with Granite-SWA's attention; its checkpoints keep
// transformers' fused names (block_sparse_moe.router, experts.gate_up_proj [E, 2I, H],
// experts.down_proj [E, H, I]), which no conversion renames.
void parseGraniteMoeSwa(const ConfigReader &r, ModelSpec &s) {
  parseGraniteMoeShared(r, s);
  graniteSwaAttention(r, s); // sets the layers afresh: MoE on every one again
  allLayersMoe(s);
  ExpertNaming &n = s.moe.names;
  n.router = "block_sparse_moe.router.weight";
  n.experts.gate_up = {"block_sparse_moe.experts.gate_up_proj"};
  n.experts.down = {"block_sparse_moe.experts.down_proj"};
}

// Phi-3.5-MoE: Mixtral's experts and names with LayerNorms (weight and bias, eps rms_norm_eps),
// q/k/v/o biases from attention_bias, an optional LM-head bias and the sparsemixer router, which
// always picks two experts (cbc refuses another num_experts_per_tok rather than run two) and
// weighs each by a softmax masked at 2 * router_jitter_noise, unnormalised.
void parsePhimoe(const ConfigReader &r, ModelSpec &s) {
  uniformWindowLayers(s, optionalWindow(r));
  attentionBiases(r, s);
  s.norm_kind = NormKind::Layer;
  s.norm_bias = true;
  if (r.getBool("lm_head_bias", false))
    s.lm_head_bias = "lm_head.bias";
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_local_experts"), .experts = 16, .top_k = 2,
                   .count_name = "num_local_experts"},
               m);
  if (m.top_k != 2)
    throw ConfigError(r.path("num_experts_per_tok"),
                      "must be 2: the sparsemixer router always chooses two experts, got " + std::to_string(m.top_k));
  double jitter = r.getNumber("router_jitter_noise", 0.01);
  if (jitter < 0)
    throw ConfigError(r.path("router_jitter_noise"), "must not be negative");
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::Sparsemixer;
  m.threshold = 2 * jitter;
  m.act = s.mlp.act;
  m.names = mixtralNames();
  allLayersMoe(s);
}

// DbrxConfig's own spellings under the names the common parser reads: its attribute_map
// (d_model, n_heads, n_layers, max_seq_len), with the class defaults for absent ones;
// num_key_value_heads from attn_config.kv_n_heads (default 1) and hidden_act from
// ffn_config.ffn_act_fn.name (default silu), whatever top-level keys of those names say, as
// DbrxConfig.__post_init__ and DbrxExpertGLU read them.
nlohmann::json dbrxKeys(const ConfigReader &r) {
  nlohmann::json j = r.objectToCopy();
  static const struct {
    const char *saved, *name;
    int64_t fallback;
  } kAttributeMap[] = {{"d_model", "hidden_size", 2048},
                       {"n_heads", "num_attention_heads", 16},
                       {"n_layers", "num_hidden_layers", 24},
                       {"max_seq_len", "max_position_embeddings", 2048}};
  for (const auto &a : kAttributeMap)
    j[a.name] = r.has(a.saved) ? r.requireSize(a.saved) : r.getSize(a.name, a.fallback);
  j["vocab_size"] = r.getSize("vocab_size", 32000);
  j["num_key_value_heads"] = r.has("attn_config") ? r.child("attn_config").getSize("kv_n_heads", 1) : 1;
  j["hidden_act"] = "silu";
  if (r.has("ffn_config") && r.child("ffn_config").has("ffn_act_fn"))
    j["hidden_act"] = r.child("ffn_config").child("ffn_act_fn").getString("name", "silu");
  j.erase("head_dim");
  return j;
}

// DBRX: pre-LayerNorm blocks (weight only, eps 1e-5) under transformer.blocks.N, one fused Wqkv
// clamped to [-clip_qkv, clip_qkv], a softmax router whose top-k weights are divided by their
// L1 norm (moe_normalize_expert_weights 1; null: not at all), experts stored as row blocks w1, v1
// and w2 of [E * ffn_hidden_size, d_model]. attn_config.rope_theta is not read: DbrxConfig's RoPE
// is its top-level rope_parameters (theta 10000 by default), as transformers 5.23 runs it.
void parseDbrx(const ConfigReader &r, ModelSpec &s) {
  if (s.tie_word_embeddings)
    throw ConfigError(r.path("tie_word_embeddings"), "must be false: DBRX unties its head (transformers refuses it)");
  nlohmann::json none = nlohmann::json::object();
  ConfigReader attn = r.has("attn_config") ? r.child("attn_config") : ConfigReader(none, "attn_config.");
  ConfigReader ffn = r.has("ffn_config") ? r.child("ffn_config") : ConfigReader(none, "ffn_config.");
  s.prefix = "transformer.";
  Names &n = s.names;
  n.layers = "blocks";
  n.embed = "wte";
  n.final_norm = "norm_f";
  n.input_norm = "norm_attn_norm.norm_1";
  n.post_attn_norm = "norm_attn_norm.norm_2";
  n.attn = "norm_attn_norm.attn";
  n.qkv = "Wqkv";
  n.o_proj = "out_proj";
  s.norm_kind = NormKind::Layer;
  s.norm_eps = 1e-5;
  if (attn.has("clip_qkv")) {
    s.attn.clip_qkv = attn.requireNumber("clip_qkv");
    if (!(s.attn.clip_qkv > 0))
      throw ConfigError(attn.path("clip_qkv"), "must be positive or null");
  }
  uniformWindowLayers(s, 0);
  MoeSpec &m = s.moe;
  m.num_experts = ffn.getSize("moe_num_experts", 4);
  m.top_k = ffn.getSize("moe_top_k", 1);
  if (m.top_k > m.num_experts)
    throw ConfigError(ffn.path("moe_top_k"), "must not exceed moe_num_experts (" + std::to_string(m.num_experts) + ")");
  m.intermediate = ffn.getSize("ffn_hidden_size", 3584);
  m.score = ExpertScoring::Softmax;
  m.renorm = !ffn.contains("moe_normalize_expert_weights") || ffn.has("moe_normalize_expert_weights");
  if (m.renorm && ffn.getNumber("moe_normalize_expert_weights", 1.0) != 1.0)
    throw ConfigError(ffn.path("moe_normalize_expert_weights"),
                      "must be 1 (weights over their sum) or null: other p-norms are not supported");
  m.act = s.mlp.act;
  ExpertNaming &e = m.names;
  e.router = "ffn.router.layer.weight";
  e.fused = e.row_blocks = true;
  e.experts.gate_up = {"ffn.experts.mlp.w1", "ffn.experts.mlp.v1"};
  e.experts.down = {"ffn.experts.mlp.w2"};
  allLayersMoe(s);
}

// JetMoeConfig: head_dim is an alias of kv_channels (default 128), and num_attention_heads is
// num_key_value_heads (default 16) * num_experts_per_tok (default 2) whatever the file says, as
// __post_init__ writes it (nothing in the model reads the key).
nlohmann::json jetmoeKeys(const ConfigReader &r) {
  nlohmann::json j = r.objectToCopy();
  int64_t dim = r.has("kv_channels") ? r.requireSize("kv_channels") : r.getSize("head_dim", 128);
  if (r.has("kv_channels") && r.has("head_dim") && r.requireSize("head_dim") != dim)
    throw ConfigError(r.path("head_dim"), "contradicts kv_channels (" + std::to_string(dim) + "), whose alias it is");
  j["head_dim"] = dim;
  int64_t kvHeads = r.getSize("num_key_value_heads", 16);
  j["num_key_value_heads"] = kvHeads;
  j["num_attention_heads"] = kvHeads * r.getSize("num_experts_per_tok", 2);
  return j;
}

// JetMoE: a mixture of attention heads (HeadExpertsSpec) under self_attention, and GraniteMoE's
// experts under mlp (the top k logits softmaxed; input_linear [E, 2I, H], gate first), each
// block with an unweighted output bias. The layers' norms keep eps 1e-6 whatever rms_norm_eps
// says (it is the final norm's).
void parseJetMoe(const ConfigReader &r, ModelSpec &s) {
  ExpertNaming n = graniteNames("mlp");
  n.output_bias = "mlp.bias";
  topkSoftmaxExperts(r, s, n);
  s.names.attn = "self_attention";
  s.attn.head_experts.experts = s.moe.num_experts;
  s.attn.head_experts.top_k = s.moe.top_k;
  s.layer_norm_eps = 1e-6;
}

// Beam's rope_parameters: one dictionary (or null: NoPE) per layer type; without the key, RoPE
// theta 1e4 on sliding layers and NoPE on full ones. A top-level rope_theta is not read (BeamConfig
// ignores it), and neither is partial_rotary_factor (its RoPE turns whole heads).
nlohmann::json beamRopeParameters(const ConfigReader &r) {
  nlohmann::json byType = {{"full_attention", nullptr},
                           {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  if (r.has("rope_scaling") && !r.has("rope_parameters"))
    throw ConfigError(r.path("rope_scaling"), "is not supported for beam: give rope_parameters by layer type");
  if (!r.has("rope_parameters"))
    return byType;
  if (!ropeByLayerType(r))
    throw ConfigError(r.path("rope_parameters"),
                      "must map each layer type (full_attention, sliding_attention) to its RoPE dictionary or null");
  const nlohmann::json &rp = r.raw("rope_parameters");
  for (const std::string kind : {"full_attention", "sliding_attention"}) {
    if (!rp.contains(kind))
      throw ConfigError(r.path("rope_parameters." + kind), "is missing: the layers of that type read it (null: NoPE)");
    if (!rp[kind].is_null() && !(rp[kind].is_object() && rp[kind].contains("rope_theta")))
      throw ConfigError(r.path("rope_parameters." + kind + ".rope_theta"), "is missing");
    byType[kind] = rp[kind];
  }
  return byType;
}

RopeDicts beamRopeDicts(const ConfigReader &r) {
  nlohmann::json byType = beamRopeParameters(r);
  RopeDicts out;
  for (const std::string kind : {"full_attention", "sliding_attention"}) {
    nlohmann::json d = byType[kind];
    out[kind] = d.is_null() ? nlohmann::json{{"rope_type", "default"}, {"rope_theta", 10000.0}} : d;
    out[kind]["partial_rotary_factor"] = 1.0;
  }
  return out;
}

// Beam: sandwich norms, per-head q/k norms, an output gate from its own gate_proj plus one bias
// per head (gate_bias); layer_types, else full attention on every sixth layer and the last
// (sliding_window 512 on the others). Layer types without RoPE (by default the full ones) scale
// their queries by (1 + (p + 1) / 2048) ^ 0.1. The n-th residual add (n = 2(l + 1) after the
// attention, n + 1 after the MLP) is depth-scaled, x sqrt((n - 1) / n) + f / sqrt(n).
// DeepSeek-V3's router without shared experts on the layers mlp_layer_types calls sparse (by
// default all but the first three), and logits soft-capped at final_logit_softcapping (30).
void parseBeam(const ConfigReader &r, ModelSpec &s) {
  s.attn.qk_norm = true;
  s.attn.output_gate = true;
  s.names.attn_gate = "gate_proj";
  s.names.attn_gate_bias = "gate_bias";
  s.sandwich_norms = true;
  int64_t window = windowOrClassDefault(r, 512), last = s.num_layers - 1;
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [last](int64_t i) { return (i + 1) % 6 != 0 && i != last; },
                                        LayerKind::SlidingAttention, LayerKind::FullAttention);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  nlohmann::json rope = beamRopeParameters(r);
  for (int64_t l = 0; l < s.num_layers; ++l) {
    LayerSpec &L = s.layers[l];
    L.nope = rope[kinds[l] == LayerKind::SlidingAttention ? "sliding_attention" : "full_attention"].is_null();
    double n = 2.0 * (l + 1);
    L.mixer_alpha = std::sqrt((n - 1) / n), L.mixer_beta = 1 / std::sqrt(n);
    L.mlp_alpha = std::sqrt(n / (n + 1)), L.mlp_beta = 1 / std::sqrt(n + 1);
  }
  s.attn.temperature_beta = 0.1;
  s.attn.temperature_period = 2048;
  s.attn.temperature_form = QueryTemperature::Power;
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 256, .top_k = 8, .groups = 8, .keep = 4, .intermediate = 2560, .scaling = 2.5,
                    .count_key = "num_experts", .shared_key = nullptr});
  moeByLayerTypes(r, s, [](int64_t i) { return i >= 3; });
  bool uncapped = r.contains("final_logit_softcapping") && !r.has("final_logit_softcapping"); // null: none
  s.final_softcap = uncapped ? 0.0 : r.getNumber("final_logit_softcapping", 30.0);
}

// Kolibri-1: GLM-4's sandwich norms (post_attn_norm, post_attention_layernorm before the MLP,
// post_ffn_norm) around EXAONE-4's attention (per-head q/k norms; full layers are NoPE when
// sliding_window is set), layer_types else full attention on every fifth layer (window 513 by
// default); on every layer a router choosing the top k of logit + moe.router.expert_bias and
// weighing them by sigmoid(logit), renormalised with norm_topk_prob, and a shared expert.
void parseKolibri1(const ConfigReader &r, ModelSpec &s) {
  s.attn.qk_norm = true;
  int64_t window = windowOrClassDefault(r, 513);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [](int64_t i) { return (i + 1) % 5 != 0; },
                                        LayerKind::SlidingAttention, LayerKind::FullAttention);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  for (LayerSpec &l : s.layers)
    l.nope = window > 0 && l.kind != LayerKind::SlidingAttention;
  s.sandwich_norms = true;
  s.names.post_attn_norm = "post_attn_norm";
  s.names.pre_ff_norm = "post_attention_layernorm";
  s.names.post_ff_norm = "post_ffn_norm";
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_experts"), .experts = 384, .top_k = 6, .count_name = "num_experts"},
               m);
  m.intermediate = r.getSize("moe_intermediate_size", 512);
  m.score = ExpertScoring::Sigmoid;
  m.renorm = r.getBool("norm_topk_prob", false);
  m.bias_on_logits = true;
  m.act = s.mlp.act;
  m.shared_intermediate = r.getSize("shared_expert_intermediate_size", 512);
  ExpertNaming &n = m.names;
  n = perExpertNames(s.names, "gate", /*gated=*/true);
  n.selection_bias = "moe.router.expert_bias";
  gatedSharedExpert(n, "mlp.shared_experts");
  allLayersMoe(s);
}

// PhimoeRotaryEmbedding: longrope keeps the short factors at every length and scales cos and sin
// by short_mscale up to original_max_position_embeddings, by long_mscale beyond. cbc runs the
// short factors with one mscale, so the two must agree (they do in Phi-3.5-MoE).
RopeDicts phimoeRopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 1000000.0);
  for (auto &[kind, d] : dicts) {
    std::string key = d.contains("rope_type") ? "rope_type" : "type";
    std::string type = d.value(key, std::string("default"));
    if (type == "default")
      continue;
    if (type != "longrope")
      throw ConfigError(ropePath(r, kind, false) + key,
                        "unsupported RoPE type '" + type + "' for phimoe (default or longrope)");
    for (const char *mscale : {"short_mscale", "long_mscale"})
      if (!d.contains(mscale) || !d[mscale].is_number())
        throw ConfigError(ropePath(r, kind, false) + mscale, "must be a number with longrope");
    if (d["short_mscale"].get<double>() != d["long_mscale"].get<double>())
      throw ConfigError(ropePath(r, kind, false) + "long_mscale",
                        "must equal short_mscale: cbc does not switch the RoPE scale past "
                        "original_max_position_embeddings");
    if (d.contains("short_factor"))
      d["long_factor"] = d["short_factor"];
    d["attention_factor"] = d["short_mscale"];
  }
  return dicts;
}

// Aria's text decoder: MoE on every layer, the top moe_topk of moe_num_experts logits weighted by
// a softmax over them; experts fused and transposed (fc1 [E, H, 2I] gate then up, fc2 [E, I, H]),
// always SiLU-gated; moe_num_shared_experts x intermediate_size of shared expert following
// hidden_act, with biases from mlp_bias; q/k/v/o biases from attention_bias.
void parseAriaText(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  uniformWindowLayers(s, 0);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = "moe_num_experts", .experts = 8, .top_k = 2, .count_name = "moe_num_experts",
                   .top_k_key = "moe_topk"},
               m);
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::TopkSoftmax;
  m.act = FfnActivation::Silu;
  m.shared_act = s.mlp.act;
  m.shared_intermediate = m.intermediate * r.getCount("moe_num_shared_experts", 2);
  bool bias = r.getBool("mlp_bias", false);
  if (bias && m.shared_intermediate == 0)
    throw ConfigError(r.path("moe_num_shared_experts"),
                      "must be positive with mlp_bias: an empty shared expert still adds its down_proj bias, "
                      "which cbc does not lower");
  ExpertNaming &n = m.names;
  n.router = "mlp.router.weight";
  n.fused = n.transposed = true;
  n.experts.gate_up = {"mlp.experts.fc1.weight"};
  n.experts.down = {"mlp.experts.fc2.weight"};
  gatedSharedExpert(n, "mlp.shared_experts");
  if (bias) {
    n.shared.gate_up_bias = {"mlp.shared_experts.gate_proj.bias", "mlp.shared_experts.up_proj.bias"};
    n.shared.down_bias = "mlp.shared_experts.down_proj.bias";
  }
  allLayersMoe(s);
}

// Flint: per-head q/k RMS norms before RoPE, learned attention sinks (stored as
// self_attn.softmax_offset), layer_types else full attention on layers 0, 1, every fourth from 1
// and the last, the others sliding (sliding_window, default 513); only sliding layers rotate.
// Experts placed as Qwen2-MoE places them (mlp_only_layers, default [0, 1]), chosen by the top
// sigmoid(logit), those renormalised with norm_topk_prob, and a shared expert added ungated.
void parseFlint(const ConfigReader &r, ModelSpec &s) {
  s.attn.qk_norm = true;
  s.attn.sinks = true;
  s.names.sinks = "softmax_offset";
  attentionBiases(r, s);
  int64_t window = windowOrClassDefault(r, 513);
  int64_t last = s.num_layers - 1;
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [last](int64_t i) { return !(i < 2 || i % 4 == 1 || i == last); },
                                        LayerKind::SlidingAttention, LayerKind::FullAttention);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  for (LayerSpec &l : s.layers)
    l.nope = l.kind != LayerKind::SlidingAttention;
  parseQwenMoe(r, s,
               {.experts = 256, .top_k = 6, .intermediate = 512, .shared_intermediate = 1024, .renorm = true,
                .mlp_only = {0, 1}});
  s.moe.score = ExpertScoring::Sigmoid;
  s.moe.names.shared_gate.clear();
}

// AFMoE: four RMSNorms per layer (input, post_attention, pre_mlp, post_mlp), per-head q/k norms,
// an output gate of its own (self_attn.gate_proj, o * sigmoid(gate)), layer_types else every
// global_attn_every_n_layers-th layer full (default 4) and the others sliding (window 1024); only
// sliding layers rotate. Layers from num_dense_layers on are MoE: the top k of sigmoid(logit) +
// mlp.expert_bias, weighted by sigmoid(logit) renormalised (+1e-20) and scaled by route_scale,
// plus num_shared_experts x moe_intermediate_size of shared expert. mup_enabled scales the
// embeddings by sqrt(hidden_size).
void parseAfmoe(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("attention_bias", false))
    throw ConfigError(r.path("attention_bias"), "q/k/v biases beside the bias-free output gate are not supported");
  s.attn.qk_norm = true;
  s.attn.output_gate = true;
  s.names.attn_gate = "gate_proj";
  int64_t window = windowOrClassDefault(r, 1024);
  int64_t every = r.getSize("global_attn_every_n_layers", 4);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [every](int64_t i) { return (i + 1) % every != 0; },
                                        LayerKind::SlidingAttention, LayerKind::FullAttention);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  for (LayerSpec &l : s.layers)
    l.nope = l.kind != LayerKind::SlidingAttention;
  s.sandwich_norms = true;
  s.names.post_attn_norm = "post_attention_layernorm";
  s.names.pre_ff_norm = "pre_mlp_layernorm";
  s.names.post_ff_norm = "post_mlp_layernorm";
  if (r.getBool("mup_enabled", false))
    s.embed_scale = std::sqrt((double)s.hidden_size);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = "num_experts", .experts = 64, .top_k = 6, .count_name = "num_experts"}, m);
  m.intermediate = r.getSize("moe_intermediate_size", 1408);
  m.score = ExpertScoring::Sigmoid;
  m.renorm = true;
  m.renorm_eps = 1e-20;
  m.scaling = r.getNumber("route_scale", 1.0);
  m.act = s.mlp.act;
  m.shared_intermediate = m.intermediate * r.getCount("num_shared_experts", 2);
  ExpertNaming &n = m.names;
  n = perExpertNames(s.names, "router.gate", /*gated=*/true);
  n.selection_bias = "mlp.expert_bias";
  gatedSharedExpert(n, "mlp.shared_experts");
  int64_t dense = r.getCount("num_dense_layers", 1);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].moe = i >= dense;
}

// LagunaConfig reads rope_parameters[layer_type] as written (no defaults filled in): nested by
// type, each used type's dictionary with its rope_type and rope_theta; without rope_parameters,
// theta 5e5 rotating half of each head on full layers and 1e4 rotating all on sliding ones.
RopeDicts lagunaRopeDicts(const ConfigReader &r) {
  if (!r.has("rope_parameters"))
    return {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 500000.0}, {"partial_rotary_factor", 0.5}}},
            {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 1.0}}}};
  if (!ropeByLayerType(r))
    throw ConfigError(r.path("rope_parameters"), "must map each layer type (full_attention, sliding_attention) to its "
                                                 "RoPE dictionary: the config class reads it by layer type");
  const nlohmann::json &rp = r.raw("rope_parameters");
  std::set<std::string> used = {"full_attention"};
  if (r.has("layer_types")) {
    used.clear();
    for (const std::string &t : r.getStringList("layer_types"))
      used.insert(t == "sliding_attention" ? t : "full_attention");
  }
  RopeDicts out;
  for (const char *kind : {"full_attention", "sliding_attention"}) {
    std::string path = std::string("rope_parameters.") + kind;
    bool needed = used.count(kind) > 0;
    if (needed && (!rp.contains(kind) || !rp[kind].is_object()))
      throw ConfigError(r.path(path), "must be a RoPE dictionary: the layers of that type rotate");
    nlohmann::json d = rp.contains(kind) && rp[kind].is_object() ? rp[kind] : nlohmann::json::object();
    for (const char *key : {"rope_type", "rope_theta"})
      if (needed && (!d.contains(key) || d[key].is_null()))
        throw ConfigError(r.path(path + "." + key), "is required (the config class fills in no default)");
    if (!needed)
      d = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
    out[kind] = d;
  }
  return out;
}

// Laguna: per-head q/k RMS norms, q head counts per layer (num_attention_heads_per_layer), an
// output gate o * softplus(g_proj(x)) per head (gating true or "per-head") or per element,
// layer_types else all full (sliding ones windowed by sliding_window, default 512), partial RoPE
// by layer type. MoE on mlp_layer_types' sparse layers (default all but the first): the top k of
// sigmoid(logit) + a correction bias (stored under mlp.experts), the logits first soft-capped at
// moe_router_logit_softcapping where it is positive, sigmoid weights renormalised and the routed
// sum scaled by moe_routed_scaling_factor, plus an ungated shared expert.
void parseLaguna(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("attention_bias", false))
    throw ConfigError(r.path("attention_bias"), "q/k/v biases beside the bias-free output gate are not supported");
  if (r.getBool("moe_apply_router_weight_on_input", false))
    throw ConfigError(r.path("moe_apply_router_weight_on_input"), "must be false (transformers does not run it)");
  s.attn.qk_norm = true;
  s.attn.output_gate = s.attn.gate_softplus = true;
  s.names.attn_gate = "g_proj";
  const nlohmann::json gating = r.has("gating") ? r.raw("gating") : nlohmann::json(true);
  s.attn.gate_per_head = gating == true || gating == "per-head";
  int64_t window = windowOrClassDefault(r, 512);
  std::vector<LayerKind> kinds = r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                                                      : std::vector<LayerKind>(s.num_layers, LayerKind::FullAttention);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  if (r.has("num_attention_heads_per_layer")) {
    std::vector<int64_t> heads = r.getIntList("num_attention_heads_per_layer");
    checkLayerCount(r, "num_attention_heads_per_layer", heads.size(), s.num_layers);
    for (int64_t i = 0; i < s.num_layers; ++i) {
      if (heads[i] <= 0 || heads[i] % s.attn.num_kv_heads != 0)
        throw ConfigError(r.path("num_attention_heads_per_layer"),
                          "layer " + std::to_string(i) + ": must be a positive multiple of num_key_value_heads (" +
                              std::to_string(s.attn.num_kv_heads) + ")");
      s.layers[i].num_heads = heads[i];
    }
  }
  lagunaRopeDicts(r); // checks the dictionaries before any layer is built
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = "num_experts", .experts = 256, .top_k = 8, .count_name = "num_experts"}, m);
  m.intermediate = r.getSize("moe_intermediate_size", 512);
  m.score = ExpertScoring::Sigmoid;
  m.renorm = true;
  m.scaling = r.getNumber("moe_routed_scaling_factor", 1.0);
  // Only a positive cap applies, as LagunaTopKRouter reads it.
  m.router_softcap = std::max(r.getNumber("moe_router_logit_softcapping", 0.0), 0.0);
  m.act = s.mlp.act;
  m.shared_intermediate = r.getCount("shared_expert_intermediate_size", 512);
  ExpertNaming &n = m.names;
  n = perExpertNames(s.names, "gate", /*gated=*/true);
  n.selection_bias = "mlp.experts.e_score_correction_bias";
  gatedSharedExpert(n, "mlp.shared_expert");
  moeByLayerTypes(r, s, [](int64_t i) { return i > 0; });
}

// MiMo-V2-Flash: q/k heads of head_dim (192) and value heads of v_head_dim (128), v scaled by
// attention_value_scale before the cache (0.707 when absent, 1 when null); layer_types else layer
// 0 and every sixth full, the rest sliding (window sliding_window, default 129, or
// sliding_window_size + 1 as the class reads it) with twice the KV heads and per-head sinks
// (attention_sink_bias); q/k/v biases with attention_bias, o_proj never; DeepSeek-V3's router
// without shared experts, MoE on all but layer 0 unless mlp_layer_types says otherwise.
void parseMimoV2Flash(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = r.getBool("attention_bias", false);
  s.attn.v_head_dim = r.getSize("v_head_dim", 128);
  s.attn.value_scale = r.has("attention_value_scale")      ? r.getNumber("attention_value_scale", 1.0)
                       : r.contains("attention_value_scale") ? 1.0
                                                            : 0.707;
  int64_t window = r.has("sliding_window_size") ? r.getSize("sliding_window_size", 0) + 1
                                                : windowOrClassDefault(r, 129);
  std::vector<LayerKind> kinds =
      r.has("layer_types")
          ? explicitLayerTypes(r, s.num_layers)
          : kindsWhere(s.num_layers, [](int64_t i) { return i != 0 && (i + 1) % 6 != 0; }, LayerKind::SlidingAttention,
                       LayerKind::FullAttention);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  if (s.attn.num_heads % (2 * s.attn.num_kv_heads) != 0)
    throw ConfigError(r.path("num_key_value_heads"),
                      "twice it (the sliding layers' KV heads) must divide num_attention_heads (" +
                          std::to_string(s.attn.num_heads) + ")");
  for (LayerSpec &l : s.layers) {
    bool sliding = l.kind == LayerKind::SlidingAttention;
    l.num_kv_heads = sliding ? 2 * s.attn.num_kv_heads : 0;
    l.sinks = sliding;
  }
  s.names.sinks = "attention_sink_bias";
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 256, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 2048, .shared = 0,
                    .scaling = 1.0});
  moeByLayerTypes(r, s, [](int64_t i) { return i > 0; });
}

// MiMoV2FlashConfig reads rope_parameters by layer type only (a flat dictionary fails in
// transformers, a top-level rope_theta or partial_rotary_factor is never read); without it, theta
// 5e6 on full layers and 1e4 on sliding ones. Every dictionary rotates 0.334 of each head unless
// it says otherwise.
RopeDicts mimoV2FlashRopeDicts(const ConfigReader &r) {
  RopeDicts out = {
      {"full_attention", {{"rope_type", "default"}, {"rope_theta", 5000000.0}, {"partial_rotary_factor", 0.334}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.334}}}};
  if (!r.has("rope_parameters"))
    return out;
  if (!ropeByLayerType(r))
    throw ConfigError(r.path("rope_parameters"),
                      "must map each layer type (full_attention, sliding_attention) to its RoPE dictionary: the config "
                      "class reads it by layer type");
  const nlohmann::json &rp = r.raw("rope_parameters");
  for (auto &[kind, d] : out) {
    if (!rp.contains(kind) || !rp[kind].is_object())
      throw ConfigError(r.path("rope_parameters." + kind), "is missing: the layers of that type read it");
    d = rp[kind];
    if (!d.contains("partial_rotary_factor"))
      d["partial_rotary_factor"] = 0.334;
  }
  return out;
}

} // namespace

FamilyTable moeFamilies() {
  return {
      {"mixtral", {{.max_positions = 4096 * 32, .norm_eps = 1e-5, .rope_theta = 1000000.0}, parseMixtral}},
      {"qwen2_moe", {{.max_positions = 32768}, parseQwen2Moe}},
      {"qwen3_moe", {{.max_positions = 32768}, parseQwen3Moe}},
      {"minimax_m2",
       {{.head_dim = 128, .max_positions = 196608, .rope_theta = 5000000.0, .partial_rotary = true, .moe_only = true,
         .kv_heads = 8},
        parseMiniMaxM2, miniMaxM2RopeDicts}},
      {"olmoe", {{.max_positions = 4096, .norm_eps = 1e-5}, parseOlmoe}},
      {"glm4_moe",
       {{.max_positions = 131072, .norm_eps = 1e-5, .partial_rotary = true, .partial_rotary_factor = 0.5,
         .kv_heads = 8},
        parseGlm4Moe}},
      {"ernie4_5_moe",
       {{.max_positions = 131072, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 500000.0,
         .kv_heads = 4},
        parseErnie45Moe}},
      {"flex_olmo", {{.max_positions = 4096, .norm_eps = 1e-6, .rope_theta = 500000.0}, parseFlexOlmo}},
      {"solar_open",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-5, .rope_theta = 1000000.0, .partial_rotary = true,
         .moe_only = true, .kv_heads = 8},
        parseSolarOpen}},
      {"mellum",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-6, .kv_heads = 4}, parseMellum, mellumRopeDicts}},
      {"mimo_v2_flash",
       {{.head_dim = 192, .max_positions = 131072, .norm_eps = 1e-5, .partial_rotary = true,
         .partial_rotary_factor = 0.334, .kv_heads = 4},
        parseMimoV2Flash, mimoV2FlashRopeDicts}},
      {"hy_v3",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-5, .rope_theta = 11158840.0, .kv_heads = 8},
        parseHyV3}},
      {"exaone_moe", {{.max_positions = 2048, .norm_eps = 1e-5, .kv_heads = 32}, parseExaoneMoe}},
      {"granite_swa",
       {{.max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .kv_heads = 4}, parseGraniteSwa}},
      {"granitemoe_swa", {{.max_positions = 2048, .tie_word_embeddings = false}, parseGraniteMoeSwa}},
      {"dots1", {{.max_positions = 2048, .norm_eps = 1e-6}, parseDots1}},
      {"granitemoe", {{.max_positions = 2048}, parseGraniteMoe}},
      {"kolibri1",
       {{.head_dim = 128, .max_positions = 262144, .norm_eps = 1e-6, .moe_only = true, .kv_heads = 4},
        parseKolibri1}},
      {"dbrx",
       {{.max_positions = 2048, .norm_eps = 1e-5, .moe_only = true, .head_dim_unused = true}, parseDbrx, nullptr,
        dbrxKeys}},
      {"phimoe",
       {{.max_positions = 4096 * 32, .norm_eps = 1e-5, .rope_theta = 1000000.0, .kv_heads = 8}, parsePhimoe,
        phimoeRopeDicts}},
      {"granitemoeshared", {{.max_positions = 2048}, parseGraniteMoeShared}},
      {"afmoe", {{.head_dim = 128, .max_positions = 16384, .norm_eps = 1e-5}, parseAfmoe}},
      {"laguna",
       {{.head_dim = 128, .max_positions = 131072, .partial_rotary = true, .kv_heads = 8}, parseLaguna,
        lagunaRopeDicts}},
      {"flint",
       {{.head_dim = 128, .max_positions = 262144, .norm_eps = 1e-6, .kv_heads = 4}, parseFlint}},
      {"aria_text", {{.max_positions = 2048, .heads_divide_hidden = true}, parseAriaText}},
      {"beam",
       {{.head_dim = 128, .max_positions = 8192, .norm_eps = 1e-6, .kv_heads = 8}, parseBeam, beamRopeDicts}},
      {"jetmoe",
       {{.max_positions = 4096, .norm_eps = 1e-6, .tie_word_embeddings = true, .act_key = "activation_function"},
        parseJetMoe, nullptr, jetmoeKeys}},
      {"gpt_oss",
       {{.head_dim = 64, .max_positions = 131072, .norm_eps = 1e-5, .rope_theta = 150000.0}, parseGptOss,
        gptOssRopeDicts}},
  };
}

} // namespace cbc::hf
