// Speculative decoding's pieces on their own: the rejection sampler on synthetic target and
// draft distributions (its tokens must follow the target's exactly, whatever the draft), and the
// n-gram proposer.
#include "runtime/request.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cbc::rt {
namespace {

// Pearson's statistic of `counts` against the distribution `p` over `n` draws, over the entries
// p gives mass; a draw outside them makes it infinite.
double chiSquare(const std::vector<int64_t> &counts, const std::vector<double> &p, int64_t n) {
  double x = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      if (counts[i] > 0)
        return INFINITY;
      continue;
    }
    double e = p[i] * (double)n;
    x += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x;
}

// The 0.999 quantile of chi-square with `df` degrees of freedom (Wilson-Hilferty).
double critical(int df) {
  double a = 2.0 / (9.0 * df), z = 3.090;
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

int degrees(const std::vector<double> &p) {
  int n = 0;
  for (double v : p)
    n += v > 0;
  return n - 1;
}

struct Drawn {
  std::vector<int64_t> counts;
  int64_t accepted = 0;
};

Drawn drawMany(const std::vector<double> &p, const std::vector<double> *q, int32_t draft, int64_t n) {
  Drawn d{std::vector<int64_t>(p.size(), 0)};
  for (int64_t i = 0; i < n; ++i) {
    Verdict v = verifyDraft(p, q, draft, /*seed=*/(uint64_t)i * 7919 + 1, /*step=*/i % 13);
    d.counts.at(v.token)++;
    d.accepted += v.accepted;
    if (v.accepted)
      EXPECT_EQ(v.token, draft);
  }
  return d;
}

const int64_t kDraws = 1000000;

// A proposer that guesses one token outright (n-gram, a greedy draft): accepted with
// probability p(x), and the tokens follow p.
TEST(RejectionSampler, OneHotDraftKeepsTheTargetDistribution) {
  std::vector<double> p = {0.05, 0.3, 0.1, 0.25, 0.0, 0.2, 0.1};
  for (int32_t draft : {1, 3, 6}) {
    Drawn d = drawMany(p, nullptr, draft, kDraws);
    EXPECT_LT(chiSquare(d.counts, p, kDraws), critical(degrees(p))) << "draft " << draft;
    EXPECT_NEAR((double)d.accepted / kDraws, p[draft], 0.003) << "draft " << draft;
  }
}

// A draft distribution q with partial support and mass where p has none: accepted with
// probability sum(min(p, q)), and the tokens still follow p.
TEST(RejectionSampler, DraftDistributionKeepsTheTargetDistribution) {
  std::vector<double> p = {0.05, 0.3, 0.1, 0.25, 0.0, 0.2, 0.1};
  std::vector<double> q = {0.0, 0.6, 0.0, 0.1, 0.2, 0.1, 0.0};
  // Draft tokens drawn from q, as a sampling draft model would.
  std::vector<int64_t> counts(p.size(), 0);
  int64_t accepted = 0, n = kDraws;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> qw = q;
    int32_t x = drawWeighted(qw, (uint64_t)i + 1000003, 0);
    Verdict v = verifyDraft(p, &q, x, (uint64_t)i * 7919 + 1, i % 13);
    counts.at(v.token)++;
    accepted += v.accepted;
  }
  EXPECT_LT(chiSquare(counts, p, n), critical(degrees(p)));
  double overlap = 0;
  for (size_t i = 0; i < p.size(); ++i)
    overlap += std::min(p[i], q[i]);
  EXPECT_NEAR((double)accepted / n, overlap, 0.003);
}

// A draft the target gives no mass is never accepted, and the tokens follow p.
TEST(RejectionSampler, ADraftOutsideTheTargetIsNeverAccepted) {
  std::vector<double> p = {0.5, 0.0, 0.5};
  Drawn d = drawMany(p, nullptr, 1, 100000);
  EXPECT_EQ(d.accepted, 0);
  EXPECT_EQ(d.counts[1], 0);
  EXPECT_LT(chiSquare(d.counts, p, 100000), critical(1));
}

// A greedy target (one-hot): exactly its token, accepted only when the draft is it.
TEST(RejectionSampler, AGreedyTargetGivesItsArgmaxExactly) {
  std::vector<double> p = {0.0, 0.0, 1.0, 0.0};
  for (int32_t draft : {0, 2, 3}) {
    Drawn d = drawMany(p, nullptr, draft, 10000);
    EXPECT_EQ(d.counts[2], 10000);
    EXPECT_EQ(d.accepted, draft == 2 ? 10000 : 0);
  }
}

// The target distribution of a row is the one drawToken draws from: zero outside top-k.
TEST(RejectionSampler, TheTargetDistributionIsTheSamplersOwn) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, -1.0f, 2.5f};
  SamplingParams s;
  s.temperature = 0.7;
  s.top_k = 3;
  std::vector<double> p;
  targetDistribution(logits.data(), 5, s, p);
  EXPECT_EQ(p[0], 0.0);
  EXPECT_EQ(p[3], 0.0);
  std::vector<int64_t> counts(5, 0);
  const int64_t n = 200000;
  for (int64_t i = 0; i < n; ++i) {
    s.seed = (uint64_t)i;
    counts[drawToken(logits.data(), 5, s, 3).token]++;
  }
  EXPECT_LT(chiSquare(counts, p, n), critical(2));
}

Request known(std::vector<int32_t> tokens) {
  Request r;
  r.prompt = std::move(tokens);
  return r;
}

// Prompt lookup: the longest suffix that occurred before, then its latest occurrence.
TEST(NgramProposer, ProposesWhatFollowedTheLongestEarlierMatch) {
  auto p = makeNgramProposer(1, 4);
  std::vector<int32_t> draft;
  p->propose(known({5, 6, 7, 8, 1, 5, 6}), 3, draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{7, 8, 1}));
  // "6 7" matched at 0 and 4: the latest wins; past the known end the loop repeats.
  p->propose(known({6, 7, 1, 2, 6, 7, 3, 9, 6, 7}), 5, draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{3, 9, 6, 7, 3}));
  p->propose(known({8, 5, 8, 5, 8}), 4, draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{5, 8, 5, 8}));
  // Longer beats later: "1 2 3" at 0 against "3" at 6.
  p->propose(known({1, 2, 3, 4, 0, 0, 3, 5, 1, 2, 3}), 2, draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{4, 0}));
  p->propose(known({1, 2, 3}), 3, draft);
  EXPECT_TRUE(draft.empty());
  // The output counts as context too.
  Request r = known({4, 9});
  r.generated = {2, 4};
  p->propose(r, 2, draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{9, 2}));
  // Matches shorter than the minimum are not used.
  auto two = makeNgramProposer(2, 4);
  two->propose(known({1, 2, 3, 1}), 2, draft);
  EXPECT_TRUE(draft.empty());
}

TEST(NgramProposer, MethodsAreCheckedByName) {
  EXPECT_EQ(checkSpeculativeMethod("ngram"), "");
  EXPECT_NE(checkSpeculativeMethod("mtp").find("not supported yet"), std::string::npos);
  EXPECT_NE(checkSpeculativeMethod("draft:/tmp/x.fb").find("not supported yet"), std::string::npos);
  EXPECT_NE(checkSpeculativeMethod("eagle").find("unknown speculative method 'eagle'"), std::string::npos);
}

} // namespace
} // namespace cbc::rt
