// Classic GPT-style decoders: LayerNorms with biases, ungated MLPs, fused or separate q/k/v with
// biases, absolute positions (learned or sinusoidal) or partial RoPE, parallel or sequential
// blocks. gpt2 (gpt-sw3), gpt_bigcode, gpt_neo, opt, biogpt, xglm, gpt_neox, gptj, phi, stablelm,
// starcoder2, persimmon, nemotron, falcon.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

#include <cmath>

namespace cbc::hf {

namespace {

// A config class's own spelling of a common key (its attribute_map, or a key the class renames
// on load): the saved key wins; absent both, the class default where it has one (0: none).
struct KeyAlias {
  const char *saved, *name;
  int64_t fallback = 0;
};

// A copy of the config under the common key names. Keys the class does not have (grouped-query
// head counts, head_dim) are dropped: the class ignores them, and so does cbc.
nlohmann::json aliasKeys(const ConfigReader &r, std::initializer_list<KeyAlias> aliases,
                         std::initializer_list<const char *> ignored = {"num_key_value_heads", "head_dim"}) {
  nlohmann::json j = r.objectToCopy();
  for (const char *key : ignored)
    j.erase(key);
  for (const KeyAlias &a : aliases) {
    if (r.has(a.saved))
      j[a.name] = r.raw(a.saved);
    else if (!r.has(a.name) && a.fallback)
      j[a.name] = a.fallback;
  }
  return j;
}

// Every norm is a LayerNorm with weight and bias.
void layerNorms(ModelSpec &s) {
  s.norm_kind = NormKind::Layer;
  s.norm_weight = s.norm_bias = true;
}

// An ungated MLP `up` -> act -> `down` under `module`, with biases.
void ungatedMlp(ModelSpec &s, const std::string &module, const std::string &up, const std::string &down,
                bool bias = true) {
  s.mlp.gated = false;
  s.mlp.bias = bias;
  s.names.mlp = module;
  s.names.up = up;
  s.names.down = down;
}

// The GPT-2 layout (transformer.h.N: ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj,
// transformer.ln_f), learned positions transformer.wpe of max_position_embeddings rows, no RoPE.
void gpt2Layout(ModelSpec &s) {
  layerNorms(s);
  s.prefix = "transformer.";
  Names &n = s.names;
  n.layers = "h";
  n.embed = "wte";
  n.final_norm = "ln_f";
  n.input_norm = "ln_1";
  n.post_attn_norm = "ln_2";
  n.attn = "attn";
  n.qkv = "c_attn";
  n.qkv_bias = "c_attn.bias";
  n.o_proj = "c_proj";
  ungatedMlp(s, "mlp", "c_fc", "c_proj");
  s.attn.qkv_bias = s.attn.o_bias = true;
  s.attn.rope = false;
  s.positions = {.kind = AbsolutePositions::Learned, .table = "wpe.weight", .rows = s.max_positions};
  uniformWindowLayers(s, 0);
}

// GPT-2 keys: n_embd, n_layer, n_head, n_positions, n_inner (null: 4 * n_embd),
// activation_function, layer_norm_epsilon.
nlohmann::json gpt2Keys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"n_embd", "hidden_size", 768},
                                   {"n_layer", "num_hidden_layers", 12},
                                   {"n_head", "num_attention_heads", 12},
                                   {"n_positions", "max_position_embeddings", 1024},
                                   {"n_inner", "intermediate_size"}});
  if (!r.has("vocab_size"))
    j["vocab_size"] = 50257;
  if (!r.has("n_inner"))
    j["intermediate_size"] = 4 * j["hidden_size"].get<int64_t>();
  return j;
}

// GPT-2 (and GPT-SW3, the same classes): Conv1D projections stored [in, out], softmax scale
// 1/sqrt(d) unless scale_attn_weights is false, further divided by layer + 1 with
// scale_attn_by_inverse_layer_idx.
void parseGpt2(const ConfigReader &r, ModelSpec &s) {
  gpt2Layout(s);
  s.linears_transposed = true;
  if (!r.getBool("scale_attn_weights", true))
    s.attn.scale = 1.0;
  if (r.getBool("scale_attn_by_inverse_layer_idx", false))
    for (size_t l = 0; l < s.layers.size(); ++l)
      s.layers[l].scale_factor = 1.0 / (double)(l + 1);
}

// GPTBigCode (SantaCoder, StarCoder): GPT-2's layout with nn.Linear projections; multi_query
// (default true) shares one key and value head, c_attn holding [q | k | v].
nlohmann::json gptBigCodeKeys(const ConfigReader &r) {
  nlohmann::json j = gpt2Keys(r);
  j["num_key_value_heads"] = r.getBool("multi_query", true) ? 1 : j["num_attention_heads"].get<int64_t>();
  return j;
}

void parseGptBigCode(const ConfigReader &r, ModelSpec &s) {
  gpt2Layout(s);
  // Without multi_query c_attn interleaves q, k and v per head.
  s.attn.qkv_grouped = !r.getBool("multi_query", true);
  if (!r.getBool("scale_attn_weights", true))
    s.attn.scale = 1.0;
}

// GPT-Neo: num_layers, num_heads; intermediate_size null: 4 * hidden_size.
nlohmann::json gptNeoKeys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"num_heads", "num_attention_heads", 16}, {"num_layers", "num_hidden_layers", 24}});
  if (!r.has("intermediate_size"))
    j["intermediate_size"] = 4 * j.value("hidden_size", (int64_t)2048);
  return j;
}

// attention_types: [[kinds, repeat], ...], each [kinds] repeated `repeat` times, must cover the
// layers (GPTNeoConfig expands it into attention_layers and checks the count).
std::vector<LayerKind> gptNeoKinds(const ConfigReader &r, int64_t layers) {
  std::vector<LayerKind> kinds;
  nlohmann::json types =
      r.has("attention_types") ? r.raw("attention_types") : nlohmann::json::parse(R"([[["global", "local"], 12]])");
  auto bad = [&] {
    return ConfigError(r.path("attention_types"), "must be a list of [[\"global\" | \"local\", ...], repeat] pairs");
  };
  if (!types.is_array())
    throw bad();
  // Counted before expanding: a huge repeat is refused, not expanded.
  int64_t total = 0;
  for (const auto &item : types) {
    if (!item.is_array() || item.size() != 2 || !item[0].is_array() || !item[1].is_number_integer() ||
        item[1].get<int64_t>() < 0 || item[1].get<int64_t>() > (int64_t)1 << 20)
      throw bad();
    for (const auto &k : item[0])
      if (!k.is_string() || (k != "global" && k != "local"))
        throw bad();
    total += item[1].get<int64_t>() * (int64_t)item[0].size();
  }
  if (total != layers)
    throw ConfigError(r.path("attention_types"), "expands to " + std::to_string(total) + " layers but num_layers is " +
                                                     std::to_string(layers));
  for (const auto &item : types)
    for (int64_t i = 0; i < item[1].get<int64_t>(); ++i)
      for (const auto &k : item[0])
        kinds.push_back(k == "local" ? LayerKind::SlidingAttention : LayerKind::FullAttention);
  return kinds;
}

// GPT-Neo: GPT-2's layout with nn.Linear projections, separate q/k/v (no biases) under
// attn.attention with an out_proj bias, local layers seeing the window_size keys up to their
// own, and no softmax scaling at all.
void parseGptNeo(const ConfigReader &r, ModelSpec &s) {
  gpt2Layout(s);
  s.names.attn = "attn.attention";
  s.names.qkv.clear();
  s.names.qkv_bias.clear();
  s.names.o_proj = "out_proj";
  s.attn.qkv_bias = false;
  s.attn.scale = 1.0;
  setLayers(s, gptNeoKinds(r, s.num_layers), r.getSize("window_size", 256));
}

// The OPT-style layer (OPT, BioGPT, XGLM): self_attn.{q,k,v,out}_proj with biases,
// self_attn_layer_norm before attention, final_layer_norm before fc1 -> act -> fc2. The three
// build their LayerNorms without an eps, so torch's 1e-5 holds whatever the config says (BioGPT's
// layer_norm_eps is never read).
void optLayer(ModelSpec &s) {
  layerNorms(s);
  s.norm_eps = 1e-5;
  Names &n = s.names;
  n.input_norm = "self_attn_layer_norm";
  n.post_attn_norm = "final_layer_norm";
  n.o_proj = "out_proj";
  ungatedMlp(s, "", "fc1", "fc2");
  s.attn.qkv_bias = s.attn.o_bias = true;
  s.attn.rope = false;
  uniformWindowLayers(s, 0);
}

nlohmann::json optKeys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"ffn_dim", "intermediate_size", 3072}});
  return j;
}

// OPT: positions from a learned table of max_position_embeddings + 2 rows read 2 rows in;
// pre-norm only (do_layer_norm_before false, OPT-350m's post-norm, is refused), and a
// word_embed_proj_dim other than hidden_size (project_in / project_out) is refused.
void parseOpt(const ConfigReader &r, ModelSpec &s) {
  if (!r.getBool("do_layer_norm_before", true))
    throw ConfigError(r.path("do_layer_norm_before"), "post-norm OPT layers are not supported; it must be true");
  if (r.has("word_embed_proj_dim") && r.requireSize("word_embed_proj_dim") != s.hidden_size)
    throw ConfigError(r.path("word_embed_proj_dim"), "must equal hidden_size: project_in / project_out are not supported");
  if (!r.getBool("enable_bias", true))
    throw ConfigError(r.path("enable_bias"), "must be true: OPT without biases is not supported");
  if (!r.getBool("layer_norm_elementwise_affine", true))
    throw ConfigError(r.path("layer_norm_elementwise_affine"), "must be true");
  optLayer(s);
  s.prefix = "model.decoder.";
  s.names.final_norm = "final_layer_norm";
  s.positions = {.kind = AbsolutePositions::Learned, .table = "embed_positions.weight", .rows = s.max_positions + 2,
                 .offset = 2};
}

// BioGPT: OPT's layer under biogpt., embeddings scaled by sqrt(hidden_size) with
// scale_embedding, positions from a learned table of max_position_embeddings + 2 rows read 2 rows
// in, the head output_projection.
void parseBioGpt(const ConfigReader &r, ModelSpec &s) {
  optLayer(s);
  s.prefix = "biogpt.";
  s.names.final_norm = "layer_norm";
  s.lm_head = "output_projection.weight";
  if (r.getBool("scale_embedding", true))
    s.embed_scale = std::sqrt((double)s.hidden_size);
  s.positions = {.kind = AbsolutePositions::Learned, .table = "embed_positions.weight", .rows = s.max_positions + 2,
                 .offset = 2};
}

nlohmann::json xglmKeys(const ConfigReader &r) {
  return aliasKeys(r, {{"d_model", "hidden_size", 1024},
                       {"num_layers", "num_hidden_layers", 24},
                       {"attention_heads", "num_attention_heads", 16},
                       {"ffn_dim", "intermediate_size", 4096}});
}

// XGLM: OPT's layer under model., embeddings scaled by sqrt(d_model) with scale_embedding,
// sinusoidal positions computed at position + 2, the row of pad_token_id zero (which a position
// never reaches while the padding id is below 2, as XGLM's 1 is).
void parseXglm(const ConfigReader &r, ModelSpec &s) {
  optLayer(s);
  s.names.final_norm = "layer_norm";
  if (r.getBool("scale_embedding", true))
    s.embed_scale = std::sqrt((double)s.hidden_size);
  s.positions = {.kind = AbsolutePositions::Sinusoidal, .offset = 2};
  if (r.has("pad_token_id"))
    s.positions.padding_row = r.getInt("pad_token_id", 1);
}

// GPT-NeoX (Pythia): the RoPE dictionary (rope_parameters, else rope_scaling) with rotary_emb_base
// (default 10000) as its rope_theta and rotary_pct (default 0.25) as its partial_rotary_factor
// unless it has its own; top-level rope_theta and partial_rotary_factor are never read.
RopeDicts gptNeoxRope(const ConfigReader &r) {
  const char *key = r.has("rope_scaling") && !r.has("rope_parameters") ? "rope_scaling" : "rope_parameters";
  nlohmann::json d = r.has(key) ? r.raw(key) : nlohmann::json::object();
  if (!d.is_object())
    throw ConfigError(r.path(key), "expected an object");
  if (!d.contains("rope_theta") || d["rope_theta"].is_null())
    d["rope_theta"] = r.getNumber("rotary_emb_base", 10000.0);
  if (!d.contains("partial_rotary_factor") || d["partial_rotary_factor"].is_null())
    d["partial_rotary_factor"] = r.getNumber("rotary_pct", 0.25);
  return {{"full_attention", d}, {"sliding_attention", d}};
}

// GPT-NeoX: gpt_neox.layers.N with one query_key_value interleaving q, k and v per head,
// attention.dense, biases from attention_bias, an MLP with biases, partial rotate-half RoPE;
// parallel blocks x + attn(ln1 x) + mlp(ln2 x) with use_parallel_residual (default), the head
// embed_out.
void parseGptNeox(const ConfigReader &r, ModelSpec &s) {
  layerNorms(s);
  s.prefix = "gpt_neox.";
  Names &n = s.names;
  n.embed = "embed_in";
  n.final_norm = "final_layer_norm";
  n.attn = "attention";
  n.qkv = "query_key_value";
  n.qkv_bias = "query_key_value.bias";
  n.o_proj = "dense";
  ungatedMlp(s, "mlp", "dense_h_to_4h", "dense_4h_to_h");
  s.lm_head = "embed_out.weight";
  attentionBiases(r, s, true);
  s.attn.qkv_grouped = true;
  uniformWindowLayers(s, 0);
  if (r.getBool("use_parallel_residual", true))
    for (LayerSpec &l : s.layers)
      l.parallel = l.parallel_norms = true;
}

// GPT-J: transformer.h.N with one ln_1 feeding attention and MLP side by side, q/k/v and out_proj
// without biases, fc_in / fc_out with biases, RoPE on interleaved pairs of the first rotary_dim
// features of each head (theta 10000), a head with a bias.
nlohmann::json gptjKeys(const ConfigReader &r) {
  nlohmann::json j = gpt2Keys(r);
  if (!r.has("vocab_size"))
    j["vocab_size"] = 50400;
  if (!r.has("n_embd") && !r.has("hidden_size"))
    j["hidden_size"] = 4096;
  if (!r.has("n_layer") && !r.has("num_hidden_layers"))
    j["num_hidden_layers"] = 28;
  if (!r.has("n_head") && !r.has("num_attention_heads"))
    j["num_attention_heads"] = 16;
  if (!r.has("n_positions") && !r.has("max_position_embeddings"))
    j["max_position_embeddings"] = 2048;
  if (!r.has("n_inner"))
    j["intermediate_size"] = 4 * j["hidden_size"].get<int64_t>();
  return j;
}

RopeDicts gptjRope(const ConfigReader &r) {
  int64_t heads = r.requireSize("num_attention_heads"), hidden = r.requireSize("hidden_size");
  if (r.contains("rotary_dim") && !r.has("rotary_dim"))
    throw ConfigError(r.path("rotary_dim"), "is null (GPT-J then rotates by the model width); it must be set");
  int64_t rotary = r.getSize("rotary_dim", 64), headDim = hidden / heads;
  if (rotary > headDim)
    throw ConfigError(r.path("rotary_dim"), "exceeds the head size " + std::to_string(headDim));
  nlohmann::json d = {{"rope_type", "default"}, {"rope_theta", 10000.0},
                      {"partial_rotary_factor", (double)rotary / (double)headDim}};
  return {{"full_attention", d}, {"sliding_attention", d}};
}

void parseGptj(const ConfigReader &r, ModelSpec &s) {
  layerNorms(s);
  s.prefix = "transformer.";
  Names &n = s.names;
  n.layers = "h";
  n.embed = "wte";
  n.final_norm = "ln_f";
  n.input_norm = "ln_1";
  n.attn = "attn";
  n.o_proj = "out_proj";
  ungatedMlp(s, "mlp", "fc_in", "fc_out");
  s.lm_head_bias = "lm_head.bias";
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  uniformWindowLayers(s, 0);
  for (LayerSpec &l : s.layers)
    l.parallel = true;
}

// q_layernorm / k_layernorm: one LayerNorm (weight and bias) over each head of q and of k,
// before RoPE.
void qkLayerNorms(ModelSpec &s) {
  s.attn.qk_norm = s.attn.qk_layer_norm = s.attn.qk_norm_bias = true;
  s.names.q_norm = "q_layernorm";
  s.names.k_norm = "k_layernorm";
}

// Phi (Phi-1, Phi-1.5, Phi-2): one input_layernorm feeding attention and MLP side by side, q/k/v
// and dense with biases, fc1 / fc2 with biases, partial rotate-half RoPE (default 0.5), a head
// with a bias; qk_layernorm norms each head of q and k.
void parsePhi(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("qk_layernorm", false))
    qkLayerNorms(s);
  layerNorms(s);
  Names &n = s.names;
  n.final_norm = "final_layernorm";
  n.o_proj = "dense";
  ungatedMlp(s, "mlp", "fc1", "fc2");
  s.lm_head_bias = "lm_head.bias";
  s.attn.qkv_bias = s.attn.o_bias = true;
  uniformWindowLayers(s, 0);
  for (LayerSpec &l : s.layers)
    l.parallel = true;
}

// StableLM (StableLM-2): Llama's names with LayerNorms (weights and biases), q/k/v biases with
// use_qkv_bias, no o bias, a gated SiLU MLP without biases, partial rotate-half RoPE (default
// 0.25), parallel blocks over the one input_layernorm with use_parallel_residual; qk_layernorm
// norms each head of q and k with its own weight (no bias).
void parseStableLm(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("qk_layernorm", false)) {
    qkLayerNorms(s);
    s.attn.qk_norm_bias = false;
    s.attn.qk_norm_per_head = true;
  }
  layerNorms(s);
  s.attn.qkv_bias = r.getBool("use_qkv_bias", false);
  uniformWindowLayers(s, 0);
  if (r.getBool("use_parallel_residual", false))
    for (LayerSpec &l : s.layers)
      l.parallel = true;
}

// StarCoder2: Llama's attention names with biases on q/k/v/o (use_bias), LayerNorms with
// weights and biases (norm_epsilon), an ungated c_fc -> act -> c_proj MLP with biases, every
// layer sliding when sliding_window is set.
void parseStarcoder2(const ConfigReader &r, ModelSpec &s) {
  layerNorms(s);
  bool bias = r.getBool("use_bias", true);
  s.attn.qkv_bias = s.attn.o_bias = bias;
  ungatedMlp(s, "mlp", "c_fc", "c_proj", bias);
  uniformWindowLayers(s, optionalWindow(r));
}

// Persimmon: Llama's layer names with LayerNorms (weights and biases), one query_key_value
// interleaving q, k and v per head and dense, both with biases, q/k LayerNorms with qk_layernorm
// (default), partial rotate-half RoPE (default 0.5), an ungated relu2 MLP dense_h_to_4h /
// dense_4h_to_h with biases, the final norm final_layernorm.
void parsePersimmon(const ConfigReader &r, ModelSpec &s) {
  layerNorms(s);
  Names &n = s.names;
  n.final_norm = "final_layernorm";
  n.qkv = "query_key_value";
  n.qkv_bias = "query_key_value.bias";
  n.o_proj = "dense";
  ungatedMlp(s, "mlp", "dense_h_to_4h", "dense_4h_to_h");
  s.attn.qkv_bias = s.attn.o_bias = s.attn.qkv_grouped = true;
  if (r.getBool("qk_layernorm", true))
    qkLayerNorms(s);
  uniformWindowLayers(s, 0);
}

// Nemotron (Nemotron-3/4, Minitron): Llama's attention with attention_bias, LayerNorm1P norms
// (LayerNorm with weight + 1 and a bias, norm_eps), partial rotate-half RoPE (default 0.5), an
// ungated up_proj -> relu2 -> down_proj MLP with mlp_bias.
void parseNemotron(const ConfigReader &r, ModelSpec &s) {
  layerNorms(s);
  s.norm_offset = 1.0;
  attentionBiases(r, s);
  ungatedMlp(s, "mlp", "up_proj", "down_proj", r.getBool("mlp_bias", false));
  uniformWindowLayers(s, 0);
}

// Falcon: n_embed is an old spelling of hidden_size, ffn_hidden_size (null: 4 * hidden) the
// MLP's width, `activation` its activation; the KV head count is num_kv_heads with
// new_decoder_architecture, else 1 with multi_query (default), else the head count.
nlohmann::json falconKeys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"n_embed", "hidden_size", 4544},
                                   {"ffn_hidden_size", "intermediate_size"},
                                   {"activation", "hidden_act"}});
  int64_t hidden = j["hidden_size"].get<int64_t>();
  if (!r.has("ffn_hidden_size"))
    j["intermediate_size"] = 4 * hidden;
  if (!r.has("activation"))
    j["hidden_act"] = "gelu";
  int64_t heads = r.getSize("num_attention_heads", 71);
  j["num_attention_heads"] = heads;
  int64_t kv = heads;
  if (r.getBool("new_decoder_architecture", false))
    kv = r.getSize("num_kv_heads", heads);
  else if (r.getBool("multi_query", true))
    kv = 1;
  j["num_key_value_heads"] = kv;
  return j;
}

// Falcon: transformer.h.N with one query_key_value per KV group (the group's query heads, then
// its key and value) and dense, biases with `bias`, dense_h_to_4h -> act -> dense_4h_to_h,
// rotate-half RoPE on whole heads. Blocks: with new_decoder_architecture, attention and MLP side
// by side over ln_attn and ln_mlp (num_ln_in_parallel_attn 2, its default there) or one
// input_layernorm (1); otherwise parallel over input_layernorm with parallel_attn (default),
// else sequential with post_attention_layernorm. ALiBi is refused.
void parseFalcon(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("alibi", false))
    throw ConfigError(r.path("alibi"), "ALiBi position biases are not supported for falcon; it must be false");
  layerNorms(s);
  s.prefix = "transformer.";
  Names &n = s.names;
  n.layers = "h";
  n.embed = "word_embeddings";
  n.final_norm = "ln_f";
  n.attn = "self_attention";
  n.qkv = "query_key_value";
  n.qkv_bias = "query_key_value.bias";
  n.o_proj = "dense";
  ungatedMlp(s, "mlp", "dense_h_to_4h", "dense_4h_to_h", r.getBool("bias", false));
  s.attn.qkv_bias = s.attn.o_bias = s.mlp.bias;
  s.attn.qkv_grouped = true;
  uniformWindowLayers(s, 0);
  bool parallel = r.getBool("parallel_attn", true);
  bool newArch = r.getBool("new_decoder_architecture", false);
  int64_t norms = r.has("num_ln_in_parallel_attn") ? r.requireSize("num_ln_in_parallel_attn") : newArch ? 2 : 1;
  if (newArch && !parallel)
    throw ConfigError(r.path("parallel_attn"),
                      "must be true with new_decoder_architecture (transformers' Falcon layer has no sequential form there)");
  if (newArch && norms != 1 && norms != 2)
    throw ConfigError(r.path("num_ln_in_parallel_attn"), "must be 1 or 2");
  bool twoNorms = newArch && norms == 2;
  if (twoNorms) {
    n.input_norm = "ln_attn";
    n.post_attn_norm = "ln_mlp";
  }
  for (LayerSpec &l : s.layers) {
    l.parallel = parallel;
    l.parallel_norms = twoNorms;
  }
}

} // namespace

FamilyTable gptFamilies() {
  auto gpt2 = Family{{.max_positions = 1024, .norm_eps = 1e-5, .tie_word_embeddings = true,
                      .act_key = "activation_function", .act = "gelu_new", .rope_free = true,
                      .norm_eps_key = "layer_norm_epsilon", .layer_types = LayerListRule::Ignored},
                     parseGpt2, nullptr, gpt2Keys};
  return {
      {"gpt2", gpt2},
      {"gpt-sw3", gpt2},
      {"gpt_bigcode",
       {{.max_positions = 1024, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "gelu_pytorch_tanh", .rope_free = true, .norm_eps_key = "layer_norm_epsilon",
         .layer_types = LayerListRule::Ignored},
        parseGptBigCode, nullptr, gptBigCodeKeys}},
      {"gpt_neo",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "gelu_new", .rope_free = true, .norm_eps_key = "layer_norm_epsilon",
         .layer_types = LayerListRule::Ignored},
        parseGptNeo, nullptr, gptNeoKeys}},
      {"opt",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "relu", .rope_free = true, .norm_eps_key = "layer_norm_eps", .layer_types = LayerListRule::Ignored},
        parseOpt, nullptr, optKeys}},
      {"biogpt",
       {{.max_positions = 1024, .norm_eps = 1e-12, .tie_word_embeddings = true, .act = "gelu", .rope_free = true,
         .norm_eps_key = "layer_norm_eps", .layer_types = LayerListRule::Ignored},
        parseBioGpt, nullptr, [](const ConfigReader &r) { return aliasKeys(r, {}); }}},
      {"xglm",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "gelu", .rope_free = true, .norm_eps_key = "layer_norm_eps", .layer_types = LayerListRule::Ignored},
        parseXglm, nullptr, xglmKeys}},
      {"gpt_neox",
       {{.max_positions = 2048, .norm_eps = 1e-5, .act = "gelu", .partial_rotary = true,
         .partial_rotary_factor = 0.25, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps",
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseGptNeox, gptNeoxRope,
        [](const ConfigReader &r) { return aliasKeys(r, {}); }}},
      {"gptj",
       {{.max_positions = 2048, .norm_eps = 1e-5, .act_key = "activation_function", .act = "gelu_new",
         .partial_rotary = true, .norm_eps_key = "layer_norm_epsilon", .layer_types = LayerListRule::Ignored},
        parseGptj, gptjRope, gptjKeys}},
      {"phi",
       {{.max_positions = 2048, .norm_eps = 1e-5, .act = "gelu_new", .partial_rotary = true,
         .partial_rotary_factor = 0.5, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps",
         .layer_types = LayerListRule::Ignored},
        parsePhi}},
      {"stablelm",
       {{.max_positions = 4096, .norm_eps = 1e-5, .act = "silu", .partial_rotary = true,
         .partial_rotary_factor = 0.25, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps", .kv_heads = 32,
         .layer_types = LayerListRule::Ignored},
        parseStableLm}},
      {"starcoder2",
       {{.max_positions = 4096, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu_pytorch_tanh",
         .head_dim_unused = true, .norm_eps_key = "norm_epsilon", .kv_heads = 2,
         .layer_types = LayerListRule::Ignored},
        parseStarcoder2}},
      {"persimmon",
       {{.max_positions = 16384, .norm_eps = 1e-5, .act = "relu2", .partial_rotary = true,
         .partial_rotary_factor = 0.5, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps",
         .layer_types = LayerListRule::Ignored},
        parsePersimmon, nullptr, [](const ConfigReader &r) { return aliasKeys(r, {}); }}},
      {"nemotron",
       {{.max_positions = 4096, .norm_eps = 1e-5, .act = "relu2", .partial_rotary = true,
         .partial_rotary_factor = 0.5, .norm_eps_key = "norm_eps", .layer_types = LayerListRule::Ignored},
        parseNemotron}},
      {"falcon",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .head_dim_unused = true,
         .norm_eps_key = "layer_norm_epsilon", .layer_types = LayerListRule::Ignored},
        parseFalcon, nullptr, falconKeys}},
  };
}

} // namespace cbc::hf
