// Gemma, Gemma 2, VaultGemma, Gemma 3 and Gemma 4 (text): scaled embeddings, (1 + w) norms until
// Gemma 4; from Gemma 2 on, alternating sliding and global attention and (but for VaultGemma)
// sandwich norms. Gemma 4 adds per-layer head sizes, values from the key projection, KV shared
// across layers and per-layer embeddings.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

#include <cmath>

namespace cbc::hf {

namespace {

using nlohmann::json;

// Queries scaled by query_pre_attn_scalar, zero-centred sandwich norms, and embeddings scaled by
// sqrt(hidden_size) rounded to the weight dtype.
void gemmaLayout(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.scale = 1.0 / std::sqrt(r.getNumber("query_pre_attn_scalar", 256));
  s.norm_offset = 1.0;
  s.sandwich_norms = true;
  s.embed_scale = (float)std::sqrt((double)s.hidden_size);
  s.embed_scale_rounded = true;
}

void refuseBidirectional(const ConfigReader &r) {
  if (r.getBool("use_bidirectional_attention", false))
    throw ConfigError(r.path("use_bidirectional_attention"),
                      "bidirectional Gemma (an encoder) is not a decoder cbc serves");
}

// Gemma: pre-norm Llama layers with (1 + w) norms, embeddings scaled by sqrt(hidden_size) rounded
// to the weight dtype, and 1/sqrt(head_dim) attention. GemmaConfig turns the released files'
// hidden_act "gelu" into gelu_pytorch_tanh, whatever else they say.
void parseGemma(const ConfigReader &r, ModelSpec &s) {
  refuseBidirectional(r);
  attentionBiases(r, s);
  s.norm_offset = 1.0;
  s.embed_scale = (float)std::sqrt((double)s.hidden_size);
  s.embed_scale_rounded = true;
  if (r.getString("hidden_act", "gelu_pytorch_tanh") == "gelu")
    s.mlp.act = FfnActivation::GeluTanh;
  uniformWindowLayers(s, 0);
}

void parseGemma2(const ConfigReader &r, ModelSpec &s) {
  gemmaLayout(r, s);
  s.attn.softcap = r.getNumber("attn_logit_softcapping", 50.0);
  s.final_softcap = r.getNumber("final_logit_softcapping", 30.0);
  alternatingLayers(r, s, windowOrClassDefault(r, 4096), 2);
}

// VaultGemma: Gemma 2 without the sandwich's post norms: pre-norm layers whose feed-forward norm
// is pre_feedforward_layernorm.
void parseVaultGemma(const ConfigReader &r, ModelSpec &s) {
  parseGemma2(r, s);
  s.sandwich_norms = false;
  s.names.post_attn_norm = "pre_feedforward_layernorm";
}

void parseGemma3Text(const ConfigReader &r, ModelSpec &s) {
  refuseBidirectional(r);
  gemmaLayout(r, s);
  // transformers reads attn_logit_softcapping for Gemma 3 but never applies it, and applies
  // final_logit_softcapping only in the text-only causal LM.
  s.final_softcap = s.outer_model_type.empty() ? r.getNumber("final_logit_softcapping", 0.0) : 0.0;
  s.attn.qk_norm = true;
  alternatingLayers(r, s, windowOrClassDefault(r, 4096), r.getSize("sliding_window_pattern", 6));
  // Gemma3ForConditionalGeneration's mask: an image's rows see each other both ways in prefill,
  // on every layer (the sliding ones keep their window behind the query).
  for (LayerSpec &l : s.layers)
    l.image_bidirectional = s.injects_embeddings;
}

// Gemma 3: rope_parameters keyed by layer type, or the legacy rope_theta (+ rope_scaling) for
// global layers and rope_local_base_freq for local ones.
RopeDicts gemma3RopeDicts(const ConfigReader &r) {
  if (ropeByLayerType(r))
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

// Gemma 4's global layers: per_layer_config's overrides where the file has them (a config saved
// by transformers 5.23), else Gemma4TextConfig's derivation from global_head_dim and, with
// attention_k_eq_v, num_global_key_value_heads.
void gemma4HeadSizes(const ConfigReader &r, ModelSpec &s, bool kEqV) {
  if (r.has("per_layer_config")) {
    perLayerOverrides(
        r, s.num_layers, [](const std::string &k) { return k == "head_dim" || k == "num_key_value_heads"; },
        "cbc reads per-layer head_dim and num_key_value_heads only",
        [&](int64_t layer, const ConfigReader &o, const std::string &k) {
          (k == "head_dim" ? s.layers[layer].head_dim : s.layers[layer].num_kv_heads) = o.requireSize(k);
        });
    return;
  }
  int64_t globalDim = r.getSize("global_head_dim", 512);
  int64_t globalKv = kEqV ? r.getSize("num_global_key_value_heads", 0) : 0;
  for (LayerSpec &l : s.layers)
    if (l.kind == LayerKind::FullAttention) {
      l.head_dim = globalDim;
      l.num_kv_heads = globalKv;
    }
}

// The last num_kv_shared_layers layers read the cache of the last earlier layer of their kind
// (Gemma4TextConfig.kv_sharing_modes), and with use_double_wide_mlp have MLPs twice as wide.
void gemma4KvSharing(const ConfigReader &r, ModelSpec &s, int64_t defaultShared = 0) {
  int64_t shared = r.getCount("num_kv_shared_layers", defaultShared);
  if (shared >= s.num_layers && shared > 0)
    throw ConfigError(r.path("num_kv_shared_layers"), "leaves no layer to write the cache");
  int64_t first = s.num_layers - shared;
  bool doubleWide = r.getBool("use_double_wide_mlp", false);
  for (int64_t i = first; i < s.num_layers; ++i) {
    LayerSpec &l = s.layers[i];
    for (int64_t j = first - 1; j >= 0 && l.kv_layer < 0; --j)
      if (s.layers[j].kind == l.kind)
        l.kv_layer = j;
    if (l.kv_layer < 0)
      throw ConfigError(r.path("num_kv_shared_layers"),
                        "shares the cache of a layer type no earlier layer writes (transformers refuses it)");
    const LayerSpec &p = s.layers[l.kv_layer];
    if (p.head_dim != l.head_dim || p.num_kv_heads != l.num_kv_heads || p.value_is_key != l.value_is_key)
      throw ConfigError(r.path("per_layer_config"), "layer " + std::to_string(i) + " shares the cache of layer " +
                                                        std::to_string(l.kv_layer) + ", whose heads differ");
    if (doubleWide)
      l.intermediate = 2 * s.mlp.intermediate;
  }
}

// Gemma 4 (text): plain-weight norms (not 1 + w) in the sandwich, q/k norms and a weightless
// norm of v, unscaled attention (the norms set the scale), sqrt(hidden) embeddings rounded to
// the weight dtype, a learned scalar on each layer's output, and final soft-capping in the
// causal LM and the multimodal model alike. `window`: the class's sliding_window.
void gemma4Decoder(const ConfigReader &r, ModelSpec &s, int64_t window) {
  std::string bidirectional = r.getString("use_bidirectional_attention", "");
  if (bidirectional == "all")
    throw ConfigError(r.path("use_bidirectional_attention"),
                      "bidirectional Gemma 4 (an encoder) is not a decoder cbc serves");
  if (!bidirectional.empty() && bidirectional != "vision")
    throw ConfigError(r.path("use_bidirectional_attention"), "must be \"all\", \"vision\" or null");
  attentionBiases(r, s);
  s.attn.scale = 1.0;
  s.attn.qk_norm = true;
  s.attn.v_norm = true;
  s.sandwich_norms = true;
  s.embed_scale = (float)std::sqrt((double)s.hidden_size);
  s.embed_scale_rounded = true;
  s.final_softcap = r.getNumber("final_logit_softcapping", 0.0);
  s.names.layer_scalar = "layer_scalar";
  alternatingLayers(r, s, r.getSize("sliding_window", window), 6);
  // Gemma4TextConfig forces the last layer to full attention, whatever layer_types says.
  s.layers.back().kind = LayerKind::FullAttention;
  s.layers.back().window = 0;
  bool kEqV = r.getBool("attention_k_eq_v", false);
  for (LayerSpec &l : s.layers)
    l.value_is_key = kEqV && l.kind == LayerKind::FullAttention;
  gemma4HeadSizes(r, s, kEqV);
  gemma4KvSharing(r, s);
  // Gemma4ForConditionalGeneration looks every placeholder up as the pad id (its per-layer
  // embeddings see the pad row there); with "vision", an image's rows see each other both ways
  // on the sliding layers.
  if (s.injects_embeddings) {
    s.injected_token_id = r.has("pad_token_id") ? r.getCount("pad_token_id", 0) : 0;
    if (s.injected_token_id >= s.vocab_size)
      throw ConfigError(r.path("pad_token_id"), "must be a token id below vocab_size");
    for (LayerSpec &l : s.layers)
      l.image_bidirectional = bidirectional == "vision" && l.kind == LayerKind::SlidingAttention;
  }
}

// Gemma 4 with its per-layer embeddings (on by default) and, refused here, its MoE block.
void parseGemma4Text(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("enable_moe_block", false))
    throw ConfigError(r.path("enable_moe_block"),
                      "Gemma 4's MoE block (experts beside the dense MLP) is not supported yet");
  gemma4Decoder(r, s, 512);
  if (int64_t dim = r.getCount("hidden_size_per_layer_input", 256)) {
    s.per_layer_inputs.dim = dim;
    s.per_layer_inputs.vocab = r.getSize("vocab_size_per_layer_input", 262144);
    if (s.per_layer_inputs.vocab < s.vocab_size)
      throw ConfigError(r.path("vocab_size_per_layer_input"),
                        "is below vocab_size: transformers fails on the token ids past it");
  }
}

// Gemma 4 unified: Gemma 4 without per-layer embeddings or experts (its class never reads
// those keys, whatever they say), a window of 1024 by default.
void parseGemma4UnifiedText(const ConfigReader &r, ModelSpec &s) { gemma4Decoder(r, s, 1024); }

// Phi^-1(p), the standard normal quantile, by Newton's method on 0.5 erfc(-x / sqrt 2) from the
// mean (monotone: Phi is concave past its root for p > 1/2, convex before it for p < 1/2).
double normalQuantile(double p) {
  double x = 0.0;
  for (int i = 0; i < 100; ++i) {
    double step = (0.5 * std::erfc(-x / std::sqrt(2.0)) - p) / (std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI));
    x -= step;
    if (std::fabs(step) < 1e-15)
      break;
  }
  return x;
}

// intermediate_size as one width for every layer, or a list of one per layer.
void gemma3nWidths(const ConfigReader &r, ModelSpec &s) {
  if (s.mlp.intermediate > 0)
    return;
  std::vector<int64_t> widths = r.getIntList("intermediate_size");
  checkLayerCount(r, "intermediate_size", widths.size(), s.num_layers);
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] <= 0)
      throw ConfigError(r.path("intermediate_size"), "has a width that is not positive");
    s.layers[i].intermediate = widths[i];
  }
  s.mlp.intermediate = widths[0];
}

// activation_sparsity_pattern, else 0.95 on the first ten layers of a model with more than ten:
// each layer's gate keeps what lies above the target's normal quantile, computed in fp32.
void gemma3nSparsity(const ConfigReader &r, ModelSpec &s) {
  std::vector<double> pattern;
  if (r.has("activation_sparsity_pattern")) {
    pattern = r.getNumberList("activation_sparsity_pattern");
    checkLayerCount(r, "activation_sparsity_pattern", pattern.size(), s.num_layers);
  } else {
    int64_t sparse = s.num_layers > 10 ? 10 : 0;
    for (int64_t i = 0; i < s.num_layers; ++i)
      pattern.push_back(i < sparse ? 0.95 : 0.0);
  }
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] >= 1.0 || !std::isfinite(pattern[i]))
      throw ConfigError(r.path("activation_sparsity_pattern"), "has a target sparsity that is not below 1");
    if (pattern[i] > 0.0)
      s.layers[i].gate_quantile = (double)(float)normalQuantile(pattern[i]);
  }
}

// Gemma 3n (text): Gemma 4's attention (plain-weight norms, q/k norms and a weightless v norm,
// unscaled) and KV sharing, every fifth layer full, under AltUp's residual streams with LAuReL
// beside the attention; per-layer inputs (ids past their table read row 0, the scales in the
// weight dtype), activation-sparse MLPs and a width per layer; final soft-capping (30 unless
// null) in the causal LM and the multimodal model alike.
void parseGemma3nText(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.scale = 1.0;
  s.attn.qk_norm = true;
  s.attn.v_norm = true;
  s.embed_scale = (float)std::sqrt((double)s.hidden_size);
  s.embed_scale_rounded = true;
  s.final_softcap = r.contains("final_logit_softcapping") && !r.has("final_logit_softcapping")
                        ? 0.0
                        : r.getNumber("final_logit_softcapping", 30.0);
  alternatingLayers(r, s, r.getSize("sliding_window", 512), 5);
  gemma3nWidths(r, s);
  gemma3nSparsity(r, s);
  gemma4KvSharing(r, s, 15);
  if (r.getInt("altup_active_idx", 0) != 0)
    throw ConfigError(r.path("altup_active_idx"), "cbc runs AltUp's blocks on stream 0 only");
  s.altup.streams = r.getSize("altup_num_inputs", 4);
  if (s.altup.streams < 2)
    throw ConfigError(r.path("altup_num_inputs"), "must be at least 2 (one stream leaves the per-layer inputs unused)");
  s.altup.correct_scale = r.getBool("altup_correct_scale", true);
  s.laurel.rank = r.getSize("laurel_rank", 64);
  s.per_layer_inputs.dim = r.getSize("hidden_size_per_layer_input", 256);
  s.per_layer_inputs.vocab = r.getSize("vocab_size_per_layer_input", 262144);
  s.per_layer_inputs.scales_rounded = true;
}

RopeDicts gemma4RopeDicts(const ConfigReader &r) {
  return ropeOrClassDefaults(r, 10000.0,
                             {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}},
                             {{"rope_type", "default"}, {"rope_theta", 10000.0}});
}

} // namespace

// RecurrentGemma (Griffin): Gemma's (1 + w) norms, scaled embeddings and tied head, the
// block_types pattern repeated over the layers (recurrent: Griffin's RG-LRU block; attention:
// local attention over attention_window_size with MQA by default and RoPE on half of each head,
// q/k/v biases by attention_bias, an o_proj bias always), a gated GELU MLP with biases, logits
// soft-capped by logits_soft_cap, an MLP of intermediate_size / 2 (as RecurrentGemmaMlp builds it).
void parseRecurrentGemma(const ConfigReader &r, ModelSpec &s) {
  s.norm_offset = 1.0;
  s.embed_scale = (float)std::sqrt((double)s.hidden_size);
  s.embed_scale_rounded = true;
  s.final_softcap = r.getNumber("logits_soft_cap", 30.0);
  s.names.input_norm = "temporal_pre_norm";
  s.names.post_attn_norm = "channel_pre_norm";
  s.names.attn = "temporal_block";
  s.names.mlp = "mlp_block";
  s.names.final_norm = "final_norm";
  s.attn.qkv_bias = r.getBool("attention_bias", false);
  s.attn.o_bias = true;
  s.mlp.bias = true;
  s.mlp.intermediate = r.getSize("intermediate_size", 3 * s.hidden_size) / 2; // RecurrentGemmaMlp halves it
  // hidden_size / num_attention_heads, unless the file names head_dim (set over the derived value).
  s.attn.head_dim = r.has("head_dim") ? r.requireSize("head_dim") : s.hidden_size / s.attn.num_heads;
  s.attn.scale = 1.0 / std::sqrt((double)s.attn.head_dim);
  GriffinSpec &g = s.griffin;
  g.width = r.has("lru_width") ? r.requireSize("lru_width") : s.hidden_size;
  g.heads = s.attn.num_heads;
  g.conv_kernel = r.getSize("conv1d_width", 4);
  if (g.width % g.heads != 0)
    throw ConfigError(r.path("lru_width"), "must be a multiple of num_attention_heads (the RG-LRU's gate blocks)");
  std::vector<std::string> pattern = r.has("block_types") ? r.getStringList("block_types")
                                                          : std::vector<std::string>{"recurrent", "recurrent", "attention"};
  if (pattern.empty())
    throw ConfigError(r.path("block_types"), "must name at least one block type");
  std::vector<LayerKind> kinds;
  for (int64_t i = 0; i < s.num_layers; ++i) {
    const std::string &t = pattern[i % pattern.size()];
    if (t != "recurrent" && t != "attention")
      throw ConfigError(r.path("block_types"), "unknown block type '" + t + "' (recurrent or attention)");
    kinds.push_back(t == "recurrent" ? LayerKind::RgLru : LayerKind::SlidingAttention);
  }
  setLayers(s, kinds, r.getSize("attention_window_size", 2048));
}

FamilyTable gemmaFamilies() {
  return {
      {"gemma", {{.head_dim = 256, .max_positions = 8192, .tie_word_embeddings = true, .act = "gelu_pytorch_tanh"}, parseGemma}},
      {"recurrent_gemma",
       {{.max_positions = 8192, .tie_word_embeddings = true, .act_key = "hidden_activation", .act = "gelu_pytorch_tanh",
         .partial_rotary = true, .partial_rotary_factor = 0.5, .layer_types = LayerListRule::Ignored},
        parseRecurrentGemma}},
      {"gemma2",
       {{.head_dim = 256, .max_positions = 8192, .tie_word_embeddings = true, .act_key = "hidden_activation",
         .act = "gelu_pytorch_tanh", .heads_divide_hidden = true},
        parseGemma2}},
      {"vaultgemma",
       {{.head_dim = 256, .max_positions = 8192, .tie_word_embeddings = true, .act_key = "hidden_activation",
         .act = "gelu_pytorch_tanh", .heads_divide_hidden = true},
        parseVaultGemma}},
      {"gemma3_text",
       {{.head_dim = 256, .max_positions = 131072, .tie_word_embeddings = true, .rope_theta = 1000000.0,
         .act_key = "hidden_activation", .act = "gelu_pytorch_tanh",
         .text_config_sizes = {{"vocab_size", 262208}, {"hidden_size", 2304}, {"intermediate_size", 9216},
                               {"num_hidden_layers", 26}, {"num_attention_heads", 8},
                               {"num_key_value_heads", 4}}},
        parseGemma3Text, gemma3RopeDicts}},
      {"gemma4_text",
       {{.head_dim = 256, .max_positions = 131072, .tie_word_embeddings = true, .act_key = "hidden_activation",
         .act = "gelu_pytorch_tanh", .kv_heads = 4,
         .text_config_sizes = {{"vocab_size", 262144}, {"hidden_size", 2304}, {"intermediate_size", 9216},
                               {"num_hidden_layers", 30}, {"num_attention_heads", 8},
                               {"num_key_value_heads", 4}}},
        parseGemma4Text, gemma4RopeDicts}},
      {"gemma3n_text",
       {{.head_dim = 256, .max_positions = 32768, .tie_word_embeddings = true, .act_key = "hidden_activation",
         .act = "gelu_pytorch_tanh", .intermediate_list = true, .kv_heads = 2,
         .text_config_sizes = {{"vocab_size", 262400}, {"hidden_size", 2048}, {"intermediate_size", 16384},
                               {"num_hidden_layers", 35}, {"num_attention_heads", 8},
                               {"num_key_value_heads", 2}},
         .heads_divide_hidden = true},
        parseGemma3nText, gemma3RopeDicts}},
      {"gemma4_unified_text",
       {{.head_dim = 256, .max_positions = 262144, .tie_word_embeddings = true, .act_key = "hidden_activation",
         .act = "gelu_pytorch_tanh", .kv_heads = 4,
         .text_config_sizes = {{"vocab_size", 262144}, {"hidden_size", 2304}, {"intermediate_size", 9216},
                               {"num_hidden_layers", 30}, {"num_attention_heads", 8},
                               {"num_key_value_heads", 4}}},
        parseGemma4UnifiedText, gemma4RopeDicts}},
  };
}

} // namespace cbc::hf
