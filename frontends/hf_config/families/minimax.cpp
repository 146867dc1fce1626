// MiniMax-Text-01 (model_type minimax): lightning attention (linear attention with a constant
// decay per head) alternating with GQA attention, Mixtral experts on every layer, and a residual
// stream that carries the normed input with (alpha, beta) mixing. MiniMax-M3's text decoder
// (minimax_m3_vl_text) with its block-sparse attention layers.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mla.h"

#include <algorithm>
#include <cmath>

namespace cbc::hf {

namespace {

// MiniMaxLightningAttention.get_slope_rate: head h of layer l (of L) decays by
// (2^(-8/H))^(h+1) * (1 - l / (L - 1 + 1e-5) + 1e-5) per token. transformers computes the power
// in fp32 and the product with the Python-float factor in fp32, so cbc rounds the same way.
std::vector<double> lightningDecay(int64_t heads, int64_t layer, int64_t layers) {
  double base = 1.0 / std::pow(2.0, 8.0 / (double)heads);
  float factor = (float)(1.0 - (double)layer / ((double)(layers - 1) + 1e-5) + 1e-5);
  std::vector<double> decay;
  for (int64_t h = 0; h < heads; ++h)
    decay.push_back((double)(std::pow((float)base, (float)(h + 1)) * factor));
  return decay;
}

// The original MiniMax-Text-01 config's spellings. MiniMaxConfig does not read them (its names
// are layer_types and the *_alpha_factor / *_beta_factor keys), so a config that still has them
// would silently run with other weights on its residuals.
void rejectLegacyKeys(const ConfigReader &r) {
  const std::pair<const char *, const char *> legacy[] = {
      {"attn_type_list", "layer_types"},
      {"layernorm_full_attention_alpha", "full_attn_alpha_factor"},
      {"layernorm_full_attention_beta", "full_attn_beta_factor"},
      {"layernorm_linear_attention_alpha", "linear_attn_alpha_factor"},
      {"layernorm_linear_attention_beta", "linear_attn_beta_factor"},
      {"layernorm_mlp_alpha", "mlp_alpha_factor"},
      {"layernorm_mlp_beta", "mlp_beta_factor"}};
  for (const auto &[key, now] : legacy)
    if (r.contains(key))
      throw ConfigError(r.path(key), std::string("is the original MiniMax-Text-01 spelling, which transformers' "
                                                 "MiniMaxConfig ignores; give it as '") +
                                         now + "'");
}

// layer_types, else MiniMaxConfig's default: full attention on the even layers. A sliding_window
// applies to the attention layers (transformers' sliding causal mask).
void miniMaxLayers(const ConfigReader &r, ModelSpec &s) {
  std::vector<LayerKind> kinds =
      r.has("layer_types")
          ? explicitLayerTypes(r, s.num_layers,
                               {{"full_attention", LayerKind::FullAttention},
                                {"linear_attention", LayerKind::Lightning}})
          : kindsWhere(s.num_layers, [](int64_t i) { return i % 2 == 0; }, LayerKind::FullAttention,
                       LayerKind::Lightning);
  int64_t window = optionalWindow(r);
  for (LayerKind &k : kinds)
    if (k == LayerKind::FullAttention && window > 0)
      k = LayerKind::SlidingAttention;
  setLayers(s, kinds, window);
}

double factor(const ConfigReader &r, const char *key) {
  double v = r.getNumber(key, 1.0);
  if (!std::isfinite(v))
    throw ConfigError(r.path(key), "must be a finite number");
  return v;
}

void parseMiniMax(const ConfigReader &r, ModelSpec &s) {
  rejectLegacyKeys(r);
  miniMaxLayers(r, s);
  // The lightning mixer applies hidden_act to q|k|v; the experts use it too.
  requireSilu(r, "hidden_act", "lightning attention");
  // block_size only sets transformers' prefill blocking (cbc blocks as it likes); it must still
  // be a size.
  r.getSize("block_size", 256);
  s.lightning.heads = s.attn.num_heads;
  s.lightning.head_dim = s.attn.head_dim;
  s.lightning.norm_eps = 1e-6; // MiniMaxLightningAttention's norm ignores rms_norm_eps
  double mlpAlpha = factor(r, "mlp_alpha_factor"), mlpBeta = factor(r, "mlp_beta_factor");
  double fullAlpha = factor(r, "full_attn_alpha_factor"), fullBeta = factor(r, "full_attn_beta_factor");
  double linAlpha = factor(r, "linear_attn_alpha_factor"), linBeta = factor(r, "linear_attn_beta_factor");
  for (int64_t l = 0; l < s.num_layers; ++l) {
    LayerSpec &L = s.layers[l];
    bool lightning = L.kind == LayerKind::Lightning;
    L.normed_residual = true;
    L.mixer_alpha = lightning ? linAlpha : fullAlpha;
    L.mixer_beta = lightning ? linBeta : fullBeta;
    L.mlp_alpha = mlpAlpha, L.mlp_beta = mlpBeta;
    if (lightning)
      L.lightning_decay = lightningDecay(s.attn.num_heads, l, s.num_layers);
  }
  // Mixtral's router and experts, under Mixtral's checkpoint names (transformers' conversion
  // mapping treats minimax as mixtral).
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_local_experts"), .experts = 8, .top_k = 2,
                   .count_name = "num_local_experts"},
               m);
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::Softmax;
  m.renorm = true;
  m.act = s.mlp.act;
  m.names.router = "block_sparse_moe.gate.weight";
  m.names.experts.gate_up = {"block_sparse_moe.experts.{e}.w1.weight", "block_sparse_moe.experts.{e}.w3.weight"};
  m.names.experts.down = {"block_sparse_moe.experts.{e}.w2.weight"};
  allLayersMoe(s);
}

// MiniMaxM3VLTextConfig forces hidden_act to silu (checkpoints say "swigluoai"): no key names
// the activation, which is always the clamped SwiGLU.
nlohmann::json miniMaxM3Keys(const ConfigReader &r) {
  nlohmann::json j = r.objectToCopy();
  j["hidden_act"] = "silu";
  return j;
}

// The share of each head RoPE turns: rope_parameters' partial_rotary_factor, else the top-level
// key (which the config class moves there), else all of it.
double miniMaxM3RotaryShare(const ConfigReader &r) {
  if (r.has("rope_parameters") && r.raw("rope_parameters").is_object() &&
      r.raw("rope_parameters").contains("partial_rotary_factor"))
    return r.child("rope_parameters").getNumber("partial_rotary_factor", 1.0);
  return r.getNumber("partial_rotary_factor", 1.0);
}

// The lightning indexer's sizes (BlockIndexerSpec): the index_* keys, which the legacy
// sparse_attention_config's sparse_* keys override, as the config class's __post_init__ does.
void miniMaxM3Indexer(const ConfigReader &r, ModelSpec &s) {
  nlohmann::json none = nlohmann::json::object();
  ConfigReader legacy = r.has("sparse_attention_config") ? r.child("sparse_attention_config")
                                                         : ConfigReader(none, "sparse_attention_config.");
  auto size = [&](const char *key, const char *legacyKey, int64_t fallback, bool zeroAllowed = false) {
    const ConfigReader &from = legacy.has(legacyKey) ? legacy : r;
    const char *name = legacy.has(legacyKey) ? legacyKey : key;
    return zeroAllowed ? from.getCount(name, fallback) : from.getSize(name, fallback);
  };
  BlockIndexerSpec &ix = s.attn.block_indexer;
  ix.heads = size("index_n_heads", "sparse_num_index_heads", 4);
  ix.head_dim = size("index_head_dim", "sparse_index_dim", 128);
  ix.block = size("index_block_size", "sparse_block_size", 128);
  ix.topk = size("index_topk_blocks", "sparse_topk_blocks", 16);
  ix.local = size("index_local_blocks", "sparse_local_block", 1, true);
  const AttentionSpec &a = s.attn;
  if (a.num_heads % ix.heads != 0)
    throw ConfigError(r.path("index_n_heads"), "must divide num_attention_heads (each query head reads one "
                                               "indexer head's blocks)");
  if (a.num_kv_heads % ix.heads != 0)
    throw ConfigError(r.path("index_n_heads"), "must divide num_key_value_heads: cbc's attention kernels read one "
                                               "block selection per key head");
  if (ix.local > ix.topk)
    throw ConfigError(r.path("index_local_blocks"), "must not exceed index_topk_blocks: the local blocks take "
                                                    "top-k places");
  // The indexer's RoPE takes the first index_head_dim of the attention's rotary features; a
  // shorter indexer head would pair features transformers' slice leaves mismatched.
  int64_t rotary = (int64_t)((double)a.head_dim * miniMaxM3RotaryShare(r));
  if (ix.head_dim < rotary)
    throw ConfigError(r.path("index_head_dim"), "must be at least the rotary dimension (" + std::to_string(rotary) +
                                                    "): a shorter indexer head mispairs RoPE's features");
}

// Full-attention and block-sparse (minimax_m3_sparse) layers: layer_types, else the legacy
// sparse_attention_config's sparse_attention_freq (1: sparse), else all full attention.
void miniMaxM3Layers(const ConfigReader &r, ModelSpec &s) {
  std::vector<bool> sparse(s.num_layers, false);
  if (r.has("layer_types")) {
    std::vector<std::string> types = r.getStringList("layer_types");
    checkLayerCount(r, "layer_types", types.size(), s.num_layers);
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] != "full_attention" && types[i] != "minimax_m3_sparse")
        throw ConfigError(r.path("layer_types"),
                          "layer " + std::to_string(i) + " is '" + types[i] +
                              "', not a layer type of minimax_m3_vl_text (full_attention, minimax_m3_sparse)");
      sparse[i] = types[i] == "minimax_m3_sparse";
    }
  } else if (r.has("sparse_attention_config") && r.child("sparse_attention_config").has("sparse_attention_freq")) {
    ConfigReader legacy = r.child("sparse_attention_config");
    std::vector<int64_t> freq = legacy.getIntList("sparse_attention_freq");
    checkLayerCount(legacy, "sparse_attention_freq", freq.size(), s.num_layers);
    for (size_t i = 0; i < freq.size(); ++i)
      sparse[i] = freq[i] != 0;
  }
  uniformWindowLayers(s, 0);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].block_sparse = sparse[i];
  if (std::find(sparse.begin(), sparse.end(), true) != sparse.end())
    miniMaxM3Indexer(r, s);
}

// MiniMax-M3's text decoder: Gemma's 1 + w RMS norms everywhere (the per-head q/k norms before
// RoPE too), RoPE on the leading partial_rotary_factor of each head (rotary_dim is never read),
// GPT-OSS's clamped SwiGLU (swiglu_limit, swiglu_alpha) with gate and up in halves for the dense
// MLP (dense_intermediate_size), the shared expert and the routed experts, and MiniMax-M2's
// sigmoid router (correction bias for the choice, always renormalised) times
// routed_scaling_factor beside one shared expert (shared_intermediate_size). MLP types from
// mlp_layer_types, else the legacy moe_layer_freq (1: sparse), else all sparse.
void parseMiniMaxM3(const ConfigReader &r, ModelSpec &s) {
  miniMaxM3Layers(r, s);
  s.norm_offset = 1.0;
  s.attn.qk_norm = true;
  s.names.gate_up = "gate_up_proj";
  MlpSpec &d = s.mlp;
  d.intermediate = r.getSize("dense_intermediate_size", 12288);
  d.act = FfnActivation::ClampedSwiglu;
  d.limit = r.getNumber("swiglu_limit", 7.0);
  d.alpha = r.getNumber("swiglu_alpha", 1.702);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_local_experts"), .experts = 128, .top_k = 4,
                   .count_name = "num_local_experts"},
               m);
  m.intermediate = r.getSize("intermediate_size", 3072);
  m.score = ExpertScoring::Sigmoid;
  m.renorm = true;
  m.scaling = r.getNumber("routed_scaling_factor", 2.0);
  m.act = FfnActivation::ClampedSwiglu;
  m.limit = d.limit, m.alpha = d.alpha;
  m.shared_intermediate = r.getSize("shared_intermediate_size", 3072);
  ExpertNaming &n = m.names;
  n.router = "mlp.gate.weight";
  n.selection_bias = "mlp.gate.e_score_correction_bias";
  n.fused = true;
  n.experts.gate_up = {"mlp.experts.gate_up_proj"};
  n.experts.down = {"mlp.experts.down_proj"};
  n.shared.gate_up = {"mlp.shared_experts.gate_up_proj.weight"};
  n.shared.down = {"mlp.shared_experts.down_proj.weight"};
  if (!r.has("mlp_layer_types") && r.has("moe_layer_freq")) {
    std::vector<int64_t> freq = r.getIntList("moe_layer_freq");
    checkLayerCount(r, "moe_layer_freq", freq.size(), s.num_layers);
    for (int64_t i = 0; i < s.num_layers; ++i)
      s.layers[i].moe = freq[i] != 0;
  } else {
    moeByLayerTypes(r, s, [](int64_t) { return true; });
  }
}

} // namespace

FamilyTable miniMaxFamilies() {
  return {
      {"minimax",
       {{.max_positions = 4096 * 32, .norm_eps = 1e-5, .rope_theta = 1000000.0, .kv_heads = 8}, parseMiniMax}},
      {"minimax_m3_vl_text",
       {{.head_dim = 128, .max_positions = 524288, .norm_eps = 1e-6, .rope_theta = 5000000.0, .partial_rotary = true,
         .kv_heads = 4, .layer_types = LayerListRule::Own},
        parseMiniMaxM3, nullptr, miniMaxM3Keys}},
  };
}

} // namespace cbc::hf
