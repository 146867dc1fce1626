// Hunyuan decoders: hunyuan_v1_dense and hunyuan_v1_moe (Hunyuan-A13B).
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

#include <algorithm>
#include <cmath>

namespace cbc::hf {

namespace {

// The config classes' head_dim defaults to None, which the attention cannot size heads from.
void requireHeadDim(const ConfigReader &r) {
  if (!r.has("head_dim"))
    throw ConfigError(r.path("head_dim"), "is required: the Hunyuan config classes have no default for it");
}

// Llama attention (attention_bias on q/k/v and o) with per-head RMS norms of q and k, named
// query_layernorm and key_layernorm, applied after RoPE.
void hunyuanAttention(const ConfigReader &r, ModelSpec &s) {
  requireHeadDim(r);
  attentionBiases(r, s);
  s.attn.qk_norm = s.attn.qk_norm_after_rope = true;
  s.names.q_norm = "query_layernorm";
  s.names.k_norm = "key_layernorm";
  uniformWindowLayers(s, 0);
}

void parseHunyuanDense(const ConfigReader &r, ModelSpec &s) { hunyuanAttention(r, s); }

// A list-valued key must hold one value for every layer: cbc routes every layer alike.
int64_t uniformSize(const ConfigReader &r, const char *key, int64_t fallback) {
  if (!r.has(key) || !r.raw(key).is_array())
    return r.getSize(key, fallback);
  std::vector<int64_t> values = r.getIntList(key);
  if (values.empty() || std::any_of(values.begin(), values.end(), [&](int64_t v) { return v != values[0]; }))
    throw ConfigError(r.path(key), "must be one value (or a list of equal values): cbc routes every layer alike");
  if (values[0] <= 0)
    throw ConfigError(r.path(key), "must be positive");
  return values[0];
}

// Hunyuan-MoE: MoE on every layer, a softmax router mlp.gate.wg (fp32 in the checkpoint) over
// per-expert MLPs of intermediate_size, always renormalised, plus one shared MLP (shared_mlp)
// of the same width. HunYuanMoEV1Config reads top-k from moe_topk (num_experts_per_tok is its
// alias) and ignores the remote-code keys moe_intermediate_size and num_shared_expert.
void parseHunyuanMoe(const ConfigReader &r, ModelSpec &s) {
  hunyuanAttention(r, s);
  MoeSpec &m = s.moe;
  const char *count = !r.has("num_experts") && r.has("num_local_experts") ? "num_local_experts" : "num_experts";
  if (r.has(count) && r.raw(count).is_array())
    throw ConfigError(r.path(count), "must be one number: transformers sizes the experts from it");
  m.num_experts = r.getSize(count, 1);
  const char *topKey = !r.has("moe_topk") && r.has("num_experts_per_tok") ? "num_experts_per_tok" : "moe_topk";
  m.top_k = uniformSize(r, topKey, 1);
  if (m.top_k > m.num_experts)
    throw ConfigError(r.path(topKey), "exceeds num_experts");
  m.intermediate = s.mlp.intermediate;
  m.score = ExpertScoring::Softmax;
  m.renorm = true;
  m.act = s.mlp.act;
  m.shared_intermediate = s.mlp.intermediate;
  m.names = perExpertNames(s.names, "gate.wg", /*gated=*/true);
  gatedSharedExpert(m.names, "mlp.shared_mlp");
  allLayersMoe(s);
}

// Released Hunyuan configs label their RoPE "dynamic" with a fixed alpha, which the models
// turn into static NTK scaling: default RoPE over the base rope_theta * alpha^(d / (d - 2)).
RopeDicts hunyuanRopeDicts(const ConfigReader &r) {
  RopeDicts dicts = ropeDictionaries(r, 10000.0);
  for (auto &[kind, d] : dicts) {
    std::string key = d.contains("rope_type") ? "rope_type" : "type";
    bool alpha = d.contains("alpha") && d["alpha"].is_number() && d["alpha"].get<double>() != 0;
    if (d.value(key, std::string("default")) != "dynamic" || !alpha)
      continue;
    if (!r.has("head_dim"))
      continue; // refused by requireHeadDim
    double dim = (double)r.requireSize("head_dim");
    if (dim <= 2)
      throw ConfigError(r.path("head_dim"), "must exceed 2 for NTK-alpha RoPE");
    double base = d["rope_theta"].get<double>() * std::pow(d["alpha"].get<double>(), dim / (dim - 2));
    d = {{"rope_type", "default"}, {"rope_theta", base}};
  }
  return dicts;
}

} // namespace

FamilyTable hunyuanFamilies() {
  return {
      {"hunyuan_v1_dense", {{.max_positions = 2048, .norm_eps = 1e-5}, parseHunyuanDense, hunyuanRopeDicts}},
      {"hunyuan_v1_moe", {{.max_positions = 2048, .norm_eps = 1e-5}, parseHunyuanMoe, hunyuanRopeDicts}},
  };
}

} // namespace cbc::hf
