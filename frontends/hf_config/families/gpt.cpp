// Classic GPT-style decoders: LayerNorms with biases, ungated MLPs, fused or separate q/k/v with
// biases, absolute positions (learned or sinusoidal) or partial RoPE, parallel or sequential
// blocks. gpt2 (gpt-sw3), openai-gpt, gpt_bigcode, gpt_neo, opt, biogpt, xglm, gpt_neox (gpt_neox_japanese), gptj, codegen, phi, stablelm,
// starcoder2, persimmon, nemotron, falcon, bloom, mpt, modernbert-decoder, ctrl.
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

// Learned positions: <prefix><table> of `rows` rows, position p reading row p + offset.
void learnedPositions(ModelSpec &s, const std::string &table, int64_t rows, int64_t offset) {
  s.positions.kind = AbsolutePositions::Learned;
  s.positions.table = table;
  s.positions.rows = rows;
  s.positions.offset = offset;
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

// Megatron's layout (GPT-NeoX, BLOOM, Falcon, Persimmon): under `attn` one query_key_value
// interleaved per KV group (its bias fused too) and dense, then mlp.dense_h_to_4h -> act ->
// mlp.dense_4h_to_h, the MLP's biases as `mlpBias` says.
void megatronNames(ModelSpec &s, const std::string &attn, bool mlpBias = true) {
  Names &n = s.names;
  n.attn = attn;
  n.qkv = "query_key_value";
  n.qkv_bias = "query_key_value.bias";
  n.o_proj = "dense";
  s.attn.qkv_grouped = true;
  ungatedMlp(s, "mlp", "dense_h_to_4h", "dense_4h_to_h", mlpBias);
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
  learnedPositions(s, "wpe.weight", s.max_positions, 0);
  uniformWindowLayers(s, 0);
}

// GPT-2 keys: n_embd, n_layer, n_head, n_positions, n_inner (null: 4 * n_embd),
// activation_function, layer_norm_epsilon.
// GPT-2's width, read (and type-checked, naming the key) where the MLP's follows from it.
int64_t hiddenSize(const ConfigReader &r) { return r.getInt(r.has("n_embd") ? "n_embd" : "hidden_size", 768); }

nlohmann::json gpt2Keys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"n_embd", "hidden_size", 768},
                                   {"n_layer", "num_hidden_layers", 12},
                                   {"n_head", "num_attention_heads", 12},
                                   {"n_positions", "max_position_embeddings", 1024},
                                   {"n_inner", "intermediate_size"}});
  if (!r.has("vocab_size"))
    j["vocab_size"] = 50257;
  if (!r.has("n_inner"))
    j["intermediate_size"] = 4 * hiddenSize(r);
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

// The original GPT (openai-gpt): GPT-2's keys with afn for the activation ('gelu' meaning
// gelu_new there) and an MLP of 4 * n_embd.
nlohmann::json openAiGptKeys(const ConfigReader &r) {
  nlohmann::json j = gpt2Keys(r);
  if (!r.has("vocab_size"))
    j["vocab_size"] = 40478;
  if (!r.has("n_positions") && !r.has("max_position_embeddings"))
    j["max_position_embeddings"] = 512;
  j.erase("n_inner");
  j["intermediate_size"] = 4 * hiddenSize(r);
  std::string afn = r.getString("afn", "gelu");
  if (afn != "gelu" && afn != "relu" && afn != "silu" && afn != "swish")
    throw ConfigError(r.path("afn"), "unsupported activation '" + afn + "' (openai-gpt has gelu, relu, silu, swish)");
  j["activation_function"] = afn == "gelu" ? "gelu_new" : afn;
  return j;
}

// openai-gpt: GPT-2's Conv1D layout under tokens_embed / positions_embed, post-norm blocks
// (x = ln_1(x + attn(x)); x = ln_2(x + mlp(x))) and no final norm.
void parseOpenAiGpt(const ConfigReader &r, ModelSpec &s) {
  gpt2Layout(s);
  s.linears_transposed = true;
  s.names.embed = "tokens_embed";
  s.names.final_norm.clear();
  s.positions.table = "positions_embed.weight";
  for (LayerSpec &l : s.layers)
    l.norm_after_add = true;
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
// pre-norm layers with a final norm (unless _remove_final_layer_norm), or with
// do_layer_norm_before false post-norm ones without (OPT-350m); a word_embed_proj_dim other
// than hidden_size projects the embeddings up (project_in) and the head's input down
// (project_out).
void parseOpt(const ConfigReader &r, ModelSpec &s) {
  if (!r.getBool("enable_bias", true))
    throw ConfigError(r.path("enable_bias"), "must be true: OPT without biases is not supported");
  if (!r.getBool("layer_norm_elementwise_affine", true))
    throw ConfigError(r.path("layer_norm_elementwise_affine"), "must be true");
  optLayer(s);
  s.prefix = "model.decoder.";
  s.names.final_norm = "final_layer_norm";
  learnedPositions(s, "embed_positions.weight", s.max_positions + 2, 2);
  bool preNorm = r.getBool("do_layer_norm_before", true);
  if (!preNorm)
    for (LayerSpec &l : s.layers)
      l.norm_after_add = true;
  if (!preNorm || r.getBool("_remove_final_layer_norm", false))
    s.names.final_norm.clear();
  int64_t e = r.getSize("word_embed_proj_dim", s.hidden_size);
  if (e != s.hidden_size) {
    s.embed_dim = e;
    s.embed_proj = "project_in";
    s.head_proj = "project_out";
  }
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
  learnedPositions(s, "embed_positions.weight", s.max_positions + 2, 2);
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
  s.positions.kind = AbsolutePositions::Sinusoidal;
  s.positions.offset = 2;
  if (r.has("pad_token_id"))
    s.positions.padding_row = r.getInt("pad_token_id", 1);
}

// GPT-NeoX (Pythia): the RoPE dictionary (rope_parameters, else rope_scaling) with rotary_emb_base
// (default 10000) as its rope_theta and rotary_pct (default 0.25) as its partial_rotary_factor
// unless it has its own; top-level rope_theta and partial_rotary_factor are never read.
RopeDicts neoxRope(const ConfigReader &r, double defaultPct) {
  const char *key = r.has("rope_scaling") && !r.has("rope_parameters") ? "rope_scaling" : "rope_parameters";
  nlohmann::json d = r.has(key) ? r.raw(key) : nlohmann::json::object();
  if (!d.is_object())
    throw ConfigError(r.path(key), "expected an object");
  if (!d.contains("rope_theta") || d["rope_theta"].is_null())
    d["rope_theta"] = r.getNumber("rotary_emb_base", 10000.0);
  if (!d.contains("partial_rotary_factor") || d["partial_rotary_factor"].is_null())
    d["partial_rotary_factor"] = r.getNumber("rotary_pct", defaultPct);
  return {{"full_attention", d}, {"sliding_attention", d}};
}

RopeDicts gptNeoxRope(const ConfigReader &r) { return neoxRope(r, 0.25); }

// GPT-NeoX-Japanese: intermediate_multiple_size (an int, default 4) times hidden_size is the
// MLP's width.
nlohmann::json gptNeoxJapaneseKeys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {});
  j["intermediate_size"] = r.requireSize("hidden_size") * r.getSize("intermediate_multiple_size", 4);
  return j;
}

void parseGptNeox(const ConfigReader &r, ModelSpec &s);

// GPT-NeoX-Japanese: GPT-NeoX's names and per-head query_key_value under gpt_neox_japanese.,
// sequential blocks, no biases but the last layer's attention.dense_bias (added after dense),
// partial rotate-half RoPE (rotary_pct, default 1), an ungated MLP without biases.
void parseGptNeoxJapanese(const ConfigReader &r, ModelSpec &s) {
  parseGptNeox(r, s);
  s.prefix = "gpt_neox_japanese.";
  s.attn.qkv_bias = s.attn.o_bias = s.mlp.bias = false;
  s.names.o_bias = "dense_bias";
  for (LayerSpec &l : s.layers)
    l.parallel = l.parallel_norms = false;
  s.layers.back().o_bias = true;
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
  megatronNames(s, "attention");
  s.lm_head = "embed_out.weight";
  attentionBiases(r, s, true);
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
    j["intermediate_size"] = 4 * hiddenSize(r);
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

// CodeGen: GPT-J's block with one qkv_proj of four model-parallel shards, each [q | v | k] of a
// quarter of the heads (so the head count must be a multiple of 4).
void parseCodeGen(const ConfigReader &r, ModelSpec &s) {
  parseGptj(r, s);
  constexpr int64_t kShards = 4; // mp_num, fixed in transformers' CodeGenAttention
  if (s.attn.num_heads % kShards != 0)
    throw ConfigError(r.path("n_head"), "must be a multiple of 4: qkv_proj holds four shards of the heads");
  s.names.qkv = "qkv_proj";
  s.attn.qkv_shards = kShards;
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
  megatronNames(s, "self_attn");
  s.attn.qkv_bias = s.attn.o_bias = true;
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
  megatronNames(s, "self_attention", r.getBool("bias", false));
  s.attn.qkv_bias = s.attn.o_bias = s.mlp.bias;
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

// ALiBi's slopes as BLOOM computes them: for the largest power of two n <= heads, b^i for
// i = 1..n with b = 2^(-8/n); the remaining heads take every other power of 2^(-4/n) (the 2n
// series' odd ones). The bases are fp32, as torch.pow raises them.
std::vector<float> bloomAlibiSlopes(int64_t heads) {
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  auto powers = [](int64_t m, int64_t first, int64_t step, int64_t count, std::vector<float> &out) {
    float base = (float)std::pow(2.0, -std::pow(2.0, -(std::log2((double)m) - 3)));
    for (int64_t i = first; count-- > 0; i += step)
      out.push_back((float)std::pow((double)base, (double)i));
  };
  std::vector<float> slopes;
  powers(n, 1, 1, n, slopes);
  powers(2 * n, 1, 2, heads - n, slopes);
  return slopes;
}

// MPT's slopes (alibi_bias_max 8): with m the heads rounded up to a power of two, 2^-(8i/m) for
// i = 1..m; when m exceeds the heads, the odd-indexed ones first, then the even, cut to the heads.
std::vector<float> mptAlibiSlopes(int64_t heads) {
  int64_t m = 1;
  while (m < heads)
    m *= 2;
  std::vector<float> all;
  for (int64_t i = 1; i <= m; ++i)
    all.push_back((float)(1.0 / std::pow(2.0, (double)((float)i * (8.0f / (float)m)))));
  if (m == heads)
    return all;
  std::vector<float> slopes;
  for (int64_t i = 1; i < m; i += 2)
    slopes.push_back(all[i]);
  for (int64_t i = 0; i < m; i += 2)
    slopes.push_back(all[i]);
  slopes.resize(heads);
  return slopes;
}

nlohmann::json bloomKeys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"n_layer", "num_hidden_layers", 2}, {"n_head", "num_attention_heads", 8},
                                   {"n_embed", "hidden_size", 64}});
  if (!r.has("vocab_size"))
    j["vocab_size"] = 250880;
  j["intermediate_size"] = 4 * j["hidden_size"].get<int64_t>();
  return j;
}

// BLOOM: the embeddings pass word_embeddings_layernorm; transformer.h.N with one query_key_value
// interleaving q, k and v per head, dense, dense_h_to_4h -> gelu (tanh) -> dense_4h_to_h, biases
// and LayerNorms with biases everywhere, ALiBi (no RoPE). apply_residual_connection_post_layernorm
// (the normed input as the residual) is refused.
void parseBloom(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("apply_residual_connection_post_layernorm", false))
    throw ConfigError(r.path("apply_residual_connection_post_layernorm"),
                      "a residual taken after the norm is not supported; it must be false");
  layerNorms(s);
  s.prefix = "transformer.";
  Names &n = s.names;
  n.layers = "h";
  n.embed = "word_embeddings";
  n.embed_norm = "word_embeddings_layernorm";
  n.final_norm = "ln_f";
  megatronNames(s, "self_attention");
  s.embed_norm = true;
  s.attn.qkv_bias = s.attn.o_bias = true;
  s.attn.rope = false;
  s.attn.alibi_slopes = bloomAlibiSlopes(s.attn.num_heads);
  uniformWindowLayers(s, 0);
}

// MPT: d_model, n_heads, n_layers, max_seq_len; transformers' MptMLP is always 4 * d_model wide.
nlohmann::json mptKeys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"d_model", "hidden_size", 2048},
                                   {"n_heads", "num_attention_heads", 16},
                                   {"n_layers", "num_hidden_layers", 24},
                                   {"max_seq_len", "max_position_embeddings", 2048}});
  if (!r.has("vocab_size"))
    j["vocab_size"] = 50368;
  j["intermediate_size"] = 4 * j["hidden_size"].get<int64_t>();
  j["hidden_act"] = "gelu";
  return j;
}

// MPT as transformers 5.23 runs it: transformer.blocks.N with weight-only LayerNorms norm_1 /
// norm_2 / norm_f, one Wqkv ([q | k | v]) clamped to clip_qkv, out_proj, ffn.up_proj -> gelu ->
// ffn.down_proj, no biases, ALiBi with alibi_bias_max 8, the softmax scale attn_config.softmax_scale
// (null: 1/sqrt(d)). Settings the module ignores, so that a checkpoint with them is not the model
// transformers computes, are refused: another attn_type, qk_ln, alibi false, another
// alibi_bias_max or expansion_ratio, biases (no_bias false).
void parseMpt(const ConfigReader &r, ModelSpec &s) {
  nlohmann::json none = nlohmann::json::object();
  ConfigReader attn = r.has("attn_config") ? r.child("attn_config") : ConfigReader(none, "attn_config.");
  auto refuse = [](const ConfigReader &c, const char *key, const std::string &why) {
    throw ConfigError(c.path(key), why + " (transformers' MPT ignores it)");
  };
  if (attn.getString("attn_type", "multihead_attention") != "multihead_attention")
    refuse(attn, "attn_type", "only multihead_attention is supported");
  if (attn.getBool("qk_ln", false))
    refuse(attn, "qk_ln", "q/k LayerNorms are not supported");
  if (!attn.getBool("alibi", true))
    refuse(attn, "alibi", "must be true: MPT attends with ALiBi");
  if (attn.getNumber("alibi_bias_max", 8) != 8)
    refuse(attn, "alibi_bias_max", "must be 8");
  if (r.getNumber("expansion_ratio", 4) != 4)
    refuse(r, "expansion_ratio", "must be 4");
  if (!r.getBool("no_bias", true))
    refuse(r, "no_bias", "must be true: biases are not supported");
  s.norm_kind = NormKind::Layer;
  s.norm_weight = true;
  s.norm_bias = false;
  s.prefix = "transformer.";
  Names &n = s.names;
  n.layers = "blocks";
  n.embed = "wte";
  n.final_norm = "norm_f";
  n.input_norm = "norm_1";
  n.post_attn_norm = "norm_2";
  n.attn = "attn";
  n.qkv = "Wqkv";
  n.o_proj = "out_proj";
  ungatedMlp(s, "ffn", "up_proj", "down_proj", false);
  s.attn.rope = false;
  s.attn.alibi_slopes = mptAlibiSlopes(s.attn.num_heads);
  if (attn.has("softmax_scale"))
    s.attn.scale = attn.getNumber("softmax_scale", s.attn.scale);
  // Zero clamps nothing, as in transformers (`if self.clip_qkv:`).
  s.attn.clip_qkv = attn.getNumber("clip_qkv", 0.0);
  if (s.attn.clip_qkv < 0)
    throw ConfigError(attn.path("clip_qkv"), "must not be negative");
  uniformWindowLayers(s, 0);
}

// ModernBERT-decoder: the embeddings pass embeddings.norm; layers of attention (attn.q/k/v_proj,
// attn.Wo) and a gated MLP (mlp.Wi = [act half | gate half], mlp.Wo) with weight-only LayerNorms
// (norm_bias adds biases) attn_norm and mlp_norm, the first layer's attention reading its input
// unnormed; layer_types, else every global_attn_every_n_layers-th (default 3) layer full and the
// others sliding over local_attention / 2 positions; RoPE by layer type (global_rope_theta,
// default 160000, and local_rope_theta, default 10000); the head: final_norm, then lm_head.dense
// -> classifier_activation -> lm_head.norm, then the tied decoder with decoder_bias.
void parseModernBertDecoder(const ConfigReader &r, ModelSpec &s) {
  s.norm_kind = NormKind::Layer;
  s.norm_weight = true;
  s.norm_bias = r.getBool("norm_bias", false);
  Names &n = s.names;
  n.embed = "embeddings.tok_embeddings";
  n.embed_norm = "embeddings.norm";
  n.final_norm = "final_norm";
  n.input_norm = "attn_norm";
  n.post_attn_norm = "mlp_norm";
  n.attn = "attn";
  n.o_proj = "Wo";
  n.gate_up = "Wi";
  n.down = "Wo";
  s.embed_norm = true;
  attentionBiases(r, s);
  s.mlp.bias = r.getBool("mlp_bias", false);
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, s.num_layers);
  } else {
    int64_t every = r.getSize("global_attn_every_n_layers", 3);
    kinds = kindsWhere(s.num_layers, [&](int64_t i) { return i % every != 0; }, LayerKind::SlidingAttention,
                       LayerKind::FullAttention);
  }
  int64_t local = r.has("local_attention") ? r.requireSize("local_attention") : r.contains("local_attention") ? 0 : 128;
  setLayers(s, kinds, local / 2);
  s.layers.front().input_norm = false;
  s.head_transform = "lm_head";
  s.head_transform_bias = r.getBool("classifier_bias", false);
  s.head_transform_act = activation(r, "classifier_activation", "gelu");
  s.lm_head = "decoder.weight";
  if (r.getBool("decoder_bias", true))
    s.lm_head_bias = "decoder.bias";
}

// The class's RoPE dictionaries by layer type: rope_parameters' own (a flat rope_scaling updates
// both), each type's rope_theta defaulting to global_rope_theta / local_rope_theta.
RopeDicts modernBertDecoderRope(const ConfigReader &r) {
  nlohmann::json rp = r.has("rope_parameters") ? r.raw("rope_parameters") : nlohmann::json::object();
  if (!rp.is_object())
    throw ConfigError(r.path("rope_parameters"), "expected an object");
  RopeDicts out;
  for (auto [kind, key, theta] : {std::tuple<const char *, const char *, double>{"full_attention", "global_rope_theta", 160000.0},
                                  {"sliding_attention", "local_rope_theta", 10000.0}}) {
    nlohmann::json d = rp.contains(kind) && rp[kind].is_object() ? rp[kind] : nlohmann::json{{"rope_type", "default"}};
    if (r.has("rope_scaling") && r.raw("rope_scaling").is_object())
      d.update(r.raw("rope_scaling"));
    if (!d.contains("rope_theta") || d["rope_theta"].is_null())
      d["rope_theta"] = r.getNumber(key, theta);
    out[kind] = d;
  }
  return out;
}

// CTRL: n_embd, n_layer, n_head, n_positions, dff.
nlohmann::json ctrlKeys(const ConfigReader &r) {
  nlohmann::json j = aliasKeys(r, {{"n_embd", "hidden_size", 1280},
                                   {"n_layer", "num_hidden_layers", 48},
                                   {"n_head", "num_attention_heads", 16},
                                   {"n_positions", "max_position_embeddings", 256},
                                   {"dff", "intermediate_size", 8192}});
  if (!r.has("vocab_size"))
    j["vocab_size"] = 246534;
  return j;
}

// CTRL: token embeddings transformer.w x sqrt(n_embd) plus sinusoidal positions with the
// original Transformer's frequencies (1 / 10000^(2i / d), sines then cosines), layers of
// multi_head_attention (Wq, Wk, Wv, dense, all with biases) and ffn.0 -> relu -> ffn.2 behind
// layernorm1 and layernorm2 (eps 1e-6 whatever the config says), the final layernorm at
// layer_norm_epsilon, a tied head with a bias.
void parseCtrl(const ConfigReader &r, ModelSpec &s) {
  layerNorms(s);
  s.layer_norm_eps = 1e-6;
  s.prefix = "transformer.";
  Names &n = s.names;
  n.layers = "h";
  n.embed = "w";
  n.final_norm = "layernorm";
  n.input_norm = "layernorm1";
  n.post_attn_norm = "layernorm2";
  n.attn = "multi_head_attention";
  n.q_proj = "Wq";
  n.k_proj = "Wk";
  n.v_proj = "Wv";
  n.o_proj = "dense";
  ungatedMlp(s, "ffn", "0", "2");
  s.mlp.act = FfnActivation::Relu;
  s.attn.qkv_bias = s.attn.o_bias = true;
  s.attn.rope = false;
  s.embed_scale = std::sqrt((double)s.hidden_size);
  s.positions.kind = AbsolutePositions::Sinusoidal;
  s.positions.power = true;
  s.lm_head_bias = "lm_head.bias";
  uniformWindowLayers(s, 0);
}

} // namespace

FamilyTable gptFamilies() {
  auto gpt2 = Family{{.max_positions = 1024, .norm_eps = 1e-5, .tie_word_embeddings = true,
                      .act_key = "activation_function", .act = "gelu_new", .rope_free = true,
                      .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
                     parseGpt2, nullptr, gpt2Keys};
  return {
      {"gpt2", gpt2},
      {"gpt-sw3", gpt2},
      {"openai-gpt",
       {{.max_positions = 512, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .rope_free = true, .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseOpenAiGpt, nullptr, openAiGptKeys}},
      {"gpt_bigcode",
       {{.max_positions = 1024, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "gelu_pytorch_tanh", .rope_free = true, .norm_eps_key = "layer_norm_epsilon",
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseGptBigCode, nullptr, gptBigCodeKeys}},
      {"gpt_neo",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "gelu_new", .rope_free = true, .norm_eps_key = "layer_norm_epsilon",
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseGptNeo, nullptr, gptNeoKeys}},
      {"opt",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "relu", .rope_free = true, .norm_eps_key = "layer_norm_eps", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseOpt, nullptr, optKeys}},
      {"biogpt",
       {{.max_positions = 1024, .norm_eps = 1e-12, .tie_word_embeddings = true, .act = "gelu", .rope_free = true,
         .norm_eps_key = "layer_norm_eps", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseBioGpt, nullptr, [](const ConfigReader &r) { return aliasKeys(r, {}); }}},
      {"xglm",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "activation_function",
         .act = "gelu", .rope_free = true, .norm_eps_key = "layer_norm_eps", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseXglm, nullptr, xglmKeys}},
      {"gpt_neox",
       {{.max_positions = 2048, .norm_eps = 1e-5, .act = "gelu", .partial_rotary = true,
         .partial_rotary_factor = 0.25, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps",
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseGptNeox, gptNeoxRope,
        [](const ConfigReader &r) { return aliasKeys(r, {}); }}},
      {"gpt_neox_japanese",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu", .partial_rotary = true,
         .head_dim_unused = true, .norm_eps_key = "layer_norm_eps", .heads_divide_hidden = true,
         .layer_types = LayerListRule::Ignored},
        parseGptNeoxJapanese, [](const ConfigReader &r) { return neoxRope(r, 1.0); }, gptNeoxJapaneseKeys}},
      {"gptj",
       {{.max_positions = 2048, .norm_eps = 1e-5, .act_key = "activation_function", .act = "gelu_new",
         .partial_rotary = true, .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseGptj, gptjRope, gptjKeys}},
      {"codegen",
       {{.max_positions = 2048, .norm_eps = 1e-5, .act_key = "activation_function", .act = "gelu_new",
         .partial_rotary = true, .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseCodeGen, gptjRope, gptjKeys}},
      {"phi",
       {{.max_positions = 2048, .norm_eps = 1e-5, .act = "gelu_new", .partial_rotary = true,
         .partial_rotary_factor = 0.5, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps",
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parsePhi}},
      {"stablelm",
       {{.max_positions = 4096, .norm_eps = 1e-5, .act = "silu", .partial_rotary = true,
         .partial_rotary_factor = 0.25, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps", .kv_heads = 32,
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseStableLm}},
      {"starcoder2",
       {{.max_positions = 4096, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu_pytorch_tanh",
         .head_dim_unused = true, .norm_eps_key = "norm_epsilon", .kv_heads = 2,
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseStarcoder2}},
      {"persimmon",
       {{.max_positions = 16384, .norm_eps = 1e-5, .act = "relu2", .partial_rotary = true,
         .partial_rotary_factor = 0.5, .head_dim_unused = true, .norm_eps_key = "layer_norm_eps",
         .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parsePersimmon, nullptr, [](const ConfigReader &r) { return aliasKeys(r, {}); }}},
      {"nemotron",
       {{.max_positions = 4096, .norm_eps = 1e-5, .act = "relu2", .partial_rotary = true,
         .partial_rotary_factor = 0.5, .norm_eps_key = "norm_eps", .layer_types = LayerListRule::Ignored},
        parseNemotron}},
      {"bloom",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu_pytorch_tanh",
         .rope_free = true, .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseBloom, nullptr, bloomKeys}},
      {"mpt",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_free = true,
         .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseMpt, nullptr, mptKeys}},
      {"modernbert-decoder",
       {{.max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .act_key = "hidden_activation",
         .act = "gelu", .head_dim_unused = true, .norm_eps_key = "norm_eps",
         .heads_divide_hidden = true, .layer_types = LayerListRule::Own},
        parseModernBertDecoder, modernBertDecoderRope, [](const ConfigReader &r) { return aliasKeys(r, {}); }}},
      {"ctrl",
       {{.max_positions = 256, .norm_eps = 1e-6, .tie_word_embeddings = true, .rope_free = true,
         .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseCtrl, nullptr, ctrlKeys}},
      {"falcon",
       {{.max_positions = 2048, .norm_eps = 1e-5, .tie_word_embeddings = true, .head_dim_unused = true,
         .norm_eps_key = "layer_norm_epsilon", .heads_divide_hidden = true, .layer_types = LayerListRule::Ignored},
        parseFalcon, nullptr, falconKeys}},
  };
}

} // namespace cbc::hf
