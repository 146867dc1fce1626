// RoPE frequency schedules, computed at compile time from a rope_parameters dictionary.
#ifndef CBC_FRONTENDS_HF_CONFIG_ROPE_H
#define CBC_FRONTENDS_HF_CONFIG_ROPE_H

#include "frontends/hf_config/config_reader.h"

namespace cbc::hf {

struct RopeContext {
  int64_t head_dim = 0;
  int64_t max_positions = 0;
  // A top-level original_max_position_embeddings overrides the dictionary's (transformers does).
  std::optional<int64_t> original_max_override;
  double partial_rotary_factor = 1.0; // used when the dictionary has none
  // Whether the family rotates only the leading rotary_dim features. Families that do not
  // ignore partial_rotary_factor in the default schedule (as transformers does) and cannot run
  // a partial non-default one.
  bool partial_rotary = false;
  // A multimodal wrapper's decoder: a dictionary's mrope_section gives RopeSpec::sections.
  bool multimodal = false;
};

// `params` is one flat rope dictionary (rope_type, rope_theta, factor, ...). Its rope_theta must
// already be resolved by the caller.
RopeSpec computeRope(const ConfigReader &params, const RopeContext &ctx);

} // namespace cbc::hf

#endif
