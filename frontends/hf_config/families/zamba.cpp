// Zamba and Zamba2: Mamba layers and hybrid layers, which run a shared attention block and then
// the layer's own Mamba mixer.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mamba_mixers.h"

#include <cmath>

namespace cbc::hf {

namespace {

// The layers from layer_types (which the config class maps onto layers_block_type, and which
// wins when both are given), layers_block_type, or the config class's default pattern. As
// transformers 5.23 validates, the list has num_hidden_layers entries (the class's default
// when absent) of the allowed kinds; mamba is the legacy name of linear_attention.
void zambaLayers(const ConfigReader &r, ModelSpec &s, LayerKind mamba, const std::vector<std::string> &fallback,
                 int64_t defaultLayers) {
  const char *key = r.has("layer_types") ? "layer_types" : "layers_block_type";
  std::vector<std::string> types = r.has(key) ? r.getStringList(key) : fallback;
  if (types.empty())
    throw ConfigError(r.path(key), "names no layers");
  s.num_layers = r.getSize("num_hidden_layers", defaultLayers);
  checkLayerCount(r, key, types.size(), s.num_layers);
  std::vector<LayerKind> kinds;
  for (const std::string &t : types) {
    if (t == "mamba" || t == "linear_attention")
      kinds.push_back(mamba);
    else if (t == "hybrid")
      kinds.push_back(LayerKind::SharedBlock);
    else
      throw ConfigError(r.path(key), "unknown layer type '" + t + "' (linear_attention, mamba or hybrid)");
  }
  setLayers(s, kinds, 0);
  for (LayerSpec &l : s.layers)
    l.mlp = false;
  s.attn.qkv_bias = s.attn.o_bias = false;
  s.names.mamba = "mamba";
  s.names.final_norm = "final_layernorm";
  s.shared.tied = s.tie_word_embeddings; // HF ties the blocks through the tied-weights keys
  s.shared.mamba = mamba;
}

// The shared attention's head size over the [h | embeddings] input of width 2H, and its
// (D / 2)^-1/2 scale.
void zambaAttention(const ConfigReader &r, ModelSpec &s, int64_t headDim) {
  s.attn.head_dim = headDim;
  if (headDim <= 0)
    throw ConfigError(r.path("num_attention_heads"), "gives an empty attention head");
  s.attn.scale = 1.0 / std::sqrt((double)headDim / 2.0);
}

std::vector<std::string> zambaDefaultLayers(const ConfigReader &r) {
  int64_t layers = r.getSize("num_hidden_layers", 76);
  int64_t period = r.getSize("attn_layer_period", 6), offset = r.getInt("attn_layer_offset", 4);
  std::vector<std::string> types = {"linear_attention", "linear_attention", "hybrid"};
  for (int64_t i = 0; i + 3 < layers; ++i)
    types.push_back(i % period == offset ? "hybrid" : "linear_attention");
  return types;
}

// attention_head_dim, or head_dim, which the config classes map onto it (attribute_map) and
// which wins where both are given, as transformers 5.23 applies it after the fields.
const char *zambaHeadDimKey(const ConfigReader &r) { return r.has("head_dim") ? "head_dim" : "attention_head_dim"; }

// The shared block reads [h | embeddings], 2 * hidden_size wide, whatever attention_hidden_size says.
void zambaBlockWidth(const ConfigReader &r, const ModelSpec &s) {
  if (r.has("attention_hidden_size") && r.requireSize("attention_hidden_size") != 2 * s.hidden_size)
    throw ConfigError(r.path("attention_hidden_size"), "must be 2 * hidden_size (the block reads [h | embeddings])");
}

void parseZamba(const ConfigReader &r, ModelSpec &s) {
  zambaLayers(r, s, LayerKind::Mamba1, zambaDefaultLayers(r), 76);
  zambaBlockWidth(r, s);
  zambaAttention(r, s, r.getSize(zambaHeadDimKey(r), 2 * s.hidden_size / s.attn.num_heads));
  s.attn.rope = false;
  parseMamba1(r, s, {"mamba_d_state", "mamba_expand", "mamba_d_conv", "mamba_dt_rank", "mamba_conv_bias",
                     "mamba_proj_bias"});
  Mamba1Spec &m = s.mamba1;
  m.heads = r.getSize("n_mamba_heads", 2);
  if (m.intermediate % m.heads != 0)
    throw ConfigError(r.path("n_mamba_heads"), "must divide mamba_expand * hidden_size (" +
                                                   std::to_string(m.intermediate) + ")");
  m.groups = m.heads; // each head's channels read its own B and C
  requireSilu(r, "hidden_mamba_act", "the Mamba conv");
  s.shared.module = "shared_transf";
}

// Zamba2Config's default pattern (54 layers).
std::vector<std::string> zamba2DefaultLayers() {
  std::vector<std::string> types = {"linear_attention"};
  for (int i = 0; i < 7; ++i) {
    types.insert(types.end(), 5, "linear_attention");
    types.push_back("hybrid");
  }
  for (int tail : {4, 3, 2}) {
    types.insert(types.end(), tail, "linear_attention");
    if (tail != 2)
      types.push_back("hybrid");
  }
  return types;
}

void zamba2Mamba(const ConfigReader &r, ModelSpec &s) {
  parseMamba2(r, s, {"n_mamba_heads", "mamba_headdim", "mamba_ngroups", "mamba_d_state", "mamba_d_conv",
                     "use_conv_bias", "add_bias_linear", "rms_norm_eps", "mamba_expand", 8, 0, 1, 64, true, false});
  Mamba2Spec &m = s.mamba2;
  int64_t width = r.getSize("mamba_expand", 2) * s.hidden_size;
  if (width % m.heads != 0)
    throw ConfigError(r.path("n_mamba_heads"), "must divide mamba_expand * hidden_size (" + std::to_string(width) + ")");
  // An explicit mamba_headdim wins in transformers, but the mixer's projections are
  // mamba_expand * hidden_size wide, so only the derived value builds a model.
  if (r.has("mamba_headdim") && !isAuto(r, "mamba_headdim") && r.requireSize("mamba_headdim") != width / m.heads)
    throw ConfigError(r.path("mamba_headdim"), "must be mamba_expand * hidden_size / n_mamba_heads (" +
                                                   std::to_string(width / m.heads) + ")");
  m.head_dim = width / m.heads;
  m.conv_bias = true; // Zamba2's conv always has a bias
  m.norm_eps = 1e-5;  // and its gated norm a fixed eps
  m.dt_min = timeStepMin(r, "time_step_min");
  m.dt_max = INFINITY;
}

// Zamba2's blocks alternate over num_mem_blocks, with LoRA-style adapters per hybrid layer.
void zamba2SharedBlocks(const ConfigReader &r, ModelSpec &s) {
  SharedBlockSpec &b = s.shared;
  b.module = "shared_transformer";
  b.blocks = r.getSize("num_mem_blocks", 1);
  b.fused_gate_up = true;
  b.mlp_bias = r.getBool("add_bias_linear", false);
  b.adapter_rank = r.getSize("adapter_rank", 128);
  b.attn_adapters = r.getBool("use_shared_attention_adapter", false);
  b.mlp_adapters = true; // Zamba2MLP always builds its gate_up adapters
  if (b.attn_adapters && s.attn.num_kv_heads != s.attn.num_heads)
    throw ConfigError(r.path("num_key_value_heads"),
                      "must equal num_attention_heads with use_shared_attention_adapter (the adapters are 2 * hidden_size wide)");
}

void parseZamba2(const ConfigReader &r, ModelSpec &s) {
  zambaLayers(r, s, LayerKind::Mamba2, zamba2DefaultLayers(), 54);
  // Zamba2Config derives attention_hidden_size, attention_head_dim and mamba_headdim, but
  // transformers 5.23 applies config.json's keys after __post_init__, so explicit ones win:
  // attention_head_dim (or head_dim, its attribute_map alias) sets the shared block's heads;
  // the other two must agree with what the modules are built from.
  zambaBlockWidth(r, s);
  const char *headKey = zambaHeadDimKey(r);
  if (!r.has(headKey) && (2 * s.hidden_size) % s.attn.num_heads != 0)
    throw ConfigError(r.path("num_attention_heads"), "must divide 2 * hidden_size");
  zambaAttention(r, s, r.getSize(headKey, 2 * s.hidden_size / s.attn.num_heads));
  s.attn.rope = r.getBool("use_mem_rope", false);
  if (r.getBool("use_long_context", false))
    s.max_positions = 16384; // all use_long_context does in transformers 5.23 (no RoPE rescaling)
  if (s.mlp.intermediate == 0)
    s.mlp.intermediate = 4 * s.hidden_size;
  zamba2Mamba(r, s);
  zamba2SharedBlocks(r, s);
}

} // namespace

FamilyTable zambaFamilies() {
  return {
      {"zamba",
       {{.max_positions = 4096, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu",
         .layers_derived = true, .kv_heads = 16, .layers_block_type = LayerListRule::Validated},
        parseZamba}},
      {"zamba2",
       {{.max_positions = 4096, .norm_eps = 1e-5, .tie_word_embeddings = true, .act = "gelu",
         .layers_derived = true, .intermediate_optional = true, .layers_block_type = LayerListRule::Validated},
        parseZamba2}},
  };
}

} // namespace cbc::hf
