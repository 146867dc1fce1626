// Hybrids of Mamba mixers and attention: Bamba, GraniteMoeHybrid, Nemotron-H, Falcon-H1 and
// Jamba.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mamba_mixers.h"
#include "frontends/hf_config/parse_config.h"

#include <algorithm>
#include <set>

namespace cbc::hf {

namespace {

// Bamba, Falcon-H1 and GraniteMoeHybrid keep their Mamba2 settings under mamba_* keys.
const Mamba2Keys kMambaPrefixedKeys = {"mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state",
                                       "mamba_d_conv", "mamba_conv_bias", "mamba_proj_bias", "rms_norm_eps",
                                       "mamba_expand", 128, 0, 1, 256, true, false};

// Jamba's module names, which Bamba and Falcon-H1 keep.
void jambaNames(Names &n) {
  n.mamba = "mamba";
  n.mlp = "feed_forward";
  n.post_attn_norm = "pre_ff_layernorm";
  n.final_norm = "final_layernorm";
}

// Mamba2 layers with attention where layer_types / layers_block_type say, else at
// attn_layer_indices.
std::vector<LayerKind> hybridMamba2Kinds(const ConfigReader &r, int64_t layers) {
  const char *listKey = r.has("layer_types") ? "layer_types" : r.has("layers_block_type") ? "layers_block_type" : nullptr;
  if (!listKey) {
    auto attn = r.has("attn_layer_indices") ? r.getIntList("attn_layer_indices") : std::vector<int64_t>{};
    std::set<int64_t> set(attn.begin(), attn.end());
    return kindsWhere(layers, [&](int64_t i) { return set.count(i) > 0; }, LayerKind::FullAttention,
                      LayerKind::Mamba2);
  }
  std::vector<LayerKind> kinds;
  for (const std::string &t : r.getStringList(listKey)) {
    if (t == "mamba" || t == "linear_attention")
      kinds.push_back(LayerKind::Mamba2);
    else if (t == "attention" || t == "full_attention")
      kinds.push_back(LayerKind::FullAttention);
    else
      throw ConfigError(r.path(listKey), "unknown layer type '" + t + "'");
  }
  checkLayerCount(r, listKey, kinds.size(), layers);
  return kinds;
}

// Bamba and GraniteMoeHybrid: Llama-style attention between Mamba2 layers.
void hybridMamba2Layers(const ConfigReader &r, ModelSpec &s) {
  setLayers(s, hybridMamba2Kinds(r, s.num_layers), 0);
  parseMamba2(r, s, kMambaPrefixedKeys);
  if (s.mamba2.intermediate() != r.getSize("mamba_expand", 2) * s.hidden_size)
    throw ConfigError(r.path("mamba_d_head"), "mamba_n_heads * mamba_d_head must equal mamba_expand * hidden_size");
  parseDtLimit(r, "time_step_limit", s.mamba2);
  attentionBiases(r, s);
  s.names.mamba = "mamba";
}

void parseBamba(const ConfigReader &r, ModelSpec &s) {
  hybridMamba2Layers(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  jambaNames(s.names);
}

// Bamba's config class forces partial_rotary_factor = 0.5 over any top-level value; only
// rope_parameters' own entry overrides it.
RopeDicts bambaRopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 10000.0);
  for (auto &[kind, d] : dicts)
    if (!d.contains("partial_rotary_factor") || d["partial_rotary_factor"].is_null())
      d["partial_rotary_factor"] = 0.5;
  return dicts;
}

// GraniteMoeHybrid: as Bamba, with Granite's multipliers (embeddings, residual branches,
// attention scale, logits), a top-k-softmax MoE plus the always-on shared_mlp, and NoPE or RoPE
// per position_embedding_type.
void parseGraniteMoeHybrid(const ConfigReader &r, ModelSpec &s) {
  hybridMamba2Layers(r, s);
  graniteMultipliers(r, s);
  std::string pos = r.getString("position_embedding_type", "nope");
  if (pos != "rope" && pos != "nope")
    throw ConfigError(r.path("position_embedding_type"), "must be 'rope' or 'nope'");
  s.attn.rope = pos == "rope";
  s.mlp.intermediate = r.getSize("shared_intermediate_size", 1024);
  graniteSharedMlpNames(s.names);
  MoeSpec &m = s.moe;
  m.num_experts = expertCount(r, "num_local_experts", 8, /*noneAllowed=*/true);
  if (m.num_experts == 0)
    return;
  m.top_k = expertTopK(r, 2, m.num_experts, "num_local_experts");
  m.intermediate = r.getSize("intermediate_size", 11008);
  m.score = ExpertScoring::TopkSoftmax;
  m.act = s.mlp.act;
  m.plus_dense = true;
  m.names = graniteNames();
  allLayersMoe(s);
}

// Nemotron-H names each layer's one block (norm, then a Mamba2 mixer, attention or an MLP) in
// layers_block_type / layer_types or the legacy hybrid_override_pattern.
std::vector<std::string> nemotronBlockTypes(const ConfigReader &r) {
  for (const char *key : {"layers_block_type", "layer_types"})
    if (r.has(key))
      return r.getStringList(key);
  if (r.has("hybrid_override_pattern")) {
    std::vector<std::string> out;
    std::string pattern = r.getString("hybrid_override_pattern", "");
    for (char c : pattern) {
      static const std::map<char, std::string> names = {
          {'M', "linear_attention"}, {'E', "moe"}, {'*', "full_attention"}, {'-', "mlp"}};
      auto it = names.find(c);
      if (it == names.end())
        throw ConfigError(r.path("hybrid_override_pattern"),
                          std::string("unknown block '") + c + "' (expected M, E, * or -)");
      out.push_back(it->second);
    }
    return out;
  }
  return {"linear_attention", "moe", "full_attention", "mlp"};
}

// The layer count comes from the block types.
void nemotronLayers(const ConfigReader &r, ModelSpec &s) {
  std::vector<std::string> blocks = nemotronBlockTypes(r);
  if (blocks.empty())
    throw ConfigError(r.path("hybrid_override_pattern"), "names no layers");
  s.num_layers = (int64_t)blocks.size();
  s.layers.assign(s.num_layers, LayerSpec{});
  for (int64_t i = 0; i < s.num_layers; ++i) {
    LayerSpec &l = s.layers[i];
    const std::string &b = blocks[i];
    if (b == "linear_attention" || b == "mamba") {
      l.kind = LayerKind::Mamba2;
      l.mlp = false;
    } else if (b == "full_attention" || b == "attention") {
      l.kind = LayerKind::FullAttention;
      l.mlp = false;
    } else if (b == "mlp") {
      l.kind = LayerKind::None;
    } else if (b == "moe") {
      l.kind = LayerKind::None;
      l.moe = true;
    } else {
      throw ConfigError(r.path("layers_block_type"), "unknown block type '" + b + "'");
    }
  }
}

// Ungated squared-ReLU experts under mixer.experts, and the shared expert (a NemotronHMLP, with
// the dense MLP's biases) under mixer.shared_experts.
ExpertNaming nemotronNames(const Names &n, bool sharedBias) {
  ExpertNaming e = perExpertNames(n, "gate", /*gated=*/false);
  e.selection_bias = n.mlp + ".gate.e_score_correction_bias";
  std::string shared = n.mlp + ".shared_experts.";
  e.shared.gate_up = {shared + "up_proj.weight"};
  e.shared.down = {shared + "down_proj.weight"};
  if (sharedBias) {
    e.shared.gate_up_bias = {shared + "up_proj.bias"};
    e.shared.down_bias = shared + "down_proj.bias";
  }
  return e;
}

// DeepSeek-V3-style routing: sigmoid scores, chosen with e_score_correction_bias, weighted
// unbiased, renormalised (+1e-20) and scaled; plus one shared expert on the same input.
void nemotronMoe(const ConfigReader &r, ModelSpec &s) {
  for (const char *k : {"n_group", "topk_group"})
    if (r.getSize(k, 1) != 1)
      throw ConfigError(r.path(k), "group-limited routing (n_group / topk_group other than 1 / 1) is "
                                   "not supported");
  if (r.has("moe_latent_size"))
    throw ConfigError(r.path("moe_latent_size"), "latent expert projections are not supported");
  MoeSpec &m = s.moe;
  // num_local_experts is transformers' alias of n_routed_experts (attribute_map).
  std::string experts = !r.has("n_routed_experts") && r.has("num_local_experts") ? "num_local_experts"
                                                                                 : "n_routed_experts";
  parseExperts(r, {.count = experts, .experts = 8, .top_k = 2, .count_name = experts}, m);
  m.intermediate = r.getSize("moe_intermediate_size", 7688);
  m.shared_intermediate = r.getSize("moe_shared_expert_intermediate_size", 7688);
  m.score = ExpertScoring::Sigmoid;
  m.renorm = r.getBool("norm_topk_prob", true);
  m.renorm_eps = m.renorm ? 1e-20 : 0.0;
  m.scaling = r.getNumber("routed_scaling_factor", 1.0);
  m.act = s.mlp.act;
  m.gated = false;
  m.names = nemotronNames(s.names, s.mlp.bias);
}

// Nemotron-3.5-Transcribe (nemo_speechlm) keeps its decoder in NeMo's layout (transformers'
// conversion_mapping.py): llm.model.{embed_tokens, layers.N, norm}, llm.lm_head, and Mamba's
// A_log, D and dt_bias under mixer._fp32_params; a checkpoint in transformers' own layout
// (model.language_model.{embeddings, layers.N, norm_f}, lm_head) loads too.
void nemoLayout(ModelSpec &s) {
  s.prefix = "llm.model.";
  s.names.embed = "embed_tokens";
  s.names.final_norm = "norm";
  s.lm_head = "llm.lm_head.weight";
  s.weight_aliases = {{".mixer.A_log", ".mixer._fp32_params.A_log"},
                      {".mixer.D", ".mixer._fp32_params.D"},
                      {".mixer.dt_bias", ".mixer._fp32_params.dt_bias"},
                      {"llm.model.embed_tokens.", "model.language_model.embeddings."},
                      {"llm.model.norm.", "model.language_model.norm_f."},
                      {"llm.model.layers.", "model.language_model.layers."},
                      {"llm.lm_head.", "lm_head."}};
}

// Nemotron-H: NoPE attention, squared-ReLU MLPs without a gate, Mamba2 mixers, all named mixer
// under backbone.
void parseNemotronH(const ConfigReader &r, ModelSpec &s) {
  nemotronLayers(r, s);
  s.attn.rope = false;
  attentionBiases(r, s);
  s.mlp.gated = false;
  s.mlp.act = activation(r, "mlp_hidden_act", "relu2");
  s.mlp.bias = r.getBool("mlp_bias", false);
  // NemotronHConfig pops the legacy mamba_* keys in __post_init__ over the current ones, so a
  // legacy key wins where both are given.
  auto key = [&](const char *current, const char *legacy) { return r.has(legacy) ? legacy : current; };
  parseMamba2(r, s, {"mamba_num_heads", "mamba_head_dim", key("n_groups", "mamba_n_groups"), "ssm_state_size",
                     key("conv_kernel", "mamba_d_conv"), key("use_conv_bias", "mamba_conv_bias"), "use_bias",
                     "layer_norm_epsilon", key("expand", "mamba_expand"), 128, 64, 8, 128, true, false});
  s.mamba2.dt_min = timeStepMin(r, key("time_step_min", "mamba_dt_min"));
  s.prefix = "backbone.";
  s.weight_aliases = {{"backbone.", "model."}};
  Names &n = s.names;
  n.embed = "embeddings";
  n.input_norm = "norm";
  n.mamba = n.attn = n.mlp = "mixer";
  n.final_norm = "norm_f";
  if (std::any_of(s.layers.begin(), s.layers.end(), [](const LayerSpec &l) { return l.moe; }))
    nemotronMoe(r, s);
  if (s.outer_model_type == "nemo_speechlm")
    nemoLayout(s);
}

// Falcon-H1's Mamba2 width is mamba_d_ssm (class default 1024); an explicit null means
// mamba_expand * H.
void falconH1Mamba(const ConfigReader &r, ModelSpec &s) {
  int64_t width = r.contains("mamba_d_ssm") && !r.has("mamba_d_ssm")
                      ? r.getSize("mamba_expand", 2) * s.hidden_size
                      : r.getSize("mamba_d_ssm", 1024);
  parseMamba2(r, s, kMambaPrefixedKeys);
  Mamba2Spec &m = s.mamba2;
  bool autoDim = !r.has("mamba_d_head") || isAuto(r, "mamba_d_head");
  if (autoDim)
    m.head_dim = width / m.heads;
  if (m.head_dim <= 0 || m.heads * m.head_dim != width)
    throw ConfigError(r.path(autoDim ? "mamba_n_heads" : "mamba_d_head"),
                      "mamba_n_heads * mamba_d_head must equal the Mamba width " + std::to_string(width) +
                          " (mamba_d_ssm, or mamba_expand * hidden_size)");
  parseDtLimit(r, "time_step_limit", m);
  m.out_bias = r.getBool("projectors_bias", false);
  m.gated_norm = r.getBool("mamba_rms_norm", false);
  m.norm_before_gate = r.getBool("mamba_norm_before_gate", true);
}

// muP multipliers on embeddings, both mixers' inputs and outputs, k, the Mamba2 in_proj
// sections, the MLP gate and output, and the logits.
void falconH1Multipliers(const ConfigReader &r, ModelSpec &s) {
  s.embed_scale = r.getNumber("embedding_multiplier", 1.0);
  s.logits_scale = r.getNumber("lm_head_multiplier", 1.0);
  Multipliers &u = s.mup;
  u.attn_in = r.getNumber("attention_in_multiplier", 1.0);
  u.attn_out = r.getNumber("attention_out_multiplier", 1.0);
  u.key = r.getNumber("key_multiplier", 1.0);
  u.ssm_in = r.getNumber("ssm_in_multiplier", 1.0);
  u.ssm_out = r.getNumber("ssm_out_multiplier", 1.0);
  if (r.has("ssm_multipliers")) {
    u.ssm = r.getNumberList("ssm_multipliers");
    if (u.ssm.size() != 5)
      throw ConfigError(r.path("ssm_multipliers"), "expected 5 multipliers (z, x, B, C, dt)");
  }
  if (r.has("mlp_multipliers")) {
    auto mlp = r.getNumberList("mlp_multipliers");
    if (mlp.size() != 2)
      throw ConfigError(r.path("mlp_multipliers"), "expected 2 multipliers (gate, down)");
    u.mlp_gate = mlp[0];
    u.mlp_down = mlp[1];
  }
}

// Falcon-H1: every layer runs attention and a Mamba2 mixer side by side on the same normed
// input, then a SwiGLU MLP.
void parseFalconH1(const ConfigReader &r, ModelSpec &s) {
  setLayers(s, std::vector<LayerKind>(s.num_layers, LayerKind::ParallelHybrid), 0);
  falconH1Mamba(r, s);
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  falconH1Multipliers(r, s);
  jambaNames(s.names);
}

// Jamba: Mamba layers with RMS-normed dt/B/C and NoPE attention every attn_layer_period-th layer;
// MoE every expert_layer_period-th layer. Also reads the original remote-code configs (n_ctx).
void parseJamba(const ConfigReader &r, ModelSpec &s) {
  int64_t attnPeriod = r.getSize("attn_layer_period", 8), attnOffset = r.getInt("attn_layer_offset", 4);
  int64_t expertPeriod = r.getSize("expert_layer_period", 2), expertOffset = r.getInt("expert_layer_offset", 1);
  if (attnOffset < 0 || attnOffset >= attnPeriod)
    throw ConfigError(r.path("attn_layer_offset"), "must be in [0, attn_layer_period)");
  if (expertOffset < 0 || expertOffset >= expertPeriod)
    throw ConfigError(r.path("expert_layer_offset"), "must be in [0, expert_layer_period)");
  setLayers(s, kindsWhere(s.num_layers, [&](int64_t i) { return i % attnPeriod == attnOffset; },
                          LayerKind::FullAttention, LayerKind::Mamba1),
            0);
  if (!r.has("max_position_embeddings") && r.has("n_ctx"))
    s.max_positions = r.requireSize("n_ctx");
  if (r.has("mamba_inner_layernorms") && !r.getBool("mamba_inner_layernorms", true))
    throw ConfigError(r.path("mamba_inner_layernorms"),
                      "false is not supported (transformers' Jamba always norms dt, B and C)");
  s.attn.rope = false;
  parseMamba1(r, s, {"mamba_d_state", "mamba_expand", "mamba_d_conv", "mamba_dt_rank", "mamba_conv_bias",
                     "mamba_proj_bias"});
  s.mamba1.dt_bc_norm = Mamba1Spec::DtBcNorm::Weighted;
  s.mamba1.dt_bc_eps = s.norm_eps;
  MoeSpec &m = s.moe;
  // A single expert is a dense MLP (transformers builds the sparse block only for more).
  parseExperts(r, {.count = "num_experts", .experts = 16, .top_k = 2, .count_name = "num_experts", .routed_from = 2},
               m);
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::Softmax;
  m.renorm = false;
  m.act = s.mlp.act;
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].moe = m.num_experts > 1 && i % expertPeriod == expertOffset;
  jambaNames(s.names);
  m.names = perExpertNames(s.names, "router", /*gated=*/true);
}

} // namespace

FamilyTable hybridFamilies() {
  return {
      {"bamba",
       {{.max_positions = 262144, .norm_eps = 1e-5, .partial_rotary = true, .partial_rotary_factor = 0.5,
         .layer_types = LayerListRule::ReadOnly, .layers_block_type = LayerListRule::ReadOnly},
        parseBamba, bambaRopeDicts}},
      {"granitemoehybrid",
       {{.max_positions = 2048, .norm_eps = 1e-6, .moe_only = true, .layers_block_type = LayerListRule::Validated},
        parseGraniteMoeHybrid}},
      {"nemotron_h",
       {{.head_dim = 128, .max_positions = 4096, .norm_eps = 1e-5, .norm_eps_key = "layer_norm_epsilon",
         .layers_derived = true, .kv_heads = 8, .layer_types = LayerListRule::Own,
         .layers_block_type = LayerListRule::Own},
        parseNemotronH}},
      {"falcon_h1", {{.max_positions = 8192, .norm_eps = 1e-5, .kv_heads = 8, .layer_types = LayerListRule::ReadOnly, .layers_block_type = LayerListRule::ReadOnly}, parseFalconH1}},
      {"jamba", {{.max_positions = 262144, .layer_types = LayerListRule::ReadOnly, .layers_block_type = LayerListRule::ReadOnly}, parseJamba}},
  };
}

} // namespace cbc::hf
