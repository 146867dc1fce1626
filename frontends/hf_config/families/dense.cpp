// Dense attention decoders: Llama, Mistral, Ministral, Qwen2, Qwen3, Phi-3, OLMo-2, OLMo-3,
// SmolLM3, Helium, Granite, GLM, GLM-4, ERNIE-4.5, Seed-OSS, InternLM3, IQuest-Coder, Arcee,
// CWM, EXAONE 4, OLMo, Ministral 3, Jais 2, HyperCLOVA X and NanoChat.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

namespace cbc::hf {

namespace {

using nlohmann::json;

void parseLlama(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  uniformWindowLayers(s, 0);
}

void parseMistral(const ConfigReader &r, ModelSpec &s) { uniformWindowLayers(s, windowOrClassDefault(r, 4096)); }

// Ministral: Mistral with per-layer layer_types; without them every layer slides when
// sliding_window (class default 4096) is set.
void parseMinistral(const ConfigReader &r, ModelSpec &s) {
  int64_t window = windowOrClassDefault(r, 4096);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [&](int64_t) { return window > 0; }, LayerKind::SlidingAttention,
                                        LayerKind::FullAttention);
  setLayers(s, kinds, window);
}

// Qwen2 and Qwen3 slide from layer max_window_layers on.
bool qwenSlides(int64_t layer, int64_t maxWindowLayers) { return layer >= maxWindowLayers; }

void parseQwen2(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = true;
  qwenWindowLayers(r, s, qwenSlides);
}

void parseQwen3(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  qwenWindowLayers(r, s, qwenSlides);
}

void parsePhi3(const ConfigReader &r, ModelSpec &s) {
  s.names.qkv = "qkv_proj";
  s.names.gate_up = "gate_up_proj";
  uniformWindowLayers(s, optionalWindow(r));
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

// OLMo-2: post-norm layers (x + norm(f(x)) for attention and MLP, no input norm) and RMS norms
// over the whole q and k projections, before RoPE.
void olmoPostNorms(ModelSpec &s) {
  for (LayerSpec &l : s.layers)
    l.post_norm = true;
}

void parseOlmo2(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  s.attn.qk_norm_whole = true;
  uniformWindowLayers(s, 0);
  olmoPostNorms(s);
}

// OLMo-3: OLMo-2 with three sliding layers (window sliding_window, class default 4096) in four.
void parseOlmo3(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  s.attn.qk_norm_whole = true;
  alternatingLayers(r, s, windowOrClassDefault(r, 4096), 4);
  olmoPostNorms(s);
}

// Olmo3Config's RoPE: the legacy top-level rope_theta (a key it pops once) and rope_scaling reach
// only the full layers; a sliding layer without its own rope_theta gets the class default
// 500000 whatever the file says. A flat rope_parameters it replaces by default RoPE on both
// kinds, so cbc refuses it rather than read it differently.
RopeDicts olmo3RopeDicts(const ConfigReader &r) {
  constexpr double kDefaultTheta = 500000.0;
  json full = json::object(), sliding = json::object();
  if (r.has("rope_parameters")) {
    if (!ropeByLayerType(r))
      throw ConfigError(r.path("rope_parameters"),
                        "must be keyed by layer type (full_attention, sliding_attention): Olmo3Config "
                        "replaces a flat one by default RoPE");
    const json &rp = r.raw("rope_parameters");
    if (rp.contains("full_attention") && rp["full_attention"].is_object())
      full = rp["full_attention"];
    if (rp.contains("sliding_attention") && rp["sliding_attention"].is_object())
      sliding = rp["sliding_attention"];
  }
  if (r.has("rope_scaling")) {
    if (!r.raw("rope_scaling").is_object())
      throw ConfigError(r.path("rope_scaling"), "expected an object");
    full.update(r.raw("rope_scaling"));
  }
  if (!full.contains("rope_theta") || full["rope_theta"].is_null())
    full["rope_theta"] = r.getNumber("rope_theta", kDefaultTheta);
  if (!sliding.contains("rope_theta") || sliding["rope_theta"].is_null())
    sliding["rope_theta"] = kDefaultTheta;
  return {{"full_attention", full}, {"sliding_attention", sliding}};
}

// SmolLM3: NoPE on every no_rope_layer_interval-th layer (or as no_rope_layers says). Without
// layer_types, SmolLM3Config makes the NoPE layers the sliding ones when use_sliding_window and
// sliding_window are both set; an explicit layer_types wins, and its sliding layers get the
// sliding mask whatever use_sliding_window says, as the model builds its masks.
void parseSmolLM3(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  std::vector<bool> rope = ropeLayers(r, s.num_layers);
  bool nopeSlides = r.getBool("use_sliding_window", false) && r.has("sliding_window");
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [&](int64_t i) { return nopeSlides && !rope[i]; },
                                        LayerKind::SlidingAttention, LayerKind::FullAttention);
  setLayers(s, kinds, optionalWindow(r));
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].nope = !rope[i];
}

// Helium: RoPE over interleaved feature pairs (2i, 2i + 1), q/k/v biases from attention_bias but
// never an o bias, and an o_proj that maps hidden_size features, so the heads must fill it.
void parseHelium(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = r.getBool("attention_bias", false);
  s.mlp.bias = r.getBool("mlp_bias", false);
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  if (s.attn.num_heads * s.attn.head_dim != s.hidden_size)
    throw ConfigError(r.path("head_dim"), "num_attention_heads x head_dim must equal hidden_size (" +
                                              std::to_string(s.hidden_size) + "): Helium's o_proj reads that many");
  uniformWindowLayers(s, 0);
}

// Granite: Llama with Granite's multipliers (embeddings, residual branches, attention scale,
// logits).
void parseGranite(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  graniteMultipliers(r, s);
  uniformWindowLayers(s, 0);
}

// GLM (glm-4-9b-chat-hf): q/k/v biases from attention_bias (on by default) but no o bias, RoPE
// on interleaved pairs of the first partial_rotary_factor (default 0.5) of each head, and
// Phi-3's fused gate_up_proj.
void parseGlm(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = r.getBool("attention_bias", true);
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  s.names.gate_up = "gate_up_proj";
  uniformWindowLayers(s, 0);
}

// GLM-4 (GLM-4-0414): GLM with sandwich norms, named post_self_attn_layernorm (after attention),
// post_attention_layernorm (before the MLP) and post_mlp_layernorm.
void parseGlm4(const ConfigReader &r, ModelSpec &s) {
  parseGlm(r, s);
  s.sandwich_norms = true;
  s.names.post_attn_norm = "post_self_attn_layernorm";
  s.names.pre_ff_norm = "post_attention_layernorm";
  s.names.post_ff_norm = "post_mlp_layernorm";
}

// ERNIE-4.5: RoPE on interleaved pairs, and use_bias for every projection of attention and MLP.
void parseErnie45(const ConfigReader &r, ModelSpec &s) {
  bool bias = r.getBool("use_bias", false);
  s.attn.qkv_bias = s.attn.o_bias = s.mlp.bias = bias;
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  uniformWindowLayers(s, 0);
}

// Seed-OSS: q/k/v biases (attention_bias, on by default), an o bias of its own
// (attention_out_bias, off by default) and MLP biases (mlp_bias).
void parseSeedOss(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = r.getBool("attention_bias", true);
  s.attn.o_bias = r.getBool("attention_out_bias", false);
  s.mlp.bias = r.getBool("mlp_bias", false);
  uniformWindowLayers(s, 0);
}

// A boolean under its transformers name, else under the spelling InternLM3Config's
// attribute_map aliases to it.
bool aliasedBool(const ConfigReader &r, const char *key, const char *alias) {
  return r.has(key) ? r.getBool(key, false) : r.getBool(alias, false);
}

// InternLM3: Llama (transformers runs it as LlamaForCausalLM) whose config spells the biases
// qkv_bias and bias; InternLM3Config refuses the two differing, since Llama's attention_bias
// covers q/k/v and o together.
void parseInternLM3(const ConfigReader &r, ModelSpec &s) {
  bool attn = aliasedBool(r, "attention_bias", "qkv_bias"), mlp = aliasedBool(r, "mlp_bias", "bias");
  if (attn != mlp)
    throw ConfigError(r.path(r.has("attention_bias") ? "attention_bias" : "qkv_bias"),
                      "must equal mlp_bias (bias) for internlm3: InternLM3Config refuses them differing");
  s.attn.qkv_bias = s.attn.o_bias = s.mlp.bias = attn;
  uniformWindowLayers(s, 0);
}

// IQuest-Coder: transformers runs it as LlamaForCausalLM; its config class refuses clip_qkv and
// a truthy use_sliding_window, and so does cbc.
void parseIQuestCoder(const ConfigReader &r, ModelSpec &s) {
  refuseClipQkv(r);
  if (r.getBool("use_sliding_window", false))
    throw ConfigError(r.path("use_sliding_window"), "is not supported by IQuest-Coder (IQuestCoderConfig refuses it)");
  parseLlama(r, s);
}

// Arcee (AFM): Llama with an ungated ReLU^2 MLP, down(relu(up x)^2).
void parseArcee(const ConfigReader &r, ModelSpec &s) {
  parseLlama(r, s);
  s.mlp.gated = false;
}

// BitNet: Llama with RMS sub-norms inside both blocks (over the attention output before o_proj,
// over relu2(gate) * up before down_proj). The attention sub-norm is hidden_size wide, so heads
// must tile hidden_size exactly (transformers fails with a shape error otherwise). Its ternary
// checkpoints (quantization_config bitnet) are Quantization::BitNet (parseQuantization).
void parseBitNet(const ConfigReader &r, ModelSpec &s) {
  if (s.attn.num_heads * s.attn.head_dim != s.hidden_size)
    throw ConfigError(r.path("head_dim"), "num_attention_heads * head_dim must equal hidden_size (" +
                                              std::to_string(s.hidden_size) +
                                              "): BitNet's attn_sub_norm is hidden_size wide");
  attentionBiases(r, s);
  s.names.attn_sub_norm = "attn_sub_norm";
  s.names.ffn_sub_norm = "ffn_sub_norm";
  uniformWindowLayers(s, 0);
}

// HRM text: two weight-shared stacks of num_layers_per_stack Llama layers run in HRM's nested
// loop (RecurrentStacksSpec), H_cycles x (L_cycles + 1) calls per token, each with its own cache
// layers. Every norm is a weightless RMS norm; MHA (the class has no num_key_value_heads) with a
// sigmoid output gate from self_attn.gate_proj; embeddings times embedding_scale, which the class
// derives as 1 / initializer_range when absent.
void parseHrmText(const ConfigReader &r, ModelSpec &s) {
  RecurrentStacksSpec &st = s.stacks;
  st.outer = r.getSize("H_cycles", 2);
  st.inner = r.getSize("L_cycles", 3);
  // Without num_layers_per_stack, num_hidden_layers is the stack depth (the class then rewrites
  // num_hidden_layers to the number of calls, as a saved config states it); with it, the file's
  // num_hidden_layers sizes transformers' cache and must cover every call.
  int64_t calls = st.outer * (st.inner + 1);
  st.depth = r.has("num_layers_per_stack") ? r.getSize("num_layers_per_stack", 0) : s.num_layers;
  if (st.depth > (1 << 16) / calls)
    throw ConfigError(r.path("num_layers_per_stack"), "gives more than 65536 stack calls");
  if (r.has("num_layers_per_stack") && s.num_layers < st.depth * calls)
    throw ConfigError(r.path("num_hidden_layers"),
                      "must be at least num_layers_per_stack * H_cycles * (L_cycles + 1) = " +
                          std::to_string(st.depth * calls) + " (one cache layer per stack call)");
  s.num_layers = st.depth * calls;
  s.attn.num_kv_heads = s.attn.num_heads;
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  // The checkpoint layout transformers saves and converts on load: attn.gqkv_proj ([gate | q | k
  // | v] rows) and attn.o_proj, mlp.gate_up_proj; biases stay under self_attn.
  s.attn.output_gate = s.attn.gate_leads = true;
  s.names.attn = "attn";
  s.names.qkv = "gqkv_proj";
  s.names.attn_gate = "gate_proj";
  s.names.gate_up = "gate_up_proj";
  s.weight_aliases.emplace_back(".attn.", ".self_attn.");
  s.norm_weight = false;
  double init = r.getNumber("initializer_range", 0.02);
  if (!r.has("embedding_scale") && !(init > 0.0 && init <= 1.0))
    throw ConfigError(r.path("initializer_range"), "must be in (0, 1] to derive embedding_scale (1 / it)");
  s.embed_scale = r.has("embedding_scale") ? r.getNumber("embedding_scale", 1.0) : 1.0 / init;
  uniformWindowLayers(s, 0);
}

// DiffLlama: Llama with differential attention (AttentionSpec::differential): lambda_init
// 0.8 - 0.6 exp(-0.3 layer) per layer, the group norm's eps rms_norm_eps. The class refuses an
// odd KV head count and attention dropout; its MLP has no biases.
void parseDiffLlama(const ConfigReader &r, ModelSpec &s) {
  if (s.attn.num_kv_heads % 2 != 0)
    throw ConfigError(r.path("num_key_value_heads"),
                      "must be even: differential attention splits the value heads in two (DiffLlamaConfig refuses " +
                          std::to_string(s.attn.num_kv_heads) + ")");
  if (r.getNumber("attention_dropout", 0.0) > 0.0)
    throw ConfigError(r.path("attention_dropout"), "must be 0: DiffLlama refuses attention dropout");
  attentionBiases(r, s);
  s.attn.differential = true;
  uniformWindowLayers(s, 0);
  for (int64_t i = 0; i < s.num_layers; ++i)
    s.layers[i].lambda_init = 0.8 - 0.6 * std::exp(-0.3 * (double)i);
}

// CWM: Llama without biases, every fourth layer (from 0) full and the others sliding
// (sliding_window, class default 8192) unless layer_types says otherwise.
void parseCwm(const ConfigReader &r, ModelSpec &s) {
  s.mlp.bias = r.getBool("mlp_bias", false);
  int64_t window = windowOrClassDefault(r, 8192);
  std::vector<LayerKind> kinds =
      r.has("layer_types") ? explicitLayerTypes(r, s.num_layers)
                           : kindsWhere(s.num_layers, [](int64_t i) { return i % 4 != 0; }, LayerKind::SlidingAttention,
                                        LayerKind::FullAttention);
  setLayers(s, kinds, window);
}

// CwmConfig: without rope_parameters (and without a legacy rope_scaling) the RoPE is llama3
// scaling over theta 1e6, whatever a top-level rope_theta says.
RopeDicts cwmRopeDicts(const ConfigReader &r) {
  json d = {{"rope_type", "llama3"}, {"rope_theta", 1000000.0}, {"factor", 16.0}, {"high_freq_factor", 4.0},
            {"low_freq_factor", 1.0}, {"original_max_position_embeddings", 8192}};
  return ropeOrClassDefaults(r, 1000000.0, d, d);
}

// Apertus: Llama attention with per-head q/k RMS norms before RoPE, its two norms named
// attention_layernorm and feedforward_layernorm, and an ungated MLP whose activation defaults to
// xIELU (parameters under mlp.act_fn).
void parseApertus(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.qk_norm = true;
  s.mlp.gated = false;
  s.names.input_norm = "attention_layernorm";
  s.names.post_attn_norm = "feedforward_layernorm";
  uniformWindowLayers(s, 0);
}

// ApertusConfig: without rope_parameters, Llama 3 scaling (factor 8 over 8192 positions) at
// theta 1.2e7, which is also the base of a dictionary that has none.
RopeDicts apertusRopeDicts(const ConfigReader &r) {
  json d = {{"rope_type", "llama3"}, {"rope_theta", 12000000.0}, {"factor", 8.0}, {"high_freq_factor", 4.0},
            {"low_freq_factor", 1.0}, {"original_max_position_embeddings", 8192}};
  return ropeOrClassDefaults(r, 12000000.0, d, d);
}

// EXAONE 4: post-norm layers (OLMo-2's: no input norm) over EXAONE's attention layers.
void parseExaone4(const ConfigReader &r, ModelSpec &s) {
  exaoneLayers(r, s);
  for (LayerSpec &l : s.layers)
    l.post_norm = true;
}

// OLMo (the first): Llama with LayerNorms that have no weight or bias, eps fixed at 1e-5
// (OlmoConfig has no eps key), attention biases from attention_bias, q, k and v clamped to
// [-clip_qkv, clip_qkv] after their projections (as DBRX's fused Wqkv).
void parseOlmo(const ConfigReader &r, ModelSpec &s) {
  if (r.has("clip_qkv")) {
    s.attn.clip_qkv = r.requireNumber("clip_qkv");
    if (!(s.attn.clip_qkv > 0))
      throw ConfigError(r.path("clip_qkv"), "must be positive or null");
  }
  attentionBiases(r, s);
  s.norm_kind = NormKind::Layer;
  s.norm_weight = s.norm_bias = false;
  s.norm_eps = 1e-5;
  uniformWindowLayers(s, 0);
}

// Ministral3Config: without rope_parameters, YaRN (factor 16 over 16384 positions, theta 1e6)
// with the query scale's beta 0.1, whatever a top-level rope_theta says.
RopeDicts ministral3RopeDicts(const ConfigReader &r) {
  json d = {{"rope_type", "yarn"}, {"rope_theta", 1000000.0}, {"factor", 16.0},
            {"original_max_position_embeddings", 16384}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
            {"mscale_all_dim", 1.0}, {"mscale", 1.0}, {"llama_4_scaling_beta", 0.1}};
  return ropeOrClassDefaults(r, 1000000.0, d, d);
}

// Ministral 3: Mistral with YaRN and roped queries scaled by
// 1 + llama_4_scaling_beta * log(1 + floor(position / original_max_position_embeddings)), both
// read from the rope dictionary (transformers cannot run a dictionary without them).
void parseMinistral3(const ConfigReader &r, ModelSpec &s) {
  uniformWindowLayers(s, optionalWindow(r));
  nlohmann::json d = ministral3RopeDicts(r).at("full_attention");
  for (const char *key : {"llama_4_scaling_beta", "original_max_position_embeddings"})
    if (!d.contains(key) || !d[key].is_number())
      throw ConfigError(ropePath(r, "full_attention", false) + key,
                        "is required: Ministral 3 scales its queries by it");
  s.attn.query_scale_beta = d["llama_4_scaling_beta"].get<double>();
  s.attn.query_scale_period = d["original_max_position_embeddings"].get<int64_t>();
  if (s.attn.query_scale_period <= 0)
    throw ConfigError(ropePath(r, "full_attention", false) + "original_max_position_embeddings", "must be positive");
}

// Jais 2: Llama with LayerNorms (weight and bias, layer_norm_eps), biases on every attention
// and MLP projection by default, and an ungated ReLU^2 MLP.
void parseJais2(const ConfigReader &r, ModelSpec &s) {
  s.attn.qkv_bias = s.attn.o_bias = r.getBool("attention_bias", true);
  s.mlp.bias = r.getBool("mlp_bias", true);
  s.mlp.gated = false;
  s.norm_kind = NormKind::Layer;
  s.norm_bias = true;
  uniformWindowLayers(s, 0);
}

// HyperCLOVA X: Granite's multipliers, but the logits are multiplied by logits_scaling and the
// attention scale defaults to 1/sqrt(head_dim); with use_post_norm (default) peri-norms: the
// attention and MLP outputs pass post_norm1 / post_norm2 before the residual add.
void parseHyperClovaX(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  s.embed_scale = r.getNumber("embedding_multiplier", 1.0);
  s.residual_scale = r.getNumber("residual_multiplier", 1.0);
  s.logits_scale = r.getNumber("logits_scaling", 1.0);
  if (r.has("attention_multiplier"))
    s.attn.scale = r.getNumber("attention_multiplier", 1.0);
  if (r.getBool("use_post_norm", true)) {
    s.sandwich_norms = true;
    s.names.post_attn_norm = "post_norm1";
    s.names.pre_ff_norm = "post_attention_layernorm";
    s.names.post_ff_norm = "post_norm2";
  }
  uniformWindowLayers(s, 0);
}

// NanoChat: RMS norms without weights everywhere, the embeddings normed too, RoPE turning the
// other way (rotate_half with the signs flipped) followed by weightless q/k norms, an ungated
// ReLU^2 MLP (fc1, fc2) and softcapped logits (final_logit_softcapping, default 15).
void parseNanoChat(const ConfigReader &r, ModelSpec &s) {
  // Dynamic NTK recomputes the frequencies from the base as the request grows, unreversed.
  for (const auto &[kind, d] : ropeDictionaries(r, 10000.0))
    if (d.value(d.contains("rope_type") ? "rope_type" : "type", std::string("default")) == "dynamic")
      throw ConfigError(ropePath(r, kind, false) + "rope_type", "dynamic RoPE is not supported with NanoChat's reversed rotation");
  attentionBiases(r, s);
  s.norm_weight = false;
  s.embed_norm = true;
  s.attn.rope_reversed = true;
  s.attn.qk_l2_norm = true;
  s.mlp.gated = false;
  s.names.up = "fc1";
  s.names.down = "fc2";
  s.final_softcap = r.getNumber("final_logit_softcapping", 15.0);
  uniformWindowLayers(s, 0);
}

} // namespace

// Doge (dense): Llama with per-head q/k norms, a per-key score bias from each key's values
// (AttentionSpec::key_bias), learned vectors scaling the stream before each residual add, and a
// window on every layer when sliding_window is set. Past keep_window_size keys its mask keeps
// only the keys of largest bias (ties left to torch.topk, not reproducible): the artefact serves
// that many positions at most. The experts (is_moe) route from a view that mixes the tokens of a
// forward call in transformers, and are refused.
void parseDoge(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("is_moe", false))
    throw ConfigError(r.path("is_moe"), "Doge's cross-domain experts are not supported (transformers routes them from "
                                        "a view that mixes the tokens of a forward call)");
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  s.attn.qk_norm = true;
  s.attn.key_bias = true;
  s.names.mixer_residual_scale = "input_residual";
  s.names.mlp_residual_scale = "post_attention_residual";
  s.max_positions = std::min(s.max_positions, r.getSize("keep_window_size", 2048));
  uniformWindowLayers(s, optionalWindow(r));
}

// GlmConfig and Glm4Config: the same defaults.
static FamilyDefaults glmDefaults() {
  return {.head_dim = 128, .max_positions = 131072, .norm_eps = 1.5625e-7, .partial_rotary = true,
          .partial_rotary_factor = 0.5, .kv_heads = 2};
}

FamilyTable denseFamilies() {
  return {
      {"llama", {{.max_positions = 2048, .heads_divide_hidden = true}, parseLlama}},
      {"doge", {{.max_positions = 2048, .norm_eps = 1e-6}, parseDoge}},
      {"mistral", {{.max_positions = 4096 * 32}, parseMistral}},
      {"ministral", {{.max_positions = 4096 * 32, .kv_heads = 8}, parseMinistral}},
      {"qwen2", {{.max_positions = 32768}, parseQwen2}},
      {"qwen3", {{.head_dim = 128, .max_positions = 32768}, parseQwen3}},
      {"phi3", {{.max_positions = 4096, .norm_eps = 1e-5, .partial_rotary = true}, parsePhi3, phi3RopeDicts}},
      {"olmo2", {{.max_positions = 2048, .norm_eps = 1e-5}, parseOlmo2}},
      {"olmo3", {{.max_positions = 2048, .norm_eps = 1e-5, .rope_theta = 500000.0}, parseOlmo3, olmo3RopeDicts}},
      {"granite", {{.max_positions = 2048}, parseGranite}},
      {"glm", {glmDefaults(), parseGlm}},
      {"glm4", {glmDefaults(), parseGlm4}},
      {"internlm3",
       {{.head_dim = 128, .max_positions = 32768, .norm_eps = 1e-5, .kv_heads = 2, .heads_divide_hidden = true},
        parseInternLM3}},
      {"seed_oss", {{.head_dim = 128, .max_positions = 524288, .kv_heads = 8}, parseSeedOss}},
      {"ernie4_5",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-5, .tie_word_embeddings = true, .kv_heads = 2},
        parseErnie45}},
      {"helium", {{.head_dim = 128, .max_positions = 4096, .norm_eps = 1e-8}, parseHelium}},
      {"iquestcoder",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-5, .kv_heads = 8, .heads_divide_hidden = true},
        parseIQuestCoder}},
      {"arcee", {{.max_positions = 4096, .norm_eps = 1e-5, .act = "relu2", .heads_divide_hidden = true}, parseArcee}},
      {"bitnet",
       {{.max_positions = 2048, .norm_eps = 1e-5, .rope_theta = 500000.0, .act = "relu2", .kv_heads = 5},
        parseBitNet}},
      {"hrm_text",
       {{.head_dim = 128, .max_positions = 2048, .heads_divide_hidden = true}, parseHrmText}},
      {"diffllama", {{.max_positions = 2048, .norm_eps = 1e-5}, parseDiffLlama}},
      {"cwm",
       {{.head_dim = 128, .max_positions = 131072, .norm_eps = 1e-5, .rope_theta = 1000000.0, .kv_heads = 8,
         .heads_divide_hidden = true},
        parseCwm, cwmRopeDicts}},
      {"exaone4", {{.max_positions = 2048, .norm_eps = 1e-5, .kv_heads = 32}, parseExaone4}},
      {"olmo", {{.max_positions = 2048, .norm_eps = 1e-5}, parseOlmo}},
      {"apertus",
       {{.max_positions = 65536, .norm_eps = 1e-5, .rope_theta = 12000000.0, .act = "xielu"}, parseApertus,
        apertusRopeDicts}},
      {"ministral3",
       {{.head_dim = 128, .max_positions = 262144, .norm_eps = 1e-5, .rope_theta = 1000000.0, .kv_heads = 8},
        parseMinistral3, ministral3RopeDicts}},
      {"jais2",
       {{.max_positions = 8192, .norm_eps = 1e-5, .act = "relu2", .norm_eps_key = "layer_norm_eps",
         .heads_divide_hidden = true},
        parseJais2}},
      {"hyperclovax", {{.max_positions = 2048, .heads_divide_hidden = true}, parseHyperClovaX}},
      {"nanochat", {{.max_positions = 2048}, parseNanoChat}},
      {"smollm3", {{.max_positions = 32768, .tie_word_embeddings = true, .kv_heads = 4}, parseSmolLM3}},
  };
}

} // namespace cbc::hf
