// Cohere decoders: cohere (Command-R) and cohere2 (Command-R7B, Command-A): parallel blocks over
// one LayerNorm (weight, no bias), RoPE on interleaved pairs, logits scaled by logit_scale.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

namespace cbc::hf {

namespace {

// x + attn(LN(x)) + mlp(LN(x)) with one input_layernorm per layer, a bias-free LayerNorm
// (layer_norm_eps) there and before the head, q/k/v/o biases from attention_bias.
void cohereLayout(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.norm_kind = NormKind::Layer;
  s.norm_bias = false;
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  s.logits_scale = r.getNumber("logit_scale", 0.0625);
  for (LayerSpec &l : s.layers)
    l.parallel = true;
}

// Command-R. use_qk_norm (Command-R+) norms q and k with a LayerNorm holding one weight row per
// head, which cbc does not lower: refused.
void parseCohere(const ConfigReader &r, ModelSpec &s) {
  if (r.getBool("use_qk_norm", false))
    throw ConfigError(r.path("use_qk_norm"), "per-head LayerNorms of q and k are not supported");
  uniformWindowLayers(s, 0);
  cohereLayout(r, s);
}

// Command-R7B: sliding layers (window sliding_window, class default 4096) from layer_types, else
// all but every sliding_window_pattern-th (default 4); only sliding layers rotate, so the full
// layers are NoPE, and without a window no layer rotates (nor slides).
void parseCohere2(const ConfigReader &r, ModelSpec &s) {
  int64_t window = windowOrClassDefault(r, 4096);
  std::vector<LayerKind> kinds;
  if (r.has("layer_types")) {
    kinds = explicitLayerTypes(r, s.num_layers);
  } else {
    int64_t pattern = r.getSize("sliding_window_pattern", 4);
    kinds = kindsWhere(s.num_layers, [&](int64_t i) { return (i + 1) % pattern != 0; }, LayerKind::SlidingAttention,
                       LayerKind::FullAttention);
  }
  setLayers(s, kinds, window);
  for (LayerSpec &l : s.layers)
    l.nope = window == 0 || l.kind != LayerKind::SlidingAttention;
  cohereLayout(r, s);
}

} // namespace

FamilyTable cohereFamilies() {
  return {
      {"cohere",
       {{.max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 500000.0,
         .norm_eps_key = "layer_norm_eps"},
        parseCohere}},
      {"cohere2",
       {{.max_positions = 8192, .norm_eps = 1e-5, .tie_word_embeddings = true, .rope_theta = 10000.0,
         .norm_eps_key = "layer_norm_eps"},
        parseCohere2}},
  };
}

} // namespace cbc::hf
