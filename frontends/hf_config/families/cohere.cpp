// Cohere decoders: cohere (Command-R), cohere2 (Command-R7B, Command-A), cohere2_moe and
// cohere_compass_text (North): parallel
// blocks over one LayerNorm (weight, no bias), RoPE on interleaved pairs, logits scaled by
// logit_scale.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mla.h"
#include "frontends/hf_config/parse_config.h"

#include <set>

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
    gatedSharedExpert(m.names, "mlp.shared_experts");
  }
}

// The class reads rope_parameters[layer_type] for every type it has, so they must be nested by
// type (a flat dictionary fails in transformers); a type's rope_theta falls back on a top-level
// rope_theta, which it must then have.
RopeDicts cohereCompassRope(const ConfigReader &r) {
  if (!r.has("rope_parameters") || !ropeByLayerType(r))
    throw ConfigError(r.path("rope_parameters"),
                      "must map each layer type (full_attention, sliding_attention) to its RoPE dictionary or null: "
                      "the config class reads it by layer type");
  const nlohmann::json &rp = r.raw("rope_parameters");
  std::set<std::string> used;
  for (const std::string &t : r.has("layer_types") ? r.getStringList("layer_types") : std::vector<std::string>{})
    used.insert(t == "sliding_attention" ? t : "full_attention");
  if (used.empty())
    used.insert("full_attention");
  RopeDicts out;
  for (const char *kind : {"full_attention", "sliding_attention"}) {
    if (used.count(kind) && !rp.contains(kind))
      throw ConfigError(r.path(std::string("rope_parameters.") + kind),
                        "is missing: the layers of that type read it (null: no RoPE)");
    nlohmann::json d = rp.contains(kind) && rp[kind].is_object() ? rp[kind] : nlohmann::json::object();
    if (!d.contains("rope_theta") || d["rope_theta"].is_null()) {
      if (used.count(kind) && !rp[kind].is_null() && !r.has("rope_theta"))
        throw ConfigError(r.path(std::string("rope_parameters.") + kind + ".rope_theta"), "is required");
      d["rope_theta"] = r.getNumber("rope_theta", 10000.0);
    }
    out[kind] = d;
  }
  return out;
}

// North (cohere_compass_text): cohere's parallel block and bias-free LayerNorm with RoPE over
// rotate-half pairs, layers from layer_types (default all full; sliding ones windowed by
// sliding_window, class default 4096) and logits x logit_scale (none: 1). The class derives
// head_dim = hidden_size / num_attention_heads whatever the file says, so a contradicting
// head_dim is refused.
void parseCohereCompassText(const ConfigReader &r, ModelSpec &s) {
  int64_t derived = s.hidden_size / s.attn.num_heads;
  if (r.has("head_dim") && r.requireSize("head_dim") != derived)
    throw ConfigError(r.path("head_dim"), "must equal hidden_size / num_attention_heads (" + std::to_string(derived) +
                                              "): the config class derives it whatever the file says");
  std::vector<LayerKind> kinds = r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                                                      : std::vector<LayerKind>(s.num_layers, LayerKind::FullAttention);
  int64_t window = windowOrClassDefault(r, 4096);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  cohereLayout(r, s);
  s.attn.rope_pairing = RotaryPairing::Half;
  s.logits_scale = r.has("logit_scale") ? r.getNumber("logit_scale", 1.0) : 1.0;
  // rope_parameters[type] null: that type's layers have no position embedding.
  cohereCompassRope(r); // checks the dictionaries before they are read here
  const nlohmann::json &rp = r.raw("rope_parameters");
  for (LayerSpec &l : s.layers)
    l.nope = rp.value(l.kind == LayerKind::SlidingAttention ? "sliding_attention" : "full_attention",
                      nlohmann::json::object())
                 .is_null();
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
      {"cohere_compass_text",
       {{.max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .head_dim_unused = true,
         .norm_eps_key = "layer_norm_eps"},
        parseCohereCompassText, cohereCompassRope}},
  };
}

} // namespace cbc::hf
