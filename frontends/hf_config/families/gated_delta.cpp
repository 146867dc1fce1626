// Hybrids of gated delta nets (linear attention) and full attention: Qwen3-Next, the Qwen3.5
// text models (dense and MoE) and OLMo-Hybrid.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"

#include <algorithm>

namespace cbc::hf {

namespace {

// layer_types when given, else full attention on every interval-th layer and linear attention
// elsewhere.
std::vector<LayerKind> gdnLayerKinds(const ConfigReader &r, int64_t numLayers, int64_t interval) {
  if (r.has("layer_types"))
    return explicitLayerTypes(r, numLayers,
                              {{"full_attention", LayerKind::FullAttention},
                               {"linear_attention", LayerKind::LinearAttention}});
  return kindsWhere(numLayers, [&](int64_t i) { return (i + 1) % interval != 0; }, LayerKind::LinearAttention,
                    LayerKind::FullAttention);
}

// Qwen3-Next and Qwen3.5: gated attention with q/k norms and (1+w) norms every
// full_attention_interval-th layer, gated delta nets with `projections` elsewhere.
void parseQwenGatedLayers(const ConfigReader &r, ModelSpec &s, GdnSpec::Projections projections) {
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  s.attn.output_gate = true;
  s.norm_offset = 1.0;
  setLayers(s, gdnLayerKinds(r, s.num_layers, r.getSize("full_attention_interval", 4)), 0);
  parseGatedDeltaNet(r, s, projections);
}

void parseQwen3Next(const ConfigReader &r, ModelSpec &s) {
  parseQwenGatedLayers(r, s, GdnSpec::Projections::Grouped);
  parseQwenMoe(r, s, {.experts = 512, .top_k = 10, .intermediate = 512, .shared_intermediate = 512, .renorm = true});
}

void parseQwen35Text(const ConfigReader &r, ModelSpec &s) { parseQwenGatedLayers(r, s, GdnSpec::Projections::Flat); }

void parseQwen35MoeText(const ConfigReader &r, ModelSpec &s) {
  parseQwenGatedLayers(r, s, GdnSpec::Projections::Flat);
  // This router always renormalises, whatever norm_topk_prob says.
  parseQwenMoeEveryLayer(r, s, {.experts = 256, .top_k = 8, .intermediate = 512, .shared_intermediate = 512,
                                .renorm = true},
                         /*renormKey=*/false);
}

// Gated delta layers (pre-norm) and attention layers (post-norm); OlmoHybridConfig's default
// puts attention on every 4th layer, and at least on the last one.
void olmoHybridLayers(const ConfigReader &r, ModelSpec &s) {
  std::vector<LayerKind> kinds = gdnLayerKinds(r, s.num_layers, 4);
  if (!r.has("layer_types") && std::count(kinds.begin(), kinds.end(), LayerKind::FullAttention) == 0)
    kinds.back() = LayerKind::FullAttention;
  int64_t linear = std::count(kinds.begin(), kinds.end(), LayerKind::LinearAttention);
  if (linear == 0 || linear == (int64_t)kinds.size())
    throw ConfigError(r.path("layer_types"), "olmo_hybrid needs both linear_attention and attention layers");
  setLayers(s, kinds, 0);
  for (LayerSpec &l : s.layers)
    l.post_norm = l.kind == LayerKind::FullAttention;
}

void olmoHybridGdn(const ConfigReader &r, ModelSpec &s) {
  GdnSpec &g = s.gdn;
  g.projections = GdnSpec::Projections::Separate;
  int64_t heads = s.attn.num_heads;
  g.k_heads = r.getSize("linear_num_key_heads", heads);
  g.v_heads = r.getSize("linear_num_value_heads", heads);
  g.k_dim = r.getSize("linear_key_head_dim", (int64_t)(0.75 * (double)s.hidden_size / (double)g.k_heads));
  g.v_dim = r.getSize("linear_value_head_dim", 2 * g.k_dim);
  g.conv_kernel = r.getSize("linear_conv_kernel_dim", 4);
  if (g.k_heads <= 0 || g.k_dim <= 0 || g.v_heads % g.k_heads != 0)
    throw ConfigError(r.path("linear_num_value_heads"),
                      "must be a positive multiple of linear_num_key_heads (" + std::to_string(g.k_heads) + ")");
  g.beta_scale = r.getBool("linear_allow_neg_eigval", true) ? 2.0 : 1.0;
  g.norm_eps = 1e-5; // OlmoHybridRMSNormGated ignores rms_norm_eps
  requireSilu(r, "hidden_act", "the gated delta net's conv");
}

// OLMo-Hybrid: whole-row q/k norms, NoPE when rope_theta is null, and OLMo-core's norm names in
// the checkpoint.
void parseOlmoHybrid(const ConfigReader &r, ModelSpec &s) {
  olmoHybridLayers(r, s);
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  s.attn.qk_norm_whole = true;
  // NoPE only when the resolved rope_theta is null: rope_parameters' own, else the top-level
  // one (transformers fills the former from the latter); a config with neither gets RoPE.
  bool innerTheta = r.has("rope_parameters") && r.raw("rope_parameters").contains("rope_theta");
  bool nullTheta = innerTheta ? r.raw("rope_parameters")["rope_theta"].is_null()
                              : r.contains("rope_theta") && !r.has("rope_theta");
  s.attn.rope = !nullTheta;
  olmoHybridGdn(r, s);
  s.names.input_norm = "attention_layer_norm";
  s.names.post_attn_norm = "feedforward_layer_norm";
  // transformers' own names for the same tensors (conversion_mapping renames them on load).
  s.weight_aliases = {{".attention_layer_norm.", ".input_layernorm."},
                      {".feedforward_layer_norm.", ".post_attention_layernorm."}};
}

} // namespace

FamilyTable gatedDeltaFamilies() {
  return {
      {"qwen3_next",
       {{.head_dim = 256, .max_positions = 32768, .partial_rotary = true, .partial_rotary_factor = 0.25},
        parseQwen3Next}},
      {"qwen3_5_text",
       {{.head_dim = 256, .max_positions = 32768, .partial_rotary = true, .partial_rotary_factor = 0.25,
         .text_config_sizes = {{"vocab_size", 248320}, {"hidden_size", 4096}, {"intermediate_size", 12288},
                               {"num_hidden_layers", 32}, {"num_attention_heads", 16},
                               {"num_key_value_heads", 4}}},
        parseQwen35Text}},
      {"qwen3_5_moe_text",
       {{.head_dim = 256, .max_positions = 32768, .partial_rotary = true, .moe_only = true,
         .partial_rotary_factor = 0.25,
         .text_config_sizes = {{"vocab_size", 248320}, {"hidden_size", 2048}, {"num_hidden_layers", 40},
                               {"num_attention_heads", 16}, {"num_key_value_heads", 2}}},
        parseQwen35MoeText}},
      {"olmo_hybrid", {{.max_positions = 65536}, parseOlmoHybrid}},
  };
}

} // namespace cbc::hf
