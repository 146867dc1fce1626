// Cohere decoders: cohere (Command-R), cohere2 (Command-R7B, Command-A) and cohere2_moe: parallel
// blocks over one LayerNorm (weight, no bias), RoPE on interleaved pairs, logits scaled by
// logit_scale.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mla.h"
#include "frontends/hf_config/parse_config.h"

namespace cbc::hf {

namespace {

// x + attn(LN(x)) + mlp(LN(x)) with one input_layernorm per layer, a bias-free LayerNorm
// (layer_norm_eps) there and before the head, q/k/v/o biases from attention_bias.
void cohereLayout(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.norm_kind = NormKind::Layer;
  s.norm_bias = false;
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  s.logits_scale = r.getNumber("logit_scale", 0.0625);
  for (LayerSpec &l : s.layers)
    l.parallel = true;
}

// Command-R. use_qk_norm (Command-R+) norms q and k with a LayerNorm holding one weight row per
// head, which cbc does not lower: refused.
void parseCohere(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("use_qk_norm", false))
    throw ConfigError(r.path("use_qk_norm"), "per-head LayerNorms of q and k are not supported");
  uniformWindowLayers(s, 0);
  cohereLayout(r, s);
}

// Command-R7B: sliding layers (window sliding_window, class default 4096) from layer_types, else
// all but every sliding_window_pattern-th (default 4); only sliding layers rotate, so the full
// layers are NoPE, and without a window no layer rotates (nor slides).
void parseCohere2(const ConfigReader &r, ModelSpec &s) {
  int64_t window = windowOrClassDefault(r, 4096);
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, s.num_layers);
  } else {
    int64_t pattern = r.getSize("sliding_window_pattern", 4);
    kinds = kindsWhere(s.num_layers, [&](int64_t i) { return (i + 1) % pattern != 0; }, LayerKind::SlidingAttention,
                       LayerKind::FullAttention);
  }
  setLayers(s, kinds, window);
  for (LayerSpec &l : s.layers)
    l.nope = window == 0 || l.kind != LayerKind::SlidingAttention;
  cohereLayout(r, s);
}

// Cohere2-MoE: cohere2's layers, the first first_k_dense_replace dense (their MLP
// prefix_dense_intermediate_size wide, their windows by prefix_dense_sliding_window_pattern,
// default 1: all full, and then they rotate nonetheless), the rest MoE (mlp_layer_types when
// given) with windows by sliding_window_pattern; an RMSNorm when rms_norm_eps is set, else the
// LayerNorm. The router takes the top-k logits and then a softmax over them
// (expert_selection_fn softmax) or their sigmoids, renormalised with norm_topk_prob.
void parseCohere2Moe(const ConfigReader &r, ModelSpec &s) {
  int64_t window = windowOrClassDefault(r, 4096);
  int64_t dense = r.getCount("first_k_dense_replace", 0);
  if (dense > s.num_layers)
    throw ConfigError(r.path("first_k_dense_replace"), "exceeds num_hidden_layers");
  int64_t prefixPattern = r.getSize("prefix_dense_sliding_window_pattern", 1);
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, s.num_layers);
  } else {
    int64_t pattern = r.getSize("sliding_window_pattern", 4);
    for (int64_t i = 0; i < s.num_layers; ++i) {
      bool prefix = i < dense;
      int64_t n = prefix ? i : i - dense;
      kinds.push_back((n + 1) % (prefix ? prefixPattern : pattern) != 0 ? LayerKind::SlidingAttention
                                                                         : LayerKind::FullAttention);
    }
  }
  setLayers(s, kinds, window);
  moeByLayerTypes(r, s, [dense](int64_t i) { return i >= dense; });
  for (LayerSpec &l : s.layers) {
    bool forceRope = !l.moe && prefixPattern == 1;
    l.nope = !forceRope && (window == 0 || l.kind != LayerKind::SlidingAttention);
  }
  cohereLayout(r, s);
  if (r.has("rms_norm_eps")) {
    s.norm_kind = NormKind::Rms;
    s.norm_eps = r.getNumber("rms_norm_eps", 1e-5);
  }
  s.mlp.intermediate = r.has("prefix_dense_intermediate_size") ? r.getSize("prefix_dense_intermediate_size", 0)
                                                                : r.getSize("intermediate_size", 22528);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_experts"), .experts = 8, .top_k = 2, .count_name = "num_experts"},
               m);
  m.intermediate = r.getSize("intermediate_size", 22528);
  std::string fn = r.getString("expert_selection_fn", "softmax");
  if (fn == "softmax") {
    m.score = ExpertScoring::TopkSoftmax;
  } else if (fn == "sigmoid") {
    m.score = ExpertScoring::Sigmoid;
    m.renorm = r.getBool("norm_topk_prob", true);
  } else {
    throw ConfigError(r.path("expert_selection_fn"), "must be 'softmax' or 'sigmoid'");
  }
  m.act = s.mlp.act;
  m.names = perExpertNames(s.names, "gate", /*gated=*/true);
  m.shared_intermediate = m.intermediate * r.getCount("num_shared_experts", 0);
  if (m.shared_intermediate > 0) {
    // "average" halves the sum of the routed and shared outputs, which cbc's shared expert
    // (added unscaled) does not express.
    std::string combine = r.getString("shared_expert_combination_strategy", "average");
    if (combine != "sum")
      throw ConfigError(r.path("shared_expert_combination_strategy"),
                        "'" + combine + "' is not supported with shared experts (only 'sum')");
    m.names.shared.gate_up = {"mlp.shared_experts.gate_proj.weight", "mlp.shared_experts.up_proj.weight"};
    m.names.shared.down = {"mlp.shared_experts.down_proj.weight"};
  }
}

} // namespace

FamilyTable cohereFamilies() {
  return {
      {"cohere",
       {{.max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 500000.0,
         .norm_eps_key = "layer_norm_eps"},
        parseCohere}},
      {"cohere2",
       {{.max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 10000.0,
         .norm_eps_key = "layer_norm_eps"},
        parseCohere2}},
      {"cohere2_moe",
       {{.head_dim = 128, .max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 10000.0,
         .norm_eps_key = "layer_norm_eps"},
        parseCohere2Moe}},
  };
}

} // namespace cbc::hf
