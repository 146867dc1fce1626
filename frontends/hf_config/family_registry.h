// The families the front end accepts, by model_type: each one's config-class defaults and the
// functions that fill its part of the spec. The table is assembled explicitly from the group
// files under families/ rather than by self-registering objects, which a static archive drops
// when nothing references them.
#ifndef CBC_FRONTENDS_HF_CONFIG_FAMILY_REGISTRY_H
#define CBC_FRONTENDS_HF_CONFIG_FAMILY_REGISTRY_H

#include "frontends/hf_config/config_reader.h"

#include <map>

namespace cbc::hf {

// How a family's config class treats a per-layer list key in config.json.
enum class LayerListRule {
  Ignored,   // an attribute nothing reads or validates
  Validated, // PreTrainedConfig.validate_layer_type: one allowed layer type per layer
  ReadOnly,  // a property of the class: transformers refuses a config.json that sets it
  Own,       // the family's parse validates it (its class has its own validate_layer_type)
};

// What a family's config class supplies when config.json leaves a key out.
struct FamilyDefaults {
  int64_t head_dim = 0;          // 0: hidden_size / num_attention_heads
  int64_t max_positions = 2048;
  double norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  double rope_theta = 10000.0;
  const char *act_key = "hidden_act";
  const char *act = "silu";
  bool partial_rotary = false; // rotates only the leading partial_rotary_factor of each head
  bool moe_only = false;       // every layer is MoE: the config has no dense intermediate_size
  double partial_rotary_factor = 1.0; // the config class's default share of each head rotated
  const char *intermediate_alias = nullptr; // a legacy key read when intermediate_size is absent
  bool attention_free = false;  // no attention layers: no head counts, RoPE or max positions
  bool rope_free = false;       // no layer has a position embedding: no RoPE to compute
  bool head_dim_unused = false; // the family's own keys size its heads; head_dim (which its config
                                // class saves as qk_rope_head_dim, possibly 0) is not read here
  const char *norm_eps_key = "rms_norm_eps";
  bool layers_derived = false;  // the layer count comes from a per-layer list, not num_hidden_layers
  bool intermediate_optional = false; // the family derives intermediate_size when it is absent
  bool intermediate_list = false; // intermediate_size may be one width per layer (the family reads the list)
  int64_t kv_heads = 0;         // num_key_value_heads when absent; 0: num_attention_heads
  // Sizes the config class fills in when a multimodal wrapper's text_config omits them; a
  // top-level config must state its sizes.
  std::map<std::string, int64_t> text_config_sizes = {};
  // validate_architecture refuses a hidden_size that num_attention_heads does not divide, even
  // beside an explicit head_dim (LlamaConfig, Gemma2Config, DeepseekV2Config, MiniCPM3Config).
  bool heads_divide_hidden = false;
  // layer_types and layers_block_type (which some classes map onto each other).
  LayerListRule layer_types = LayerListRule::Validated;
  LayerListRule layers_block_type = LayerListRule::Ignored;
};

// Rope dictionaries by layer type ("full_attention", "sliding_attention"), rope_theta resolved.
using RopeDicts = std::map<std::string, nlohmann::json>;

struct Family {
  FamilyDefaults defaults;
  // Fills the family-specific parts of the spec; the common parts are already parsed.
  void (*parse)(const ConfigReader &, ModelSpec &) = nullptr;
  // The family's own rope dictionary resolution; null: ropeDictionaries with its rope_theta.
  RopeDicts (*ropeDicts)(const ConfigReader &) = nullptr;
  // A copy of the config under the key names every other step reads, for a config class with
  // its own spellings (attribute_map, nested sub-configs); it reads, and so checks, each key it
  // moves. Null: the config as written.
  nlohmann::json (*rewrite)(const ConfigReader &) = nullptr;
};

using FamilyTable = std::map<std::string, Family>;

const FamilyTable &families();

// Multimodal wrappers' model_types, each with the text family its text_config holds by default.
const std::map<std::string, std::string> &multimodalWrappers();

} // namespace cbc::hf

#endif
