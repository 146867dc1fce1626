// The RoPE dictionary resolution that parseConfig (declared in model_spec.h) applies to every
// family, for the families that resolve their dictionaries their own way on top of it.
#ifndef CBC_FRONTENDS_HF_CONFIG_PARSE_CONFIG_H
#define CBC_FRONTENDS_HF_CONFIG_PARSE_CONFIG_H

#include "frontends/hf_config/family_registry.h"

namespace cbc::hf {

// The dictionaries transformers resolves per layer type, with rope_theta filled in: from
// rope_parameters (flat, or keyed by layer type) or the legacy rope_scaling; a flat dictionary
// serves both layer types.
RopeDicts ropeDictionaries(const ConfigReader &r, double defaultTheta);
// The file's own RoPE (rope_parameters or a legacy rope_scaling) over defaultTheta; without
// either, the config class's dictionaries, which then win over a top-level rope_theta (CWM,
// Ministral 3 and Mellum set them in __post_init__).
RopeDicts ropeOrClassDefaults(const ConfigReader &r, double defaultTheta, const nlohmann::json &full,
                              const nlohmann::json &sliding);

// Whether rope_parameters is keyed by layer type rather than one flat dictionary.
bool ropeByLayerType(const ConfigReader &r);

// The key path of a layer type's dictionary, ending in '.', for naming its keys in errors.
std::string ropePath(const ConfigReader &r, const std::string &kind, bool nested);

} // namespace cbc::hf

#endif
