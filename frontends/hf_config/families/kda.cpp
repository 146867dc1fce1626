// Hybrids of Kimi delta attention (KDA) and multi-head latent attention, with DeepSeek-style
// MoE: Kimi Linear (kimi_linear) and Ling (bailing_hybrid).
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/dsa_variants.h"
#include "frontends/hf_config/families/mla.h"

#include <algorithm>

namespace cbc::hf {

namespace {

const char *const kKdaConv = "the KDA short convolution";

// Both config classes save their attribute_map spellings (num_experts for n_routed_experts,
// ...): a copy of the config with each one under the name the shared MLA and MoE parsers read.
nlohmann::json withDeepseekKeys(const ConfigReader &r) {
  nlohmann::json j = r.objectToCopy();
  static const std::pair<const char *, const char *> kAttributeMap[] = {
      {"num_experts", "n_routed_experts"},          {"num_local_experts", "n_routed_experts"},
      {"num_experts_per_token", "num_experts_per_tok"}, {"num_expert_group", "n_group"},
      {"moe_renormalize", "norm_topk_prob"},        {"num_shared_experts", "n_shared_experts"}};
  for (const auto &[saved, name] : kAttributeMap)
    if (r.has(saved) && !r.has(name))
      j[name] = j[saved];
  return j;
}

// transformers cannot run a hybrid without a full-attention layer (its cache asks an attention
// layer for the sequence length), so neither is such a config one of these families.
void requireFullLayer(const ConfigReader &r, const std::vector<LayerKind> &kinds, const char *key,
                      const std::string &family) {
  if (std::count(kinds.begin(), kinds.end(), LayerKind::LatentAttention) == 0)
    throw ConfigError(r.path(key), family + " needs at least one full_attention layer");
}

const KindNames kKdaKinds = {{"full_attention", LayerKind::LatentAttention}, {"linear_attention", LayerKind::Kda}};

// Kimi Linear's schedule: layer_types, else linear_attn_config's 1-indexed full_attn_layers and
// kda_layers (both, covering every layer), else full attention on layers i > 0 with i % 4 == 0.
std::vector<LayerKind> kimiLayerKinds(const ConfigReader &r, int64_t n) {
  if (r.has("layer_types"))
    return explicitLayerTypes(r, n, kKdaKinds);
  if (r.has("linear_attn_config")) {
    ConfigReader c = r.child("linear_attn_config");
    if (c.has("full_attn_layers") && c.has("kda_layers")) {
      std::vector<int> kinds(n, -1);
      for (const char *key : {"full_attn_layers", "kda_layers"})
        for (int64_t l : c.getIntList(key)) {
          if (l < 1 || l > n)
            throw ConfigError(c.path(key), "layer " + std::to_string(l) + " is outside 1.." + std::to_string(n));
          kinds[l - 1] = key[0] == 'f' ? 0 : 1;
        }
      std::vector<LayerKind> out;
      for (int64_t i = 0; i < n; ++i) {
        if (kinds[i] < 0)
          throw ConfigError(c.path("kda_layers"), "neither list names layer " + std::to_string(i + 1));
        out.push_back(kinds[i] == 0 ? LayerKind::LatentAttention : LayerKind::Kda);
      }
      return out;
    }
  }
  return kindsWhere(n, [](int64_t i) { return i > 0 && i % 4 == 0; }, LayerKind::LatentAttention, LayerKind::Kda);
}

void setKdaLayers(const ConfigReader &r, ModelSpec &s, const std::vector<LayerKind> &kinds, const char *key) {
  requireFullLayer(r, kinds, key, s.model_type);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].kind = kinds[i];
}

// Kimi Linear: KDA with the softplus gate and low-rank gates; NoPE MLA (the key's shared part
// stays unrotated) with q_proj; DeepSeek-V3's router under block_sparse_moe with w1/w3/w2 experts.
void parseKimiLinear(const ConfigReader &r0, ModelSpec &s) {
  nlohmann::json j = withDeepseekKeys(r0);
  ConfigReader r = r0.sameKeys(j);
  s.max_positions = r.getSize("model_max_length", s.max_positions);
  // qk_rope_head_dim 0 (no shared key part) is valid in transformers; cbc lowers such layers
  // (glm5_next_text) but no kimi_linear fixture covers one, so parseMla still requires a positive one.
  parseMla(r, s, {.q_lora_rank = 0, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128}, false);
  setKdaLayers(r, s, kimiLayerKinds(r, s.num_layers), r.has("layer_types") ? "layer_types" : "linear_attn_config");
  for (LayerSpec &l : s.layers)
    l.nope = true;
  KdaSpec &k = s.kda;
  // linear_attn_config's sizes come first, then the top-level keys (an absent dictionary: empty).
  nlohmann::json none = nlohmann::json::object();
  ConfigReader c =
      r.has("linear_attn_config") ? r.child("linear_attn_config") : ConfigReader(none, r.path("linear_attn_config."));
  k.heads = c.getSize("num_heads", r.getSize("linear_num_heads", 32));
  k.head_dim = c.getSize("head_dim", r.getSize("linear_head_dim", 128));
  k.conv_kernel = c.getSize("short_conv_kernel_size", r.getSize("linear_conv_kernel_dim", 4));
  k.low_rank = true;
  k.a_log_4d = true;
  k.norm_eps = s.norm_eps;
  requireSilu(r, "hidden_act", kKdaConv);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 256, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 1024, .scaling = 2.446});
  s.names.mlp = "block_sparse_moe";
  ExpertNaming &n = s.moe.names;
  n.router = "block_sparse_moe.gate.weight";
  n.selection_bias = "block_sparse_moe.gate.e_score_correction_bias";
  n.experts.gate_up = {"block_sparse_moe.experts.{e}.w1.weight", "block_sparse_moe.experts.{e}.w3.weight"};
  n.experts.down = {"block_sparse_moe.experts.{e}.w2.weight"};
  gatedSharedExpert(n, "block_sparse_moe.shared_experts");
  // Moonshot's checkpoints name the dense layers' MLP mlp.*; save_pretrained writes block_sparse_moe.*.
  s.weight_aliases = {{".block_sparse_moe.", ".mlp."}};
  int64_t first = r.getInt("first_k_dense_replace", 1);
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= first; });
}

// Ling (bailing_hybrid): KDA with the bounded gate and full-rank gates, num_attention_heads heads
// of head_dim; MLA with q_proj, interleaved RoPE and a sigmoid gate per head; DeepSeek-V3's
// router with its bias named expert_bias. The MTP layers after num_hidden_layers are not read.
void parseBailingHybrid(const ConfigReader &r0, ModelSpec &s) {
  nlohmann::json j = withDeepseekKeys(r0);
  ConfigReader r = r0.sameKeys(j);
  s.max_positions = r.getSize("model_max_length", s.max_positions);
  parseMla(r, s, {.q_lora_rank = 0, .kv_lora_rank = 512, .nope = 128, .rope = 64, .v = 128}, true);
  s.attn.rope_pairing = RotaryPairing::Interleaved; // always: the class has no rope_interleave switch
  s.mla.head_gate = true;
  int64_t group = r.getSize("layer_group_size", 6);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers, kKdaKinds)
                           : kindsWhere(s.num_layers, [&](int64_t i) { return (i + 1) % group == 0; },
                                        LayerKind::LatentAttention, LayerKind::Kda);
  setKdaLayers(r, s, kinds, r.has("layer_types") ? "layer_types" : "layer_group_size");
  s.names.attn = "attention";
  s.names.o_proj = "dense";
  s.names.embed = "word_embeddings";
  KdaSpec &k = s.kda;
  // The config class takes the linear heads from num_attention_heads and head_dim (before it
  // rewrites head_dim to qk_rope_head_dim, which is what it saves), unless config.json gives
  // linear_num_heads, linear_head_dim or linear_conv_kernel_dim: transformers 5.23 applies those
  // after __post_init__, so they win (and a saved config carries them).
  k.heads = r.getSize("linear_num_heads", s.attn.num_heads);
  k.head_dim = r.getSize("linear_head_dim", r.getSize("head_dim", 128));
  k.conv_kernel = r.getSize("linear_conv_kernel_dim", r.getSize("short_conv_kernel_size", 4));
  k.bounded = r.getBool("kda_safe_gate", true);
  k.lower_bound = r.getNumber("kda_lower_bound", -5.0);
  if (k.bounded && !(k.lower_bound < 0))
    throw ConfigError(r.path("kda_lower_bound"), "must be negative");
  k.low_rank = false;
  k.norm_eps = s.norm_eps;
  requireSilu(r, "hidden_act", kKdaConv);
  parseDeepseekMoe(r, s, kSigmoidGroups, {.experts = 512, .intermediate = 768});
  s.moe.names.selection_bias = "mlp.gate.expert_bias";
  int64_t first = r.getInt("first_k_dense_replace", 2);
  moeByLayerTypes(r, s, [&](int64_t i) { return i >= first; });
}

// GLM5-Next's layer kinds: layer_types (full_attention is indexed_attention), else KDA on every
// layer but each fourth.
const KindNames kGlm5Kinds = {{"indexed_attention", LayerKind::LatentAttention},
                              {"full_attention", LayerKind::LatentAttention},
                              {"linear_attention", LayerKind::Kda}};

// The shared-indexer schedule as transformers can run it: a shared attention layer takes the
// selection the layer right before it returns, which only a full attention layer does.
void glm5SharedIndexers(const ConfigReader &r, ModelSpec &s) {
  std::vector<bool> shared = sharedIndexerLayers(r, s.num_layers, /*firstMustBeFull=*/false);
  const char *key = r.has("indexer_types") ? "indexer_types" : "index_topk_pattern";
  for (int64_t i = 0; i < s.num_layers; ++i) {
    LayerSpec &l = s.layers[i];
    if (l.kind != LayerKind::LatentAttention || !shared[i])
      continue;
    const LayerSpec *prev = i > 0 ? &s.layers[i - 1] : nullptr;
    if (!prev || prev->kind != LayerKind::LatentAttention || prev->shared_indexer)
      throw ConfigError(r.path(key), "makes layer " + std::to_string(i) +
                                         " shared without a full indexed layer right before it (transformers hands "
                                         "the selection to the next layer only, and fails)");
    l.shared_indexer = true;
  }
}

// The KDA sizes: linear_attn_config first, then the top-level keys; the bounded ("safe") gate at
// linear_lower_bound (default -5), kimi's softplus gate when it is null.
void glm5Kda(const ConfigReader &r, ModelSpec &s) {
  KdaSpec &k = s.kda;
  nlohmann::json none = nlohmann::json::object();
  bool given = r.has("linear_attn_config");
  ConfigReader c = given ? r.child("linear_attn_config") : ConfigReader(none, r.path("linear_attn_config."));
  k.heads = c.getSize("num_heads", r.getSize("linear_num_heads", 64));
  k.head_dim = c.getSize("head_dim", r.getSize("linear_head_dim", 128));
  k.conv_kernel = c.getSize("short_conv_kernel_size", r.getSize("linear_conv_kernel_dim", 4));
  const ConfigReader &b = given && c.contains("gate_lower_bound") ? c : r;
  const char *key = &b == &c ? "gate_lower_bound" : "linear_lower_bound";
  k.bounded = b.contains(key) ? b.has(key) : (given ? c.getBool("safe_gate", true) : true);
  k.lower_bound = b.has(key) ? b.requireNumber(key) : -5.0;
  if (k.bounded && !(k.lower_bound < 0))
    throw ConfigError(b.path(key), "must be negative");
  k.low_rank = true;
  k.norm_eps = s.norm_eps;
  requireSilu(r, "hidden_act", kKdaConv);
}

// GLM5-Next (glm5_next_text, the text decoder of glm5_next): KDA layers with low-rank gates and
// the bounded gate, NoPE latent attention with a q LoRA and the k-pooled indexer (the selection
// the attention's only mask), four mHC residual streams read out by their mean, DeepSeek-V3's
// router and a clamped SwiGLU in every MLP. tools/oracle/SEMANTICS_GLM5_NEXT.md has the lines.
void parseGlm5NextText(const ConfigReader &r0, ModelSpec &s) {
  // NoPE is enforced: qk_rope_head_dim must be 0, a width parseMla does not take as a size.
  if (r0.contains("qk_rope_head_dim") && !(r0.has("qk_rope_head_dim") && r0.getInt("qk_rope_head_dim", 0) == 0))
    throw ConfigError(r0.path("qk_rope_head_dim"), "must be 0: GLM5-Next's attention has no RoPE");
  if (r0.contains("q_lora_rank") && !r0.has("q_lora_rank"))
    throw ConfigError(r0.path("q_lora_rank"), "must be set: the indexer reads the q LoRA's output");
  nlohmann::json j = withDeepseekKeys(r0);
  j.erase("qk_rope_head_dim");
  ConfigReader r = r0.sameKeys(j);
  parseMla(r, s, {.q_lora_rank = 1536, .kv_lora_rank = 512, .nope = 256, .rope = 0, .v = 256}, false);
  s.mla.norm_eps = s.norm_eps; // q_a and kv_a norms at rms_norm_eps
  if (r.getSize("num_key_value_heads", s.attn.num_heads) != s.attn.num_heads)
    throw ConfigError(r.path("num_key_value_heads"), "must equal num_attention_heads (the class refuses others)");
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers, kGlm5Kinds)
                           : kindsWhere(s.num_layers, [](int64_t i) { return i % 4 == 3; }, LayerKind::LatentAttention,
                                        LayerKind::Kda);
  setKdaLayers(r, s, kinds, "layer_types");
  for (LayerSpec &l : s.layers)
    l.nope = true;
  IndexerSpec &ix = s.mla.indexer;
  ix.heads = r.getSize("index_n_heads", 32);
  ix.head_dim = r.getSize("index_head_dim", 128);
  ix.topk = r.getSize("index_topk", 2048);
  ix.pool = r.getSize("index_kpool", 16);
  if (ix.topk % ix.pool != 0)
    throw ConfigError(r.path("index_topk"), "must be a multiple of index_kpool (" + std::to_string(ix.pool) + ")");
  if (!r.getBool("index_kpool_always_select_tail", true))
    throw ConfigError(r.path("index_kpool_always_select_tail"),
                      "false is not supported: transformers then lets a query without a chosen pool attend to every "
                      "key of its forward, later ones included");
  glm5SharedIndexers(r, s);
  glm5Kda(r, s);
  parseDeepseekMoe(r, s, kSigmoidGroups,
                   {.experts = 288, .top_k = 8, .groups = 1, .keep = 1, .intermediate = 2048, .scaling = 2.5});
  moeByLayerTypes(r, s, [](int64_t i) { return i >= 3; });
  // Every SwiGLU clamps: silu(min(gate, L)) * clamp(up, -L, L).
  double limit = r.getNumber("swiglu_limit", 10.0);
  if (!(limit > 0) || !std::isfinite(limit))
    throw ConfigError(r.path("swiglu_limit"), "must be positive: every MLP clamps by it");
  s.mlp.act = s.moe.act = FfnActivation::ClampedSwiglu;
  s.mlp.limit = s.moe.limit = limit;
  s.mlp.alpha = s.moe.alpha = 1.0;
  s.mlp.up_offset = s.moe.up_offset = 0.0;
  parseManifoldHyper(r, s);
  s.hyper.mean_head = true;
  // Composite checkpoints keep the text weights under model.language_model.; flat ones under model.
  s.prefix = "model.language_model.";
  s.weight_aliases = {{"model.language_model.", "model."}};
}

} // namespace

FamilyTable kdaFamilies() {
  return {
      {"kimi_linear", {{.max_positions = 1048576, .norm_eps = 1e-5, .rope_free = true, .head_dim_unused = true},
        parseKimiLinear}},
      {"bailing_hybrid", {{.max_positions = 262144, .rope_theta = 6000000.0}, parseBailingHybrid}},
      {"glm5_next_text",
       {{.max_positions = 1048576, .norm_eps = 1e-5, .rope_free = true, .head_dim_unused = true,
         .layer_types = LayerListRule::Own},
        parseGlm5NextText}},
  };
}

} // namespace cbc::hf
