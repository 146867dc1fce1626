// Qwen4-Exp's text decoder (qwen4_exp_text; the qwen4_exp composite served text-only): gated
// delta nets and gated attention with the QSA block indexer, MoE on every layer, GatedResidual
// streams and hashed n-gram embeddings (PLE) on some linear layers.
// Semantics: tools/oracle/SEMANTICS_QWEN4_EXP.md.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"

#include <algorithm>
#include <set>

namespace cbc::hf {

namespace {

// layer_types as given ("full_attention" is read as "indexed_attention", as the config class
// renames it), else attention on every full_attention_interval-th layer.
std::vector<LayerKind> qwen4LayerKinds(const ConfigReader &r, int64_t layers) {
  if (r.has("layer_types"))
    return explicitLayerTypes(r, layers,
                              {{"linear_attention", LayerKind::LinearAttention},
                               {"indexed_attention", LayerKind::FullAttention},
                               {"full_attention", LayerKind::FullAttention}});
  int64_t interval = r.getSize("full_attention_interval", 4);
  return kindsWhere(layers, [&](int64_t i) { return (i + 1) % interval != 0; }, LayerKind::LinearAttention,
                    LayerKind::FullAttention);
}

// The QSA fields are mandatory: transformers cannot build an attention layer without them.
void parseQsa(const ConfigReader &r, ModelSpec &s) {
  BlockIndexerSpec &ix = s.attn.block_indexer;
  for (const char *key : {"indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
                          "indexer_compress_ratio"})
    if (!r.has(key))
      throw ConfigError(r.path(key), "is required: every attention layer of qwen4_exp has a QSA indexer");
  if (r.getSize("indexer_kv_heads", 1) != 1)
    throw ConfigError(r.path("indexer_kv_heads"), "must be 1 (one indexer key per token)");
  ix.pooled = true;
  ix.heads = r.getSize("indexer_n_heads", 1);
  ix.head_dim = r.getSize("indexer_head_dim", 1);
  ix.block = r.getSize("indexer_compress_ratio", 1);
  int64_t budget = r.getSize("indexer_budget", 1);
  if (budget % ix.block != 0)
    throw ConfigError(r.path("indexer_budget"),
                      "must be a multiple of indexer_compress_ratio (" + std::to_string(ix.block) + ")");
  ix.topk = budget / ix.block;
  double factor = r.has("rope_parameters") ? r.child("rope_parameters").getNumber("partial_rotary_factor", 1.0) : 1.0;
  int64_t rotary = (int64_t)((double)s.attn.head_dim * factor);
  if (rotary > ix.head_dim)
    throw ConfigError(r.path("indexer_head_dim"),
                      "must hold the " + std::to_string(rotary) + " rotated dimensions of an attention head");
  for (LayerSpec &l : s.layers)
    l.block_sparse = l.kind == LayerKind::FullAttention;
}

// splitmix64, all mod 2^64.
uint64_t splitmix64(uint64_t v) {
  v += 0x9E3779B97F4A7C15ull;
  v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
  v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
  return v ^ (v >> 31);
}

bool isPrime(int64_t n) {
  if (n < 2)
    return false;
  for (int64_t d = 2; d * d <= n; ++d)
    if (n % d == 0)
      return false;
  return true;
}

// PLE layer l's hash constants, as the embedding module computes them at init: odd multipliers
// from splitmix64 of the seed, and for head g the (l * heads + g + 1)-th prime >= base.
void pleConstants(const ConfigReader &r, int64_t vocab, PleSpec &p, int64_t count) {
  // The release's base is 2e7 (16 tables of ~2e7 rows); 2^32 keeps the prime search short.
  int64_t seed = r.getInt("seed", 1234), base = r.getSize("ngram_vocab_size_base", 20000000, int64_t(1) << 32);
  int64_t divisor = r.getSize("make_ngram_vocab_size_divisible_by", 128);
  int64_t heads = (p.ngram - 1) * p.heads_per_ngram;
  uint64_t half = std::max<uint64_t>(1, ((uint64_t)INT64_MAX / (uint64_t)std::max<int64_t>(vocab, 1)) / 2);
  std::vector<int64_t> primes;
  for (int64_t n = base; (int64_t)primes.size() < count * heads; ++n)
    if (isPrime(n))
      primes.push_back(n);
  for (int64_t l = 0; l < count; ++l) {
    std::vector<int64_t> mult;
    uint64_t start = (uint64_t)seed + 10007ull * (uint64_t)l;
    for (int64_t j = 0; j < p.ngram; ++j)
      mult.push_back((int64_t)(2 * (splitmix64(start + 0x9E3779B97F4A7C15ull * (uint64_t)(j + 1)) % half) + 1));
    std::vector<int64_t> mine(primes.begin() + l * heads, primes.begin() + (l + 1) * heads);
    int64_t sum = 0;
    for (int64_t prime : mine)
      sum += prime;
    p.multipliers.push_back(mult);
    p.primes.push_back(mine);
    p.table_rows.push_back((sum + divisor - 1) / divisor * divisor);
  }
}

// ple_layer_ids are 1-indexed and may only name linear-attention layers.
void parsePle(const ConfigReader &r, ModelSpec &s) {
  if (!r.has("ple_layer_ids"))
    return;
  std::vector<int64_t> ids = r.getIntList("ple_layer_ids");
  std::set<int64_t> sorted(ids.begin(), ids.end());
  if (sorted.empty())
    return;
  PleSpec &p = s.ple;
  p.ngram = r.getSize("ngram_size", 3);
  p.heads_per_ngram = r.getSize("heads_per_ngram", 8);
  p.dim = r.getSize("ple_embed_dim", s.hidden_size);
  p.conv_kernel = r.getSize("ple_conv_kernel_size", 4);
  p.shards = r.getSize("split_ngram_parts", 512);
  if (p.ngram < 2)
    throw ConfigError(r.path("ngram_size"), "must be at least 2");
  int64_t heads = (p.ngram - 1) * p.heads_per_ngram;
  if (p.dim % heads != 0)
    throw ConfigError(r.path("ple_embed_dim"),
                      "must be a multiple of (ngram_size - 1) * heads_per_ngram (" + std::to_string(heads) + ")");
  if (s.eos_token_ids.empty())
    throw ConfigError(r.path("eos_token_id"), "is required: the n-gram hash restarts after it");
  p.eos = s.eos_token_ids.front();
  if (s.vocab_size > (1 << 24) || p.eos >= (1 << 24))
    throw ConfigError(r.path("vocab_size"), "must stay below 2^24 for the n-gram state's ids");
  int64_t index = 0;
  for (int64_t id : sorted) {
    if (id < 1 || id > s.num_layers || s.layers[id - 1].kind != LayerKind::LinearAttention)
      throw ConfigError(r.path("ple_layer_ids"),
                        "must list linear_attention layers, 1-indexed (" + std::to_string(id) + " is not one)");
    s.layers[id - 1].ple = index++;
  }
  pleConstants(r, s.vocab_size, p, index);
}

void parseGatedResidual(const ConfigReader &r, ModelSpec &s) {
  HyperSpec &h = s.hyper;
  h.streams = r.getSize("hc_count", 4, 16);
  if (h.streams < 2)
    throw ConfigError(r.path("hc_count"), "must be at least 2");
  h.rank = r.getSize("hc_lowrank", 320);
  h.norm_eps = s.norm_eps;
  h.attn = "attn_hyper_connection.";
  h.ffn = "mlp_hyper_connection.";
  h.head = "hyper_connection_mixer.";
  s.names.final_norm.clear(); // the mixer replaces the final norm
}

void parseQwen4ExpText(const ConfigReader &r, ModelSpec &s) {
  if (r.has("rope_parameters") && r.child("rope_parameters").getString("rope_type", "default") != "default")
    throw ConfigError(r.path("rope_parameters.rope_type"), "must be default: the QSA block keys rotate at plain positions");
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  s.attn.output_gate = true;
  s.norm_offset = 1.0;
  setLayers(s, qwen4LayerKinds(r, s.num_layers), 0);
  if (std::none_of(s.layers.begin(), s.layers.end(), [](const LayerSpec &l) { return l.kind == LayerKind::FullAttention; }))
    throw ConfigError(r.path("layer_types"), "must have an indexed_attention layer (the cache needs one)");
  parseGatedDeltaNet(r, s, GdnSpec::Projections::Flat);
  std::string gate = r.getString("output_gate_type", "silu");
  if (gate != "silu" && gate != "sigmoid")
    throw ConfigError(r.path("output_gate_type"), "must be sigmoid or silu");
  s.gdn.sigmoid_gate = gate == "sigmoid";
  parseQsa(r, s);
  parsePle(r, s);
  parseQwenMoeEveryLayer(r, s, {.experts = 512, .top_k = 10, .intermediate = 512, .shared_intermediate = 512,
                                .renorm = true},
                         /*renormKey=*/true);
  parseGatedResidual(r, s);
  // Composite checkpoints keep the text weights under model.language_model.; flat ones under model.
  s.prefix = "model.language_model.";
  s.weight_aliases = {{"model.language_model.", "model."}};
  s.injects_embeddings = false; // served text-only: the QSA block keys rotate at plain positions
}

} // namespace

FamilyTable qwen4ExpFamilies() {
  return {
      {"qwen4_exp_text",
       {{.head_dim = 256, .max_positions = 32768, .partial_rotary = true, .moe_only = true,
         .partial_rotary_factor = 1.0,
         .text_config_sizes = {{"vocab_size", 248320}, {"hidden_size", 2048}, {"num_hidden_layers", 40},
                               {"num_attention_heads", 16}, {"num_key_value_heads", 2}},
         .layer_types = LayerListRule::Own},
        parseQwen4ExpText}},
  };
}

} // namespace cbc::hf
