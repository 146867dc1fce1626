// The sparse-attention families' layer schedule rules (dsa_variants.cpp), shared by their parsers.
#ifndef CBC_FRONTENDS_HF_CONFIG_FAMILIES_DSA_VARIANTS_H
#define CBC_FRONTENDS_HF_CONFIG_FAMILIES_DSA_VARIANTS_H

#include "frontends/hf_config/config_reader.h"

#include <vector>

namespace cbc::hf {

// Which layers reuse the previous layer's top-k selection ("shared" in indexer_types), from
// indexer_types, index_topk_pattern or index_topk_freq / index_skip_topk_offset (GLM-5).
// With firstMustBeFull false the caller checks where a shared layer may stand (GLM5-Next, whose
// KDA layers ignore their entries).
std::vector<bool> sharedIndexerLayers(const ConfigReader &r, int64_t layers, bool firstMustBeFull = true);

// Every layer of these families is sparse latent attention (layer_types, when given, says so).
void checkIndexedLayers(const ConfigReader &r, int64_t layers);

} // namespace cbc::hf

#endif
