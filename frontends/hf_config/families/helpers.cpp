#include "frontends/hf_config/families/helpers.h"

#include <algorithm>

#include <set>

namespace cbc::hf {

FfnActivation activation(const ConfigReader &r, const char *key, const char *fallback) {
  // transformers' ACT2FN names for the activations cbc implements.
  static const std::map<std::string, FfnActivation> names = {
      {"silu", FfnActivation::Silu}, {"swish", FfnActivation::Silu},
      {"gelu_pytorch_tanh", FfnActivation::GeluTanh}, {"gelu_new", FfnActivation::GeluTanh},
      {"gelu_fast", FfnActivation::GeluTanh}, {"gelu", FfnActivation::Gelu},
      {"relu", FfnActivation::Relu}, {"relu2", FfnActivation::Relu2}, {"xielu", FfnActivation::Xielu}};
  std::string act = r.getString(key, fallback);
  auto it = names.find(act);
  if (it == names.end())
    throw ConfigError(r.path(key), "unsupported activation '" + act + "'");
  return it->second;
}

void requireSilu(const ConfigReader &r, const char *key, const std::string &mixer) {
  if (r.getString(key, "silu") != "silu")
    throw ConfigError(r.path(key), mixer + " supports only silu");
}

bool isAuto(const ConfigReader &r, const char *key) {
  return r.has(key) && r.raw(key).is_string() && r.getString(key, "") == "auto";
}

void attentionBiases(const ConfigReader &r, ModelSpec &s, bool fallback) {
  s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", fallback);
}

void perLayerOverrides(const ConfigReader &r, int64_t layers, const std::function<bool(const std::string &)> &allowed,
                       const std::string &refusal,
                       const std::function<void(int64_t, const ConfigReader &, const std::string &)> &apply) {
  const nlohmann::json &overrides = r.raw("per_layer_config");
  if (!overrides.is_object())
    throw ConfigError(r.path("per_layer_config"), "expected an object keyed by layer index");
  ConfigReader all = r.child("per_layer_config");
  for (const auto &[key, value] : overrides.items()) {
    size_t used = 0;
    int64_t layer = -1;
    try {
      layer = std::stoll(key, &used);
    } catch (const std::exception &) {
    }
    if (used != key.size() || layer < 0 || layer >= layers)
      throw ConfigError(all.path(key), "is not a layer index below num_hidden_layers");
    ConfigReader o = all.child(key);
    for (const auto &[name, _] : value.items()) {
      if (!allowed(name))
        throw ConfigError(o.path(name), refusal);
      apply(layer, o, name);
    }
  }
}

void refuseClipQkv(const ConfigReader &r) {
  if (r.has("clip_qkv"))
    throw ConfigError(r.path("clip_qkv"), "clamping q, k and v is not supported; it must be null or absent");
}

void graniteMultipliers(const ConfigReader &r, ModelSpec &s) {
  s.embed_scale = r.getNumber("embedding_multiplier", 1.0);
  s.residual_scale = r.getNumber("residual_multiplier", 1.0);
  s.attn.scale = r.getNumber("attention_multiplier", 1.0);
  double logitsScaling = r.getNumber("logits_scaling", 1.0);
  if (logitsScaling == 0)
    throw ConfigError(r.path("logits_scaling"), "must not be zero");
  s.logits_scale = 1.0 / logitsScaling;
}

// ----- layer kinds and windows -----------------------------------------------------------------

const KindNames &attentionKinds() {
  static const KindNames k = {{"full_attention", LayerKind::FullAttention},
                              {"attention", LayerKind::FullAttention},
                              {"sliding_attention", LayerKind::SlidingAttention}};
  return k;
}

void checkLayerCount(const ConfigReader &r, const char *key, size_t entries, int64_t layers) {
  if ((int64_t)entries != layers)
    throw ConfigError(r.path(key), "has " + std::to_string(entries) + " entries but num_hidden_layers is " +
                                       std::to_string(layers));
}

std::vector<LayerKind> explicitLayerTypes(const ConfigReader &r, int64_t layers, const KindNames &allowed) {
  auto names = r.getStringList("layer_types");
  checkLayerCount(r, "layer_types", names.size(), layers);
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

std::vector<LayerKind> kindsWhere(int64_t layers, const std::function<bool(int64_t)> &pick, LayerKind yes,
                                  LayerKind no) {
  std::vector<LayerKind> kinds;
  for (int64_t i = 0; i < layers; ++i)
    kinds.push_back(pick(i) ? yes : no);
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

// no_rope_layers holds 1 for a layer that uses RoPE (the config's own, inverted, naming); empty
// or absent: every no_rope_layer_interval-th layer is NoPE.
std::vector<bool> ropeLayers(const ConfigReader &r, int64_t layers) {
  std::vector<int64_t> flags = r.getIntList("no_rope_layers");
  std::vector<bool> rope(layers);
  if (flags.empty()) {
    int64_t interval = r.getSize("no_rope_layer_interval", 4);
    for (int64_t i = 0; i < layers; ++i)
      rope[i] = (i + 1) % interval != 0;
    return rope;
  }
  checkLayerCount(r, "no_rope_layers", flags.size(), layers);
  for (int64_t i = 0; i < layers; ++i)
    rope[i] = flags[i] != 0;
  return rope;
}

void requireWindowForSliding(const ConfigReader &r, const std::vector<LayerKind> &kinds, int64_t window) {
  if (window == 0 && std::count(kinds.begin(), kinds.end(), LayerKind::SlidingAttention) > 0)
    throw ConfigError(r.path("sliding_window"), "must be positive: sliding-attention layers need one");
}

int64_t optionalWindow(const ConfigReader &r, const char *key) {
  return r.getCount(key, 0);
}

int64_t windowOrClassDefault(const ConfigReader &r, int64_t classDefault) {
  return r.contains("sliding_window") ? optionalWindow(r) : classDefault;
}

void uniformWindowLayers(ModelSpec &spec, int64_t window) {
  std::vector<LayerKind> kinds(spec.num_layers, window > 0 ? LayerKind::SlidingAttention
                                                           : LayerKind::FullAttention);
  setLayers(spec, kinds, window);
}

void alternatingLayers(const ConfigReader &r, ModelSpec &spec, int64_t window, int64_t pattern) {
  std::vector<LayerKind> kinds =
      r.has("layer_types")
          ? explicitLayerTypes(r, spec.num_layers)
          : kindsWhere(spec.num_layers, [&](int64_t i) { return (i + 1) % pattern != 0; },
                       LayerKind::SlidingAttention, LayerKind::FullAttention);
  setLayers(spec, kinds, window);
}

void exaoneLayers(const ConfigReader &r, ModelSpec &s) {
  s.attn.qk_norm = true;
  int64_t window = windowOrClassDefault(r, 4096);
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, s.num_layers);
  } else {
    if (window == 0)
      throw ConfigError(r.path("sliding_window"),
                        "must be set when layer_types is absent: the config class derives the layers from it");
    if (r.has("sliding_window_pattern") && !r.raw("sliding_window_pattern").is_number_integer())
      throw ConfigError(r.path("sliding_window_pattern"),
                        "must be an integer when layer_types is absent (the config class cannot read a string pattern)");
    int64_t pattern = r.getSize("sliding_window_pattern", 4);
    kinds = kindsWhere(s.num_layers, [&](int64_t i) { return (i + 1) % pattern != 0; }, LayerKind::SlidingAttention,
                       LayerKind::FullAttention);
  }
  setLayers(s, kinds, window);
  for (LayerSpec &l : s.layers)
    l.nope = window > 0 && l.kind != LayerKind::SlidingAttention;
}

// ----- experts ---------------------------------------------------------------------------------

std::string expertCountKey(const ConfigReader &r, const char *preferred) {
  for (const char *k : {"num_local_experts", "num_experts"})
    if (r.has(k))
      return k;
  return preferred;
}

int64_t expertCount(const ConfigReader &r, const std::string &key, int64_t fallback, bool noneAllowed) {
  if (!noneAllowed)
    return r.getSize(key, fallback);
  return r.getCount(key, fallback);
}

int64_t expertTopK(const ConfigReader &r, int64_t fallback, int64_t experts, const std::string &countName,
                   int64_t routedFrom, const std::string &key) {
  int64_t topK = r.getSize(key, fallback);
  if (experts >= routedFrom && topK > experts)
    throw ConfigError(r.path(key), "exceeds " + countName);
  return topK;
}

void parseExperts(const ConfigReader &r, const ExpertKeys &keys, MoeSpec &m) {
  m.num_experts = expertCount(r, keys.count, keys.experts, keys.none_allowed);
  m.top_k = expertTopK(r, keys.top_k, m.num_experts, keys.count_name, keys.routed_from, keys.top_k_key);
}

ExpertNaming perExpertNames(const Names &n, const std::string &router, bool gated) {
  ExpertNaming names;
  names.router = n.mlp + "." + router + ".weight";
  std::string expert = n.mlp + ".experts.{e}.";
  if (gated)
    names.experts.gate_up.push_back(expert + n.gate + ".weight");
  names.experts.gate_up.push_back(expert + n.up + ".weight");
  names.experts.down = {expert + n.down + ".weight"};
  return names;
}

void gatedSharedExpert(ExpertNaming &n, const std::string &module) {
  n.shared.gate_up = {module + ".gate_proj.weight", module + ".up_proj.weight"};
  n.shared.down = {module + ".down_proj.weight"};
}

ExpertNaming graniteNames(const std::string &module) {
  ExpertNaming n;
  n.router = module + ".router.layer.weight";
  n.fused = true;
  n.experts.gate_up = {module + ".input_linear.weight"};
  n.experts.down = {module + ".output_linear.weight"};
  return n;
}

void topkSoftmaxExperts(const ConfigReader &r, ModelSpec &s, ExpertNaming names) {
  uniformWindowLayers(s, 0);
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = "num_local_experts", .experts = 8, .top_k = 2, .count_name = "num_local_experts"}, m);
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::TopkSoftmax;
  m.act = s.mlp.act;
  m.names = std::move(names);
  allLayersMoe(s);
}

void graniteSharedMlpNames(Names &n) {
  n.mlp = "shared_mlp";
  n.gate_up = "input_linear";
  n.down = "output_linear";
}

void allLayersMoe(ModelSpec &spec) {
  for (LayerSpec &l : spec.layers)
    l.moe = true;
}

// ----- Qwen ------------------------------------------------------------------------------------

int64_t qwenWindow(const ConfigReader &r) {
  return r.getBool("use_sliding_window", false) ? optionalWindow(r) : 0;
}

void qwenWindowLayers(const ConfigReader &r, ModelSpec &spec, bool (*slides)(int64_t layer, int64_t maxWindowLayers)) {
  int64_t window = qwenWindow(r);
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, spec.num_layers);
  } else {
    int64_t maxWindowLayers = r.getInt("max_window_layers", 28);
    kinds = kindsWhere(spec.num_layers, [&](int64_t i) { return window > 0 && slides(i, maxWindowLayers); },
                       LayerKind::SlidingAttention, LayerKind::FullAttention);
  }
  setLayers(spec, kinds, window);
}

namespace {
// mlp_only_layers (absent or null: the class's list), else every decoder_sparse_step-th layer.
void qwenMoePlacement(const ConfigReader &r, ModelSpec &spec, const std::vector<int64_t> &classDense) {
  auto dense = r.has("mlp_only_layers") ? r.getIntList("mlp_only_layers") : classDense;
  std::set<int64_t> denseSet(dense.begin(), dense.end());
  for (int64_t i : denseSet)
    if (i < 0 || i >= spec.num_layers)
      throw ConfigError(r.path("mlp_only_layers"), "layer " + std::to_string(i) + " is out of range");
  int64_t step = r.getSize("decoder_sparse_step", 1);
  for (int64_t i = 0; i < spec.num_layers; ++i)
    spec.layers[i].moe = !denseSet.count(i) && spec.moe.num_experts > 0 && (i + 1) % step == 0;
}
} // namespace

void parseQwenMoe(const ConfigReader &r, ModelSpec &spec, const QwenMoeDefaults &d) {
  MoeSpec &m = spec.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_experts"), .experts = d.experts, .top_k = d.top_k,
                   .count_name = "num_experts", .none_allowed = true},
               m);
  m.intermediate = r.getSize("moe_intermediate_size", d.intermediate);
  m.renorm = r.getBool("norm_topk_prob", d.renorm);
  m.score = ExpertScoring::Softmax;
  m.act = spec.mlp.act;
  m.names = perExpertNames(spec.names, "gate", /*gated=*/true);
  if (d.shared_intermediate) {
    m.shared_intermediate = r.getSize("shared_expert_intermediate_size", d.shared_intermediate);
    qwenSharedExpert(m.names);
  }
  qwenMoePlacement(r, spec, d.mlp_only);
}

void parseGatedDeltaNet(const ConfigReader &r, ModelSpec &s, GdnSpec::Projections projections) {
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
  requireSilu(r, "hidden_act", "the gated delta net's conv");
}

void parseQwenMoeEveryLayer(const ConfigReader &r, ModelSpec &spec, const QwenMoeDefaults &d, bool renormKey) {
  MoeSpec &m = spec.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_experts"), .experts = d.experts, .top_k = d.top_k,
                   .count_name = "the number of experts"},
               m);
  m.intermediate = r.getSize("moe_intermediate_size", d.intermediate);
  m.shared_intermediate = r.getSize("shared_expert_intermediate_size", d.shared_intermediate);
  m.score = ExpertScoring::Softmax;
  m.renorm = renormKey ? r.getBool("norm_topk_prob", d.renorm) : d.renorm;
  m.act = spec.mlp.act;
  m.names = perExpertNames(spec.names, "gate", /*gated=*/true);
  qwenSharedExpert(m.names);
  allLayersMoe(spec);
}

void qwenSharedExpert(ExpertNaming &n) {
  gatedSharedExpert(n, "mlp.shared_expert");
  n.shared_gate = "mlp.shared_expert_gate.weight";
}

void parseManifoldHyper(const ConfigReader &r, ModelSpec &s) {
  HyperSpec &h = s.hyper;
  h.streams = r.getSize("hc_mult", 4);
  if (h.streams > 16)
    throw ConfigError(r.path("hc_mult"), "must be between 1 and 16");
  h.manifold = true;
  h.sinkhorn_iters = r.getSize("hc_sinkhorn_iters", 20);
  h.eps = r.getNumber("hc_eps", 1e-6);
  if (!(h.eps >= 0) || !std::isfinite(h.eps))
    throw ConfigError(r.path("hc_eps"), "must not be negative");
  h.post_eps = 0.0;
  h.norm_eps = s.norm_eps;
  h.attn = "hc_attn_";
  h.ffn = "hc_ffn_";
}

} // namespace cbc::hf
