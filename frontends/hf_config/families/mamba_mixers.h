// The Mamba mixers' settings, which the Mamba, hybrid and Zamba families read under their own
// keys and defaults.
#ifndef CBC_FRONTENDS_HF_CONFIG_FAMILIES_MAMBA_MIXERS_H
#define CBC_FRONTENDS_HF_CONFIG_FAMILIES_MAMBA_MIXERS_H

#include "frontends/hf_config/config_reader.h"
#include "frontends/hf_config/model_spec.h"

namespace cbc::hf {

// Where a family keeps its Mamba2 mixer settings, and the config class's defaults.
struct Mamba2Keys {
  const char *heads, *head_dim, *groups, *state, *conv, *conv_bias, *bias, *eps, *expand;
  int64_t heads_default, head_dim_default, groups_default, state_default;
  bool conv_bias_default, bias_default;
};
void parseMamba2(const ConfigReader &r, ModelSpec &s, const Mamba2Keys &k);

// time_step_limit is [min, max]; an absent or empty one clamps nothing.
void parseDtLimit(const ConfigReader &r, const char *key, Mamba2Spec &m);

// Prefill clamps dt to at least time_step_min (transformers' and mamba_ssm's chunked scan). The
// families read it under `key`; the error names time_step_min whichever key was read.
double timeStepMin(const ConfigReader &r, const char *key);

// Where a family keeps its Mamba mixer settings.
struct Mamba1Keys {
  const char *state, *expand, *conv, *dt_rank, *conv_bias, *bias;
  // The mixer's width where the config class keeps one (else expand * hidden_size): an
  // explicit value overrides the derived one, as transformers 5.23 applies config.json's keys
  // after __post_init__.
  const char *intermediate = nullptr;
};
void parseMamba1(const ConfigReader &r, ModelSpec &s, const Mamba1Keys &k);

} // namespace cbc::hf

#endif
