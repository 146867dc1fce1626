// The MLA attention and the DeepSeek-style MoE that several family groups build on (mla.cpp,
// kda.cpp).
#ifndef CBC_FRONTENDS_HF_CONFIG_FAMILIES_MLA_H
#define CBC_FRONTENDS_HF_CONFIG_FAMILIES_MLA_H

#include "frontends/hf_config/family_registry.h"

#include <functional>
#include <optional>

namespace cbc::hf {

// A config class's MLA sizes when config.json leaves them out.
// What the config class does with an explicit head_dim (transformers 5.23 applies it after
// __post_init__, which sets head_dim = qk_rope_head_dim).
enum class MlaHeadDim {
  Ignored,       // __post_init__ overwrites it, or nothing reads it
  MustMatchRope, // the RoPE rotates head_dim features of the rope part: any other value breaks the model
  IsRope,        // attribute_map makes it qk_rope_head_dim, and it wins where both are given
};

struct MlaDefaults {
  int64_t q_lora_rank = 1536, kv_lora_rank = 512, nope = 128, rope = 64, v = 128;
  MlaHeadDim head_dim = MlaHeadDim::Ignored;
  RopeDicts (*rope_dicts)(const ConfigReader &) = nullptr; // the family's own rope dictionaries
};

// The MLA sizes, the softmax scale and the rope pairing; every layer is latent attention.
void parseMla(const ConfigReader &r, ModelSpec &s, const MlaDefaults &d, bool interleaveByDefault);

// The lightning indexer of sparse attention (index_n_heads, index_head_dim, index_topk), its
// RoPE pairing the family's. Needs the q LoRA (the indexer reads its normed output).
void parseIndexer(const ConfigReader &r, ModelSpec &s, RotaryPairing ropePairing);

// How a family's router turns logits into weights.
struct RouterRule {
  ExpertScoring score = ExpertScoring::Softmax;
  std::optional<GroupScoring> group_score = std::nullopt; // none: no groups
  DroppedGroupFill group_fill = DroppedGroupFill::NegInf;
  bool renorm_key = true;     // norm_topk_prob decides renormalisation (DeepSeek-V2 never renormalises)
  bool selection_bias = true; // e_score_correction_bias steers the choice
};

// A config class's MoE sizes when config.json leaves them out.
struct MoeDefaults {
  int64_t experts = 256, top_k = 8, groups = 8, keep = 4, intermediate = 2048, shared = 1;
  double scaling = 2.5;
  bool fused = false; // mlp.experts.gate_up_proj [E, 2I, H] and down_proj [E, H, I]
  // The family's spellings; no shared_key: no shared experts, whatever the config says.
  const char *count_key = "n_routed_experts", *shared_key = "n_shared_experts";
};

// Routed experts under mlp.experts.{e} (per expert, or fused), the router mlp.gate and the
// shared experts' one MLP of width moe_intermediate_size * n_shared.
void parseDeepseekMoe(const ConfigReader &r, ModelSpec &s, const RouterRule &rule, const MoeDefaults &d);
// Layers from first_k_dense_replace on are MoE.
void moeFrom(const ConfigReader &r, ModelSpec &s, int64_t fallback);
// mlp_layer_types ("dense" / "sparse"), else `sparse(i)`.
void moeByLayerTypes(const ConfigReader &r, ModelSpec &s, const std::function<bool(int64_t)> &sparse);

// DeepSeek-V3's router: sigmoid scores with a correction bias, groups scored by their top-2 sum.
extern const RouterRule kSigmoidGroups;

} // namespace cbc::hf

#endif
