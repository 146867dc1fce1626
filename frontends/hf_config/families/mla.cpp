// Decoders with multi-head latent attention (MLA): DeepSeek-V2/V3 and the families built on
// their attention. Each layer caches a normed latent and one roped key shared by all heads.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/dsa_variants.h"
#include "frontends/hf_config/families/mla.h"
#include "frontends/hf_config/parse_config.h"
#include "runtime/schema/limits.h"

#include <cmath>
#include <functional>

namespace cbc::hf {

namespace {

// YaRN's attention-entropy correction: with a non-default RoPE and a truthy mscale_all_dim, the
// softmax scale is multiplied by mscale(factor, mscale_all_dim)^2 (yarn_apply_mscale).
double latentScale(const ConfigReader &r, const RopeDicts &dicts, int64_t qkHeadDim) {
  double scale = 1.0 / std::sqrt((double)qkHeadDim);
  const nlohmann::json &d = dicts.at("full_attention");
  std::string type = d.value("rope_type", d.value("type", std::string("default")));
  double mscaleAllDim = d.contains("mscale_all_dim") && d["mscale_all_dim"].is_number()
                            ? d["mscale_all_dim"].get<double>() : 0.0;
  if (type == "default" || mscaleAllDim == 0)
    return scale;
  if (!d.contains("factor") || !d["factor"].is_number())
    throw ConfigError(ropePath(r, "full_attention", false) + "factor", "is required with mscale_all_dim");
  double factor = d["factor"].get<double>();
  double m = factor <= 1 ? 1.0 : 0.1 * mscaleAllDim * std::log(factor) + 1.0;
  return scale * m * m;
}

// Mistral 4's rope dictionary: its config class's YaRN default, and the rotated part's frequencies
// over its own width (the class derives partial_rotary_factor = rope / qk_head_dim from a head_dim
// of qk_head_dim; cbc's rope heads are the rope part itself).
RopeDicts mistral4RopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 10000.0);
  for (auto &[kind, d] : dicts) {
    if (!r.has("rope_parameters") && !r.has("rope_scaling"))
      d = {{"rope_type", "yarn"}, {"factor", 128.0}, {"original_max_position_embeddings", 8192},
           {"beta_fast", 32.0}, {"beta_slow", 1.0}, {"mscale", 1.0}, {"mscale_all_dim", 1.0},
           {"llama_4_scaling_beta", 0.1}, {"rope_theta", r.getNumber("rope_theta", 10000.0)}};
    d["partial_rotary_factor"] = 1.0;
  }
  return dicts;
}

} // namespace

// The MLA sizes, the softmax scale and the rope pairing; every layer is latent attention.
void parseMla(const ConfigReader &r, ModelSpec &s, const MlaDefaults &d, bool interleaveByDefault) {
  MlaSpec &m = s.mla;
  // An explicit null q_lora_rank means q_proj (DeepSeek-V2-Lite).
  m.q_lora_rank = r.contains("q_lora_rank") && !r.has("q_lora_rank") ? 0 : r.getSize("q_lora_rank", d.q_lora_rank);
  m.kv_lora_rank = r.getSize("kv_lora_rank", d.kv_lora_rank);
  m.nope_dim = r.getSize("qk_nope_head_dim", d.nope);
  const char *ropeKey = d.head_dim == MlaHeadDim::IsRope && r.has("head_dim") ? "head_dim" : "qk_rope_head_dim";
  m.rope_dim = r.getSize(ropeKey, d.rope);
  if (m.rope_dim % 2 != 0)
    throw ConfigError(r.path(ropeKey), "must be even");
  if (d.head_dim == MlaHeadDim::MustMatchRope && r.has("head_dim") && r.requireSize("head_dim") != m.rope_dim)
    throw ConfigError(r.path("head_dim"), "must equal qk_rope_head_dim (" + std::to_string(m.rope_dim) +
                                              "): the RoPE rotates head_dim features of the rope part");
  m.v_dim = r.getSize("v_head_dim", d.v);
  m.bias = r.getBool("attention_bias", false);
  s.attn.head_dim = m.rope_dim; // the rotated part's heads
  s.attn.num_kv_heads = s.attn.num_heads;
  s.attn.scale = latentScale(r, d.rope_dicts ? d.rope_dicts(r) : ropeDictionaries(r, 10000.0), m.nope_dim + m.rope_dim);
  s.attn.rope_pairing =
      r.getBool("rope_interleave", interleaveByDefault) ? RotaryPairing::Interleaved : RotaryPairing::Half;
  for (LayerSpec &l : s.layers)
    l.kind = LayerKind::LatentAttention;
}

// ----- the DeepSeek-style MoE --------------------------------------------------------------------

// Routed experts under mlp.experts.{e} (per expert, or fused [E, 2I, H] / [E, H, I]), the
// router mlp.gate and the shared experts' one MLP of width moe_intermediate_size * n_shared.
void parseDeepseekMoe(const ConfigReader &r, ModelSpec &s, const RouterRule &rule, const MoeDefaults &d) {
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = d.count_key, .experts = d.experts, .top_k = d.top_k, .count_name = d.count_key}, m);
  m.intermediate = r.getSize("moe_intermediate_size", d.intermediate);
  m.score = rule.score;
  m.renorm = rule.renorm_key && r.getBool("norm_topk_prob", true);
  m.renorm_eps = m.renorm ? 1e-20 : 0.0;
  m.scaling = r.getNumber("routed_scaling_factor", d.scaling);
  int64_t nGroup = r.getSize("n_group", d.groups), topkGroup = r.getSize("topk_group", d.keep);
  if (rule.group_score && nGroup > 1) {
    if (m.num_experts % nGroup != 0)
      throw ConfigError(r.path("n_group"), std::string("must divide ") + d.count_key + " (" + std::to_string(m.num_experts) + ")");
    if (*rule.group_score == GroupScoring::Top2Sum && m.num_experts / nGroup < 2)
      throw ConfigError(r.path("n_group"), "leaves fewer than 2 experts per group, which a top-2 group score needs");
    if (topkGroup > nGroup || topkGroup * (m.num_experts / nGroup) < m.top_k)
      throw ConfigError(r.path("topk_group"), "keeps fewer experts than num_experts_per_tok");
    m.groups = {.count = nGroup, .keep = topkGroup, .score = *rule.group_score, .fill = rule.group_fill};
  }
  m.shared_intermediate = d.shared_key ? m.intermediate * r.getCount(d.shared_key, d.shared) : 0;
  // The shared experts run as one MLP of their summed width, a dimension like any other.
  if (m.shared_intermediate > limits::kMaxDim)
    throw ConfigError(r.path(d.shared_key), "gives a shared expert " + std::to_string(m.shared_intermediate) +
                                                      " wide, above the largest cbc supports (" +
                                                      std::to_string(limits::kMaxDim) + ")");
  ExpertNaming &n = m.names;
  if (d.fused) {
    n.router = "mlp.gate.weight";
    n.fused = true;
    n.experts.gate_up = {"mlp.experts.gate_up_proj"};
    n.experts.down = {"mlp.experts.down_proj"};
  } else {
    n = perExpertNames(s.names, "gate", /*gated=*/true);
  }
  if (rule.selection_bias)
    n.selection_bias = "mlp.gate.e_score_correction_bias";
  gatedSharedExpert(n, "mlp.shared_experts");
}

// Layers from first_k_dense_replace on are MoE.
void moeFrom(const ConfigReader &r, ModelSpec &s, int64_t fallback) {
  int64_t first = r.getInt("first_k_dense_replace", fallback);
  if (first < 0)
    throw ConfigError(r.path("first_k_dense_replace"), "must not be negative");
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].moe = i >= first;
}

// mlp_layer_types ("dense" / "sparse"), else `sparse(i)`.
void moeByLayerTypes(const ConfigReader &r, ModelSpec &s, const std::function<bool(int64_t)> &sparse) {
  std::vector<std::string> types = r.getStringList("mlp_layer_types");
  if (!types.empty())
    checkLayerCount(r, "mlp_layer_types", types.size(), s.num_layers);
  for (int64_t i = 0; i < s.num_layers; ++i) {
    if (types.empty()) {
      s.layers[i].moe = sparse(i);
    } else if (types[i] == "dense" || types[i] == "sparse") {
      s.layers[i].moe = types[i] == "sparse";
    } else {
      throw ConfigError(r.path("mlp_layer_types"), "unknown MLP type '" + types[i] + "' (dense or sparse)");
    }
  }
}

// The lightning indexer's sizes (DeepSeek-V3.2's config keys and defaults).
void parseIndexer(const ConfigReader &r, ModelSpec &s, RotaryPairing ropePairing) {
  IndexerSpec &ix = s.mla.indexer;
  ix.heads = r.getSize("index_n_heads", 64);
  ix.head_dim = r.getSize("index_head_dim", 128);
  ix.topk = r.getSize("index_topk", 2048);
  ix.rope_pairing = ropePairing;
  if (s.mla.q_lora_rank == 0)
    throw ConfigError(r.path("q_lora_rank"), "must be set: the indexer's queries come from the q LoRA's normed output");
  if (ix.head_dim < s.mla.rope_dim)
    throw ConfigError(r.path("index_head_dim"), "must be at least qk_rope_head_dim (" + std::to_string(s.mla.rope_dim) +
                                                    "): the indexer rotates its first qk_rope_head_dim features");
}

const RouterRule kSigmoidGroups = {.score = ExpertScoring::Sigmoid, .group_score = GroupScoring::Top2Sum,
                                   .group_fill = DroppedGroupFill::NegInf};

namespace {

// DeepSeek-V3 (and Kimi K2, which names its published config kimi_k2): sigmoid routing with a
// correction bias over groups scored by their top-2 sum.
void parseDeepseekV3(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.head_dim = MlaHeadDim::MustMatchRope}, true);
  parseDeepseekMoe(r, s, kSigmoidGroups, {});
  moeFrom(r, s, 3);
}

// DeepSeek-V2: complex-pair RoPE (the interleaved pairing) and softmax routing, greedy or limited
// to the groups with the best maximum; the weights are never renormalised.
void parseDeepseekV2(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {}, true);
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  std::string method = r.getString("topk_method", "greedy");
  if (method != "greedy" && method != "group_limited_greedy")
    throw ConfigError(r.path("topk_method"), "unsupported '" + method + "' (greedy or group_limited_greedy)");
  RouterRule rule = {.score = ExpertScoring::Softmax, .renorm_key = false, .selection_bias = false};
  if (method == "group_limited_greedy")
    rule.group_score = GroupScoring::Max, rule.group_fill = DroppedGroupFill::Zero;
  // num_experts_per_tok has no default: transformers cannot route without it.
  parseDeepseekMoe(r, s, rule,
                   {.experts = 64, .top_k = 0, .groups = 1, .keep = 1, .intermediate = 1407, .shared = 2, .scaling = 1.0});
  s.mlp.bias = r.getBool("mlp_bias", false);
  moeFrom(r, s, 0);
}

// GLM-4.7-Flash: DeepSeek-V3's attention and router, MoE layers by mlp_layer_types.
void parseGlm4MoeLite(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.q_lora_rank = 768, .kv_lora_rank = 512, .nope = 192, .rope = 64, .v = 256, .head_dim = MlaHeadDim::IsRope},
           true);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 64, .top_k = 4, .groups = 1, .keep = 1, .intermediate = 1536, .scaling = 1.8});
  moeByLayerTypes(r, s, [](int64_t i) { return i > 0; });
}

// AX-K1: DeepSeek-V3 with an RMSNorm over the MoE block's output.
void parseAxk1(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.head_dim = MlaHeadDim::MustMatchRope}, true);
  parseDeepseekMoe(r, s, kSigmoidGroups, {.experts = 192});
  s.moe.output_norm = "post_mlp_layernorm";
  int64_t first = r.getInt("first_k_dense_replace", 1), freq = r.getSize("moe_layer_freq", 1);
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= first && i % freq == 0; });
}

// Mistral 4: softmax routing over groups scored by their top-2 sum (dropped ones filled with
// 0), fused experts, and queries scaled by position past the original context.
void parseMistral4(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.q_lora_rank = 1024, .kv_lora_rank = 256, .nope = 64, .rope = 64, .v = 128,
                  .rope_dicts = mistral4RopeDicts}, true);
  RouterRule rule = {.score = ExpertScoring::Softmax, .group_score = GroupScoring::Top2Sum,
                     .group_fill = DroppedGroupFill::Zero, .selection_bias = false};
  parseDeepseekMoe(r, s, rule,
                   {.experts = 128, .top_k = 4, .groups = 1, .keep = 1, .scaling = 1.0, .fused = true});
  moeFrom(r, s, 0);
  RopeDicts dicts = mistral4RopeDicts(r);
  const nlohmann::json &d = dicts.at("full_attention");
  if (!d.contains("llama_4_scaling_beta") || !d["llama_4_scaling_beta"].is_number())
    throw ConfigError(ropePath(r, "full_attention", false) + "llama_4_scaling_beta", "is required");
  if (!d.contains("original_max_position_embeddings") || !d["original_max_position_embeddings"].is_number_integer() ||
      d["original_max_position_embeddings"].get<int64_t>() <= 0)
    throw ConfigError(ropePath(r, "full_attention", false) + "original_max_position_embeddings",
                      "must be a positive integer");
  s.mla.position_beta = d["llama_4_scaling_beta"].get<double>();
  s.mla.position_period = d["original_max_position_embeddings"].get<int64_t>();
}

// LongCat-Flash: num_layers layers of two latent-attention sublayers with two dense MLPs and a
// shortcut MoE; softmax routing over routed and zero (identity) experts, steered by a bias,
// unnormalised; the query and the cached latent scaled by sqrt(hidden / rank).
void parseLongcatFlash(const ConfigReader &r, ModelSpec &s) {
  s.num_layers = r.getSize("num_layers", 28);
  s.layers.assign(s.num_layers, LayerSpec{});
  s.dual_sublayers = true;
  parseMla(r, s, {}, true);
  s.attn.rope_pairing = RotaryPairing::Interleaved; // always: LongCat has no rope_interleave switch
  if (r.getSize("head_dim", 64) != s.mla.rope_dim)
    throw ConfigError(r.path("head_dim"), "must equal qk_rope_head_dim (" + std::to_string(s.mla.rope_dim) +
                                              "): LongCat rotates head_dim features of the rope part");
  s.mla.q_scale = std::sqrt((double)s.hidden_size / (double)s.mla.q_lora_rank);
  s.mla.latent_scale = std::sqrt((double)s.hidden_size / (double)s.mla.kv_lora_rank);
  MoeSpec &m = s.moe;
  const char *topKey = r.has("moe_topk") ? "moe_topk" : "num_experts_per_tok";
  m.num_experts = r.getSize("n_routed_experts", 512);
  m.zero_experts = r.getCount("zero_expert_num", 256, limits::kMaxExperts);
  m.top_k = r.getSize(topKey, 12);
  if (m.top_k > m.num_experts + m.zero_experts)
    throw ConfigError(r.path(topKey), "exceeds n_routed_experts + zero_expert_num");
  m.intermediate = r.getSize(r.has("expert_ffn_hidden_size") ? "expert_ffn_hidden_size" : "moe_intermediate_size", 2048);
  m.score = ExpertScoring::Softmax;
  m.scaling = r.getNumber("routed_scaling_factor", 6.0);
  m.names = perExpertNames(s.names, "router.classifier", /*gated=*/true);
  m.names.selection_bias = "mlp.router.e_score_correction_bias";
  for (LayerSpec &l : s.layers)
    l.moe = true;
}

// DeepSeek-V3.2: DeepSeek-V3 with sparse attention. The attention's RoPE is always interleaved
// (rope_interleave is not read); every layer has a lightning indexer whose RoPE rotates halves
// of its first qk_rope_head_dim features. MoE layers by mlp_layer_types, else from
// first_k_dense_replace.
void parseDeepseekV32(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {}, true);
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  parseIndexer(r, s, RotaryPairing::Half);
  checkIndexedLayers(r, s.num_layers);
  parseDeepseekMoe(r, s, kSigmoidGroups, {});
  int64_t first = r.getInt("first_k_dense_replace", 3);
  if (first < 0)
    throw ConfigError(r.path("first_k_dense_replace"), "must not be negative");
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= first; });
}

// Youtu: DeepSeek-V3's attention in a dense Llama block.
void parseYoutu(const ConfigReader &r, ModelSpec &s) { parseMla(r, s, {.head_dim = MlaHeadDim::MustMatchRope}, true); }

// MiniCPM3: rotate-half MLA, a scaled embedding (rounded to the weight dtype), residual
// branches times scale_depth / sqrt(L) and the final hidden state divided by
// hidden_size / dim_model_base before the head.
void parseMiniCpm3(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.q_lora_rank = 768, .kv_lora_rank = 256, .nope = 64, .rope = 32, .v = s.hidden_size / s.attn.num_heads},
           false);
  s.attn.rope_pairing = RotaryPairing::Half; // MiniCPM3 has no rope_interleave
  s.embed_scale = r.getNumber("scale_emb", 12);
  s.embed_scale_rounded = true;
  double depth = r.has("scale_depth") ? r.getNumber("scale_depth", 1.4) : std::sqrt((double)s.num_layers);
  s.residual_scale = depth / std::sqrt((double)s.num_layers);
  int64_t base = r.getSize("dim_model_base", s.hidden_size);
  s.logits_scale = (double)base / (double)s.hidden_size;
}

} // namespace

FamilyTable mlaFamilies() {
  Family deepseekV3 = {{.max_positions = 4096}, parseDeepseekV3};
  return {
      {"deepseek_v3", deepseekV3},
      {"kimi_k2", deepseekV3},
      {"deepseek_v2", {{.max_positions = 2048, .heads_divide_hidden = true}, parseDeepseekV2}},
      {"glm4_moe_lite", {{.max_positions = 202752, .norm_eps = 1e-5, .partial_rotary = true}, parseGlm4MoeLite}},
      {"axk1", {{.max_positions = 32768}, parseAxk1}},
      {"mistral4", {{.max_positions = 1048576}, parseMistral4, mistral4RopeDicts}},
      {"longcat_flash",
       {{.max_positions = 131072, .norm_eps = 1e-5, .rope_theta = 10000000.0, .intermediate_alias = "ffn_hidden_size",
         .layers_derived = true},
        parseLongcatFlash}},
      {"youtu", {{.max_positions = 131072, .tie_word_embeddings = true}, parseYoutu}},
      {"deepseek_v32", {{.max_positions = 163840}, parseDeepseekV32}},
      {"minicpm3",
       {{.max_positions = 32768, .norm_eps = 1e-5, .tie_word_embeddings = true, .heads_divide_hidden = true},
        parseMiniCpm3}},
  };
}

} // namespace cbc::hf
