// Llama 4's text decoder (llama4_text; llama4 runs it text-only through its text_config):
// chunked attention on the RoPE layers, full NoPE layers with attention temperature tuning,
// weightless q/k norms after RoPE, complex-pair RoPE, and a top-1 sigmoid MoE that scales the
// expert's input, beside a shared expert.
#include "frontends/hf_config/families/families.h"
#include "frontends/hf_config/families/helpers.h"
#include "frontends/hf_config/parse_config.h"

namespace cbc::hf {

namespace {

// layer_types (full_attention / chunked_attention), else chunked exactly where RoPE is used.
void llama4Layers(const ConfigReader &r, ModelSpec &s) {
  std::vector<bool> rope = ropeLayers(r, s.num_layers);
  std::vector<std::string> types = r.getStringList("layer_types");
  if (!types.empty())
    checkLayerCount(r, "layer_types", types.size(), s.num_layers);
  int64_t chunk = r.has("attention_chunk_size") ? r.requireSize("attention_chunk_size") : 0;
  for (int64_t i = 0; i < s.num_layers; ++i) {
    std::string type = types.empty() ? (rope[i] ? "chunked_attention" : "full_attention") : types[i];
    if (type != "full_attention" && type != "chunked_attention")
      throw ConfigError(r.path("layer_types"),
                        "unsupported layer type '" + type + "' (full_attention or chunked_attention)");
    if (type == "chunked_attention" && chunk == 0)
      throw ConfigError(r.path("attention_chunk_size"), "is required by chunked_attention layers");
    LayerSpec &l = s.layers[i];
    l.kind = LayerKind::FullAttention;
    l.nope = !rope[i];
    l.chunk = type == "chunked_attention" ? chunk : 0;
  }
}

// moe_layers, else every interleave_moe_layer_step-th layer (counting from step - 1).
void llama4MoeLayers(const ConfigReader &r, ModelSpec &s) {
  if (r.has("moe_layers")) {
    for (int64_t i : r.getIntList("moe_layers")) {
      if (i < 0 || i >= s.num_layers)
        throw ConfigError(r.path("moe_layers"), "names layer " + std::to_string(i) + ", which does not exist");
      s.layers[i].moe = true;
    }
    return;
  }
  int64_t step = r.getSize("interleave_moe_layer_step", 1);
  for (int64_t i = step - 1; i < s.num_layers; i += step)
    s.layers[i].moe = true;
}

void parseLlama4Text(const ConfigReader &r, ModelSpec &s) {
  attentionBiases(r, s);
  s.attn.rope_pairing = RotaryPairing::Interleaved;
  s.attn.qk_l2_norm = r.getBool("use_qk_norm", true);
  if (r.getBool("attn_temperature_tuning", true)) {
    s.attn.temperature_beta = r.getNumber("attn_scale", 0.1);
    s.attn.temperature_period = r.getSize("floor_scale", 8192);
  }
  llama4Layers(r, s);
  s.names.mlp = "feed_forward";
  MoeSpec &m = s.moe;
  parseExperts(r, {.count = expertCountKey(r, "num_local_experts"), .experts = 16, .top_k = 1,
                   .count_name = "num_local_experts"},
               m);
  m.intermediate = s.mlp.intermediate; // intermediate_size: the experts' and the shared expert's width
  m.shared_intermediate = m.intermediate;
  m.score = ExpertScoring::Sigmoid;
  m.scale_input = true;
  s.mlp.intermediate = r.getSize("intermediate_size_mlp", 16384);
  ExpertNaming &n = m.names;
  n.router = "feed_forward.router.weight";
  n.fused = n.transposed = true; // gate_up_proj [E, H, 2I] (gate then up), down_proj [E, I, H]
  n.experts.gate_up = {"feed_forward.experts.gate_up_proj"};
  n.experts.down = {"feed_forward.experts.down_proj"};
  gatedSharedExpert(n, "feed_forward.shared_expert");
  llama4MoeLayers(r, s);
}

} // namespace

FamilyTable llama4Families() {
  return {
      {"llama4_text",
       {{.head_dim = 128, .max_positions = 4096 * 32, .norm_eps = 1e-5, .rope_theta = 500000.0}, parseLlama4Text}},
  };
}

} // namespace cbc::hf
