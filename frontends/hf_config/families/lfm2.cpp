// LFM2, LFM2-MoE and LFM3: gated short convolutions and attention, named differently from Llama.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

#include <set>

namespace cbc::hf {

namespace {

void parseLfm2Common(const ConfigReader &r, ModelSpec &s) {
  s.norm_eps = r.getNumber("norm_eps", 1e-5);
  if (s.norm_eps <= 0)
    throw ConfigError(r.path("norm_eps"), "must be positive");
  s.tie_word_embeddings = r.getBool("tie_embedding", r.getBool("tie_word_embeddings", true));
  s.attn.qk_norm = true;
  s.short_conv.kernel = r.getSize("conv_L_cache", 3);
  s.short_conv.bias = r.getBool("conv_bias", false);
  Names &n = s.names;
  n.input_norm = "operator_norm";
  n.post_attn_norm = "ffn_norm";
  n.o_proj = "out_proj";
  n.q_norm = "q_layernorm";
  n.k_norm = "k_layernorm";
  n.mlp = "feed_forward";
  n.gate = "w1";
  n.up = "w3";
  n.down = "w2";
  n.final_norm = "embedding_norm";
}

const KindNames &lfm2Kinds() {
  static const KindNames k = {{"full_attention", LayerKind::FullAttention}, {"conv", LayerKind::ShortConv}};
  return k;
}

// layer_types, else attention at full_attn_idxs (every layer when that is absent).
std::vector<LayerKind> lfm2LayerKinds(const ConfigReader &r, int64_t layers) {
  if (r.has("layer_types"))
    return explicitLayerTypes(r, layers, lfm2Kinds());
  if (!r.has("full_attn_idxs"))
    return std::vector<LayerKind>(layers, LayerKind::FullAttention);
  auto full = r.getIntList("full_attn_idxs");
  std::set<int64_t> fullSet(full.begin(), full.end());
  return kindsWhere(layers, [&](int64_t i) { return fullSet.count(i) > 0; }, LayerKind::FullAttention,
                    LayerKind::ShortConv);
}

// The feed-forward width is adjusted from the configured one, as transformers does.
int64_t lfm2FeedForward(const ConfigReader &r, const ModelSpec &s) {
  int64_t ff = r.has("block_ff_dim") ? r.requireSize("block_ff_dim") : s.mlp.intermediate;
  if (r.getBool("block_auto_adjust_ff_dim", true)) {
    ff = 2 * ff / 3;
    if (r.has("block_ffn_dim_multiplier")) {
      int64_t multipleOf = r.getSize("block_multiple_of", 256);
      ff = (int64_t)(r.requireNumber("block_ffn_dim_multiplier") * (double)ff);
      ff = multipleOf * ((ff + multipleOf - 1) / multipleOf);
    } else if (!r.contains("block_ffn_dim_multiplier")) {
      int64_t multipleOf = r.getSize("block_multiple_of", 256);
      ff = multipleOf * ((ff + multipleOf - 1) / multipleOf); // the class default multiplier is 1
    }
  }
  if (ff <= 0)
    throw ConfigError(r.path("intermediate_size"), "gives an empty feed-forward width");
  return ff;
}

void parseLfm2(const ConfigReader &r, ModelSpec &s) {
  parseLfm2Common(r, s);
  setLayers(s, lfm2LayerKinds(r, s.num_layers), 0);
  s.mlp.intermediate = lfm2FeedForward(r, s);
}

// LFM2-MoE: the first num_dense_layers keep a dense MLP; the rest route over sigmoid scores
// chosen with a bias that does not weight them.
void parseLfm2Moe(const ConfigReader &r, ModelSpec &s) {
  parseLfm2Common(r, s);
  if (!r.has("layer_types"))
    throw ConfigError(r.path("layer_types"), "is required for lfm2_moe (the config class has no default)");
  setLayers(s, explicitLayerTypes(r, s.num_layers, lfm2Kinds()), 0);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = "num_experts", .experts = 32, .top_k = 4, .count_name = "num_experts"}, m);
  m.intermediate = r.getSize("moe_intermediate_size", 1792);
  m.score = ExpertScoring::Sigmoid;
  m.names = perExpertNames(s.names, "gate", /*gated=*/true);
  if (r.getBool("use_expert_bias", true))
    m.names.selection_bias = s.names.mlp + ".expert_bias";
  m.renorm = r.getBool("norm_topk_prob", true);
  m.renorm_eps = 1e-6;
  m.scaling = r.getNumber("routed_scaling_factor", 1.0);
  m.act = FfnActivation::Silu;
  int64_t dense = r.getSize("num_dense_layers", 2);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].moe = i >= dense;
}

const KindNames &lfm3Kinds() {
  static const KindNames k = {{"full_attention", LayerKind::FullAttention},
                              {"sliding_attention", LayerKind::SlidingAttention},
                              {"conv", LayerKind::ShortConv}};
  return k;
}

// LFM3: LFM2's short convolutions and names, with sandwich norms (post_operator_norm,
// post_ffn_norm) under use_sandwich_norm, Qwen3's attention (per-head q_norm / k_norm, o_proj)
// with a sigmoid output gate per head from g_proj under use_attention_gate, and sliding layers
// (sliding_window, default 256). layer_types, else layer i full when i % 4 == 2, sliding when
// i % 4 == 0 and i > 0, a conv otherwise; RoPE by layer type (the class default: plain RoPE at
// 10000 on sliding layers, proportional RoPE at 1e6 over half of each head on full ones).
void parseLfm3(const ConfigReader &r, ModelSpec &s) {
  parseLfm2Common(r, s);
  s.tie_word_embeddings = r.getBool("tie_word_embeddings", true);
  Names &n = s.names;
  n.q_norm = "q_norm";
  n.k_norm = "k_norm";
  n.o_proj = "o_proj";
  if (r.getBool("use_sandwich_norm", true)) {
    s.sandwich_norms = true;
    n.post_attn_norm = "post_operator_norm";
    n.pre_ff_norm = "ffn_norm";
    n.post_ff_norm = "post_ffn_norm";
  }
  if (r.getBool("use_attention_gate", true)) {
    s.attn.output_gate = s.attn.gate_per_head = true;
    // The module is g_proj; transformers saves it as gate_proj (its conversion mapping).
    n.attn_gate = "gate_proj";
    s.weight_aliases.emplace_back(".self_attn.gate_proj.", ".self_attn.g_proj.");
  }
  attentionBiases(r, s);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers, lfm3Kinds())
                           : kindsWhere(s.num_layers, [](int64_t i) { return i % 4 == 2; }, LayerKind::FullAttention,
                                        LayerKind::ShortConv);
  if (!r.has("layer_types"))
    for (int64_t i = 4; i < s.num_layers; i += 4)
      kinds[i] = LayerKind::SlidingAttention;
  int64_t window = windowOrClassDefault(r, 256);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
}

// The class's RoPE dictionaries when config.json has none.
RopeDicts lfm3Rope(const ConfigReader &r) {
  return ropeOrClassDefaults(
      r, 10000.0,
      {{"rope_type", "proportional"}, {"rope_theta", 1000000.0}, {"partial_rotary_factor", 0.5}},
      {{"rope_type", "default"}, {"rope_theta", 10000.0}});
}

} // namespace

FamilyTable lfm2Families() {
  return {
      {"lfm2",
       {{.max_positions = 128000, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 1000000.0,
         .intermediate_alias = "block_ff_dim"},
        parseLfm2}},
      {"lfm3",
       {{.head_dim = 128, .max_positions = 128000, .norm_eps = 1e-5, .tie_word_embeddings = true,
         .norm_eps_key = "norm_eps", .kv_heads = 4, .layer_types = LayerListRule::Own},
        parseLfm3, lfm3Rope}},
      {"lfm2_moe",
       {{.max_positions = 128000, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 1000000.0},
        parseLfm2Moe}},
  };
}

} // namespace cbc::hf
