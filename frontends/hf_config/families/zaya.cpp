// ZAYA (zaya): compressed convolutional attention (CcaSpec) on every layer, full or sliding
// ("hybrid", "hybrid_sliding"), each type with its own RoPE; top-1 experts behind an MLP router
// whose state carries from layer to layer, with a skip choice; affine maps on the embedding and
// on both residual adds of every layer.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

#include <cmath>

namespace cbc::hf {

namespace {

// ZayaConfig's rope_parameters: one dictionary per layer type, by default theta 5e6 on hybrid
// layers and 1e4 on hybrid_sliding ones, each rotating half of every head. A top-level
// rope_type beside them is dropped, as the config class drops it; a flat dictionary is refused
// (the model reads it by layer type and fails).
RopeDicts zayaRopeDicts(const ConfigReader &r) {
  RopeDicts out = {
      {"full_attention", {{"rope_type", "default"}, {"rope_theta", 5e6}, {"partial_rotary_factor", 0.5}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}, {"partial_rotary_factor", 0.5}}}};
  if (!r.has("rope_parameters"))
    return out;
  const nlohmann::json &rp = r.raw("rope_parameters");
  if (!rp.is_object() || !rp.contains("hybrid"))
    throw ConfigError(r.path("rope_parameters"),
                      "must map each layer type (hybrid, hybrid_sliding) to its RoPE dictionary: the model reads it "
                      "by layer type");
  for (const auto &[key, value] : rp.items())
    if (key != "hybrid" && key != "hybrid_sliding" && key != "rope_type")
      throw ConfigError(r.path("rope_parameters." + key), "is not a ZAYA layer type (hybrid, hybrid_sliding)");
  bool sliding = false;
  if (r.has("layer_types"))
    for (const std::string &t : r.getStringList("layer_types"))
      sliding = sliding || t == "hybrid_sliding";
  for (const auto &[type, kind] : {std::pair<const char *, const char *>{"hybrid", "full_attention"},
                                   {"hybrid_sliding", "sliding_attention"}}) {
    if (!rp.contains(type)) {
      if (sliding && std::string(type) == "hybrid_sliding")
        throw ConfigError(r.path("rope_parameters.hybrid_sliding"), "is missing: the hybrid_sliding layers read it");
      continue;
    }
    if (!rp[type].is_object() || !rp[type].contains("rope_theta"))
      throw ConfigError(r.path(std::string("rope_parameters.") + type + ".rope_theta"), "is missing");
    out[kind] = rp[type];
  }
  return out;
}

// finfo(dtype).eps: CCA's q/k norms divide by max(||x||, eps) in the model's dtype.
double dtypeEpsilon(const std::string &dtype) {
  return dtype == "float32" ? std::ldexp(1.0, -23) : dtype == "float16" ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
}

void parseZaya(const ConfigReader &r, ModelSpec &s) {
  if (r.getSize("num_experts_per_tok", 1) != 1)
    throw ConfigError(r.path("num_experts_per_tok"), "must be 1: ZAYA routes each token to one expert");
  AttentionSpec &a = s.attn;
  if (a.num_kv_heads * a.head_dim % 2 != 0)
    throw ConfigError(r.path("head_dim"), "num_key_value_heads * head_dim must be even: the value heads are two "
                                          "halves, the current token's and the previous one's");
  a.cca.t0 = r.getSize("cca_time0", 2);
  a.cca.t1 = r.getSize("cca_time1", 2);
  // A kernel of 1 keeps no state, which cbc's state ops cannot yet express.
  for (const char *key : {"cca_time0", "cca_time1"})
    if (r.getSize(key, 2) < 2)
      throw ConfigError(r.path(key), "must be at least 2: cbc runs CCA's convolutions with a carried state");
  // x * sqrt(d) / max(||x||, e) as an RMS norm: rsqrt(mean(x^2) + e^2 / d) agrees wherever ||x|| >> e.
  double eps = dtypeEpsilon(s.dtype);
  a.cca.norm_eps = eps * eps / (double)a.head_dim;
  a.qkv_bias = a.o_bias = r.getBool("attention_bias", false);
  if (r.getBool("lm_head_bias", false))
    s.lm_head_bias = "lm_head.bias";
  std::vector<LayerKind> kinds =
      r.has("layer_types")
          ? explicitLayerTypes(r, s.num_layers,
                               {{"hybrid", LayerKind::FullAttention}, {"hybrid_sliding", LayerKind::SlidingAttention}})
          : std::vector<LayerKind>(s.num_layers, LayerKind::FullAttention);
  int64_t window = optionalWindow(r);
  requireWindowForSliding(r, kinds, window);
  setLayers(s, kinds, window);
  zayaRopeDicts(r); // checks the dictionaries before any layer is built
  Names &n = s.names;
  n.embed_affine = "input_hidden_states";
  n.affine_mixer = "post_attention_residual_scale";
  n.affine_mlp = "post_mlp_residual_scale";
  MoeSpec &m = s.moe;
  m.num_experts = r.getSize("num_experts", 16);
  m.top_k = 1;
  m.intermediate = r.getSize("moe_intermediate_size", 2048);
  m.score = ExpertScoring::Softmax;
  m.null_experts = 1;
  m.act = s.mlp.act;
  m.router_mlp.hidden = r.getSize("router_hidden_size", 256);
  ExpertNaming &e = m.names;
  e.selection_bias = "mlp.gate.balancing_biases";
  e.fused = true;
  e.experts.gate_up = {"mlp.experts.gate_up_proj"};
  e.experts.down = {"mlp.experts.down_proj"};
  allLayersMoe(s);
}

} // namespace

FamilyTable zayaFamilies() {
  return {
      {"zaya",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-5, .tie_word_embeddings = true,
         .partial_rotary = true, .moe_only = true, .kv_heads = 2},
        parseZaya, zayaRopeDicts}},
  };
}

} // namespace cbc::hf
