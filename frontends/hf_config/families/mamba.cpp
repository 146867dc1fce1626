// Attention-free Mamba models: Mamba2, Mamba, Falcon-Mamba, and the original mamba_ssm config
// format of the official Mamba checkpoints.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/families/mamba_mixers.h"

namespace cbc::hf {

namespace {

using nlohmann::json;

// Embeddings, one norm and one mixer per block, norm_f, all under backbone.
void mambaBackbone(ModelSpec &s, LayerKind kind) {
  s.prefix = "backbone.";
  s.names.embed = "embeddings";
  s.names.input_norm = "norm";
  s.names.mamba = "mixer";
  s.names.final_norm = "norm_f";
  s.weight_aliases = {{"backbone.embeddings.", "backbone.embedding."}};
  std::vector<LayerKind> kinds(s.num_layers, kind);
  setLayers(s, kinds, 0);
  for (LayerSpec &l : s.layers)
    l.mlp = false;
}

void parseMamba2Family(const ConfigReader &r, ModelSpec &s) {
  mambaBackbone(s, LayerKind::Mamba2);
  parseMamba2(r, s, {"num_heads", "head_dim", "n_groups", "state_size", "conv_kernel", "use_conv_bias", "use_bias",
                     "layer_norm_epsilon", "expand", 128, 64, 8, 128, true, false});
  parseDtLimit(r, "time_step_limit", s.mamba2);
  if (r.getSize("expand", 2) * s.hidden_size != s.mamba2.intermediate())
    throw ConfigError(r.path("num_heads"), "num_heads * head_dim must equal expand * hidden_size");
}

const Mamba1Keys kMambaKeys = {"state_size",    "expand",   "conv_kernel",      "time_step_rank",
                               "use_conv_bias", "use_bias", "intermediate_size"};

void parseMamba(const ConfigReader &r, ModelSpec &s) {
  mambaBackbone(s, LayerKind::Mamba1);
  parseMamba1(r, s, kMambaKeys);
}

void parseFalconMamba(const ConfigReader &r, ModelSpec &s) {
  parseMamba(r, s);
  // Weightless RMS norms on dt, B and C (FalconMambaWeightlessRMSNorm).
  s.mamba1.dt_bc_norm = Mamba1Spec::DtBcNorm::Weightless;
  s.mamba1.dt_bc_eps = r.getNumber("mixer_rms_eps", 1e-6);
}

// mamba_ssm's features that transformers' Mamba classes do not have.
void rejectMambaSsmExtras(const ConfigReader &r) {
  if (r.has("attn_layer_idx") && !r.raw("attn_layer_idx").empty())
    throw ConfigError("attn_layer_idx", "mamba_ssm hybrids with attention layers are not supported");
  if (r.getInt("d_intermediate", 0) != 0)
    throw ConfigError("d_intermediate", "mamba_ssm blocks with an MLP are not supported");
  if (!r.getBool("rms_norm", true))
    throw ConfigError("rms_norm", "LayerNorm (rms_norm false) is not supported");
}

void translateMamba2Cfg(const ConfigReader &ssm, int64_t expand, int64_t hidden, json &out) {
  int64_t headdim = ssm.getSize("headdim", 64);
  if (ssm.has("d_ssm"))
    throw ConfigError("ssm_cfg.d_ssm", "a partial SSM width (d_ssm) is not supported");
  out["head_dim"] = headdim;
  out["num_heads"] = expand * hidden / headdim;
  out["n_groups"] = ssm.getSize("ngroups", 1);
  if (ssm.getBool("norm_before_gate", false))
    throw ConfigError("ssm_cfg.norm_before_gate", "true is not supported");
  if (ssm.getBool("D_has_hdim", false))
    throw ConfigError("ssm_cfg.D_has_hdim", "true (a D per head channel) is not supported");
  if (!ssm.getBool("rmsnorm", true))
    throw ConfigError("ssm_cfg.rmsnorm", "false (no gated norm) is not supported");
  if (ssm.has("dt_limit"))
    out["time_step_limit"] = ssm.raw("dt_limit");
}

} // namespace

// No model_type; d_model, n_layer and ssm_cfg. Rewritten with mamba_ssm's defaults; the
// checkpoints use the same tensor names (backbone.*, embedding aliased).
json translateMambaSsm(const json &c) {
  ConfigReader r(c);
  rejectMambaSsmExtras(r);
  ConfigReader ssm = r.has("ssm_cfg") ? r.child("ssm_cfg") : ConfigReader(json::object(), "ssm_cfg.");
  std::string layer = ssm.getString("layer", "Mamba1");
  if (layer != "Mamba1" && layer != "Mamba2")
    throw ConfigError("ssm_cfg.layer", "unknown layer '" + layer + "' (Mamba1 or Mamba2)");
  bool m2 = layer == "Mamba2";
  int64_t hidden = r.requireSize("d_model");
  int64_t vocab = r.requireSize("vocab_size"), multiple = r.getSize("pad_vocab_size_multiple", 8);
  json out = json::object();
  out["model_type"] = m2 ? "mamba2" : "mamba";
  out["hidden_size"] = hidden;
  out["num_hidden_layers"] = r.requireSize("n_layer");
  out["vocab_size"] = (vocab + multiple - 1) / multiple * multiple; // the embedding is padded
  out["tie_word_embeddings"] = r.getBool("tie_embeddings", true);
  out["layer_norm_epsilon"] = 1e-5;
  int64_t expand = ssm.getSize("expand", 2);
  out["expand"] = expand;
  out["conv_kernel"] = ssm.getSize("d_conv", 4);
  out["use_conv_bias"] = ssm.getBool("conv_bias", true);
  out["use_bias"] = ssm.getBool("bias", false);
  out["state_size"] = ssm.getSize("d_state", m2 ? 128 : 16);
  if (m2)
    translateMamba2Cfg(ssm, expand, hidden, out);
  else if (ssm.has("dt_rank"))
    out["time_step_rank"] = ssm.raw("dt_rank");
  out["eos_token_id"] = 0; // the GPT-NeoX tokenizer the state-spaces models use
  return out;
}

FamilyTable mambaFamilies() {
  const FamilyDefaults mamba1 = {.max_positions = 1 << 20, .norm_eps = 1e-5, .tie_word_embeddings = true,
                                 .attention_free = true, .norm_eps_key = "layer_norm_epsilon",
                                 .layer_types = LayerListRule::ReadOnly};
  return {
      {"mamba2",
       {{.max_positions = 1 << 20, .norm_eps = 1e-5, .attention_free = true, .norm_eps_key = "layer_norm_epsilon",
         .layer_types = LayerListRule::ReadOnly},
        parseMamba2Family}},
      {"mamba", {mamba1, parseMamba}},
      {"falcon_mamba", {mamba1, parseFalconMamba}},
  };
}

} // namespace cbc::hf
