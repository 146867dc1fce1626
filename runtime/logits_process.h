// Logits processing before sampling (SamplingParams' logit_bias, repetition, presence and
// frequency penalties and min_tokens), on the host, per request: the row the sampler reads.
#ifndef CBC_RUNTIME_LOGITS_PROCESS_H
#define CBC_RUNTIME_LOGITS_PROCESS_H

#include "runtime/request.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cbc::rt {

// Empty when the parameters are valid for a vocabulary of `vocab` logits; else the reason.
std::string validateLogitsProcessing(const SamplingParams &p, int64_t vocab);

// out = the logits `in` [vocab] processed for a request that has generated `generated` after
// `prompt`, with `eos` the ids min_tokens holds back.
void processLogits(const float *in, int64_t vocab, const SamplingParams &p, const std::vector<int32_t> &prompt,
                   const std::vector<int32_t> &generated, const std::vector<int64_t> &eos, std::vector<float> &out);

} // namespace cbc::rt

#endif
