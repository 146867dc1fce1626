// The DSA variant families' layer schedule, shared with their lit-tested parse (dsa_variants.cpp).
#ifndef CBC_FRONTENDS_HF_CONFIG_FAMILIES_DSA_VARIANTS_H
#define CBC_FRONTENDS_HF_CONFIG_FAMILIES_DSA_VARIANTS_H

#include "frontends/hf_config/config_reader.h"

#include <vector>

namespace cbc::hf {

// Which layers reuse the previous layer's top-k selection ("shared" in indexer_types), from
// indexer_types, index_topk_pattern or index_topk_freq / index_skip_topk_offset (GLM-5).
std::vector<bool> sharedIndexerLayers(const ConfigReader &r, int64_t layers);

} // namespace cbc::hf

#endif
