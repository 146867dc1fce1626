#include "runtime/logits_process.h"

#include <cmath>
#include <unordered_map>

namespace cbc::rt {

std::string validateLogitsProcessing(const SamplingParams &p, int64_t vocab) {
  if (!(p.repetition_penalty > 0) || std::isinf(p.repetition_penalty))
    return "repetition_penalty must be a finite number > 0";
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2))
    return "presence_penalty must be in [-2, 2]";
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2))
    return "frequency_penalty must be in [-2, 2]";
  if (p.min_tokens < 0 || p.min_tokens > p.max_new_tokens)
    return "min_tokens must be in [0, max_new_tokens]";
  for (const auto &[id, bias] : p.logit_bias) {
    if (id < 0 || id >= vocab)
      return "logit_bias names token id " + std::to_string(id) + ", outside the vocabulary [0, " +
             std::to_string(vocab) + ")";
    if (!(bias >= -100 && bias <= 100))
      return "logit_bias values must be in [-100, 100]";
  }
  for (const std::vector<int32_t> &seq : p.bad_words) {
    if (seq.empty())
      return "bad_words sequences must not be empty";
    for (int32_t id : seq)
      if (id < 0 || id >= vocab)
        return "bad_words names token id " + std::to_string(id) + ", outside the vocabulary [0, " +
               std::to_string(vocab) + ")";
  }
  return "";
}

namespace {
// Whether prompt + generated ends with `tail`.
bool endsWith(const std::vector<int32_t> &prompt, const std::vector<int32_t> &generated, const int32_t *tail,
              size_t n) {
  if (n > prompt.size() + generated.size())
    return false;
  for (size_t i = 0; i < n; ++i) {
    size_t back = n - i; // tail[i] sits `back` tokens from the end
    int32_t have = back <= generated.size() ? generated[generated.size() - back]
                                            : prompt[prompt.size() - (back - generated.size())];
    if (have != tail[i])
      return false;
  }
  return true;
}
} // namespace

void processLogits(const float *in, int64_t vocab, const SamplingParams &p, const std::vector<int32_t> &prompt,
                   const std::vector<int32_t> &generated, const std::vector<int64_t> &eos, std::vector<float> &out) {
  out.assign(in, in + vocab);
  for (const auto &[id, bias] : p.logit_bias)
    out[id] += bias;
  if (p.repetition_penalty != 1.0) {
    // At most once per token, whether it occurs once or often.
    std::vector<bool> seen(vocab, false);
    float penalty = (float)p.repetition_penalty;
    auto penalise = [&](int32_t id) {
      if (id < 0 || id >= vocab || seen[id])
        return;
      seen[id] = true;
      out[id] = out[id] < 0 ? out[id] * penalty : out[id] / penalty;
    };
    for (int32_t id : prompt)
      penalise(id);
    for (int32_t id : generated)
      penalise(id);
  }
  if (p.presence_penalty != 0 || p.frequency_penalty != 0) {
    std::unordered_map<int32_t, int64_t> counts;
    for (int32_t id : generated)
      counts[id]++;
    for (const auto &[id, n] : counts)
      if (id >= 0 && id < vocab)
        out[id] -= (float)(p.presence_penalty + p.frequency_penalty * (double)n);
  }
  for (const std::vector<int32_t> &seq : p.bad_words)
    if (endsWith(prompt, generated, seq.data(), seq.size() - 1))
      out[seq.back()] = -INFINITY;
  if ((int64_t)generated.size() < p.min_tokens)
    for (int64_t id : eos)
      if (id >= 0 && id < vocab)
        out[id] = -INFINITY;
}

void maskLogits(float *logits, int64_t vocab, const std::vector<uint32_t> &bits) {
  for (int64_t i = 0; i < vocab; ++i)
    if ((size_t)(i / 32) >= bits.size() || !((bits[i / 32] >> (i % 32)) & 1u))
      logits[i] = -INFINITY;
}

} // namespace cbc::rt
