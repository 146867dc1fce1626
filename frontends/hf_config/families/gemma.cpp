// Gemma, Gemma 2, VaultGemma and Gemma 3 (text): (1 + w) norms and scaled embeddings; from
// Gemma 2 on, alternating sliding and global attention and (but for VaultGemma) sandwich norms.
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

} // namespace

FamilyTable gemmaFamilies() {
  return {
      {"gemma", {{.head_dim = 256, .max_positions = 8192, .tie_word_embeddings = true, .act = "gelu_pytorch_tanh"}, parseGemma}},
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
  };
}

} // namespace cbc::hf
