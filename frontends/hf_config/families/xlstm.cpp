// xLSTM (xLSTM-7B style, transformers 5.23's xLSTMForCausalLM): pre-norm blocks of an mLSTM layer
// (a matrix memory per head) and a SwiGLU feed-forward block, no positions and no attention.
// tools/oracle/SEMANTICS_RECURRENT.md part B has the transformers lines.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

#include <cmath>

namespace cbc::hf {

namespace {

// xLSTMConfig's defaults for the two keys it pairs with another spelling.
constexpr int64_t kDefaultHidden = 4096, kDefaultLayers = 32;

// The model builds its embeddings embedding_dim wide and num_blocks blocks, everything else from
// hidden_size and num_hidden_layers; each pair defaults to the other, but hidden_size and
// num_hidden_layers have class defaults of their own, so a config stating only embedding_dim
// keeps hidden_size 4096. A pair that disagrees builds a model that cannot run: refused.
nlohmann::json xlstmKeys(const ConfigReader &r) {
  nlohmann::json j = r.objectToCopy();
  auto pair = [&](const char *name, const char *other, int64_t fallback) {
    int64_t value = r.has(name) ? r.requireSize(name) : fallback;
    if (r.has(other) && r.requireSize(other) != value)
      throw ConfigError(r.path(other), "is " + std::to_string(r.requireSize(other)) + " but " + name + " is " +
                                           std::to_string(value) + (r.has(name) ? "" : " (the class default)") +
                                           "; xLSTM uses both, so they must agree");
    j[name] = value;
  };
  pair("hidden_size", "embedding_dim", kDefaultHidden);
  pair("num_hidden_layers", "num_blocks", kDefaultLayers);
  return j;
}

// int(hidden_size * factor), as the layer sizes q/k and v (the config's qk_dim and v_dim round
// up to 64 and size only transformers' own cache).
int64_t factorWidth(const ConfigReader &r, const char *key, double fallback, int64_t hidden, int64_t heads) {
  double f = r.getNumber(key, fallback);
  int64_t width = f > 0 ? (int64_t)((double)hidden * f) : 0;
  if (width <= 0 || width % heads != 0)
    throw ConfigError(r.path(key), "gives a width of " + std::to_string(width) + " (int(hidden_size * " + key +
                                       ")), which must be a positive multiple of num_heads (" +
                                       std::to_string(heads) + ")");
  return width;
}

void parseXlstm(const ConfigReader &r, ModelSpec &s) {
  s.prefix = "backbone.";
  s.names.layers = "blocks";
  s.names.embed = "embeddings";
  s.names.input_norm = "norm_mlstm";
  s.names.post_attn_norm = "norm_ffn";
  s.names.attn = "mlstm_layer";
  s.names.mlp = "ffn";
  s.names.final_norm = "out_norm";
  s.lm_head = "lm_head.weight";
  if (r.getBool("use_bias", false))
    throw ConfigError(r.path("use_bias"), "is true; cbc runs xLSTM without the optional biases only");
  std::string mode = r.getString("mode", "inference");
  if (mode != "inference" && mode != "train") // both run the same cell; train only refuses ragged lengths
    throw ConfigError(r.path("mode"), "must be \"inference\" or \"train\", not \"" + mode + "\"");
  XlstmSpec &w = s.xlstm;
  w.heads = r.getSize("num_heads", 8);
  w.qk_dim = factorWidth(r, "qk_dim_factor", 0.5, s.hidden_size, w.heads);
  w.v_dim = factorWidth(r, "v_dim_factor", 1.0, s.hidden_size, w.heads);
  w.gate_cap = r.getNumber("gate_soft_cap", 15.0);
  w.eps = r.getNumber("eps", 1e-6);
  if (!(w.gate_cap > 0))
    throw ConfigError(r.path("gate_soft_cap"), "must be positive");
  if (!(w.eps >= 0))
    throw ConfigError(r.path("eps"), "must not be negative");
  s.final_softcap = r.getNumber("output_logit_soft_cap", 30.0);
  if (!(s.final_softcap >= 0))
    throw ConfigError(r.path("output_logit_soft_cap"), "must not be negative");
  // round_up_to_next_multiple_of(hidden_size * ffn_proj_factor, ffn_round_up_to_multiple_of).
  double factor = r.getNumber("ffn_proj_factor", 2.667);
  int64_t multiple = r.getSize("ffn_round_up_to_multiple_of", 64);
  double width = std::floor(((double)s.hidden_size * factor + (double)(multiple - 1)) / (double)multiple) * multiple;
  if (!(width >= 1))
    throw ConfigError(r.path("ffn_proj_factor"), "gives an empty feed-forward block");
  s.mlp.intermediate = (int64_t)width;
  s.mlp.act = FfnActivation::Silu;
  std::string weights = r.getString("weight_mode", "single");
  if (weights == "single") {
    w.qkvo = {"q.weight", "k.weight", "v.weight", "ogate_preact.weight"};
    w.gates = {"igate_preact.weight", "fgate_preact.weight"};
    s.names.gate = "proj_up_gate";
    s.names.up = "proj_up";
  } else if (weights == "fused") {
    w.qkvo = {"qkv_opreact.weight"};
    w.gates = {"ifgate_preact.weight"};
    s.names.gate_up = "proj_up_gate_z";
  } else {
    throw ConfigError(r.path("weight_mode"), "must be \"single\" or \"fused\", not \"" + weights + "\"");
  }
  s.names.down = "proj_down";
  setLayers(s, std::vector<LayerKind>(s.num_layers, LayerKind::Mlstm), 0);
}

} // namespace

FamilyTable xlstmFamilies() {
  return {{"xlstm",
           {{.max_positions = 1 << 20, .norm_eps = 1e-6, .attention_free = true, .norm_eps_key = "norm_eps",
             .intermediate_optional = true, .layer_types = LayerListRule::Ignored},
            parseXlstm, nullptr, xlstmKeys}}};
}

} // namespace cbc::hf
