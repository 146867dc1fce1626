// Decoders with multi-head latent attention (MLA): DeepSeek-V2/V3 and the families built on
// their attention. Each layer caches a normed latent and one roped key shared by all heads.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

#include <cmath>

namespace cbc::hf {

namespace {

// A config class's MLA sizes when config.json leaves them out.
struct MlaDefaults {
  int64_t q_lora_rank = 1536, kv_lora_rank = 512, nope = 128, rope = 64, v = 128;
};

// YaRN's attention-entropy correction: with a non-default RoPE and a truthy mscale_all_dim, the
// softmax scale is multiplied by mscale(factor, mscale_all_dim)^2 (yarn_apply_mscale).
double latentScale(const ConfigReader &r, int64_t qkHeadDim) {
  double scale = 1.0 / std::sqrt((double)qkHeadDim);
  RopeDicts dicts = ropeDictionaries(r, 10000.0);
  const nlohmann::json &d = dicts.at("full_attention");
  std::string type = d.value("rope_type", d.value("type", std::string("default")));
  double mscaleAllDim = d.contains("mscale_all_dim") && d["mscale_all_dim"].is_number()
                            ? d["mscale_all_dim"].get<double>() : 0.0;
  if (type == "default" || mscaleAllDim == 0)
    return scale;
  if (!d.contains("factor") || !d["factor"].is_number())
    throw ConfigError(ropePath(r, "full_attention", false) + "factor", "is required with mscale_all_dim");
  double factor = d["factor"].get<double>();
  double m = factor <= 1 ? 1.0 : 0.1 * mscaleAllDim * std::log(factor) + 1.0;
  return scale * m * m;
}

// The MLA sizes, the softmax scale and the rope pairing; every layer is latent attention.
void parseMla(const ConfigReader &r, ModelSpec &s, const MlaDefaults &d, bool interleaveByDefault) {
  MlaSpec &m = s.mla;
  // An explicit null q_lora_rank means q_proj (DeepSeek-V2-Lite).
  m.q_lora_rank = r.contains("q_lora_rank") && !r.has("q_lora_rank") ? 0 : r.getSize("q_lora_rank", d.q_lora_rank);
  m.kv_lora_rank = r.getSize("kv_lora_rank", d.kv_lora_rank);
  m.nope_dim = r.getSize("qk_nope_head_dim", d.nope);
  m.rope_dim = r.getSize("qk_rope_head_dim", d.rope);
  m.v_dim = r.getSize("v_head_dim", d.v);
  m.bias = r.getBool("attention_bias", false);
  if (m.rope_dim % 2 != 0)
    throw ConfigError(r.path("qk_rope_head_dim"), "must be even");
  s.attn.head_dim = m.rope_dim; // the rotated part's heads
  s.attn.num_kv_heads = s.attn.num_heads;
  s.attn.scale = latentScale(r, m.nope_dim + m.rope_dim);
  s.attn.rope_pairing = r.getBool("rope_interleave", interleaveByDefault) ? "interleaved" : "half";
  for (LayerSpec &l : s.layers)
    l.kind = LayerKind::LatentAttention;
}

// Youtu: DeepSeek-V3's attention in a dense Llama block.
void parseYoutu(const ConfigReader &r, ModelSpec &s) { parseMla(r, s, {}, true); }

// MiniCPM3: rotate-half MLA, a scaled embedding (rounded to the weight dtype), residual
// branches times scale_depth / sqrt(L) and the final hidden state divided by
// hidden_size / dim_model_base before the head.
void parseMiniCpm3(const ConfigReader &r, ModelSpec &s) {
  parseMla(r, s, {.q_lora_rank = 768, .kv_lora_rank = 256, .nope = 64, .rope = 32, .v = s.hidden_size / s.attn.num_heads},
           false);
  s.attn.rope_pairing = "half"; // MiniCPM3 has no rope_interleave
  s.embed_scale = r.getNumber("scale_emb", 12);
  s.embed_scale_rounded = true;
  double depth = r.has("scale_depth") ? r.getNumber("scale_depth", 1.4) : std::sqrt((double)s.num_layers);
  s.residual_scale = depth / std::sqrt((double)s.num_layers);
  int64_t base = r.getSize("dim_model_base", s.hidden_size);
  s.logits_scale = (double)base / (double)s.hidden_size;
}

} // namespace

FamilyTable mlaFamilies() {
  return {
      {"youtu", {{.max_positions = 131072, .tie_word_embeddings = true}, parseYoutu}},
      {"minicpm3", {{.max_positions = 32768, .norm_eps = 1e-5, .tie_word_embeddings = true}, parseMiniCpm3}},
  };
}

} // namespace cbc::hf
