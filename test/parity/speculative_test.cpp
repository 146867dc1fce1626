// Sampled speculative decoding end to end: over many seeds, the distribution of the first token
// and of the first two tokens (bigrams) with speculation on must be that without it. The drafts
// (transformers' greedy tokens, guessed for the first two positions) are verified by the prompt's
// last chunk, so both positions are accepted at some seeds and rejected at others. A draft of
// one token guessed outright is verified by drawing the row as plain decoding does, so each seed
// gives the very tokens it gives without speculation; the chi-square test holds whatever the
// verification (the rejection sampler's own tests are in test/unit/speculative_test.cpp).
#include "test/support/compile_support.h"

#include "runtime/speculative.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace cbc::test {
namespace {

class FixedDraft : public rt::Proposer {
public:
  explicit FixedDraft(std::vector<int32_t> draft) : draft_(std::move(draft)) {}
  std::string name() const override { return "fixed"; }
  void propose(const rt::Request &r, int64_t k, std::vector<int32_t> &draft) override {
    draft.clear();
    if (r.generated.empty())
      draft.assign(draft_.begin(), draft_.begin() + std::min<int64_t>(k, (int64_t)draft_.size()));
  }

private:
  std::vector<int32_t> draft_;
};

// Two-sample Pearson statistic over categories, those seen fewer than 20 times in both samples
// together pooled into one; returns the statistic and sets its degrees of freedom.
double twoSample(const std::map<int64_t, std::pair<int64_t, int64_t>> &counts, int &df) {
  std::vector<std::pair<int64_t, int64_t>> bins;
  std::pair<int64_t, int64_t> rest{0, 0};
  for (const auto &[key, c] : counts)
    if (c.first + c.second >= 20)
      bins.push_back(c);
    else
      rest.first += c.first, rest.second += c.second;
  if (rest.first + rest.second > 0)
    bins.push_back(rest);
  double x = 0;
  for (auto [a, b] : bins)
    x += (double)(a - b) * (a - b) / (double)(a + b);
  df = (int)bins.size() - 1;
  return x;
}

// The 0.999 quantile of chi-square with `df` degrees of freedom (Wilson-Hilferty).
double critical(int df) {
  double a = 2.0 / (9.0 * df), z = 3.090;
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

TEST(SpeculativeSampling, FirstTokensFollowPlainSampling) {
  const std::string family = "llama";
  rt::Artefact artefact = compileArtefact(readFile(fixtureDir(family) + "/config.json"));
  Expected want = loadExpected(family);
  rt::WeightSource weights;
  weights.checkpoint_dir = fixtureDir(family);
  size_t longest = 0;
  for (size_t i = 1; i < want.prompts.size(); ++i)
    if (want.prompts[i].size() > want.prompts[longest].size())
      longest = i;
  const std::vector<int32_t> &prompt = want.prompts[longest];
  ASSERT_GE(prompt.size(), 6u);
  const int64_t n = 3000;
  std::map<int64_t, std::pair<int64_t, int64_t>> first, bigram;
  std::vector<std::vector<int32_t>> plainTokens;
  rt::EngineStats specStats;
  for (bool spec : {false, true}) {
    rt::EngineOptions o;
    o.threads = 2;
    o.prefix_caching = false;                         // every prompt computed, in two chunks:
    o.max_batch_tokens = (int64_t)prompt.size() - 2;  // the second verifies the draft
    o.speculative_max_tokens = 1 << 30;
    o.num_speculative_tokens = 2;
    if (spec)
      o.proposer = std::make_shared<FixedDraft>(std::vector<int32_t>{want.tokens[longest][0], want.tokens[longest][1]});
    std::vector<cbc::test::Run> runs;
    for (int64_t i = 0; i < n; ++i) {
      rt::SamplingParams s;
      s.temperature = 1.0;
      s.top_k = 6;
      s.seed = (uint64_t)(1000 + i);
      s.max_new_tokens = 3; // room for two drafts and a bonus token
      s.ignore_eos = true;
      runs.push_back({prompt, s});
    }
    RunResult res = serve(artefact, weights, o, runs);
    for (size_t i = 0; i < res.outputs.size(); ++i) {
      const rt::RequestOutput &out = res.outputs[i];
      ASSERT_EQ(out.tokens.size(), 3u);
      if (!spec)
        plainTokens.push_back(out.tokens);
      else
        EXPECT_EQ(out.tokens, plainTokens[i]) << "seed " << runs[i].params.seed;
      int64_t a = out.tokens[0], b = out.tokens[1], V = artefact.meta.vocab_size;
      (spec ? first[a].second : first[a].first)++;
      (spec ? bigram[a * V + b].second : bigram[a * V + b].first)++;
    }
    if (spec)
      specStats = res.stats;
  }
  // Both positions were verified, and accepted at some seeds and rejected at others.
  ASSERT_EQ(specStats.drafted_at.size(), 2u);
  EXPECT_GE(specStats.drafted_at[0], n / 2);
  for (int j = 0; j < 2; ++j) {
    EXPECT_GT(specStats.accepted_at[j], 0) << "position " << j;
    EXPECT_LT(specStats.accepted_at[j], specStats.drafted_at[j]) << "position " << j;
  }
  int df = 0;
  double x = twoSample(first, df);
  ASSERT_GE(df, 2);
  EXPECT_LT(x, critical(df)) << "first token: chi-square " << x << " with " << df << " degrees of freedom";
  x = twoSample(bigram, df);
  ASSERT_GE(df, 4);
  EXPECT_LT(x, critical(df)) << "bigrams: chi-square " << x << " with " << df << " degrees of freedom";
  RecordProperty("accepted_first", std::to_string(specStats.accepted_at[0]));
}

} // namespace
} // namespace cbc::test
