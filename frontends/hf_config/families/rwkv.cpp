// RWKV (v4): attention-free layers of a time mix (the WKV recurrence over token-shifted keys and
// values) and a channel mix, LayerNorms with biases. tools/oracle/SEMANTICS_RWKV.md has the
// transformers lines.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

namespace cbc::hf {

namespace {

void parseRwkv(const ConfigReader &r, ModelSpec &s) {
  s.prefix = "rwkv.";
  s.names.layers = "blocks";
  s.names.embed = "embeddings";
  s.names.input_norm = "ln1";
  s.names.post_attn_norm = "ln2";
  s.names.attn = "attention";
  s.names.mlp = "feed_forward";
  s.names.final_norm = "ln_out";
  s.lm_head = "head.weight";
  s.norm_kind = NormKind::Layer;
  s.norm_weight = s.norm_bias = true;
  // The blocks' LayerNorms read layer_norm_epsilon; ln_out is nn.LayerNorm's default 1e-5.
  s.layer_norm_eps = r.getNumber("layer_norm_epsilon", 1e-5);
  s.norm_eps = 1e-5;
  // RwkvConfig saves max_position_embeddings as context_length (its attribute_map).
  if (r.has("context_length"))
    s.max_positions = r.requireSize("context_length");
  RwkvSpec &w = s.rwkv;
  w.attention_size = r.has("attention_hidden_size") ? r.requireSize("attention_hidden_size") : s.hidden_size;
  w.intermediate = r.has("intermediate_size") ? r.requireSize("intermediate_size") : 4 * s.hidden_size;
  // transformers rescales in inference when rescale_every > 0 and leaves the model as is otherwise.
  w.rescale_every = std::max<int64_t>(r.getInt("rescale_every", 6), 0);
  setLayers(s, std::vector<LayerKind>(s.num_layers, LayerKind::Rwkv), 0);
  for (LayerSpec &l : s.layers)
    l.mlp = false; // the channel mix is the layer's own (lower/rwkv.cpp)
}

} // namespace

FamilyTable rwkvFamilies() {
  return {{"rwkv",
           {{.max_positions = 1024, .norm_eps = 1e-5, .attention_free = true, .norm_eps_key = "layer_norm_epsilon",
             .intermediate_optional = true, .layer_types = LayerListRule::Ignored},
            parseRwkv}}};
}

} // namespace cbc::hf
