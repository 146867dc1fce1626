// Token sampling from one logits row: greedy, temperature, top-k, top-p and min-p. The random
// draw depends only on the request's seed and how many tokens it has generated, so a request
// samples the same tokens however it is batched, chunked or preempted. Each candidate draws its
// own number (keyed by its id), so logits that differ by rounding between batch shapes pick the
// same token unless two candidates are within that rounding of each other.
#ifndef CBC_RUNTIME_SAMPLER_H
#define CBC_RUNTIME_SAMPLER_H

#include "runtime/request.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cbc::rt {

// A token's log-probability and the request's top_logprobs best alternatives (ties: lower id first).
using TopLogprobs = std::vector<std::pair<int32_t, float>>;

struct Sample {
  int32_t token;
  float logprob; // log-softmax of the row at the chosen token (when params.logprobs)
  TopLogprobs top; // the params.top_logprobs most likely ids of the row, best first
};

// Empty when the parameters are valid; otherwise the reason to reject the request.
std::string validateSampling(const SamplingParams &p);

// The token p's settings draw, with its log-probabilities where p asks for them.
Sample sampleToken(const float *logits, int64_t vocab, const SamplingParams &p, int64_t step);
// The token alone.
Sample drawToken(const float *logits, int64_t vocab, const SamplingParams &p, int64_t step);
// The distribution drawToken draws from, over the whole vocabulary (one-hot at the argmax for a
// greedy request): zero outside the candidates p's settings keep, normalised over them.
void targetDistribution(const float *logits, int64_t vocab, const SamplingParams &p, std::vector<double> &dense);
// A token drawn with probability weights[id] / sum(weights) (the weights need not be normalised),
// from (seed, step) as drawToken draws; -1 when no weight is positive.
int32_t drawWeighted(const std::vector<double> &weights, uint64_t seed, int64_t step);
// A uniform number in (0, 1) from (seed, step), apart from the numbers a draw at that step uses
// (speculative decoding's acceptance test).
double acceptanceDraw(uint64_t seed, int64_t step);
// A given token's log-probability in the row, with the row's `top` most likely ids.
Sample scoreToken(const float *logits, int64_t vocab, int32_t token, int64_t top);

} // namespace cbc::rt

#endif
