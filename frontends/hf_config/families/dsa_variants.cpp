// DeepSeek sparse attention (DSA) variants on MLA: GLM-5 (glm_moe_dsa), whose "shared" layers reuse
// the previous layer's top-k selection and whose indexer pairs its RoPE features interleaved, and
// A.X-K2 (axk2), with a fused query / output-gate projection, low-rank gated RMSNorms and optional
// expert groups whose dropped experts score 0. tools/oracle/SEMANTICS_DSA_VARIANTS.md has the
// transformers lines.
#include "frontends/hf_config/families/dsa_variants.h"
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mla.h"
#include "frontends/hf_config/parse_config.h"

namespace cbc::hf {

// indexer_types, else index_topk_pattern (a string of F / S or a list), else the schedule
// index_topk_freq / index_skip_topk_offset derive: full iff max(i - offset + 1, 0) % freq == 0.
std::vector<bool> sharedIndexerLayers(const ConfigReader &r, int64_t layers) {
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
  if (layers > 0 && shared[0])
    throw ConfigError(r.path(key), "makes layer 0 shared, but a shared layer reuses the previous layer's top-k");
  return shared;
}

namespace {

// Every layer of these families is sparse latent attention (layer_types, when given, says so).
void checkIndexedLayers(const ConfigReader &r, int64_t layers) {
  std::vector<std::string> types = r.getStringList("layer_types");
  if (!types.empty())
    checkLayerCount(r, "layer_types", types.size(), layers);
  for (const std::string &t : types)
    if (t != "indexed_attention")
      throw ConfigError(r.path("layer_types"), "unsupported layer type '" + t + "' (indexed_attention)");
}

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

} // namespace

FamilyTable dsaVariantFamilies() {
  return {
      {"glm_moe_dsa", {{.max_positions = 202752, .norm_eps = 1e-5, .head_dim_unused = true}, parseGlmMoeDsa}},
      {"axk2", {{.max_positions = 131072, .head_dim_unused = true}, parseAxk2}},
  };
}

} // namespace cbc::hf
