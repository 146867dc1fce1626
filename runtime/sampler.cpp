#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace cbc::rt {

std::string validateSampling(const SamplingParams &p) {
  if (!(p.temperature >= 0) || std::isinf(p.temperature))
    return "temperature must be a finite number >= 0";
  if (p.top_k < 0)
    return "top_k must be >= 0";
  if (!(p.top_p > 0 && p.top_p <= 1))
    return "top_p must be in (0, 1]";
  if (!(p.min_p >= 0 && p.min_p <= 1))
    return "min_p must be in [0, 1]";
  if (p.top_logprobs < 0 || p.top_logprobs > kMaxTopLogprobs)
    return "top_logprobs must be in [0, " + std::to_string(kMaxTopLogprobs) + "]";
  if (p.prompt_logprobs < -1 || p.prompt_logprobs > kMaxTopLogprobs)
    return "prompt_logprobs must be -1 (none) or in [0, " + std::to_string(kMaxTopLogprobs) + "]";
  if (p.max_new_tokens < 1)
    return "max_new_tokens must be >= 1";
  return "";
}

namespace {

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// log(sum(exp(logits))) in double, from the largest logit.
double logSumExp(const float *logits, int64_t vocab) {
  float m = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += std::exp((double)logits[i] - m);
  return m + std::log(sum);
}

float logSoftmaxAt(const float *logits, int64_t vocab, int32_t token) {
  return (float)((double)logits[token] - logSumExp(logits, vocab));
}

// The k most likely ids of the row with their log-probabilities, best first (ties: lower id).
TopLogprobs topLogprobs(const float *logits, int64_t vocab, int64_t k) {
  k = std::min(k, vocab);
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  double lse = logSumExp(logits, vocab);
  TopLogprobs top(k);
  for (int64_t i = 0; i < k; ++i)
    top[i] = {ids[i], (float)((double)logits[ids[i]] - lse)};
  return top;
}

} // namespace

Sample sampleToken(const float *logits, int64_t vocab, const SamplingParams &p, int64_t step) {
  Sample s = drawToken(logits, vocab, p, step);
  // The log-probabilities cost passes over the vocabulary: only when asked for.
  if (p.logprobs || p.top_logprobs > 0)
    s.logprob = logSoftmaxAt(logits, vocab, s.token);
  if (p.top_logprobs > 0)
    s.top = topLogprobs(logits, vocab, p.top_logprobs);
  return s;
}

Sample scoreToken(const float *logits, int64_t vocab, int32_t token, int64_t top) {
  Sample s{token, logSoftmaxAt(logits, vocab, token), {}};
  if (top > 0)
    s.top = topLogprobs(logits, vocab, top);
  return s;
}

namespace {

// The candidates p's settings keep, most likely first (ties: lower id first), with their
// probabilities (normalised before top-p and min-p cut the list); returns how many are kept.
int64_t keptCandidates(const float *logits, int64_t vocab, const SamplingParams &p, std::vector<int32_t> &ids,
                       std::vector<double> &probs) {
  ids.resize(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  int64_t keep = vocab;
  if (p.top_k > 0)
    keep = std::min<int64_t>(keep, p.top_k);
  probs.resize(keep);
  // Logits are shifted before they are scaled: with a tiny temperature (1e-320) logit / T is
  // infinite and inf - inf is NaN; (logit - max) / T is 0 at the top and -inf or finite below,
  // so the distribution stays well defined and tends to greedy as T -> 0.
  double top = logits[ids[0]], sum = 0;
  for (int64_t i = 0; i < keep; ++i) {
    probs[i] = std::exp(((double)logits[ids[i]] - top) / p.temperature);
    sum += probs[i];
  }
  for (double &q : probs)
    q /= sum;
  if (p.top_p < 1) {
    // The smallest prefix whose mass reaches top_p (at least one token).
    double cum = 0;
    int64_t n = 0;
    while (n < keep) {
      cum += probs[n++];
      if (cum >= p.top_p)
        break;
    }
    keep = std::max<int64_t>(n, 1);
  }
  if (p.min_p > 0) {
    int64_t n = 1;
    while (n < keep && probs[n] >= p.min_p * probs[0])
      ++n;
    keep = n;
  }
  return keep;
}

uint64_t drawBase(uint64_t seed, int64_t step) { return mix(mix(seed) ^ (uint64_t)step); }

// A uniform number in (0, 1) from a draw's base and a key.
double uniformAt(uint64_t base, uint64_t key) {
  uint64_t r = mix(base ^ key);
  return ((double)(r >> 11) + 0.5) / (double)(1ull << 53);
}

// An exponential race: each candidate draws E ~ Exp(1) from (seed, step, its own id) and the
// largest w / E wins, which picks each with probability w / sum(w). Unlike walking a uniform
// draw down the sorted candidates, the choice does not depend on their order: when two logits
// are within rounding of each other and the batch shape swaps them (the backends' sums are not
// bitwise batch-invariant), the same token still wins.
struct Race {
  uint64_t base;
  int32_t best = -1;
  double score = -INFINITY;
  void enter(int32_t id, double weight) {
    if (!(weight > 0))
      return;
    double s = std::log(weight) - std::log(-std::log(uniformAt(base, (uint64_t)(uint32_t)id)));
    if (s > score || (s == score && id < best))
      score = s, best = id;
  }
};

} // namespace

Sample drawToken(const float *logits, int64_t vocab, const SamplingParams &p, int64_t step) {
  if (p.temperature == 0) {
    int32_t best = (int32_t)(std::max_element(logits, logits + vocab) - logits);
    return {best, 0.0f, {}};
  }
  std::vector<int32_t> ids;
  std::vector<double> probs;
  int64_t keep = keptCandidates(logits, vocab, p, ids, probs);
  Race race{drawBase(p.seed, step)};
  for (int64_t i = 0; i < keep; ++i)
    race.enter(ids[i], probs[i]);
  return {race.best, 0.0f, {}};
}

void targetDistribution(const float *logits, int64_t vocab, const SamplingParams &p, std::vector<double> &dense) {
  dense.assign(vocab, 0.0);
  if (p.temperature == 0) {
    dense[std::max_element(logits, logits + vocab) - logits] = 1.0;
    return;
  }
  std::vector<int32_t> ids;
  std::vector<double> probs;
  int64_t keep = keptCandidates(logits, vocab, p, ids, probs);
  double sum = 0;
  for (int64_t i = 0; i < keep; ++i)
    sum += probs[i];
  for (int64_t i = 0; i < keep; ++i)
    dense[ids[i]] = probs[i] / sum;
}

int32_t drawWeighted(const std::vector<double> &weights, uint64_t seed, int64_t step) {
  Race race{drawBase(seed, step)};
  for (size_t i = 0; i < weights.size(); ++i)
    race.enter((int32_t)i, weights[i]);
  return race.best;
}

double acceptanceDraw(uint64_t seed, int64_t step) {
  // A key no token id takes, so the number is apart from the race's.
  return uniformAt(drawBase(seed, step), 0xA5A5A5A5'00000001ull);
}

} // namespace cbc::rt
