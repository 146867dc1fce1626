// DeepSeek sparse attention (DSA) variants on MLA: GLM-5 (glm_moe_dsa), whose "shared" layers reuse
// the previous layer's top-k selection and whose indexer pairs its RoPE features interleaved, and
// A.X-K2 (axk2), with a fused query / output-gate projection, low-rank gated RMSNorms and optional
// expert groups whose dropped experts score 0, and Dots3 (dots3_note_text), GLM-5's indexed layers
// beside sliding MLA layers of their own geometry. tools/oracle/SEMANTICS_DSA_VARIANTS.md has the
// transformers lines of the first two.
#include "frontends/hf_config/families/dsa_variants.h"
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mla.h"
#include "frontends/hf_config/parse_config.h"

#include <algorithm>
#include <optional>
#include <cmath>

namespace cbc::hf {

// indexer_types, else index_topk_pattern (a string of F / S or a list), else the schedule
// index_topk_freq / index_skip_topk_offset derive: full iff max(i - offset + 1, 0) % freq == 0.
std::vector<bool> sharedIndexerLayers(const ConfigReader &r, int64_t layers, bool firstMustBeFull) {
  std::vector<std::string> types;
  const char *key = "indexer_types";
  if (r.has("indexer_types")) {
    types = r.getStringList("indexer_types");
  } else if (r.has("index_topk_pattern")) {
    key = "index_topk_pattern";
    const nlohmann::json &p = r.raw("index_topk_pattern");
    if (p.is_string()) {
      for (char c : p.get<std::string>()) {
        if (c != 'F' && c != 'S')
          throw ConfigError(r.path(key), std::string("has '") + c + "' (F: full, S: shared)");
        types.push_back(c == 'F' ? "full" : "shared");
      }
    } else {
      types = r.getStringList("index_topk_pattern");
    }
  } else {
    int64_t freq = std::max<int64_t>(r.getInt("index_topk_freq", 1), 1);
    int64_t offset = r.getInt("index_skip_topk_offset", 2);
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(std::max<int64_t>(i - offset + 1, 0) % freq == 0 ? "full" : "shared");
  }
  checkLayerCount(r, key, types.size(), layers);
  std::vector<bool> shared(layers, false);
  for (int64_t i = 0; i < layers; ++i) {
    if (types[i] != "full" && types[i] != "shared")
      throw ConfigError(r.path(key), "unknown indexer type '" + types[i] + "' (full or shared)");
    shared[i] = types[i] == "shared";
  }
  // A shared layer takes the selection of the layer before it, so layer 0 has none to take.
  if (firstMustBeFull && layers > 0 && shared[0])
    throw ConfigError(r.path(key), "makes layer 0 shared, but a shared layer reuses the previous layer's top-k");
  return shared;
}

void checkIndexedLayers(const ConfigReader &r, int64_t layers) {
  std::vector<std::string> types = r.getStringList("layer_types");
  if (!types.empty())
    checkLayerCount(r, "layer_types", types.size(), layers);
  for (const std::string &t : types)
    if (t != "indexed_attention")
      throw ConfigError(r.path("layer_types"), "unsupported layer type '" + t + "' (indexed_attention)");
}

namespace {

// GLM-5: DeepSeek-V3.2's sparse MLA with interleaved RoPE everywhere (the indexer too) and
// "shared" layers without an indexer.
void parseGlmMoeDsa(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.q_lora_rank = 2048, .kv_lora_rank = 512, .nope = 192, .rope = 64, .v = 256}, true);
  s.attn.rope_pairing = RotaryPairing::Interleaved; // always: the family has no rope_interleave switch
  parseIndexer(r, s, RotaryPairing::Interleaved); // the indexer pairs interleaved too (DeepSeek-V3.2: halves)
  if (!r.has("index_n_heads"))
    s.mla.indexer.heads = 32; // GlmMoeDsaConfig's default
  checkIndexedLayers(r, s.num_layers);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 256, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 2048});
  int64_t first = r.getInt("first_k_dense_replace", 3);
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= first; });
  std::vector<bool> shared = sharedIndexerLayers(r, s.num_layers);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].shared_indexer = shared[i];
}

// A.X-K2: the fused q_b_proj over [norm(q_a) | q_a] with its per-element output gate, gated
// norms of rank gated_norm_rank, and sigmoid routing with optional groups filled with 0.
void parseAxk2(const ConfigReader &r, ModelSpec &s) {
  if (r.contains("q_lora_rank") && (!r.has("q_lora_rank") || r.getInt("q_lora_rank", 0) <= 0))
    throw ConfigError(r.path("q_lora_rank"), "must be positive: the indexer and the output gate read the query LoRA");
  parseMla(r, s, {.q_lora_rank = 384, .kv_lora_rank = 128, .nope = 64, .rope = 32, .v = 64}, true);
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  s.mla.query_gate = true;
  parseIndexer(r, s, RotaryPairing::Half); // DeepSeek-V3.2's indexer unchanged
  if (!r.has("index_n_heads"))
    s.mla.indexer.heads = 16; // AXK2Config's default
  checkIndexedLayers(r, s.num_layers);
  if (r.has("n_group") != r.has("topk_group"))
    throw ConfigError(r.path(r.has("n_group") ? "topk_group" : "n_group"),
                      "must be set together with " + std::string(r.has("n_group") ? "n_group" : "topk_group") +
                          " (both null: no expert groups)");
  RouterRule rule = {.score = ExpertScoring::Sigmoid, .group_score = GroupScoring::Top2Sum,
                     .group_fill = DroppedGroupFill::Zero};
  if (!r.has("n_group"))
    rule.group_score.reset();
  parseDeepseekMoe(r, s, rule, {.experts = 128, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 512});
  int64_t first = r.getInt("first_k_dense_replace", 1), freq = r.getSize("moe_layer_freq", 1);
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= first && i % freq == 0; });
  s.norm_gate.rank = r.getSize("gated_norm_rank", 16);
  for (LayerSpec &l : s.layers) {
    l.gated_input_norm = true;
    l.gated_ff_norm = l.moe;
  }
}

// HY-V4: rotate-half MLA with learned sinks and a per-element output gate of its own
// projection, the indexer rotating its last features, indexer layers full at 0 and 4k + 1
// unless indexer_types says, DeepSeek-V3 routing whose routed experts clamp their SwiGLU, and
// four hyper-connected residual streams (iHC) with a weighted head.
void parseHyV4(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.q_lora_rank = 1536, .kv_lora_rank = 512, .nope = 192, .rope = 64, .v = 256}, false);
  s.mla.sinks = true;
  s.names.sinks = "learnable_sink_param";
  s.names.attn_gate = "linear_gate";
  parseIndexer(r, s, RotaryPairing::Half);
  IndexerSpec &ix = s.mla.indexer;
  if (!r.has("index_n_heads"))
    ix.heads = 16; // HYV4Config's default
  ix.rope_last = true;
  ix.norm_eps = s.norm_eps; // nn.LayerNorm(eps = rms_norm_eps), where DeepSeek-V3.2 fixes 1e-6
  // HYV4Config remaps the published files' legacy layer type.
  std::vector<std::string> types = r.getStringList("layer_types");
  if (!types.empty())
    checkLayerCount(r, "layer_types", types.size(), s.num_layers);
  for (const std::string &t : types)
    if (t != "indexed_attention" && t != "deepseek_sparse_attention")
      throw ConfigError(r.path("layer_types"), "unsupported layer type '" + t + "' (indexed_attention)");
  std::vector<bool> shared(s.num_layers, false);
  if (r.has("indexer_types") || r.has("index_topk_pattern"))
    shared = sharedIndexerLayers(r, s.num_layers);
  else
    for (int64_t i = 0; i < s.num_layers; ++i)
      shared[i] = !(i == 0 || (i - 1) % 4 == 0);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].shared_indexer = shared[i];
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 256, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 768, .scaling = 2.827,
                    .fused = true});
  moeByLayerTypes(r, s, [](int64_t i) { return i >= 1; });
  // The routed experts clamp the gate from above and the up input both ways, then SiLU(gate) * up;
  // transformers clamps whatever the sign of the limit, so a limit that is not positive is refused.
  double limit = r.getNumber("swiglu_limit", 10.0);
  if (!(limit > 0) || !std::isfinite(limit))
    throw ConfigError(r.path("swiglu_limit"), "must be positive: HY-V4's experts always clamp by it");
  s.moe.act = FfnActivation::ClampedSwiglu;
  s.moe.limit = limit;
  s.moe.alpha = 1.0;
  s.moe.up_offset = 0.0;
  s.moe.shared_act = FfnActivation::Silu; // the shared experts do not clamp
  HyperSpec &h = s.hyper;
  h.streams = r.getSize("hc_mult", 4);
  if (h.streams < 1 || h.streams > 16)
    throw ConfigError(r.path("hc_mult"), "must be between 1 and 16");
  h.magnitude = r.getNumber("hc_magnitude", 2.0);
  if (!(h.magnitude > 0) || !std::isfinite(h.magnitude))
    throw ConfigError(r.path("hc_magnitude"), "must be positive");
  h.eps = h.post_eps = r.getNumber("hc_eps", 1e-6);
  if (!(h.eps >= 0) || !std::isfinite(h.eps))
    throw ConfigError(r.path("hc_eps"), "must not be negative");
  h.norm_eps = s.norm_eps;
  h.attn = "hc_attn_layer.hc_pre.hc_";
  h.ffn = "hc_mlp_layer.hc_pre.hc_";
  h.head = "hc_head.hc_head_";
}

} // namespace

// One layer's MLA geometry as Dots3NoteTextConfig spells it.
struct Dots3Geometry {
  int64_t heads = 0, kv_heads = 0, q_lora = 0, kv_lora = 0, head_dim = 0, nope = 0, rope = 0, v = 0;
  bool operator==(const Dots3Geometry &) const = default;
};

// Dots3's geometry keys, in the order per_layer_config and the swa_ aliases name them.
const std::vector<std::pair<const char *, int64_t Dots3Geometry::*>> &dots3GeometryKeys() {
  static const std::vector<std::pair<const char *, int64_t Dots3Geometry::*>> keys = {
      {"num_attention_heads", &Dots3Geometry::heads}, {"num_key_value_heads", &Dots3Geometry::kv_heads},
      {"q_lora_rank", &Dots3Geometry::q_lora},        {"kv_lora_rank", &Dots3Geometry::kv_lora},
      {"head_dim", &Dots3Geometry::head_dim},         {"qk_nope_head_dim", &Dots3Geometry::nope},
      {"v_head_dim", &Dots3Geometry::v},              {"qk_rope_head_dim", &Dots3Geometry::rope}};
  return keys;
}

// layer_types, else the class's pattern (indexed on layers 0, 1 and 4k + 1, sliding elsewhere,
// unless use_sliding_window is off); a config without per_layer_config (the released files)
// spells indexed layers full_attention, which use_dsa (default on) renames, or with use_dsa off
// the reverse: full_attention is MLA without the indexer.
std::vector<std::string> dots3LayerTypes(const ConfigReader &r, int64_t layers) {
  bool saved = r.has("per_layer_config");
  std::optional<bool> useDsa;
  if (r.has("use_dsa"))
    useDsa = r.getBool("use_dsa", true);
  else if (!saved)
    useDsa = true;
  std::vector<std::string> types = r.getStringList("layer_types");
  if (!r.has("layer_types")) {
    bool sliding = r.getBool("use_sliding_window", true);
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(!sliding || i < 2 || i % 4 == 1 ? (useDsa == false ? "full_attention" : "indexed_attention")
                                                    : "sliding_attention");
  }
  checkLayerCount(r, "layer_types", types.size(), layers);
  for (std::string &t : types) {
    if (useDsa && t == (*useDsa ? "full_attention" : "indexed_attention"))
      t = *useDsa ? "indexed_attention" : "full_attention";
    if (t != "indexed_attention" && t != "sliding_attention" && t != "full_attention")
      throw ConfigError(r.path("layer_types"), "unsupported layer type '" + t +
                                                   "' (indexed_attention, sliding_attention, full_attention)");
  }
  return types;
}

// Dots3: MLA whose sliding layers have their own geometry (per_layer_config, else the released
// files' swa_ keys), a window and no indexer; the indexed layers GLM-5's interleaved indexer.
// Every layer's latents are scaled by sqrt(hidden / rank), its shared key part normed before
// RoPE, its heads gated by sigmoid(g_proj x); the softmax scale is (nope + rope)^-1/2 per layer,
// without YaRN's correction; q_a, kv_a and k_rope norms take rms_norm_eps.
void parseDots3NoteText(const ConfigReader &r, ModelSpec &s) {
  if (r.has("text_config"))
    throw ConfigError(r.path("text_config"), "cbc reads dots3_note's text keys at the top level, as the released "
                                             "files have them; compile the nested text_config on its own");
  parseMla(r, s, {.q_lora_rank = 1024, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128}, true);
  s.attn.rope_pairing = RotaryPairing::Interleaved; // the class has no rope_interleave switch
  s.mla.norm_eps = s.norm_eps;
  s.mla.head_gate = true;
  s.mla.k_rope_norm = true;
  parseIndexer(r, s, RotaryPairing::Interleaved);
  Dots3Geometry global{s.attn.num_heads, r.getSize("num_key_value_heads", s.attn.num_heads), s.mla.q_lora_rank,
                       s.mla.kv_lora_rank, r.getSize("head_dim", 256), s.mla.nope_dim, s.mla.rope_dim, s.mla.v_dim};
  std::vector<std::string> types = dots3LayerTypes(r, s.num_layers);
  std::vector<Dots3Geometry> geometry(s.num_layers, global);
  if (r.has("per_layer_config")) {
    auto field = [](const std::string &k) {
      return std::find_if(dots3GeometryKeys().begin(), dots3GeometryKeys().end(),
                          [&](const auto &g) { return k == g.first; });
    };
    perLayerOverrides(
        r, s.num_layers, [&](const std::string &k) { return field(k) != dots3GeometryKeys().end(); },
        "cbc reads the per-layer MLA geometry only",
        [&](int64_t layer, const ConfigReader &o, const std::string &k) {
          geometry[layer].*(field(k)->second) = o.requireSize(k);
        });
  } else {
    Dots3Geometry swa{64, 64, 1024, 1024, 256, 192, 0, 128};
    for (const auto &[name, field] : dots3GeometryKeys())
      if (std::string(name) != "qk_rope_head_dim")
        swa.*field = r.getSize(std::string("swa_") + name, swa.*field);
    swa.rope = r.getSize("swa_qk_rope_head_dim", swa.head_dim - swa.nope);
    for (int64_t i = 0; i < s.num_layers; ++i)
      if (types[i] == "sliding_attention")
        geometry[i] = swa;
  }
  int64_t window = r.has("sliding_window") ? r.requireSize("sliding_window") : r.getSize("sliding_window_size", 512);
  const MlaSpec base = s.mla;
  for (int64_t i = 0; i < s.num_layers; ++i) {
    const Dots3Geometry &g = geometry[i];
    std::string at = "layer " + std::to_string(i) + " ";
    if (g.kv_heads != g.heads)
      throw ConfigError(r.path("num_key_value_heads"), at + "has KV heads other than its heads (the class refuses it)");
    if (types[i] == "sliding_attention" && g.head_dim != g.nope + g.rope)
      throw ConfigError(r.path("head_dim"), at + "is sliding with head_dim other than qk_nope + qk_rope (the class refuses it)");
    if (types[i] == "indexed_attention" && g.rope > s.mla.indexer.head_dim)
      throw ConfigError(r.path("index_head_dim"), at + "rotates more features than index_head_dim holds");
    if (g.rope != global.rope)
      throw ConfigError(r.path("qk_rope_head_dim"), at + "has a rope width other than the model's (one RoPE per model)");
    LayerSpec &l = s.layers[i];
    l.window = types[i] == "sliding_attention" ? window : 0;
    MlaSpec m = base;
    m.q_lora_rank = g.q_lora;
    m.kv_lora_rank = g.kv_lora;
    m.nope_dim = g.nope;
    m.v_dim = g.v;
    m.q_scale = std::sqrt((double)s.hidden_size / (double)g.q_lora);
    m.latent_scale = std::sqrt((double)s.hidden_size / (double)g.kv_lora);
    if (types[i] != "indexed_attention")
      m.indexer = IndexerSpec{};
    l.num_heads = g.heads;
    l.num_kv_heads = g.heads;
    l.scale_factor = 1.0 / std::sqrt((double)(g.nope + g.rope)) / s.attn.scale;
    // Layer 0's geometry is the model's; a layer differing from it (or from its indexer) keeps its own.
    if (i == 0)
      s.mla = m;
    else if (geometry[i] != geometry[0] || (types[i] == "indexed_attention") != (types[0] == "indexed_attention"))
      s.layer_mla[i] = m;
  }
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 256, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 1536, .scaling = 1.0});
  int64_t shared = r.getSize("n_shared_experts", 1);
  const char *sharedKey = r.has("shared_experts_intermediate_size") || !r.has("moe_shared_expert_intermediate_size")
                              ? "shared_experts_intermediate_size"
                              : "moe_shared_expert_intermediate_size";
  s.moe.shared_intermediate = r.getSize(sharedKey, 1536) * shared;
  int64_t first = r.getInt("first_k_dense_replace", 1);
  std::vector<int64_t> freqs = r.has("moe_layer_freq") && r.raw("moe_layer_freq").is_array()
                                   ? r.getIntList("moe_layer_freq")
                                   : std::vector<int64_t>{};
  if (!freqs.empty())
    checkLayerCount(r, "moe_layer_freq", freqs.size(), s.num_layers);
  int64_t freq = freqs.empty() ? r.getSize("moe_layer_freq", 1) : 1;
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= first && (freqs.empty() ? i % freq == 0 : freqs[i] != 0); });
}

// Dots3's rope dictionaries: rope_parameters by layer type (indexed_attention for the full
// dictionary), a flat one for both types, else rope_theta (default 8e7) and swa_rope_theta (5e4);
// the rotated part's frequencies over its own width (the class injects a partial_rotary_factor of
// rope / head_dim, over heads cbc's rope part already is).
RopeDicts dots3RopeDicts(const ConfigReader &r) {
  double theta = r.getNumber("rope_theta", 80000000.0);
  RopeDicts dicts = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", theta}}},
                     {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", r.getNumber("swa_rope_theta", 50000.0)}}}};
  const char *key = r.has("rope_parameters") ? "rope_parameters" : r.has("rope_scaling") ? "rope_scaling" : nullptr;
  if (key) {
    const nlohmann::json &p = r.raw(key);
    if (!p.is_object())
      throw ConfigError(r.path(key), "expected an object");
    bool nested = p.contains("indexed_attention") || p.contains("sliding_attention") || p.contains("full_attention");
    for (auto &[kind, d] : dicts) {
      nlohmann::json given = !nested ? p
                             : kind == "sliding_attention" ? p.value("sliding_attention", nlohmann::json::object())
                             : p.contains("indexed_attention") ? p["indexed_attention"]
                                                               : p.value("full_attention", nlohmann::json::object());
      if (!nested) // a flat dictionary serves both types at the global theta
        given["rope_theta"] = given.contains("rope_theta") && given["rope_theta"].is_number() ? given["rope_theta"] : nlohmann::json(theta);
      for (const auto &[k, v] : given.items())
        d[k] = v;
    }
  }
  for (auto &[kind, d] : dicts)
    d["partial_rotary_factor"] = 1.0;
  return dicts;
}

FamilyTable dsaVariantFamilies() {
  return {
      {"glm_moe_dsa", {{.max_positions = 202752, .norm_eps = 1e-5, .head_dim_unused = true}, parseGlmMoeDsa}},
      {"axk2", {{.max_positions = 131072, .head_dim_unused = true}, parseAxk2}},
      {"hy_v4", {{.max_positions = 262144, .norm_eps = 1e-5, .head_dim_unused = true}, parseHyV4}},
      {"dots3_note_text",
       {{.max_positions = 524288, .norm_eps = 1e-5, .head_dim_unused = true, .layer_types = LayerListRule::Own},
        parseDots3NoteText, dots3RopeDicts}},
      {"dots3_note",
       {{.max_positions = 524288, .norm_eps = 1e-5, .head_dim_unused = true, .layer_types = LayerListRule::Own},
        parseDots3NoteText, dots3RopeDicts}},
  };
}

} // namespace cbc::hf
