// Ring 1: the CPU backend against transformers. Each fixture holds a tiny random-weight model
// saved by tools/oracle/make_fixtures.py with the logits transformers computed in fp32.
#include "test/support/compile_support.h"
#include "test/support/planted_proposer.h"

#include "runtime/speculative.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cbc::test {
namespace {

class Parity : public ::testing::TestWithParam<FamilyVariant> {
protected:
  void SetUp() override {
    family_ = GetParam().family;
    artefact_ = compileArtefact(readFile(fixtureDir(family_) + "/config.json"), "bf16", GetParam().fuse);
    expected_ = loadExpected(family_);
    weights_.checkpoint_dir = fixtureDir(family_);
  }
  std::string family_;
  rt::Artefact artefact_;
  Expected expected_;
  rt::WeightSource weights_;
};

// Each prompt alone: identical greedy tokens and every step's logits within the tolerance.
TEST_P(Parity, EachPromptAloneMatchesTransformers) {
  ASSERT_EQ(expected_.prompts.size(), 3u);
  for (size_t i = 0; i < expected_.prompts.size(); ++i) {
    int64_t steps = (int64_t)expected_.tokens[i].size();
    rt::EngineOptions o;
    o.threads = 2;
    auto res = serve(artefact_, weights_, o, {{expected_.prompts[i], greedyWithLogits(steps)}});
    const rt::RequestOutput &out = res.outputs[0];
    EXPECT_EQ(out.tokens, expected_.tokens[i]) << family_ << " prompt " << i;
    ASSERT_EQ((int64_t)out.logits.size(), steps);
    int64_t vocab = artefact_.meta.vocab_size;
    double maxDiff = 0;
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t v = 0; v < vocab; ++v)
        maxDiff = std::max(maxDiff, (double)std::fabs(out.logits[s][v] - expected_.logits[i][s * vocab + v]));
    EXPECT_LE(maxDiff, expected_.atol) << family_ << " prompt " << i << ": max |dlogit| " << maxDiff;
    RecordProperty("max_abs_dlogit_prompt_" + std::to_string(i), std::to_string(maxDiff));
  }
}

// All prompts at once with token budgets down to one token per step: prefill in chunks of 1, 7,
// 16 and 64 tokens, batched decode, and still transformers' tokens. For state families each
// chunk starts from the state the previous one left.
TEST_P(Parity, BatchedChunkedPrefillMatchesTransformers) {
  for (int64_t budget : {1, 7, 16, 64}) {
    rt::EngineOptions o;
    o.max_batch_tokens = budget;
    o.threads = 2;
    std::vector<cbc::test::Run> runs;
    for (size_t i = 0; i < expected_.prompts.size(); ++i)
      runs.push_back({expected_.prompts[i], greedyWithLogits((int64_t)expected_.tokens[i].size())});
    auto res = serve(artefact_, weights_, o, runs);
    for (size_t i = 0; i < runs.size(); ++i)
      EXPECT_EQ(res.outputs[i].tokens, expected_.tokens[i])
          << family_ << " prompt " << i << " with a budget of " << budget << " tokens";
  }
}

// Speculative decoding, all prompts at once: every step verifies a draft of transformers' own
// tokens with one planted mistake, at each position 0..k in turn, and the tokens and every
// accepted row's logits are still transformers'. Attention rows of rejected drafts are
// truncated; a state family's step is undone and its accepted tokens computed again.
TEST_P(Parity, SpeculativeVerifyMatchesTransformers) {
  const int64_t k = 3;
  rt::EngineOptions o;
  o.threads = 2;
  o.num_speculative_tokens = k;
  o.proposer = std::make_shared<PlantedProposer>(expected_.prompts, expected_.tokens, k, artefact_.meta.vocab_size);
  std::vector<cbc::test::Run> runs;
  for (size_t i = 0; i < expected_.prompts.size(); ++i)
    runs.push_back({expected_.prompts[i], greedyWithLogits((int64_t)expected_.tokens[i].size())});
  auto res = serve(artefact_, weights_, o, runs);
  int64_t vocab = artefact_.meta.vocab_size;
  double maxDiff = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const rt::RequestOutput &out = res.outputs[i];
    EXPECT_EQ(out.tokens, expected_.tokens[i]) << family_ << " prompt " << i;
    ASSERT_EQ(out.logits.size(), expected_.tokens[i].size()) << family_ << " prompt " << i;
    for (size_t s = 0; s < out.logits.size(); ++s)
      for (int64_t v = 0; v < vocab; ++v)
        maxDiff = std::max(maxDiff, (double)std::fabs(out.logits[s][v] - expected_.logits[i][s * vocab + v]));
  }
  EXPECT_LE(maxDiff, expected_.atol) << family_ << ": max |dlogit| " << maxDiff;
  // Every position was verified and accepted somewhere, and rejected somewhere.
  const rt::EngineStats &st = res.stats;
  ASSERT_EQ(st.drafted_at.size(), (size_t)k);
  for (int64_t j = 0; j < k; ++j) {
    EXPECT_GT(st.accepted_at[j], 0) << family_ << " draft position " << j;
    EXPECT_LT(st.accepted_at[j], st.drafted_at[j]) << family_ << " draft position " << j;
  }
}

// The n-gram proposer as users run it (prompt lookup, three guesses): transformers' tokens,
// each prompt alone and all at once. Random-weight fixtures repeat little, so it guesses where
// their prompts or outputs repeat; the planted drafts above exercise every rejection.
TEST_P(Parity, NgramSpeculationMatchesTransformers) {
  rt::EngineOptions o;
  o.threads = 2;
  o.speculative = "ngram";
  std::vector<cbc::test::Run> runs;
  for (size_t i = 0; i < expected_.prompts.size(); ++i)
    runs.push_back({expected_.prompts[i], greedyWithLogits((int64_t)expected_.tokens[i].size())});
  auto res = serve(artefact_, weights_, o, runs);
  for (size_t i = 0; i < runs.size(); ++i)
    EXPECT_EQ(res.outputs[i].tokens, expected_.tokens[i]) << family_ << " prompt " << i;
  RecordProperty("ngram_drafts", std::to_string(res.stats.draft_tokens));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity, ::testing::ValuesIn(familyVariants()),
                         [](const auto &info) { return variantName(info.param); });

} // namespace
} // namespace cbc::test
