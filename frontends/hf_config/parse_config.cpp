// config.json -> ModelSpec. All of transformers' derivation rules for the supported families
// live here: layer types, sliding windows, RoPE resolution, MoE placement and tensor names.
#include <algorithm>
#include "frontends/hf_config/config_reader.h"
#include "frontends/hf_config/model_spec.h"
#include "frontends/hf_config/rope.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace cbc::hf {

namespace {

using nlohmann::json;

// What a family's config class supplies when config.json leaves a key out.
struct FamilyDefaults {
  int64_t head_dim = 0;          // 0: hidden_size / num_attention_heads
  int64_t max_positions = 2048;
  double norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  double rope_theta = 10000.0;
  const char *act_key = "hidden_act";
  const char *act = "silu";
  // Sizes the config class fills in when a multimodal wrapper's text_config omits them; a
  // top-level config must state its sizes.
  bool partial_rotary = false; // rotates only the leading partial_rotary_factor of each head
  bool moe_only = false;       // every layer is MoE: the config has no dense intermediate_size
  double partial_rotary_factor = 1.0; // the config class's default share of each head rotated
  const char *intermediate_alias = nullptr; // a legacy key read when intermediate_size is absent
  bool attention_free = false;  // no attention layers: no head counts, RoPE or max positions
  const char *norm_eps_key = "rms_norm_eps";
  bool layers_derived = false;  // the layer count comes from a per-layer list, not num_hidden_layers
  bool intermediate_optional = false; // the family derives intermediate_size when it is absent
  int64_t kv_heads = 0;         // num_key_value_heads when absent; 0: num_attention_heads
  std::map<std::string, int64_t> text_config_sizes = {};
};

using RopeDicts = std::map<std::string, nlohmann::json>;

struct Family {
  FamilyDefaults defaults;
  // Fills the family-specific parts of the spec; the common parts are already parsed.
  std::function<void(const ConfigReader &, ModelSpec &)> parse;
  // The rope dictionaries per layer type, where the family resolves them its own way.
  std::function<RopeDicts(const ConfigReader &)> ropeDicts = nullptr;
};

// ----- shared pieces -----------------------------------------------------------------------

std::string activation(const ConfigReader &r, const char *key, const char *fallback) {
  std::string act = r.getString(key, fallback);
  if (act == "silu" || act == "swish")
    return "silu";
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast")
    return "gelu_tanh";
  if (act == "gelu")
    return "gelu";
  if (act == "relu" || act == "relu2")
    return act;
  throw ConfigError(r.path(key), "unsupported activation '" + act + "'");
}

// The dictionaries transformers resolves per layer type, with rope_theta filled in.
// Keyed by "full_attention" / "sliding_attention"; a flat dictionary serves both.
std::map<std::string, json> ropeDictionaries(const ConfigReader &r, double defaultTheta) {
  json flat;
  std::string where;
  if (r.has("rope_parameters")) {
    const json &rp = r.raw("rope_parameters");
    if (!rp.is_object())
      throw ConfigError(r.path("rope_parameters"), "expected an object");
    if (rp.contains("full_attention") || rp.contains("sliding_attention")) {
      std::map<std::string, json> out;
      for (const char *kind : {"full_attention", "sliding_attention"}) {
        json d = rp.contains(kind) && rp[kind].is_object() ? rp[kind] : json::object();
        if (!d.contains("rope_theta") || d["rope_theta"].is_null())
          d["rope_theta"] = r.getNumber("rope_theta", defaultTheta);
        out[kind] = d;
      }
      return out;
    }
    flat = rp;
  } else if (r.has("rope_scaling")) {
    flat = r.raw("rope_scaling");
    if (!flat.is_object())
      throw ConfigError(r.path("rope_scaling"), "expected an object");
  } else {
    flat = json::object();
  }
  if (!flat.contains("rope_theta") || flat["rope_theta"].is_null())
    flat["rope_theta"] = r.getNumber("rope_theta", defaultTheta);
  return {{"full_attention", flat}, {"sliding_attention", flat}};
}

std::string ropePath(const ConfigReader &r, const std::string &kind, bool nested) {
  std::string base = r.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  return r.path(base + "." + (nested ? kind + "." : ""));
}

RopeContext ropeContext(const ConfigReader &r, const ModelSpec &spec, double partialDefault) {
  RopeContext ctx;
  ctx.head_dim = spec.attn.head_dim;
  ctx.max_positions = spec.max_positions;
  if (r.has("original_max_position_embeddings"))
    ctx.original_max_override = r.requireSize("original_max_position_embeddings");
  ctx.partial_rotary_factor = r.getNumber("partial_rotary_factor", partialDefault);
  return ctx;
}

// Computes each layer's RoPE from the dictionaries of its layer type.
void assignRope(const ConfigReader &r, ModelSpec &spec, std::map<std::string, json> dicts,
                const FamilyDefaults &d) {
  bool nested = r.has("rope_parameters") && (r.raw("rope_parameters").contains("full_attention") ||
                                             r.raw("rope_parameters").contains("sliding_attention"));
  RopeContext ctx = ropeContext(r, spec, d.partial_rotary_factor);
  ctx.partial_rotary = d.partial_rotary;
  std::map<std::string, RopeSpec> computed;
  for (auto &[kind, dict] : dicts) {
    std::string prefix = nested ? ropePath(r, kind, true) : ropePath(r, kind, false);
    ConfigReader reader(dict, prefix);
    computed[kind] = computeRope(reader, ctx);
  }
  for (LayerSpec &layer : spec.layers)
    layer.rope = computed[layer.kind == LayerKind::SlidingAttention ? "sliding_attention"
                                                                    : "full_attention"];
}

// layer_types given explicitly, validated against the supported kinds and the layer count.
using KindNames = std::map<std::string, LayerKind>;
const KindNames &attentionKinds() {
  static const KindNames k = {{"full_attention", LayerKind::FullAttention},
                              {"attention", LayerKind::FullAttention},
                              {"sliding_attention", LayerKind::SlidingAttention}};
  return k;
}

std::vector<LayerKind> explicitLayerTypes(const ConfigReader &r, int64_t layers,
                                          const KindNames &allowed = attentionKinds()) {
  auto names = r.getStringList("layer_types");
  if ((int64_t)names.size() != layers)
    throw ConfigError(r.path("layer_types"), "has " + std::to_string(names.size()) +
                                                 " entries but num_hidden_layers is " +
                                                 std::to_string(layers));
  std::vector<LayerKind> kinds;
  for (const std::string &n : names) {
    auto it = allowed.find(n);
    if (it == allowed.end())
      throw ConfigError(r.path("layer_types"),
                        "layer type '" + n + "' is not supported for " +
                            r.getString("model_type", "this family"));
    kinds.push_back(it->second);
  }
  return kinds;
}

void setLayers(ModelSpec &spec, const std::vector<LayerKind> &kinds, int64_t window) {
  spec.layers.assign(spec.num_layers, LayerSpec{});
  for (int64_t i = 0; i < spec.num_layers; ++i) {
    spec.layers[i].kind = kinds[i];
    // A sliding layer without a window attends to everything, as in transformers.
    spec.layers[i].window = kinds[i] == LayerKind::SlidingAttention ? window : 0;
    if (kinds[i] == LayerKind::SlidingAttention && spec.layers[i].window == 0)
      spec.layers[i].kind = LayerKind::FullAttention;
  }
}

int64_t optionalWindow(const ConfigReader &r, const char *key = "sliding_window") {
  if (!r.has(key))
    return 0;
  int64_t w = r.requireInt(key);
  if (w < 0)
    throw ConfigError(r.path(key), "must not be negative");
  return w;
}

// A sliding_window key that is absent takes the config class's default; an explicit null
// means no window.
int64_t windowOrClassDefault(const ConfigReader &r, int64_t classDefault) {
  return r.contains("sliding_window") ? optionalWindow(r) : classDefault;
}

// Gemma 3: rope_parameters keyed by layer type, or the legacy rope_theta (+ rope_scaling) for
// global layers and rope_local_base_freq for local ones.
RopeDicts gemma3RopeDicts(const ConfigReader &r) {
  if (r.has("rope_parameters") && (r.raw("rope_parameters").contains("full_attention") ||
                                   r.raw("rope_parameters").contains("sliding_attention")))
    return ropeDictionaries(r, 1000000.0);
  json full = r.has("rope_parameters") ? r.raw("rope_parameters")
              : r.has("rope_scaling")  ? r.raw("rope_scaling")
                                       : json::object();
  if (!full.is_object())
    throw ConfigError(r.path(r.has("rope_parameters") ? "rope_parameters" : "rope_scaling"),
                      "expected an object");
  if (!full.contains("rope_theta") || full["rope_theta"].is_null())
    full["rope_theta"] = r.getNumber("rope_theta", 1000000.0);
  json local = {{"rope_type", "default"},
                {"rope_theta", r.getNumber("rope_local_base_freq", 10000.0)}};
  return {{"full_attention", full}, {"sliding_attention", local}};
}

// gpt-oss: YaRN (factor 32 over 4096 positions) when the config names no RoPE at all.
RopeDicts gptOssRopeDicts(const ConfigReader &r) {
  if (r.has("rope_parameters") || r.has("rope_scaling"))
    return ropeDictionaries(r, 150000.0);
  json d = {{"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
            {"truncate", false}, {"original_max_position_embeddings", 4096},
            {"rope_theta", r.getNumber("rope_theta", 150000.0)}};
  return {{"full_attention", d}, {"sliding_attention", d}};
}

// Phi-3: legacy "su" and "yarn" scaling both mean longrope; only default and longrope exist.
RopeDicts phi3RopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 10000.0);
  for (auto &[kind, d] : dicts) {
    std::string key = d.contains("rope_type") ? "rope_type" : "type";
    std::string type = d.value(key, std::string("default"));
    if (type == "su" || type == "yarn")
      d[key] = "longrope";
    else if (type != "default" && type != "longrope")
      throw ConfigError(ropePath(r, kind, false) + key,
                        "unsupported RoPE type '" + type + "' for phi3 (default or longrope)");
  }
  return dicts;
}

// Every layer slides when sliding_window is set (Mistral, Mixtral, Phi-3, Qwen3-MoE).
void uniformWindowLayers(const ConfigReader &r, ModelSpec &spec, int64_t window) {
  std::vector<LayerKind> kinds(spec.num_layers, window > 0 ? LayerKind::SlidingAttention
                                                           : LayerKind::FullAttention);
  setLayers(spec, kinds, window);
}

// Alternating sliding/full: even layers slide (Gemma 2, gpt-oss).
void alternatingLayers(const ConfigReader &r, ModelSpec &spec, int64_t window, int64_t pattern) {
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, spec.num_layers);
  } else {
    for (int64_t i = 0; i < spec.num_layers; ++i)
      kinds.push_back((i + 1) % pattern ? LayerKind::SlidingAttention : LayerKind::FullAttention);
  }
  setLayers(spec, kinds, window);
}

// Qwen2/Qwen3: sliding only with use_sliding_window, for layers >= max_window_layers.
void qwenWindowLayers(const ConfigReader &r, ModelSpec &spec) {
  bool use = r.getBool("use_sliding_window", false);
  int64_t window = use ? optionalWindow(r) : 0;
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, spec.num_layers);
  } else {
    int64_t maxWindowLayers = r.getInt("max_window_layers", 28);
    for (int64_t i = 0; i < spec.num_layers; ++i)
      kinds.push_back(window > 0 && i >= maxWindowLayers ? LayerKind::SlidingAttention
                                                         : LayerKind::FullAttention);
  }
  setLayers(spec, kinds, window);
}

// Qwen MoE placement: mlp_only_layers, else every decoder_sparse_step-th layer.
void qwenMoePlacement(const ConfigReader &r, ModelSpec &spec) {
  auto dense = r.getIntList("mlp_only_layers");
  std::set<int64_t> denseSet(dense.begin(), dense.end());
  for (int64_t i : denseSet)
    if (i < 0 || i >= spec.num_layers)
      throw ConfigError(r.path("mlp_only_layers"), "layer " + std::to_string(i) + " is out of range");
  int64_t step = r.getSize("decoder_sparse_step", 1);
  for (int64_t i = 0; i < spec.num_layers; ++i)
    spec.layers[i].moe = !denseSet.count(i) && spec.moe.num_experts > 0 && (i + 1) % step == 0;
}

// The expert count's key: transformers maps num_experts and num_local_experts onto each other.
std::string expertCountKey(const ConfigReader &r, const char *preferred) {
  for (const char *k : {"num_local_experts", "num_experts"})
    if (r.has(k))
      return k;
  return preferred;
}

// One tensor set per expert under <mlp>.experts.{e}, named by the family's Names (gate/up/down),
// routed by <mlp>.<router>.
ExpertNaming perExpertNames(const Names &n, const std::string &router, bool gated) {
  ExpertNaming names;
  names.router = n.mlp + "." + router + ".weight";
  std::string expert = n.mlp + ".experts.{e}.";
  if (gated)
    names.experts.gate_up.push_back(expert + n.gate + ".weight");
  names.experts.gate_up.push_back(expert + n.up + ".weight");
  names.experts.down = expert + n.down + ".weight";
  return names;
}

// The sigmoid-gated shared expert under mlp.shared_expert.
void qwenSharedExpert(ExpertNaming &n) {
  n.shared.gate_up = {"mlp.shared_expert.gate_proj.weight", "mlp.shared_expert.up_proj.weight"};
  n.shared.down = "mlp.shared_expert.down_proj.weight";
  n.shared_gate = "mlp.shared_expert_gate.weight";
}

// Expert counts default per config class: qwen2_moe 60 top 4, qwen3_moe 128 top 8,
// qwen3_next 512 top 10.
void parseQwenMoe(const ConfigReader &r, ModelSpec &spec, bool shared, int64_t experts, int64_t topK) {
  std::string key = expertCountKey(r, "num_experts");
  spec.moe.num_experts = r.getInt(key, experts);
  if (spec.moe.num_experts < 0)
    throw ConfigError(r.path(key), "must not be negative");
  spec.moe.top_k = r.getSize("num_experts_per_tok", topK);
  if (spec.moe.num_experts > 0 && spec.moe.top_k > spec.moe.num_experts)
    throw ConfigError(r.path("num_experts_per_tok"), "exceeds num_experts");
  spec.moe.intermediate = r.getSize("moe_intermediate_size", shared ? 1408 : 768);
  spec.moe.renorm = r.getBool("norm_topk_prob", false);
  spec.moe.score = "softmax";
  spec.moe.act = spec.mlp.act;
  spec.moe.names = perExpertNames(spec.names, "gate", /*gated=*/true);
  if (shared) {
    spec.moe.shared_intermediate = r.getSize("shared_expert_intermediate_size", 5632);
    qwenSharedExpert(spec.moe.names);
  }
  qwenMoePlacement(r, spec);
}

// Gated delta net layer kinds: layer_types when given, else full attention on every
// interval-th layer and linear attention elsewhere.
std::vector<LayerKind> gdnLayerKinds(const ConfigReader &r, int64_t numLayers, int64_t interval) {
  if (r.has("layer_types"))
    return explicitLayerTypes(r, numLayers,
                              {{"full_attention", LayerKind::FullAttention},
                               {"linear_attention", LayerKind::LinearAttention}});
  std::vector<LayerKind> kinds;
  for (int64_t i = 0; i < numLayers; ++i)
    kinds.push_back((i + 1) % interval ? LayerKind::LinearAttention : LayerKind::FullAttention);
  return kinds;
}

// Qwen3-Next / Qwen3.5: the interval is full_attention_interval.
void gdnLayers(const ConfigReader &r, ModelSpec &s) {
  setLayers(s, gdnLayerKinds(r, s.num_layers, r.getSize("full_attention_interval", 4)), 0);
}

void parseGdn(const ConfigReader &r, ModelSpec &s, GdnSpec::Projections projections) {
  GdnSpec &g = s.gdn;
  g.projections = projections;
  g.k_heads = r.getSize("linear_num_key_heads", 16);
  g.v_heads = r.getSize("linear_num_value_heads", 32);
  g.k_dim = r.getSize("linear_key_head_dim", 128);
  g.v_dim = r.getSize("linear_value_head_dim", 128);
  g.conv_kernel = r.getSize("linear_conv_kernel_dim", 4);
  if (g.v_heads % g.k_heads != 0)
    throw ConfigError(r.path("linear_num_value_heads"),
                      "must be a multiple of linear_num_key_heads (" + std::to_string(g.k_heads) + ")");
  g.norm_eps = s.norm_eps;
  if (r.getString("hidden_act", "silu") != "silu")
    throw ConfigError(r.path("hidden_act"), "the gated delta net's conv supports only silu");
}

// LFM2 and LFM2-MoE: short-conv and attention layers, named differently from Llama.
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

void parseLfm2(const ConfigReader &r, ModelSpec &s) {
  parseLfm2Common(r, s);
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, s.num_layers, lfm2Kinds());
  } else {
    auto full = r.has("full_attn_idxs") ? r.getIntList("full_attn_idxs") : std::vector<int64_t>{};
    std::set<int64_t> fullSet(full.begin(), full.end());
    for (int64_t i = 0; i < s.num_layers; ++i)
      kinds.push_back(!r.has("full_attn_idxs") || fullSet.count(i) ? LayerKind::FullAttention
                                                                   : LayerKind::ShortConv);
  }
  setLayers(s, kinds, 0);
  // The feed-forward width is adjusted from the configured one, as transformers does.
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
  s.mlp.intermediate = ff;
}

// LFM2-MoE: the first num_dense_layers keep a dense MLP; the rest route over sigmoid scores
// chosen with a bias that does not weight them.
void parseLfm2Moe(const ConfigReader &r, ModelSpec &s) {
  parseLfm2Common(r, s);
  if (!r.has("layer_types"))
    throw ConfigError(r.path("layer_types"), "is required for lfm2_moe (the config class has no default)");
  setLayers(s, explicitLayerTypes(r, s.num_layers, lfm2Kinds()), 0);
  MoeSpec &m = s.moe;
  m.num_experts = r.getSize("num_experts", 32);
  m.top_k = r.getSize("num_experts_per_tok", 4);
  if (m.top_k > m.num_experts)
    throw ConfigError(r.path("num_experts_per_tok"), "exceeds num_experts");
  m.intermediate = r.getSize("moe_intermediate_size", 1792);
  m.score = "sigmoid";
  m.names = perExpertNames(s.names, "gate", /*gated=*/true);
  if (r.getBool("use_expert_bias", true))
    m.names.selection_bias = s.names.mlp + ".expert_bias";
  m.renorm = r.getBool("norm_topk_prob", true);
  m.renorm_eps = 1e-6;
  m.scaling = r.getNumber("routed_scaling_factor", 1.0);
  m.act = "silu";
  int64_t dense = r.getSize("num_dense_layers", 2);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].moe = i >= dense;
}

// OLMo-Hybrid: gated delta layers (pre-norm) and attention layers (post-norm, whole-row q/k
// norms, NoPE when rope_theta is null), with OLMo-core's norm names in the checkpoint.
void parseOlmoHybrid(const ConfigReader &r, ModelSpec &s) {
  // OlmoHybridConfig's default: every 4th layer, and at least the last one.
  std::vector<LayerKind> kinds = gdnLayerKinds(r, s.num_layers, 4);
  if (!r.has("layer_types") && std::count(kinds.begin(), kinds.end(), LayerKind::FullAttention) == 0)
    kinds.back() = LayerKind::FullAttention;
  int64_t linear = std::count(kinds.begin(), kinds.end(), LayerKind::LinearAttention);
  if (linear == 0 || linear == (int64_t)kinds.size())
    throw ConfigError(r.path("layer_types"), "olmo_hybrid needs both linear_attention and attention layers");
  setLayers(s, kinds, 0);
  for (LayerSpec &l : s.layers)
    l.post_norm = l.kind == LayerKind::FullAttention;
  s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
  s.attn.qk_norm = true;
  s.attn.qk_norm_whole = true;
  // NoPE only when the resolved rope_theta is null: rope_parameters' own, else the top-level
  // one (transformers fills the former from the latter); a config with neither gets RoPE.
  bool innerTheta = r.has("rope_parameters") && r.raw("rope_parameters").contains("rope_theta");
  bool nullTheta = innerTheta ? r.raw("rope_parameters")["rope_theta"].is_null()
                              : r.contains("rope_theta") && !r.has("rope_theta");
  s.attn.rope = !nullTheta;
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
  if (r.getString("hidden_act", "silu") != "silu")
    throw ConfigError(r.path("hidden_act"), "the gated delta net's conv supports only silu");
  s.names.input_norm = "attention_layer_norm";
  s.names.post_attn_norm = "feedforward_layer_norm";
  // transformers' own names for the same tensors (conversion_mapping renames them on load).
  s.weight_aliases = {{".attention_layer_norm.", ".input_layernorm."},
                      {".feedforward_layer_norm.", ".post_attention_layernorm."}};
}

// ----- Mamba mixers --------------------------------------------------------------------------

// Where a family keeps its Mamba2 mixer settings, and the config class's defaults.
struct Mamba2Keys {
  const char *heads, *head_dim, *groups, *state, *conv, *conv_bias, *bias, *eps, *expand;
  int64_t heads_default, head_dim_default, groups_default, state_default;
  bool conv_bias_default, bias_default;
};

// time_step_limit is [min, max]; an absent or empty one clamps nothing.
void parseDtLimit(const ConfigReader &r, const char *key, Mamba2Spec &m) {
  if (!r.has(key))
    return;
  const nlohmann::json &v = r.raw(key);
  if (!v.is_array() || (v.size() != 0 && v.size() != 2))
    throw ConfigError(r.path(key), "expected [min, max]");
  if (v.size() == 2) {
    if (!jsonNumber(v[0], m.dt_min) || !jsonNumber(v[1], m.dt_max))
      throw ConfigError(r.path(key), "expected two numbers");
    if (!(m.dt_min >= 0 && m.dt_min <= m.dt_max))
      throw ConfigError(r.path(key), "must satisfy 0 <= min <= max");
  }
}

void parseMamba2(const ConfigReader &r, ModelSpec &s, const Mamba2Keys &k) {
  Mamba2Spec &m = s.mamba2;
  m.heads = r.getSize(k.heads, k.heads_default);
  // "auto": the intermediate width (expand * hidden_size) split over the heads.
  bool autoDim = r.has(k.head_dim) && r.raw(k.head_dim).is_string() && r.getString(k.head_dim, "") == "auto";
  m.head_dim = autoDim || (!r.has(k.head_dim) && k.head_dim_default == 0)
                   ? r.getSize(k.expand, 2) * s.hidden_size / m.heads
                   : r.getSize(k.head_dim, k.head_dim_default);
  if (m.head_dim <= 0)
    throw ConfigError(r.path(k.head_dim), "gives an empty Mamba head");
  m.groups = r.getSize(k.groups, k.groups_default);
  m.state = r.getSize(k.state, k.state_default);
  m.conv_kernel = r.getSize(k.conv, 4);
  m.conv_bias = r.getBool(k.conv_bias, k.conv_bias_default);
  m.bias = r.getBool(k.bias, k.bias_default);
  m.out_bias = m.bias;
  m.norm_eps = r.getNumber(k.eps, s.norm_eps);
  m.norm_groups = m.groups;
  if (m.heads % m.groups != 0)
    throw ConfigError(r.path(k.heads), "must be a multiple of " + std::string(k.groups) + " (" +
                                           std::to_string(m.groups) + ")");
  if (r.getString("hidden_act", "silu") != "silu" && r.getString("mamba_hidden_act", "silu") != "silu")
    throw ConfigError(r.path("hidden_act"), "the Mamba conv supports only silu");
}

void parseMamba1(const ConfigReader &r, ModelSpec &s, const char *stateKey, const char *expandKey,
                 const char *convKey, const char *dtRankKey, const char *convBiasKey, const char *biasKey) {
  Mamba1Spec &m = s.mamba1;
  m.state = r.getSize(stateKey, 16);
  m.intermediate = r.getSize(expandKey, 2) * s.hidden_size;
  m.conv_kernel = r.getSize(convKey, 4);
  bool autoRank = !r.has(dtRankKey) || (r.raw(dtRankKey).is_string() && r.getString(dtRankKey, "") == "auto");
  m.dt_rank = autoRank ? (s.hidden_size + 15) / 16 : r.requireSize(dtRankKey);
  m.conv_bias = r.getBool(convBiasKey, true);
  m.bias = r.getBool(biasKey, false);
}

// Mamba2 and Mamba: embeddings, one norm and one mixer per block, norm_f, all under backbone.
void mambaBackbone(ModelSpec &s, LayerKind kind) {
  s.prefix = "backbone.";
  s.names.embed = "embeddings";
  s.names.input_norm = "norm";
  s.names.mamba = "mixer";
  s.names.final_norm = "norm_f";
  s.weight_aliases = {{"backbone.embeddings.", "backbone.embedding."}};
  std::vector<LayerKind> kinds(s.num_layers, kind);
  setLayers(s, kinds, 0);
  for (LayerSpec &l : s.layers)
    l.mlp = false;
}

// Nemotron-H: every layer is one block (norm, then a Mamba2 mixer, attention or an MLP) named
// from layers_block_type / layer_types or the legacy hybrid_override_pattern; NoPE attention and
// squared-ReLU MLPs without a gate. The layer count comes from the pattern.
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

void parseNemotronH(const ConfigReader &r, ModelSpec &s) {
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
  s.attn.rope = false;
  s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
  s.mlp.gated = false;
  s.mlp.act = activation(r, "mlp_hidden_act", "relu2");
  s.mlp.bias = r.getBool("mlp_bias", false);
  auto key = [&](const char *current, const char *legacy) { return r.has(legacy) && !r.has(current) ? legacy : current; };
  parseMamba2(r, s, {"mamba_num_heads", "mamba_head_dim", key("n_groups", "mamba_n_groups"), "ssm_state_size",
                     key("conv_kernel", "mamba_d_conv"), key("use_conv_bias", "mamba_conv_bias"), "use_bias",
                     "layer_norm_epsilon", "expand", 128, 64, 8, 128, true, false});
  // Prefill clamps dt to at least time_step_min (transformers' and mamba_ssm's chunked scan).
  s.mamba2.dt_min = r.getNumber(key("time_step_min", "mamba_dt_min"), 0.001);
  if (s.mamba2.dt_min < 0)
    throw ConfigError(r.path("time_step_min"), "must not be negative");
  s.prefix = "backbone.";
  s.weight_aliases = {{"backbone.", "model."}};
  Names &n = s.names;
  n.embed = "embeddings";
  n.input_norm = "norm";
  n.mamba = n.attn = n.mlp = "mixer";
  n.final_norm = "norm_f";
  if (std::none_of(s.layers.begin(), s.layers.end(), [](const LayerSpec &l) { return l.moe; }))
    return;
  // DeepSeek-V3-style routing: sigmoid scores, chosen with e_score_correction_bias, weighted
  // unbiased, renormalised (+1e-20) and scaled; ungated squared-ReLU experts plus one ungated
  // shared expert on the same input.
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
  m.num_experts = r.getSize(experts, 8);
  m.top_k = r.getSize("num_experts_per_tok", 2);
  if (m.top_k > m.num_experts)
    throw ConfigError(r.path("num_experts_per_tok"), "exceeds " + experts);
  m.intermediate = r.getSize("moe_intermediate_size", 7688);
  m.shared_intermediate = r.getSize("moe_shared_expert_intermediate_size", 7688);
  m.score = "sigmoid";
  m.renorm = r.getBool("norm_topk_prob", true);
  m.renorm_eps = m.renorm ? 1e-20 : 0.0;
  m.scaling = r.getNumber("routed_scaling_factor", 1.0);
  m.act = s.mlp.act;
  m.gated = false;
  // The shared expert is a NemotronHMLP, with the dense MLP's biases; the routed ones have none.
  m.names = perExpertNames(n, "gate", /*gated=*/false);
  m.names.selection_bias = n.mlp + ".gate.e_score_correction_bias";
  std::string shared = n.mlp + ".shared_experts.";
  m.names.shared.gate_up = {shared + "up_proj.weight"};
  m.names.shared.down = shared + "down_proj.weight";
  if (s.mlp.bias) {
    m.names.shared.gate_up_bias = {shared + "up_proj.bias"};
    m.names.shared.down_bias = shared + "down_proj.bias";
  }
}

// Falcon-H1: every layer runs attention and a Mamba2 mixer side by side on the same normed
// input, then a SwiGLU MLP; muP multipliers on embeddings, both mixers' inputs and outputs,
// k, the Mamba2 in_proj sections, the MLP gate and output, and the logits.
void parseFalconH1(const ConfigReader &r, ModelSpec &s) {
  setLayers(s, std::vector<LayerKind>(s.num_layers, LayerKind::ParallelHybrid), 0);
  // The Mamba width: mamba_d_ssm (class default 1024); an explicit null means mamba_expand * H.
  int64_t width = r.contains("mamba_d_ssm") && !r.has("mamba_d_ssm")
                      ? r.getSize("mamba_expand", 2) * s.hidden_size
                      : r.getSize("mamba_d_ssm", 1024);
  parseMamba2(r, s, {"mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv",
                     "mamba_conv_bias", "mamba_proj_bias", "rms_norm_eps", "mamba_expand", 128, 0, 1, 256, true,
                     false});
  Mamba2Spec &m = s.mamba2;
  bool autoDim = !r.has("mamba_d_head") || (r.raw("mamba_d_head").is_string() && r.getString("mamba_d_head", "") == "auto");
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
  s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
  s.mlp.bias = r.getBool("mlp_bias", false);
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
  Names &n = s.names;
  n.mamba = "mamba";
  n.mlp = "feed_forward";
  n.post_attn_norm = "pre_ff_layernorm";
  n.final_norm = "final_layernorm";
}

// Zamba and Zamba2: Mamba layers and hybrid layers (a shared attention block, then the layer's
// own Mamba mixer), from layers_block_type or the config class's default pattern.
void zambaLayers(const ConfigReader &r, ModelSpec &s, LayerKind mamba, const std::vector<std::string> &fallback) {
  const char *key = r.has("layers_block_type") ? "layers_block_type" : "layer_types";
  std::vector<std::string> types = r.has(key) ? r.getStringList(key) : fallback;
  if (types.empty())
    throw ConfigError(r.path("layers_block_type"), "names no layers");
  s.num_layers = (int64_t)types.size();
  std::vector<LayerKind> kinds;
  for (const std::string &t : types) {
    if (t == "mamba" || t == "linear_attention")
      kinds.push_back(mamba);
    else if (t == "hybrid")
      kinds.push_back(LayerKind::SharedBlock);
    else
      throw ConfigError(r.path(key), "unknown layer type '" + t + "' (linear_attention, mamba or hybrid)");
  }
  setLayers(s, kinds, 0);
  for (LayerSpec &l : s.layers)
    l.mlp = false;
  s.attn.qkv_bias = s.attn.o_bias = false;
  s.names.mamba = "mamba";
  s.names.final_norm = "final_layernorm";
  s.shared.tied = s.tie_word_embeddings; // HF ties the blocks through the tied-weights keys
  s.shared.mamba = mamba;
}

// The shared attention's head size over the [h | embeddings] input of width 2H, and its
// (D / 2)^-1/2 scale.
void zambaAttention(const ConfigReader &r, ModelSpec &s, int64_t headDim) {
  s.attn.head_dim = headDim;
  if (headDim <= 0)
    throw ConfigError(r.path("num_attention_heads"), "gives an empty attention head");
  s.attn.scale = 1.0 / std::sqrt((double)headDim / 2.0);
}

void parseZamba(const ConfigReader &r, ModelSpec &s) {
  int64_t layers = r.getSize("num_hidden_layers", 76);
  int64_t period = r.getSize("attn_layer_period", 6), offset = r.getInt("attn_layer_offset", 4);
  std::vector<std::string> fallback = {"linear_attention", "linear_attention", "hybrid"};
  for (int64_t i = 0; i + 3 < layers; ++i)
    fallback.push_back(i % period == offset ? "hybrid" : "linear_attention");
  zambaLayers(r, s, LayerKind::Mamba1, fallback);
  if (r.has("attention_hidden_size") && r.requireSize("attention_hidden_size") != 2 * s.hidden_size)
    throw ConfigError(r.path("attention_hidden_size"), "must be 2 * hidden_size (the block reads [h | embeddings])");
  int64_t headDim = r.has("attention_head_dim") ? r.requireSize("attention_head_dim")
                                                 : r.getSize("head_dim", 2 * s.hidden_size / s.attn.num_heads);
  zambaAttention(r, s, headDim);
  s.attn.rope = false;
  parseMamba1(r, s, "mamba_d_state", "mamba_expand", "mamba_d_conv", "mamba_dt_rank", "mamba_conv_bias",
              "mamba_proj_bias");
  Mamba1Spec &m = s.mamba1;
  m.heads = r.getSize("n_mamba_heads", 2);
  if (m.intermediate % m.heads != 0)
    throw ConfigError(r.path("n_mamba_heads"), "must divide mamba_expand * hidden_size (" +
                                                   std::to_string(m.intermediate) + ")");
  m.groups = m.heads; // each head's channels read its own B and C
  if (r.getString("hidden_mamba_act", "silu") != "silu")
    throw ConfigError(r.path("hidden_mamba_act"), "the Mamba conv supports only silu");
  s.shared.module = "shared_transf";
}

void parseZamba2(const ConfigReader &r, ModelSpec &s) {
  std::vector<std::string> fallback = {"linear_attention"};
  for (int i = 0; i < 7; ++i) {
    fallback.insert(fallback.end(), 5, "linear_attention");
    fallback.push_back("hybrid");
  }
  for (int tail : {4, 3, 2}) {
    fallback.insert(fallback.end(), tail, "linear_attention");
    if (tail != 2)
      fallback.push_back("hybrid");
  }
  zambaLayers(r, s, LayerKind::Mamba2, fallback);
  // attention_hidden_size, attention_head_dim and mamba_headdim are always derived.
  if ((2 * s.hidden_size) % s.attn.num_heads != 0)
    throw ConfigError(r.path("num_attention_heads"), "must divide 2 * hidden_size");
  zambaAttention(r, s, 2 * s.hidden_size / s.attn.num_heads);
  s.attn.rope = r.getBool("use_mem_rope", false);
  if (r.getBool("use_long_context", false))
    s.max_positions = 16384; // all use_long_context does in transformers 5.23 (no RoPE rescaling)
  if (s.mlp.intermediate == 0)
    s.mlp.intermediate = 4 * s.hidden_size;
  parseMamba2(r, s, {"n_mamba_heads", "mamba_headdim", "mamba_ngroups", "mamba_d_state", "mamba_d_conv",
                     "use_conv_bias", "add_bias_linear", "rms_norm_eps", "mamba_expand", 8, 0, 1, 64, true, false});
  Mamba2Spec &m = s.mamba2;
  int64_t width = r.getSize("mamba_expand", 2) * s.hidden_size;
  if (width % m.heads != 0)
    throw ConfigError(r.path("n_mamba_heads"), "must divide mamba_expand * hidden_size (" + std::to_string(width) + ")");
  m.head_dim = width / m.heads;
  m.conv_bias = true; // Zamba2's conv always has a bias
  m.norm_eps = 1e-5;  // and its gated norm a fixed eps
  m.dt_min = r.getNumber("time_step_min", 0.001);
  m.dt_max = INFINITY;
  if (m.dt_min < 0)
    throw ConfigError(r.path("time_step_min"), "must not be negative");
  SharedBlockSpec &b = s.shared;
  b.module = "shared_transformer";
  b.blocks = r.getSize("num_mem_blocks", 1);
  b.fused_gate_up = true;
  b.mlp_bias = r.getBool("add_bias_linear", false);
  b.adapter_rank = r.getSize("adapter_rank", 128);
  b.attn_adapters = r.getBool("use_shared_attention_adapter", false);
  b.mlp_adapters = true; // Zamba2MLP always builds its gate_up adapters
  if (b.attn_adapters && s.attn.num_kv_heads != s.attn.num_heads)
    throw ConfigError(r.path("num_key_value_heads"),
                      "must equal num_attention_heads with use_shared_attention_adapter (the adapters are 2 * hidden_size wide)");
}

// Bamba and GraniteMoeHybrid: Mamba2 layers with attention at attn_layer_indices (or as
// layer_types / layers_block_type say), Llama-style names.
void hybridMamba2Layers(const ConfigReader &r, ModelSpec &s) {
  std::vector<LayerKind> kinds;
  const char *listKey = r.has("layer_types") ? "layer_types" : r.has("layers_block_type") ? "layers_block_type" : nullptr;
  if (listKey) {
    for (const std::string &t : r.getStringList(listKey)) {
      if (t == "mamba" || t == "linear_attention")
        kinds.push_back(LayerKind::Mamba2);
      else if (t == "attention" || t == "full_attention")
        kinds.push_back(LayerKind::FullAttention);
      else
        throw ConfigError(r.path(listKey), "unknown layer type '" + t + "'");
    }
    if ((int64_t)kinds.size() != s.num_layers)
      throw ConfigError(r.path(listKey), "has " + std::to_string(kinds.size()) + " entries but num_hidden_layers is " +
                                             std::to_string(s.num_layers));
  } else {
    auto attn = r.has("attn_layer_indices") ? r.getIntList("attn_layer_indices") : std::vector<int64_t>{};
    std::set<int64_t> set(attn.begin(), attn.end());
    for (int64_t i = 0; i < s.num_layers; ++i)
      kinds.push_back(set.count(i) ? LayerKind::FullAttention : LayerKind::Mamba2);
  }
  setLayers(s, kinds, 0);
  parseMamba2(r, s, {"mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv",
                     "mamba_conv_bias", "mamba_proj_bias", "rms_norm_eps", "mamba_expand", 128, 0, 1, 256, true, false});
  if (s.mamba2.intermediate() != r.getSize("mamba_expand", 2) * s.hidden_size)
    throw ConfigError(r.path("mamba_d_head"), "mamba_n_heads * mamba_d_head must equal mamba_expand * hidden_size");
  parseDtLimit(r, "time_step_limit", s.mamba2);
  s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
  s.names.mamba = "mamba";
}

// Bamba's config class forces partial_rotary_factor = 0.5 over any top-level value; only
// rope_parameters' own entry overrides it (see the family's ropeDicts).
RopeDicts bambaRopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 10000.0);
  for (auto &[kind, d] : dicts)
    if (!d.contains("partial_rotary_factor") || d["partial_rotary_factor"].is_null())
      d["partial_rotary_factor"] = 0.5;
  return dicts;
}

void parseBamba(const ConfigReader &r, ModelSpec &s) {
  hybridMamba2Layers(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  Names &n = s.names;
  n.mlp = "feed_forward";
  n.post_attn_norm = "pre_ff_layernorm";
  n.final_norm = "final_layernorm";
}

// GraniteMoeHybrid: as Bamba, with Granite's multipliers (embeddings, residual branches,
// attention scale, logits), a top-k-softmax MoE plus the always-on shared_mlp, and NoPE or RoPE
// per position_embedding_type.
void parseGraniteMoeHybrid(const ConfigReader &r, ModelSpec &s) {
  hybridMamba2Layers(r, s);
  s.embed_scale = r.getNumber("embedding_multiplier", 1.0);
  s.residual_scale = r.getNumber("residual_multiplier", 1.0);
  s.attn.scale = r.getNumber("attention_multiplier", 1.0);
  double logitsScaling = r.getNumber("logits_scaling", 1.0);
  if (logitsScaling == 0)
    throw ConfigError(r.path("logits_scaling"), "must not be zero");
  s.logits_scale = 1.0 / logitsScaling;
  std::string pos = r.getString("position_embedding_type", "nope");
  if (pos != "rope" && pos != "nope")
    throw ConfigError(r.path("position_embedding_type"), "must be 'rope' or 'nope'");
  s.attn.rope = pos == "rope";
  // The shared MLP is the layer's dense MLP, fused [gate | up] in input_linear.
  s.mlp.intermediate = r.getSize("shared_intermediate_size", 1024);
  Names &n = s.names;
  n.mlp = "shared_mlp";
  n.gate_up = "input_linear";
  n.down = "output_linear";
  n.final_norm = "norm";
  MoeSpec &m = s.moe;
  m.num_experts = r.getInt("num_local_experts", 8);
  if (m.num_experts < 0)
    throw ConfigError(r.path("num_local_experts"), "must not be negative");
  if (m.num_experts > 0) {
    m.top_k = r.getSize("num_experts_per_tok", 2);
    if (m.top_k > m.num_experts)
      throw ConfigError(r.path("num_experts_per_tok"), "exceeds num_local_experts");
    m.intermediate = r.getSize("intermediate_size", 11008);
    m.score = "topk_softmax";
    m.act = s.mlp.act;
    m.plus_dense = true;
    // block_sparse_moe.router.layer over fused experts: input_linear [E, 2I, H] (gate and up
    // halves) and output_linear [E, H, I].
    m.names.router = "block_sparse_moe.router.layer.weight";
    m.names.fused = true;
    m.names.experts.gate_up = {"block_sparse_moe.input_linear.weight"};
    m.names.experts.down = "block_sparse_moe.output_linear.weight";
    for (LayerSpec &l : s.layers)
      l.moe = true;
  }
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
  std::vector<LayerKind> kinds;
  for (int64_t i = 0; i < s.num_layers; ++i)
    kinds.push_back(i % attnPeriod == attnOffset ? LayerKind::FullAttention : LayerKind::Mamba1);
  setLayers(s, kinds, 0);
  if (!r.has("max_position_embeddings") && r.has("n_ctx"))
    s.max_positions = r.requireSize("n_ctx");
  if (r.has("mamba_inner_layernorms") && !r.getBool("mamba_inner_layernorms", true))
    throw ConfigError(r.path("mamba_inner_layernorms"),
                      "false is not supported (transformers' Jamba always norms dt, B and C)");
  s.attn.rope = false;
  parseMamba1(r, s, "mamba_d_state", "mamba_expand", "mamba_d_conv", "mamba_dt_rank", "mamba_conv_bias",
              "mamba_proj_bias");
  s.mamba1.dt_bc_norm = Mamba1Spec::DtBcNorm::Weighted;
  s.mamba1.dt_bc_eps = s.norm_eps;
  MoeSpec &m = s.moe;
  m.num_experts = r.getSize("num_experts", 16);
  m.top_k = r.getSize("num_experts_per_tok", 2);
  if (m.num_experts > 1 && m.top_k > m.num_experts)
    throw ConfigError(r.path("num_experts_per_tok"), "exceeds num_experts");
  m.intermediate = s.mlp.intermediate;
  m.score = "softmax";
  m.renorm = false;
  m.act = s.mlp.act;
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].moe = m.num_experts > 1 && i % expertPeriod == expertOffset;
  Names &n = s.names;
  n.mamba = "mamba";
  n.mlp = "feed_forward";
  n.post_attn_norm = "pre_ff_layernorm";
  n.final_norm = "final_layernorm";
  m.names = perExpertNames(n, "router", /*gated=*/true);
}

// ----- the families ------------------------------------------------------------------------

// Qwen3.5's text models, dense and MoE: gated attention with q/k norms and (1+w) norms, and
// gated delta layers with flat projections.
void parseQwen35Layers(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
  s.attn.qk_norm = true;
  s.attn.output_gate = true;
  s.norm_offset = 1.0;
  gdnLayers(r, s);
  parseGdn(r, s, GdnSpec::Projections::Flat);
}

const std::map<std::string, Family> &families() {
  static const std::map<std::string, Family> table = {
      {"llama",
       {{.max_positions = 2048},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
          s.mlp.bias = r.getBool("mlp_bias", false);
          uniformWindowLayers(r, s, 0);
        }}},
      {"mistral",
       {{.max_positions = 4096 * 32},
        [](const ConfigReader &r, ModelSpec &s) {
          uniformWindowLayers(r, s, windowOrClassDefault(r, 4096));
        }}},
      {"qwen2",
       {{.max_positions = 32768},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = true;
          qwenWindowLayers(r, s);
        }}},
      {"qwen3",
       {{.head_dim = 128, .max_positions = 32768},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
          s.attn.qk_norm = true;
          qwenWindowLayers(r, s);
        }}},
      {"gemma2",
       {{.head_dim = 256, .max_positions = 8192, .tie_word_embeddings = true,
         .act_key = "hidden_activation", .act = "gelu_pytorch_tanh"},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
          s.attn.scale = 1.0 / std::sqrt(r.getNumber("query_pre_attn_scalar", 256));
          s.attn.softcap = r.getNumber("attn_logit_softcapping", 50.0);
          s.final_softcap = r.getNumber("final_logit_softcapping", 30.0);
          s.norm_offset = 1.0;
          s.sandwich_norms = true;
          s.embed_scale = (float)std::sqrt((double)s.hidden_size);
          s.embed_scale_rounded = true;
          alternatingLayers(r, s, windowOrClassDefault(r, 4096), 2);
        }}},
      {"gemma3_text",
       {{.head_dim = 256, .max_positions = 131072, .tie_word_embeddings = true,
         .rope_theta = 1000000.0, .act_key = "hidden_activation", .act = "gelu_pytorch_tanh",
         .text_config_sizes = {{"vocab_size", 262208}, {"hidden_size", 2304},
                               {"intermediate_size", 9216}, {"num_hidden_layers", 26},
                               {"num_attention_heads", 8}, {"num_key_value_heads", 4}}},
        [](const ConfigReader &r, ModelSpec &s) {
          if (r.getBool("use_bidirectional_attention", false))
            throw ConfigError(r.path("use_bidirectional_attention"),
                              "bidirectional Gemma 3 (an encoder) is not a decoder cbc serves");
          s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
          s.attn.scale = 1.0 / std::sqrt(r.getNumber("query_pre_attn_scalar", 256));
          // transformers reads attn_logit_softcapping for Gemma 3 but never applies it, and
          // applies final_logit_softcapping only in the text-only causal LM.
          s.final_softcap = s.outer_model_type.empty() ? r.getNumber("final_logit_softcapping", 0.0) : 0.0;
          s.attn.qk_norm = true;
          s.norm_offset = 1.0;
          s.sandwich_norms = true;
          s.embed_scale = (float)std::sqrt((double)s.hidden_size);
          s.embed_scale_rounded = true;
          alternatingLayers(r, s, windowOrClassDefault(r, 4096),
                            r.getSize("sliding_window_pattern", 6));
        },
        gemma3RopeDicts}},
      {"gpt_oss",
       {{.head_dim = 64, .max_positions = 131072, .norm_eps = 1e-5, .rope_theta = 150000.0},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", true);
          s.attn.sinks = true;
          alternatingLayers(r, s, windowOrClassDefault(r, 128), 2);
          s.moe.num_experts = r.getSize(expertCountKey(r, "num_local_experts"), 128);
          s.moe.top_k = r.getSize("num_experts_per_tok", 4);
          if (s.moe.top_k > s.moe.num_experts)
            throw ConfigError(r.path("num_experts_per_tok"), "exceeds num_local_experts");
          s.moe.intermediate = s.mlp.intermediate;
          s.moe.score = "topk_softmax";
          s.moe.act = "gpt_oss";
          s.moe.limit = r.getNumber("swiglu_limit", 7.0);
          s.moe.alpha = r.getNumber("swiglu_alpha", 1.702);
          // mlp.router (with a bias) over fused mlp.experts tensors: gate_up_proj [E, H, 2I]
          // with gate and up interleaved, down_proj [E, I, H], and their biases.
          ExpertNaming &n = s.moe.names;
          n.router = "mlp.router.weight";
          n.router_bias = "mlp.router.bias";
          n.fused = n.transposed = true;
          n.experts.gate_up = {"mlp.experts.gate_up_proj"};
          n.experts.down = "mlp.experts.down_proj";
          n.experts.gate_up_bias = {"mlp.experts.gate_up_proj_bias"};
          n.experts.down_bias = "mlp.experts.down_proj_bias";
          n.glu = "interleaved";
          for (LayerSpec &l : s.layers)
            l.moe = true;
        },
        gptOssRopeDicts}},
      {"phi3",
       {{.max_positions = 4096, .norm_eps = 1e-5, .partial_rotary = true},
        [](const ConfigReader &r, ModelSpec &s) {
          s.names.qkv = "qkv_proj";
          s.names.gate_up = "gate_up_proj";
          uniformWindowLayers(r, s, optionalWindow(r));
        },
        phi3RopeDicts}},
      {"mixtral",
       {{.max_positions = 4096 * 32, .norm_eps = 1e-5, .rope_theta = 1000000.0},
        [](const ConfigReader &r, ModelSpec &s) {
          uniformWindowLayers(r, s, optionalWindow(r));
          s.moe.num_experts = r.getSize(expertCountKey(r, "num_local_experts"), 8);
          s.moe.top_k = r.getSize("num_experts_per_tok", 2);
          if (s.moe.top_k > s.moe.num_experts)
            throw ConfigError(r.path("num_experts_per_tok"), "exceeds num_local_experts");
          s.moe.intermediate = s.mlp.intermediate;
          s.moe.score = "softmax";
          s.moe.renorm = true;
          s.moe.act = s.mlp.act;
          // block_sparse_moe.gate routes over experts.{e}.w1/w3/w2.
          ExpertNaming &n = s.moe.names;
          n.router = "block_sparse_moe.gate.weight";
          n.experts.gate_up = {"block_sparse_moe.experts.{e}.w1.weight", "block_sparse_moe.experts.{e}.w3.weight"};
          n.experts.down = "block_sparse_moe.experts.{e}.w2.weight";
          for (LayerSpec &l : s.layers)
            l.moe = true;
        }}},
      {"qwen2_moe",
       {{.max_positions = 32768},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = r.getBool("qkv_bias", true);
          bool use = r.getBool("use_sliding_window", false);
          int64_t window = use ? optionalWindow(r) : 0;
          std::vector<LayerKind> kinds;
          if (r.has("layer_types")) {
            kinds = explicitLayerTypes(r, s.num_layers);
          } else {
            int64_t maxWindowLayers = r.getInt("max_window_layers", 28);
            for (int64_t i = 0; i < s.num_layers; ++i)
              kinds.push_back(use && (i + 1) % 2 && i < maxWindowLayers
                                  ? LayerKind::SlidingAttention
                                  : LayerKind::FullAttention);
          }
          setLayers(s, kinds, window);
          parseQwenMoe(r, s, /*shared=*/true, 60, 4);
        }}},
      {"qwen3_next",
       {{.head_dim = 256, .max_positions = 32768, .partial_rotary = true, .partial_rotary_factor = 0.25},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
          s.attn.qk_norm = true;
          s.attn.output_gate = true;
          s.norm_offset = 1.0;
          gdnLayers(r, s);
          parseGdn(r, s, GdnSpec::Projections::Grouped);
          parseQwenMoe(r, s, /*shared=*/true, 512, 10);
          s.moe.renorm = r.getBool("norm_topk_prob", true);
          s.moe.intermediate = r.getSize("moe_intermediate_size", 512);
          s.moe.shared_intermediate = r.getSize("shared_expert_intermediate_size", 512);
        }}},
      {"qwen3_5_text",
       {{.head_dim = 256, .max_positions = 32768, .partial_rotary = true, .partial_rotary_factor = 0.25,
         .text_config_sizes = {{"vocab_size", 248320}, {"hidden_size", 4096},
                               {"intermediate_size", 12288}, {"num_hidden_layers", 32},
                               {"num_attention_heads", 16}, {"num_key_value_heads", 4}}},
        [](const ConfigReader &r, ModelSpec &s) {
          parseQwen35Layers(r, s);
        }}},
      {"qwen3_5_moe_text",
       {{.head_dim = 256, .max_positions = 32768, .partial_rotary = true, .moe_only = true,
         .partial_rotary_factor = 0.25,
         .text_config_sizes = {{"vocab_size", 248320}, {"hidden_size", 2048},
                               {"num_hidden_layers", 40},
                               {"num_attention_heads", 16}, {"num_key_value_heads", 2}}},
        [](const ConfigReader &r, ModelSpec &s) {
          parseQwen35Layers(r, s);
          std::string key = expertCountKey(r, "num_experts");
          s.moe.num_experts = r.getSize(key, 256);
          s.moe.top_k = r.getSize("num_experts_per_tok", 8);
          if (s.moe.top_k > s.moe.num_experts)
            throw ConfigError(r.path("num_experts_per_tok"), "exceeds the number of experts");
          s.moe.intermediate = r.getSize("moe_intermediate_size", 512);
          s.moe.shared_intermediate = r.getSize("shared_expert_intermediate_size", 512);
          s.moe.score = "softmax";
          s.moe.renorm = true; // this router always renormalises
          s.moe.act = s.mlp.act;
          s.moe.names = perExpertNames(s.names, "gate", /*gated=*/true);
          qwenSharedExpert(s.moe.names);
          for (LayerSpec &l : s.layers)
            l.moe = true;
        }}},
      {"lfm2",
       {{.max_positions = 128000, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 1000000.0,
         .intermediate_alias = "block_ff_dim"},
        [](const ConfigReader &r, ModelSpec &s) { parseLfm2(r, s); }}},
      {"mamba2",
       {{.max_positions = 1 << 20, .norm_eps = 1e-5, .attention_free = true, .norm_eps_key = "layer_norm_epsilon"},
        [](const ConfigReader &r, ModelSpec &s) {
          mambaBackbone(s, LayerKind::Mamba2);
          parseMamba2(r, s, {"num_heads", "head_dim", "n_groups", "state_size", "conv_kernel", "use_conv_bias",
                             "use_bias", "layer_norm_epsilon", "expand", 128, 64, 8, 128, true, false});
          parseDtLimit(r, "time_step_limit", s.mamba2);
          if (r.getSize("expand", 2) * s.hidden_size != s.mamba2.intermediate())
            throw ConfigError(r.path("num_heads"), "num_heads * head_dim must equal expand * hidden_size");
        }}},
      {"mamba",
       {{.max_positions = 1 << 20, .norm_eps = 1e-5, .tie_word_embeddings = true, .attention_free = true,
         .norm_eps_key = "layer_norm_epsilon"},
        [](const ConfigReader &r, ModelSpec &s) {
          mambaBackbone(s, LayerKind::Mamba1);
          parseMamba1(r, s, "state_size", "expand", "conv_kernel", "time_step_rank", "use_conv_bias", "use_bias");
        }}},
      {"falcon_mamba",
       {{.max_positions = 1 << 20, .norm_eps = 1e-5, .tie_word_embeddings = true, .attention_free = true,
         .norm_eps_key = "layer_norm_epsilon"},
        [](const ConfigReader &r, ModelSpec &s) {
          mambaBackbone(s, LayerKind::Mamba1);
          parseMamba1(r, s, "state_size", "expand", "conv_kernel", "time_step_rank", "use_conv_bias", "use_bias");
          // Weightless RMS norms on dt, B and C (FalconMambaWeightlessRMSNorm).
          s.mamba1.dt_bc_norm = Mamba1Spec::DtBcNorm::Weightless;
          s.mamba1.dt_bc_eps = r.getNumber("mixer_rms_eps", 1e-6);
        }}},
      {"nemotron_h",
       {{.head_dim = 128, .max_positions = 4096, .norm_eps = 1e-5, .norm_eps_key = "layer_norm_epsilon",
         .layers_derived = true, .kv_heads = 8},
        [](const ConfigReader &r, ModelSpec &s) { parseNemotronH(r, s); }}},
      {"falcon_h1",
       {{.max_positions = 8192, .norm_eps = 1e-5, .kv_heads = 8},
        [](const ConfigReader &r, ModelSpec &s) { parseFalconH1(r, s); }}},
      {"zamba",
       {{.max_positions = 4096, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu",
         .layers_derived = true, .kv_heads = 16},
        [](const ConfigReader &r, ModelSpec &s) { parseZamba(r, s); }}},
      {"zamba2",
       {{.max_positions = 4096, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu",
         .layers_derived = true, .intermediate_optional = true},
        [](const ConfigReader &r, ModelSpec &s) { parseZamba2(r, s); }}},
      {"bamba",
       {{.max_positions = 262144, .norm_eps = 1e-5, .partial_rotary = true, .partial_rotary_factor = 0.5},
        [](const ConfigReader &r, ModelSpec &s) { parseBamba(r, s); }, bambaRopeDicts}},
      {"granitemoehybrid",
       {{.max_positions = 2048, .norm_eps = 1e-6, .moe_only = true},
        [](const ConfigReader &r, ModelSpec &s) { parseGraniteMoeHybrid(r, s); }}},
      {"jamba",
       {{.max_positions = 262144}, [](const ConfigReader &r, ModelSpec &s) { parseJamba(r, s); }}},
      {"lfm2_moe",
       {{.max_positions = 128000, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 1000000.0},
        [](const ConfigReader &r, ModelSpec &s) { parseLfm2Moe(r, s); }}},
      {"olmo_hybrid",
       {{.max_positions = 65536}, [](const ConfigReader &r, ModelSpec &s) { parseOlmoHybrid(r, s); }}},
      {"qwen3_moe",
       {{.max_positions = 32768},
        [](const ConfigReader &r, ModelSpec &s) {
          s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", false);
          s.attn.qk_norm = true;
          bool use = r.getBool("use_sliding_window", false);
          uniformWindowLayers(r, s, use ? optionalWindow(r) : 0);
          parseQwenMoe(r, s, /*shared=*/false, 128, 8);
        }}},
  };
  return table;
}

// Multimodal wrappers whose text_config holds one of the families above.
const std::map<std::string, std::string> &multimodalWrappers() {
  static const std::map<std::string, std::string> table = {
      {"gemma3", "gemma3_text"}, {"qwen3_5", "qwen3_5_text"}, {"qwen3_5_moe", "qwen3_5_moe_text"}};
  return table;
}

std::string parseDtype(const ConfigReader &r) {
  const char *key = r.has("dtype") ? "dtype" : "torch_dtype";
  std::string dtype = r.getString(key, "bfloat16");
  if (dtype != "bfloat16" && dtype != "float16" && dtype != "float32")
    throw ConfigError(r.path(key), "unsupported dtype '" + dtype +
                                       "' (supported: bfloat16, float16, float32)");
  return dtype;
}

std::string parseQuantization(const ConfigReader &top, const std::string &modelType) {
  if (!top.has("quantization_config"))
    return "";
  ConfigReader q = top.child("quantization_config");
  std::string method = q.getString("quant_method", "");
  // gpt-oss ships its experts in MXFP4; the loader dequantises them, as transformers does
  // without its Triton kernels.
  if (method == "mxfp4" && modelType == "gpt_oss")
    return method;
  throw ConfigError(q.path("quant_method"),
                    "quantisation '" + method + "' is not supported for " + modelType +
                        "; cbc loads bf16, fp16 or fp32 checkpoints (and gpt-oss MXFP4 experts)");
}

void parseTokenIds(const ConfigReader &r, const ConfigReader &top, ModelSpec &s) {
  for (const ConfigReader *src : {&r, &top}) {
    if (s.eos_token_ids.empty())
      s.eos_token_ids = src->getIntList("eos_token_id");
    if (s.bos_token_id < 0)
      s.bos_token_id = src->getInt("bos_token_id", -1);
  }
  for (int64_t id : s.eos_token_ids)
    if (id < 0 || id >= s.vocab_size)
      throw ConfigError(r.path("eos_token_id"),
                        "token id " + std::to_string(id) + " is outside the vocabulary");
}

void parseCommon(const ConfigReader &r, const ConfigReader &top, const FamilyDefaults &d,
                 bool nested, ModelSpec &s) {
  auto size = [&](const std::string &key) {
    auto it = d.text_config_sizes.find(key);
    return nested && it != d.text_config_sizes.end() ? r.getSize(key, it->second)
                                                      : r.requireSize(key);
  };
  s.vocab_size = size("vocab_size");
  s.hidden_size = size("hidden_size");
  s.num_layers = d.layers_derived ? r.getSize("num_hidden_layers", 0) : size("num_hidden_layers");
  s.norm_eps = r.getNumber(d.norm_eps_key, d.norm_eps);
  if (s.norm_eps <= 0)
    throw ConfigError(r.path(d.norm_eps_key), "must be positive");
  s.tie_word_embeddings = top.getBool("tie_word_embeddings",
                                      r.getBool("tie_word_embeddings", d.tie_word_embeddings));
  s.dtype = parseDtype(r.has("dtype") || r.has("torch_dtype") ? r : top);
  parseTokenIds(r, top, s);
  if (d.attention_free) {
    s.max_positions = r.getSize("max_position_embeddings", d.max_positions);
    return;
  }
  s.attn.num_heads = size("num_attention_heads");
  s.attn.num_kv_heads = nested && d.text_config_sizes.count("num_key_value_heads")
                            ? size("num_key_value_heads")
                            : r.getSize("num_key_value_heads", d.kv_heads && !r.contains("num_key_value_heads")
                                                                   ? d.kv_heads
                                                                   : s.attn.num_heads);
  if (s.attn.num_heads % s.attn.num_kv_heads != 0)
    throw ConfigError(r.path("num_key_value_heads"),
                      "num_attention_heads (" + std::to_string(s.attn.num_heads) +
                          ") is not divisible by num_key_value_heads (" +
                          std::to_string(s.attn.num_kv_heads) + ")");
  int64_t derivedHeadDim = s.hidden_size / s.attn.num_heads;
  s.attn.head_dim = r.getSize("head_dim", d.head_dim ? d.head_dim : derivedHeadDim);
  if (s.attn.head_dim <= 0)
    throw ConfigError(r.path("hidden_size"), "is smaller than num_attention_heads");
  s.attn.scale = 1.0 / std::sqrt((double)s.attn.head_dim);
  s.max_positions = r.getSize("max_position_embeddings", d.max_positions);
  if (d.moe_only || (d.intermediate_optional && !r.has("intermediate_size")))
    s.mlp.intermediate = 0;
  else if (d.intermediate_alias && !r.has("intermediate_size") && r.has(d.intermediate_alias))
    s.mlp.intermediate = r.requireSize(d.intermediate_alias);
  else
    s.mlp.intermediate = size("intermediate_size");
  s.mlp.act = activation(r, d.act_key, d.act);
}

} // namespace

const std::vector<std::string> &supportedModelTypes() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (auto &[name, _] : families())
      t.push_back(name);
    for (auto &[name, _] : multimodalWrappers())
      t.push_back(name);
    std::sort(t.begin(), t.end());
    return t;
  }();
  return types;
}

// The original state-spaces (mamba_ssm) config format, as the official Mamba checkpoints ship
// it: no model_type; d_model, n_layer and ssm_cfg. Rewritten into transformers' mamba / mamba2
// keys with mamba_ssm's defaults; the checkpoints use the same tensor names (backbone.*,
// embedding aliased).
json translateMambaSsm(const json &c) {
  ConfigReader r(c);
  if (r.has("attn_layer_idx") && !r.raw("attn_layer_idx").empty())
    throw ConfigError("attn_layer_idx", "mamba_ssm hybrids with attention layers are not supported");
  if (r.getInt("d_intermediate", 0) != 0)
    throw ConfigError("d_intermediate", "mamba_ssm blocks with an MLP are not supported");
  if (!r.getBool("rms_norm", true))
    throw ConfigError("rms_norm", "LayerNorm (rms_norm false) is not supported");
  ConfigReader ssm = r.has("ssm_cfg") ? r.child("ssm_cfg") : ConfigReader(json::object(), "ssm_cfg.");
  std::string layer = ssm.getString("layer", "Mamba1");
  if (layer != "Mamba1" && layer != "Mamba2")
    throw ConfigError("ssm_cfg.layer", "unknown layer '" + layer + "' (Mamba1 or Mamba2)");
  bool m2 = layer == "Mamba2";
  int64_t hidden = r.requireSize("d_model");
  int64_t vocab = r.requireSize("vocab_size"), multiple = r.getSize("pad_vocab_size_multiple", 8);
  json out = json::object();
  out["model_type"] = m2 ? "mamba2" : "mamba";
  out["hidden_size"] = hidden;
  out["num_hidden_layers"] = r.requireSize("n_layer");
  out["vocab_size"] = (vocab + multiple - 1) / multiple * multiple; // the embedding is padded
  out["tie_word_embeddings"] = r.getBool("tie_embeddings", true);
  out["layer_norm_epsilon"] = 1e-5;
  int64_t expand = ssm.getSize("expand", 2);
  out["expand"] = expand;
  out["conv_kernel"] = ssm.getSize("d_conv", 4);
  out["use_conv_bias"] = ssm.getBool("conv_bias", true);
  out["use_bias"] = ssm.getBool("bias", false);
  out["state_size"] = ssm.getSize("d_state", m2 ? 128 : 16);
  if (m2) {
    int64_t headdim = ssm.getSize("headdim", 64);
    if (ssm.has("d_ssm"))
      throw ConfigError("ssm_cfg.d_ssm", "a partial SSM width (d_ssm) is not supported");
    out["head_dim"] = headdim;
    out["num_heads"] = expand * hidden / headdim;
    out["n_groups"] = ssm.getSize("ngroups", 1);
    if (ssm.getBool("norm_before_gate", false))
      throw ConfigError("ssm_cfg.norm_before_gate", "true is not supported");
    if (ssm.getBool("D_has_hdim", false))
      throw ConfigError("ssm_cfg.D_has_hdim", "true (a D per head channel) is not supported");
    if (!ssm.getBool("rmsnorm", true))
      throw ConfigError("ssm_cfg.rmsnorm", "false (no gated norm) is not supported");
    if (ssm.has("dt_limit"))
      out["time_step_limit"] = ssm.raw("dt_limit");
  } else if (ssm.has("dt_rank")) {
    out["time_step_rank"] = ssm.raw("dt_rank");
  }
  out["eos_token_id"] = 0; // the GPT-NeoX tokenizer the state-spaces models use
  return out;
}

ModelSpec parseConfig(const std::string &text) {
  json root;
  try {
    root = parseConfigJson(text);
  } catch (const json::parse_error &e) {
    throw ConfigError("<file>", std::string("malformed JSON: ") + e.what());
  }
  if (!root.is_object())
    throw ConfigError("<file>", "expected a JSON object at the top level");
  if (!root.contains("model_type") && root.contains("d_model") && root.contains("ssm_cfg"))
    root = translateMambaSsm(root);
  ConfigReader top(root);
  if (!top.has("model_type"))
    throw ConfigError("model_type", "is missing");
  ModelSpec spec;
  std::string modelType = top.getString("model_type", "");

  auto wrapper = multimodalWrappers().find(modelType);
  bool multimodal = wrapper != multimodalWrappers().end();
  // Multimodal checkpoints run text-only: the decoder is the text_config.
  ConfigReader r = multimodal ? top.child("text_config") : top;
  if (multimodal) {
    spec.outer_model_type = modelType;
    modelType = r.getString("model_type", wrapper->second);
    spec.prefix = "model.language_model.";
  }
  auto family = families().find(modelType);
  if (family == families().end()) {
    std::string known;
    for (const std::string &t : supportedModelTypes())
      known += (known.empty() ? "" : ", ") + t;
    throw ConfigError(r.path("model_type"),
                      "unknown model_type '" + modelType + "' (supported: " + known + ")");
  }
  spec.model_type = modelType;
  spec.quantization = parseQuantization(top, modelType);
  parseCommon(r, top, family->second.defaults, multimodal, spec);
  spec.layers.assign(spec.num_layers, LayerSpec{});
  family->second.parse(r, spec);
  const Family &fam = family->second;
  if (!fam.defaults.attention_free)
    assignRope(r, spec, fam.ropeDicts ? fam.ropeDicts(r) : ropeDictionaries(r, fam.defaults.rope_theta),
               fam.defaults);
  return spec;
}

} // namespace cbc::hf
