// MiniMax-Text-01 (model_type minimax): lightning attention (linear attention with a constant
// decay per head) alternating with GQA attention, Mixtral experts on every layer, and a residual
// stream that carries the normed input with (alpha, beta) mixing.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"

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

} // namespace

FamilyTable miniMaxFamilies() {
  return {
      {"minimax",
       {{.max_positions = 4096 * 32, .norm_eps = 1e-5, .rope_theta = 1000000.0, .kv_heads = 8}, parseMiniMax}},
  };
}

} // namespace cbc::hf
