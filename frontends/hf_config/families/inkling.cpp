// Inkling's text decoder (inkling_text, run as InklingForCausalLM): attention without RoPE but
// with a relative-position bias computed from each token's hidden state, per-head q/k norms and
// a 1/d softmax scale, sliding layers with their own head counts, residual short convs on k, v
// and both branch outputs, a normed embedding, muP logits, and a sigmoid-routed MoE whose
// shared experts are sinks in the routing normalisation (configuration_inkling.py,
// modeling_inkling.py; tools/oracle/SEMANTICS_INKLING.md).
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"

#include <set>

namespace cbc::hf {

namespace {

// layer_types (hybrid / hybrid_sliding), else local_layer_ids (Inkling's only), else sliding
// unless (i + 1) % 6 == 0.
std::vector<bool> inklingSliding(const ConfigReader &r, int64_t layers, bool localIds) {
  std::vector<bool> sliding(layers);
  if (r.has("layer_types")) {
    std::vector<std::string> types = r.getStringList("layer_types");
    checkLayerCount(r, "layer_types", types.size(), layers);
    for (int64_t i = 0; i < layers; ++i) {
      if (types[i] != "hybrid" && types[i] != "hybrid_sliding")
        throw ConfigError(r.path("layer_types"),
                          "unsupported layer type '" + types[i] + "' (hybrid or hybrid_sliding)");
      sliding[i] = types[i] == "hybrid_sliding";
    }
    return sliding;
  }
  if (localIds && r.has("local_layer_ids")) {
    for (int64_t i : r.getIntList("local_layer_ids")) {
      if (i < 0 || i >= layers)
        throw ConfigError(r.path("local_layer_ids"), "names layer " + std::to_string(i) + ", which does not exist");
      sliding[i] = true;
    }
    return sliding;
  }
  for (int64_t i = 0; i < layers; ++i)
    sliding[i] = (i + 1) % 6 != 0;
  return sliding;
}

// The two generations' config classes' defaults for the sliding layers.
struct SlidingDefaults {
  int64_t window, heads, kv_heads;
  bool local_layer_ids; // the class reads local_layer_ids
};

// The attention options every layer shares and each sliding layer's own heads and window.
void inklingAttention(const ConfigReader &r, ModelSpec &s, const SlidingDefaults &d) {
  AttentionSpec &a = s.attn;
  a.rope = false;
  a.rel_dim = r.getSize("d_rel", 16);
  a.rel_extent = r.getSize("rel_extent", 1024);
  a.kv_conv_kernel = r.getSize("conv_kernel_size", r.getSize("sconv_kernel_size", 4));
  if (r.has("log_scaling_n_floor")) {
    a.log_scale_floor = r.requireSize("log_scaling_n_floor");
    a.log_scale_alpha = r.getNumber("log_scaling_alpha", 0.1);
  }
  s.branch_conv_kernel = a.kv_conv_kernel;
  int64_t window = r.has("sliding_window_size") ? r.requireSize("sliding_window_size")
                                                : r.getSize("sliding_window", d.window);
  int64_t swaHeads = r.getSize("swa_num_attention_heads", d.heads),
          swaKv = r.getSize("swa_num_key_value_heads", d.kv_heads);
  if (swaHeads % swaKv != 0)
    throw ConfigError(r.path("swa_num_key_value_heads"), "swa_num_attention_heads (" + std::to_string(swaHeads) +
                                                             ") is not divisible by it (" + std::to_string(swaKv) + ")");
  int64_t swaDim = r.getSize("swa_head_dim", 128);
  std::vector<bool> sliding = inklingSliding(r, s.num_layers, d.local_layer_ids);
  for (int64_t i = 0; i < s.num_layers; ++i) {
    LayerSpec &l = s.layers[i];
    l.kind = sliding[i] ? LayerKind::SlidingAttention : LayerKind::FullAttention;
    l.window = sliding[i] ? window : 0;
    if (sliding[i]) {
      l.num_heads = swaHeads;
      l.num_kv_heads = swaKv;
      l.head_dim = swaDim;
    }
  }
}

// mlp_layer_types (dense / sparse), else dense below dense_mlp_idx (0: all sparse). With
// dense_intermediate_size, intermediate_size is the experts' width (configuration_inkling.py).
void inklingMlp(const ConfigReader &r, ModelSpec &s) {
  MoeSpec &m = s.moe;
  m.intermediate = r.getSize("moe_intermediate_size", 3072);
  if (r.has("dense_intermediate_size")) {
    m.intermediate = s.mlp.intermediate;
    s.mlp.intermediate = r.requireSize("dense_intermediate_size");
  }
  s.mlp.global_scale = true;
  if (r.has("mlp_layer_types")) {
    std::vector<std::string> types = r.getStringList("mlp_layer_types");
    checkLayerCount(r, "mlp_layer_types", types.size(), s.num_layers);
    for (int64_t i = 0; i < s.num_layers; ++i) {
      if (types[i] != "dense" && types[i] != "sparse")
        throw ConfigError(r.path("mlp_layer_types"), "unsupported MLP type '" + types[i] + "' (dense or sparse)");
      s.layers[i].moe = types[i] == "sparse";
    }
  } else {
    int64_t dense = r.getInt("dense_mlp_idx", 0);
    for (int64_t i = 0; i < s.num_layers; ++i)
      s.layers[i].moe = i >= dense;
  }
  std::string countKey = r.has("num_local_experts") ? "num_local_experts" : "n_routed_experts";
  m.num_experts = r.getSize(countKey, 256);
  m.top_k = r.getSize("num_experts_per_tok", 6);
  if (m.top_k > m.num_experts)
    throw ConfigError(r.path("num_experts_per_tok"), "exceeds the " + std::to_string(m.num_experts) + " experts");
  // Every token takes the shared experts, which the router scores as sinks.
  m.sinks = r.getSize("n_shared_experts", 2);
  m.score = ExpertScoring::Sigmoid;
  m.scaling = r.getNumber("route_scale", 8.0);
  m.act = FfnActivation::Silu;
  ExpertNaming &n = m.names;
  n.router = "mlp.gate.weight";
  n.selection_bias = "mlp.gate.e_score_correction_bias";
  n.global_scale = "mlp.gate.global_scale";
  n.fused = true;
  n.experts.gate_up = {"mlp.experts.gate_up_proj"};
  n.experts.down = {"mlp.experts.down_proj"};
  n.shared.gate_up = {"mlp.shared_experts.gate_proj", "mlp.shared_experts.up_proj"};
  n.shared.down = {"mlp.shared_experts.down_proj"};
}

// The head is padded to vocab_size rows; the logits keep the first unpadded_vocab_size.
void unpaddedVocab(const ConfigReader &r, ModelSpec &s) {
  if (r.has("unpadded_vocab_size")) {
    int64_t unpadded = r.requireSize("unpadded_vocab_size");
    if (unpadded > s.vocab_size)
      throw ConfigError(r.path("unpadded_vocab_size"),
                        "exceeds vocab_size (" + std::to_string(s.vocab_size) + "), the rows the head holds");
    for (int64_t id : s.eos_token_ids)
      if (id >= unpadded)
        throw ConfigError(r.path("eos_token_id"), "token id " + std::to_string(id) + " is outside the " +
                                                      std::to_string(unpadded) + " logits kept (unpadded_vocab_size)");
    if (unpadded < s.vocab_size) {
      s.padded_vocab = s.vocab_size;
      s.vocab_size = unpadded;
    }
  }
}

// The hub's layout of Inkling's tensors, which the composite's checkpoints (inkling_mm_model)
// keep (transformers' conversion_mapping.py): model.llm.*, the attention's wq_du, wk_dv, wv_dv,
// wr_du and wo_ud, convs' weights without their conv1d module, the dense MLP's and the experts'
// gate and up rows interleaved in one tensor (w13_dn; w13_weight, shared_w13_weight), the
// router's correction bias as mlp.gate.bias, and the head as model.llm.unembed.
// The hub's module names both Inklings share: model.llm.{embed, embed_norm, layers.N.{attn,
// attn_norm, mlp_norm}, norm, unembed}.
void hubModules(ModelSpec &s) {
  s.prefix = "model.llm.";
  s.lm_head = "model.llm.unembed.weight";
  Names &n = s.names;
  n.embed = "embed";
  n.embed_norm = "embed_norm";
  n.final_norm = "norm";
  n.attn = "attn";
  n.input_norm = "attn_norm";
  n.post_attn_norm = "mlp_norm";
}

void inklingHubNames(ModelSpec &s) {
  hubModules(s);
  Names &n = s.names;
  n.q_proj = "wq_du", n.k_proj = "wk_dv", n.v_proj = "wv_dv", n.r_proj = "wr_du", n.o_proj = "wo_ud";
  n.conv_weight = "weight";
  n.gate_up = "w13_dn";
  n.down = "w2_md";
  s.mlp.glu = GateUpLayout::Interleaved;
  ExpertNaming &e = s.moe.names;
  e.selection_bias = "mlp.gate.bias";
  e.glu = GateUpLayout::Interleaved;
  e.experts.gate_up = {"mlp.experts.w13_weight"};
  e.experts.down = {"mlp.experts.w2_weight"};
  e.shared.gate_up = {"mlp.shared_experts.shared_w13_weight"};
  e.shared.down = {"mlp.shared_experts.shared_w2_weight"};
}

void parseInkling(const ConfigReader &r, ModelSpec &s) {
  requireSilu(r, "hidden_act", "inkling_text");
  unpaddedVocab(r, s);
  s.layers.assign(s.num_layers, LayerSpec{});
  inklingAttention(r, s, {.window = 512, .heads = 64, .kv_heads = 16, .local_layer_ids = true});
  s.attn.qk_norm = true;
  s.attn.scale_inverse_dim = true;
  inklingMlp(r, s);
  s.embed_norm = true;
  // The head reads h / logits_mup_width_multiplier, which scales the logits alike.
  double mup = r.getNumber("logits_mup_width_multiplier", r.getNumber("embedding_multiplier", 24.0));
  if (!(mup > 0))
    throw ConfigError(r.path("logits_mup_width_multiplier"), "must be positive");
  s.logits_scale = 1.0 / mup;
  // InklingForCausalLM ties nothing (_tied_weights_keys is empty).
  s.tie_word_embeddings = false;
  if (s.outer_model_type == "inkling_mm_model")
    inklingHubNames(s);
}

// Inkling 2's experts: every layer sparse, sigmoid routing over the routed experts alone (the
// chosen scores renormalised, + 1e-20, times route_scale) and soft-capped SwiGLU experts with the
// hub's interleaved w13 (configuration_inkling2.py, modeling_inkling2.py; SEMANTICS_INKLING2.md §7).
void inkling2Mlp(const ConfigReader &r, ModelSpec &s) {
  MoeSpec &m = s.moe;
  // attribute_map: intermediate_size sets the experts' width.
  if (r.has("intermediate_size") && r.has("moe_intermediate_size") &&
      r.requireSize("intermediate_size") != r.requireSize("moe_intermediate_size"))
    throw ConfigError(r.path("intermediate_size"), "is an alias of moe_intermediate_size, which says otherwise");
  m.intermediate = r.has("moe_intermediate_size") ? r.requireSize("moe_intermediate_size")
                                                  : r.getSize("intermediate_size", 2304);
  for (LayerSpec &l : s.layers)
    l.moe = true;
  std::string countKey = r.has("num_local_experts") ? "num_local_experts" : "n_routed_experts";
  m.num_experts = r.getSize(countKey, 384);
  m.top_k = r.getSize("num_experts_per_tok", 8);
  if (m.top_k > m.num_experts)
    throw ConfigError(r.path("num_experts_per_tok"), "exceeds the " + std::to_string(m.num_experts) + " experts");
  // ACT2FN[scoring_func] scores the logits elementwise; only the sigmoid is a router.
  if (std::string f = r.getString("scoring_func", "sigmoid"); f != "sigmoid")
    throw ConfigError(r.path("scoring_func"), "unsupported scoring function '" + f + "' (sigmoid)");
  m.score = ExpertScoring::Sigmoid;
  m.renorm = true;
  m.renorm_eps = 1e-20;
  m.scaling = r.getNumber(r.has("routed_scaling_factor") ? "routed_scaling_factor" : "route_scale", 8.0);
  m.act = FfnActivation::SoftcappedSwiglu;
  m.limit = r.getNumber("mlp_gate_softcap", 4.0);
  m.alpha = r.getNumber("mlp_up_softcap", 25.0);
  for (const char *key : {"mlp_gate_softcap", "mlp_up_softcap"})
    if (!(r.getNumber(key, 1.0) > 0))
      throw ConfigError(r.path(key), "must be positive");
  ExpertNaming &n = m.names;
  n.router = "mlp.gate.weight";
  n.selection_bias = "mlp.gate.bias";
  n.fused = true;
  n.glu = GateUpLayout::Interleaved;
  n.experts.gate_up = {"mlp.experts.w13_weight"};
  n.experts.down = {"mlp.experts.w2_weight"};
}

// Inkling 2's text decoder (inkling2_text, run as Inkling2ForCausalLM; SEMANTICS_INKLING2.md):
// Inkling's relative-bias attention with L2 clips for norms, per-token sinks, an output gate and
// dynamic k/v convs on full layers; block attention residuals instead of a residual stream;
// soft-capped SwiGLU experts; the logits soft-capped; the hub's tensor names under model.llm.
void parseInkling2(const ConfigReader &r, ModelSpec &s) {
  unpaddedVocab(r, s);
  s.layers.assign(s.num_layers, LayerSpec{});
  inklingAttention(r, s, {.window = 1024, .heads = 48, .kv_heads = 8, .local_layer_ids = false});
  AttentionSpec &a = s.attn;
  // log_scaling_n_floor is a required int of the class: log scaling is always on.
  a.log_scale_floor = r.getSize("log_scaling_n_floor", 128000);
  a.log_scale_alpha = r.getNumber("log_scaling_alpha", 0.1);
  a.qk_clip = r.getNumber("qk_l2_clip_threshold", 22.627416997969522);
  a.rel_clip = r.getNumber("rel_l2_clip_threshold", 8.0);
  for (const char *key : {"qk_l2_clip_threshold", "rel_l2_clip_threshold"})
    if (!(r.getNumber(key, 1.0) > 0))
      throw ConfigError(r.path(key), "must be positive");
  s.attn_res_block = r.getSize("n_layers_per_attn_res_block", 6);
  inkling2Mlp(r, s);
  s.embed_norm = true;
  s.final_softcap = r.getNumber("final_logit_softcapping", 30.0);
  if (!(s.final_softcap > 0))
    throw ConfigError(r.path("final_logit_softcapping"), "must be positive");
  s.tie_word_embeddings = false; // _tied_weights_keys is empty
  // The hub's names, which save_pretrained writes back (conversion_mapping.py's inkling2_text).
  hubModules(s);
}

} // namespace

FamilyTable inklingFamilies() {
  return {
      {"inkling_text",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-6, .kv_heads = 8}, parseInkling}},
      {"inkling2_text",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-6, .moe_only = true, .kv_heads = 8}, parseInkling2}},
  };
}

} // namespace cbc::hf
