// DeepSeek-V4 (deepseek_v4, DeepseekV4ForCausalLM): shared-key-value attention over a sliding
// window, plus compressed memories on compressed_sparse_attention (CSA: overlapping windows, a
// lightning indexer's top-k) and heavily_compressed_attention (HCA: every entry) layers; mHC
// streams; MoE on every layer, the first ones hash-routed by token id, sqrt-softplus scores.
// Semantics: tools/oracle/SEMANTICS_DEEPSEEK_V4.md.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"

#include <cmath>

namespace cbc::hf {

namespace {

const char *const kCsa = "compressed_sparse_attention";
const char *const kHca = "heavily_compressed_attention";

// The layer types: layer_types as given, else the legacy per-layer compress_ratios (0, 4, 128; a
// longer list's tail is the MTP layer's), else the class's pattern (2 HCA, then CSA on odd layers).
std::vector<std::string> layerTypeNames(const ConfigReader &r, int64_t n) {
  std::vector<std::string> types;
  if (r.has("layer_types")) {
    types = r.getStringList("layer_types");
    checkLayerCount(r, "layer_types", types.size(), n);
  } else if (r.has("compress_ratios")) {
    std::vector<int64_t> ratios = r.getIntList("compress_ratios");
    if ((int64_t)ratios.size() < n)
      throw ConfigError(r.path("compress_ratios"), "must have one entry per layer (" + std::to_string(n) + ")");
    for (int64_t i = 0; i < n; ++i) {
      if (ratios[i] != 0 && ratios[i] != 4 && ratios[i] != 128)
        throw ConfigError(r.path("compress_ratios"), "entries must be 0, 4 or 128 (the layer kinds), got " +
                                                          std::to_string(ratios[i]));
      types.push_back(ratios[i] == 0 ? "sliding_attention" : ratios[i] == 4 ? kCsa : kHca);
    }
  } else {
    for (int64_t i = 0; i < n; ++i)
      types.push_back(i < 2 || i % 2 == 0 ? kHca : kCsa);
  }
  for (const std::string &t : types)
    if (t != "sliding_attention" && t != kCsa && t != kHca)
      throw ConfigError(r.path("layer_types"), "unsupported layer type '" + t + "' (sliding_attention, " + kCsa +
                                                   ", " + kHca + ")");
  return types;
}

// The compression rate of each compressed kind: compress_rates, the legacy scalars over it.
int64_t compressRate(const ConfigReader &r, const char *kind, const char *legacy, int64_t fallback) {
  if (r.has(legacy))
    return r.getSize(legacy, fallback);
  return r.has("compress_rates") ? r.child("compress_rates").getSize(kind, fallback) : fallback;
}

void parseAttention(const ConfigReader &r, ModelSpec &s) {
  std::vector<std::string> types = layerTypeNames(r, s.num_layers);
  int64_t window = r.getSize("sliding_window", 128); // every layer attends over its window
  int64_t csa = compressRate(r, kCsa, "compress_rate_csa", 4), hca = compressRate(r, kHca, "compress_rate_hca", 128);
  for (int64_t i = 0; i < s.num_layers; ++i) {
    LayerSpec &l = s.layers[i];
    l.kind = LayerKind::SharedKv;
    l.window = window;
    l.compress_rate = types[i] == kCsa ? csa : types[i] == kHca ? hca : 0;
    l.compress_indexed = types[i] == kCsa;
  }
  SharedKvSpec &kv = s.shared_kv;
  kv.q_lora_rank = r.getSize("q_lora_rank", 1024);
  kv.o_groups = r.getSize("o_groups", 8);
  kv.o_lora_rank = r.getSize("o_lora_rank", 1024);
  kv.index_heads = r.getSize("index_n_heads", 64);
  kv.index_head_dim = r.getSize("index_head_dim", 128);
  kv.index_topk = r.getSize("index_topk", 512);
  if (s.attn.num_heads % kv.o_groups != 0)
    throw ConfigError(r.path("o_groups"), "must divide num_attention_heads");
  s.attn.num_kv_heads = 1; // one key-value row per token, whatever num_key_value_heads says
  s.attn.rope_pairing = RotaryPairing::Interleaved;
}

void parseMoe(const ConfigReader &r, ModelSpec &s) {
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = "n_routed_experts", .experts = 256, .top_k = 6, .count_name = "n_routed_experts"}, m);
  m.intermediate = r.getSize("moe_intermediate_size", 2048);
  std::string scoring = r.getString("scoring_func", "sqrtsoftplus");
  if (scoring != "sqrtsoftplus" && scoring != "sigmoid")
    throw ConfigError(r.path("scoring_func"), "must be sqrtsoftplus or sigmoid, got '" + scoring + "'");
  m.score = scoring == "sigmoid" ? ExpertScoring::Sigmoid : ExpertScoring::SqrtSoftplus;
  m.renorm = true; // the routers always renormalise (+1e-20), whatever norm_topk_prob says
  m.renorm_eps = 1e-20;
  m.scaling = r.getNumber("routed_scaling_factor", 1.5);
  // One shared expert of the routed width, whatever n_shared_experts says.
  m.shared_intermediate = m.intermediate;
  double limit = r.getNumber("swiglu_limit", 10.0);
  if (!(limit > 0) || !std::isfinite(limit))
    throw ConfigError(r.path("swiglu_limit"), "must be positive: DeepSeek-V4's experts always clamp by it");
  m.act = FfnActivation::ClampedSwiglu; // silu(min(gate, limit)) * clamp(up, -limit, limit)
  m.limit = limit;
  m.alpha = 1.0;
  m.up_offset = 0.0;
  // The checkpoint's names (the hub's, which save_pretrained writes too): w1 gate, w3 up, w2 down.
  ExpertNaming &n = m.names;
  n.router = "ffn.gate.weight";
  n.selection_bias = "ffn.gate.bias";
  n.route_table = "ffn.gate.tid2eid";
  n.experts.gate_up = {"ffn.experts.{e}.w1.weight", "ffn.experts.{e}.w3.weight"};
  n.experts.down = {"ffn.experts.{e}.w2.weight"};
  n.shared.gate_up = {"ffn.shared_experts.w1.weight", "ffn.shared_experts.w3.weight"};
  n.shared.down = {"ffn.shared_experts.w2.weight"};
  std::vector<std::string> mlpTypes;
  if (r.has("mlp_layer_types")) {
    mlpTypes = r.getStringList("mlp_layer_types");
    checkLayerCount(r, "mlp_layer_types", mlpTypes.size(), s.num_layers);
  } else {
    int64_t hashed = r.getCount("num_hash_layers", 3);
    for (int64_t i = 0; i < s.num_layers; ++i)
      mlpTypes.push_back(i < hashed ? "hash_moe" : "moe");
  }
  for (int64_t i = 0; i < s.num_layers; ++i) {
    if (mlpTypes[i] != "moe" && mlpTypes[i] != "hash_moe")
      throw ConfigError(r.path("mlp_layer_types"), "unsupported MLP type '" + mlpTypes[i] + "' (moe, hash_moe)");
    s.layers[i].moe = true;
    s.layers[i].hash_routing = mlpTypes[i] == "hash_moe";
  }
}

void parseDeepseekV4(const ConfigReader &r, ModelSpec &s) {
  requireSilu(r, "hidden_act", "DeepSeek-V4's experts");
  parseAttention(r, s);
  parseMoe(r, s);
  parseManifoldHyper(r, s);
  s.hyper.head = "hc_head.hc_";
  Names &nm = s.names;
  nm.attn = "attn";
  nm.sinks = "attn_sink";
  nm.input_norm = "attn_norm";
  nm.post_attn_norm = "ffn_norm";
  s.lm_head = "head.weight";
  // The hub's files name the top-level tensors as the reference code does and drop the model.
  // prefix (save_pretrained keeps both): each tensor is read under whichever spelling is there.
  s.weight_aliases = {{"model.embed_tokens.", "embed."}, {"model.hc_head.hc_", "hc_head_"}, {"model.", ""}};
}

// The rotary share: partial_rotary_factor, else the legacy qk_rope_head_dim over head_dim, else 1/8.
double rotaryFactor(const ConfigReader &r) {
  if (r.has("partial_rotary_factor"))
    return r.getNumber("partial_rotary_factor", 0.125);
  if (r.has("qk_rope_head_dim"))
    return (double)r.getSize("qk_rope_head_dim", 64) / (double)r.getSize("head_dim", 512);
  return 0.125;
}

// Two schedules: "main" (rope_theta, plain) for sliding layers and "compress" (compress_rope_theta,
// with the scaling config.json gives; a yarn one keeps attention_factor 1) for compressed layers,
// their compressors and indexers. A nested {main, compress} rope_parameters is taken as written.
RopeDicts deepseekV4RopeDicts(const ConfigReader &r) {
  double factor = rotaryFactor(r);
  nlohmann::json main = {{"rope_type", "default"}, {"rope_theta", r.getNumber("rope_theta", 10000.0)}};
  nlohmann::json compress = nlohmann::json::object();
  const char *key = r.has("rope_parameters") ? "rope_parameters" : r.has("rope_scaling") ? "rope_scaling" : nullptr;
  nlohmann::json given = key ? r.raw(key) : nlohmann::json::object();
  if (!given.is_object())
    throw ConfigError(r.path(key), "expected an object");
  if (given.contains("main") && given["main"].is_object() && given.contains("compress") && given["compress"].is_object()) {
    // Taken as written: a nested dictionary without a rotary share rotates the whole head, and
    // a yarn one without attention_factor derives it, as the config class leaves them.
    main = given["main"];
    compress = given["compress"];
    for (nlohmann::json *d : {&main, &compress})
      if (!d->contains("partial_rotary_factor"))
        (*d)["partial_rotary_factor"] = 1.0;
  } else {
    for (const auto &[k, v] : given.items())
      if (k != "main" && k != "compress")
        compress[k] = v;
    compress["rope_theta"] = r.getNumber("compress_rope_theta", 160000.0);
    if (!compress.contains("rope_type"))
      compress["rope_type"] = compress.value("type", "default");
    if (compress["rope_type"] == "yarn" && !compress.contains("attention_factor"))
      compress["attention_factor"] = 1.0;
  }
  for (nlohmann::json *d : {&main, &compress})
    if (!d->contains("partial_rotary_factor"))
      (*d)["partial_rotary_factor"] = factor;
  return {{"sliding_attention", main}, {"full_attention", compress}};
}

} // namespace

FamilyTable deepseekV4Families() {
  return {
      {"deepseek_v4",
       {{.head_dim = 512, .max_positions = 1048576, .partial_rotary = true, .moe_only = true,
         .partial_rotary_factor = 0.125, .head_dim_unused = false, .kv_heads = 1,
         .layer_types = LayerListRule::Own},
        parseDeepseekV4, deepseekV4RopeDicts}},
  };
}

} // namespace cbc::hf
