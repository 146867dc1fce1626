// Mistral Large 4 (mistral_large4, text decoder mistral_large4_text): DeepSeek-V3.2's sparse MLA
// without a q LoRA, NoPE layers with their own MLA geometry, learned per-frequency RoPE scales
// (LeRoPE), a learned per-head log-position query factor in every attention and indexer, an
// indexer reading LayerNorm(x), latent sharing across layers (kv_source_layers) and mistral4's
// grouped softmax router, always renormalised; the checkpoint in Mistral's own tensor names.
// tools/oracle/SEMANTICS_MISTRAL_LARGE4.md has the transformers 5.23 lines.
#include "frontends/hf_config/families/dsa_variants.h"
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mla.h"
#include "frontends/hf_config/parse_config.h"

namespace cbc::hf {

namespace {

// The class's YaRN default ("no magnitude scaling": attention_factor 1 is written, not derived),
// the rotated part's frequencies over its own width.
RopeDicts mistralLarge4RopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 10000.0);
  for (auto &[kind, d] : dicts) {
    if (!r.has("rope_parameters") && !r.has("rope_scaling"))
      d = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 2048.0},
           {"original_max_position_embeddings", 512}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
           {"attention_factor", 1.0}};
    d["partial_rotary_factor"] = 1.0;
  }
  return dicts;
}

// kv_source_layers: each layer's latent comes from itself or an earlier layer that owns its own.
// transformers hands a reader the latest producer of the reader's RoPE kind, whatever the list
// says, so a source of the other kind, or behind a later producer of the same kind, is refused:
// transformers would fail or silently read another layer.
std::vector<int64_t> kvSources(const ConfigReader &r, const std::vector<bool> &roped) {
  int64_t layers = (int64_t)roped.size();
  std::vector<int64_t> src(layers);
  for (int64_t i = 0; i < layers; ++i)
    src[i] = i;
  if (!r.has("kv_source_layers"))
    return src;
  src = r.getIntList("kv_source_layers");
  checkLayerCount(r, "kv_source_layers", src.size(), layers);
  for (int64_t i = 0; i < layers; ++i) {
    std::string at = "layer " + std::to_string(i);
    int64_t j = src[i];
    if (j < 0 || j > i || src[j] != j)
      throw ConfigError(r.path("kv_source_layers"),
                        at + " must read itself or an earlier layer that keeps its own latent");
    if (j == i)
      continue;
    if (roped[j] != roped[i])
      throw ConfigError(r.path("kv_source_layers"),
                        at + " reads layer " + std::to_string(j) + " of the other RoPE kind (transformers fails)");
    for (int64_t k = j + 1; k < i; ++k)
      if (src[k] == k && roped[k] == roped[i])
        throw ConfigError(r.path("kv_source_layers"),
                          at + " reads layer " + std::to_string(j) + " past layer " + std::to_string(k) +
                              " of the same RoPE kind, which transformers reads instead");
  }
  return src;
}

// Mistral's own tensor names (the checkpoint's, as conversion_mapping.py reads them), the MLA
// tensors StepBuilder names DeepSeek's way found through aliases.
void mistralNames(ModelSpec &s) {
  Names &n = s.names;
  s.prefix = "";
  s.lm_head = "output.weight";
  n.embed = "tok_embeddings";
  n.input_norm = "attention_norm";
  n.post_attn_norm = "ffn_norm";
  n.attn = "attention";
  n.o_proj = "wo";
  n.mlp = "feed_forward";
  n.gate = "w1";
  n.up = "w3";
  n.down = "w2";
  s.weight_aliases = {{".q_proj.", ".wq."},
                      {".kv_a_proj_with_mqa.", ".wkv_a_with_mqa."},
                      {".kv_a_layernorm.", ".kv_a_norm."},
                      {".kv_b_proj.", ".wkv_b."}};
  s.rope_log_scale = "lerope.alpha";
  s.mla.log_position_scale = "ssmax_scaling.s";
  s.mla.log_position_bias = "ssmax_scaling.b";
}

void parseMistralLarge4Text(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.q_lora_rank = 0, .kv_lora_rank = 512, .nope = 64, .rope = 64, .v = 128,
                  .rope_dicts = mistralLarge4RopeDicts}, true);
  s.mla.q_lora_rank = 0; // the class has no q LoRA: a q_lora_rank in the file is ignored, as transformers ignores it
  s.attn.rope_pairing = RotaryPairing::Interleaved; // the class has no rope_interleave switch
  s.mla.norm_eps = s.norm_eps;                        // kv_a_layernorm at rms_norm_eps
  mistralNames(s);
  if (r.getSize("num_key_value_heads", s.attn.num_heads) != s.attn.num_heads)
    throw ConfigError(r.path("num_key_value_heads"), "must equal num_attention_heads (the class expands keys per head)");
  IndexerSpec &ix = s.mla.indexer;
  ix.heads = r.getSize("index_n_heads", 32);
  ix.head_dim = r.getSize("index_head_dim", 128);
  ix.topk = r.getSize("index_topk", 2048);
  ix.rope_pairing = RotaryPairing::Interleaved;
  ix.query_norm = true;
  if (ix.head_dim < s.mla.rope_dim)
    throw ConfigError(r.path("index_head_dim"), "must be at least qk_rope_head_dim (" + std::to_string(s.mla.rope_dim) +
                                                    "): the indexer rotates its first qk_rope_head_dim features");
  checkIndexedLayers(r, s.num_layers);
  std::vector<bool> roped = ropeLayers(r, s.num_layers);
  std::vector<int64_t> src = kvSources(r, roped);
  std::vector<bool> shared = sharedIndexerLayers(r, s.num_layers);
  MlaSpec nope = s.mla;
  nope.nope_dim = s.mla.nope_dim + s.mla.rope_dim; // the whole query and key unrotated
  nope.rope_dim = 0;
  for (int64_t i = 0; i < s.num_layers; ++i) {
    LayerSpec &l = s.layers[i];
    l.shared_indexer = shared[i];
    l.kv_layer = src[i] == i ? -1 : src[i];
    l.nope = !roped[i];
    if (l.nope)
      s.layer_mla[i] = nope;
  }
  parseDeepseekMoe(r, s,
                   {.score = ExpertScoring::Softmax, .group_score = GroupScoring::Top2Sum,
                    .group_fill = DroppedGroupFill::Zero, .renorm_key = false, .selection_bias = false},
                   {.experts = 128, .top_k = 4, .groups = 1, .keep = 1, .intermediate = 6144, .scaling = 1.0});
  ExpertNaming &e = s.moe.names; // beside the feed_forward module, not in it
  e.router = "gate.weight";
  e.experts.gate_up = {"experts.{e}.w1.weight", "experts.{e}.w3.weight"};
  e.experts.down = {"experts.{e}.w2.weight"};
  e.shared.gate_up = {"shared_experts.w1.weight", "shared_experts.w3.weight"};
  e.shared.down = {"shared_experts.w2.weight"};
  s.moe.renorm = true; // always: the router has no norm_topk_prob
  s.moe.renorm_eps = 1e-20;
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= r.getInt("first_k_dense_replace", 1); });
  if (r.contains("final_logit_softcapping") && !r.has("final_logit_softcapping"))
    throw ConfigError(r.path("final_logit_softcapping"), "must be a number (the class always caps the logits)");
  s.final_softcap = r.getNumber("final_logit_softcapping", 30.0);
  if (!(s.final_softcap > 0))
    throw ConfigError(r.path("final_logit_softcapping"), "must be positive");
}

} // namespace

FamilyTable mistralLarge4Families() {
  FamilyDefaults d{.max_positions = 1048576, .norm_eps = 1e-5, .head_dim_unused = true,
                   .layer_types = LayerListRule::Own};
  return {
      {"mistral_large4_text", {d, parseMistralLarge4Text, mistralLarge4RopeDicts}},
  };
}

} // namespace cbc::hf
