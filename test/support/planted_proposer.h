// A proposer for tests of speculative decoding: it guesses transformers' own continuation of each
// prompt with one token wrong, at a draft position that cycles through 0..k from call to call
// (k: nothing wrong, every draft accepted and a bonus token), so that a run verifies a draft at
// every step and rejects one at every position. Header-only (tests only).
#ifndef CBC_TEST_SUPPORT_PLANTED_PROPOSER_H
#define CBC_TEST_SUPPORT_PLANTED_PROPOSER_H

#include "runtime/speculative.h"

#include <vector>

namespace cbc::test {

class PlantedProposer : public rt::Proposer {
public:
  // continuations[i]: the tokens that follow prompts[i].
  PlantedProposer(std::vector<std::vector<int32_t>> prompts, std::vector<std::vector<int32_t>> continuations,
                  int64_t k, int64_t vocab)
      : prompts_(std::move(prompts)), continuations_(std::move(continuations)), k_(k), vocab_(vocab) {}
  std::string name() const override { return "planted"; }

  void propose(const rt::Request &r, int64_t k, std::vector<int32_t> &draft) override {
    draft.clear();
    size_t i = 0;
    while (i < prompts_.size() && prompts_[i] != r.prompt)
      ++i;
    if (i == prompts_.size())
      return;
    const std::vector<int32_t> &next = continuations_[i];
    int64_t wrong = calls_++ % (k_ + 1), g = (int64_t)r.generated.size();
    for (int64_t j = 0; j < k && g + j < (int64_t)next.size(); ++j)
      draft.push_back(j == wrong ? (int32_t)((next[g + j] + 1) % vocab_) : next[g + j]);
  }

private:
  std::vector<std::vector<int32_t>> prompts_, continuations_;
  int64_t k_, vocab_, calls_ = 0;
};

} // namespace cbc::test

#endif
