// The sampler: greedy, temperature, top-k, top-p, min-p, determinism per (seed, step), and the
// parameter checks that reject a request.
#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <vector>

namespace cbc::rt {
namespace {

SamplingParams sampled(double temperature, uint64_t seed = 0) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return p;
}

// The oracle: softmax(logits / T) restricted to `allowed`, renormalised.
std::vector<double> restrictedSoftmax(const std::vector<float> &logits, double T,
                                      const std::set<int32_t> &allowed) {
  std::vector<double> p(logits.size(), 0.0);
  double m = -INFINITY, sum = 0;
  for (int32_t i : allowed)
    m = std::max(m, (double)logits[i] / T);
  for (int32_t i : allowed)
    sum += p[i] = std::exp((double)logits[i] / T - m);
  for (double &q : p)
    q /= sum;
  return p;
}

// Draws `n` tokens, one per (seed, step) pair, and returns their frequencies.
std::vector<double> histogram(const std::vector<float> &logits, SamplingParams p, int n) {
  std::vector<double> counts(logits.size(), 0.0);
  for (int i = 0; i < n; ++i) {
    p.seed = 1000 + i / 8;
    Sample s = sampleToken(logits.data(), (int64_t)logits.size(), p, i % 8);
    EXPECT_GE(s.token, 0);
    EXPECT_LT(s.token, (int32_t)logits.size());
    counts[s.token] += 1;
  }
  for (double &c : counts)
    c /= n;
  return counts;
}

void expectClose(const std::vector<double> &got, const std::vector<double> &want, double tol,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol) << what << ": token " << i;
    if (want[i] == 0)
      EXPECT_EQ(got[i], 0) << what << ": token " << i << " lies outside the allowed set";
  }
}

const std::vector<float> kLogits = {1.0f, 0.5f, 0.0f, -1.0f};
constexpr int kDraws = 20000;
constexpr double kTol = 0.02; // ~5 sigma for p = 0.5 at 20000 draws

TEST(Sampler, GreedyIsArgmaxFirstIndexOnTies) {
  std::vector<float> l = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f};
  SamplingParams p;
  Sample s = sampleToken(l.data(), (int64_t)l.size(), p, 0);
  EXPECT_EQ(s.token, 1);
  l[4] = 7.0f;
  EXPECT_EQ(sampleToken(l.data(), (int64_t)l.size(), p, 3).token, 4);
  std::vector<float> flat(9, -2.5f);
  EXPECT_EQ(sampleToken(flat.data(), 9, p, 0).token, 0);
  // Greedy ignores the seed and the step, and the filters.
  p.seed = 99;
  p.top_k = 2;
  p.top_p = 0.1;
  p.min_p = 0.9;
  EXPECT_EQ(sampleToken(l.data(), (int64_t)l.size(), p, 17).token, 4);
}

TEST(Sampler, LogprobIsTheLogSoftmaxOfTheRawLogits) {
  for (double T : {0.0, 0.7, 2.0}) {
    SamplingParams p = sampled(T, 5);
    p.logprobs = true;
    for (int step = 0; step < 20; ++step) {
      Sample s = sampleToken(kLogits.data(), 4, p, step);
      double m = 1.0, sum = 0;
      for (float l : kLogits)
        sum += std::exp(l - m);
      EXPECT_NEAR(s.logprob, kLogits[s.token] - m - std::log(sum), 1e-5);
    }
  }
}

TEST(Sampler, LogprobIsComputedOnlyWhenAskedFor) {
  SamplingParams p = sampled(0.0, 5);
  p.logprobs = false;
  EXPECT_EQ(sampleToken(kLogits.data(), 4, p, 0).logprob, 0.0f);
}

TEST(Sampler, TopKOneEqualsGreedyWithFirstIndexOnTies) {
  std::vector<float> l = {0.0f, 2.0f, 2.0f, 1.0f};
  SamplingParams p = sampled(1.3);
  p.top_k = 1;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    p.seed = seed;
    EXPECT_EQ(sampleToken(l.data(), 4, p, (int64_t)seed % 5).token, 1);
  }
}

TEST(Sampler, TemperatureMatchesTheSoftmax) {
  for (double T : {1.0, 0.5, 3.0}) {
    auto got = histogram(kLogits, sampled(T), kDraws);
    expectClose(got, restrictedSoftmax(kLogits, T, {0, 1, 2, 3}), kTol,
                "temperature " + std::to_string(T));
  }
}

TEST(Sampler, TopKRestrictsTheSupport) {
  for (int64_t k : {1, 2, 3}) {
    SamplingParams p = sampled(1.0);
    p.top_k = k;
    std::set<int32_t> allowed;
    for (int32_t i = 0; i < k; ++i)
      allowed.insert(i); // kLogits is sorted
    expectClose(histogram(kLogits, p, kDraws), restrictedSoftmax(kLogits, 1.0, allowed), kTol,
                "top_k " + std::to_string(k));
  }
  // A top_k above the vocabulary is no restriction.
  SamplingParams p = sampled(1.0);
  p.top_k = 100;
  expectClose(histogram(kLogits, p, kDraws), restrictedSoftmax(kLogits, 1.0, {0, 1, 2, 3}), kTol,
              "top_k 100");
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  std::vector<double> full = restrictedSoftmax(kLogits, 1.0, {0, 1, 2, 3});
  for (double topP : {0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0}) {
    std::set<int32_t> allowed;
    double cum = 0;
    for (int32_t i = 0; i < 4; ++i) {
      allowed.insert(i);
      cum += full[i];
      if (cum >= topP)
        break;
    }
    SamplingParams p = sampled(1.0);
    p.top_p = topP;
    expectClose(histogram(kLogits, p, kDraws), restrictedSoftmax(kLogits, 1.0, allowed), kTol,
                "top_p " + std::to_string(topP));
  }
}

TEST(Sampler, TopPAppliesAfterTemperature) {
  // At T = 0.25 the first token holds ~0.86 of the mass: top_p 0.8 keeps it alone.
  SamplingParams p = sampled(0.25);
  p.top_p = 0.8;
  auto got = histogram(kLogits, p, 2000);
  EXPECT_EQ(got[0], 1.0);
  // At T = 1 it holds ~0.46: top_p 0.8 keeps three tokens.
  p.temperature = 1.0;
  got = histogram(kLogits, p, 4000);
  EXPECT_GT(got[2], 0.0);
  EXPECT_EQ(got[3], 0.0);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheTop) {
  std::vector<double> full = restrictedSoftmax(kLogits, 1.0, {0, 1, 2, 3});
  for (double minP : {0.0, 0.1, 0.2, 0.4, 0.7, 1.0}) {
    std::set<int32_t> allowed;
    for (int32_t i = 0; i < 4; ++i)
      if (full[i] >= minP * full[0])
        allowed.insert(i);
    SamplingParams p = sampled(1.0);
    p.min_p = minP;
    expectClose(histogram(kLogits, p, kDraws), restrictedSoftmax(kLogits, 1.0, allowed), kTol,
                "min_p " + std::to_string(minP));
  }
}

TEST(Sampler, FiltersCombine) {
  // A larger vocabulary in shuffled order: top_k 6, then top_p, then min_p.
  std::vector<float> l = {0.1f, 2.0f, -3.0f, 1.5f, 0.7f, 1.9f, -0.4f, 1.0f, 0.2f, -1.0f};
  SamplingParams p = sampled(0.8);
  p.top_k = 6;
  p.top_p = 0.9;
  p.min_p = 0.3;
  // Oracle: sort by logit; keep 6; softmax over them; smallest prefix reaching 0.9; then
  // tokens with prob >= 0.3 * top.
  std::vector<int32_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  std::set<int32_t> top6(order.begin(), order.begin() + 6);
  std::vector<double> q = restrictedSoftmax(l, 0.8, top6);
  std::set<int32_t> allowed;
  double cum = 0;
  for (int32_t i : order) {
    allowed.insert(i);
    cum += q[i];
    if (cum >= 0.9)
      break;
  }
  std::set<int32_t> final;
  for (int32_t i : allowed)
    if (q[i] >= 0.3 * q[order[0]])
      final.insert(i);
  ASSERT_GE(final.size(), 2u);
  ASSERT_LT(final.size(), 6u);
  expectClose(histogram(l, p, kDraws), restrictedSoftmax(l, 0.8, final), kTol, "combined");
}

// A subnormal temperature scales every logit to infinity; the draw must still be well defined
// and pick the top token (the T -> 0 limit), never the lowest-ranked candidate of a NaN row.
TEST(Sampler, TinyTemperatureTendsToGreedy) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, -4.0f};
  for (double T : {1e-320, 1e-300, 1e-30}) {
    for (uint64_t seed = 0; seed < 16; ++seed) {
      SamplingParams p = sampled(T, seed);
      p.logprobs = true;
      Sample s = sampleToken(logits.data(), (int64_t)logits.size(), p, 0);
      EXPECT_EQ(s.token, 1) << "T " << T << ", seed " << seed;
      EXPECT_TRUE(std::isfinite(s.logprob));
    }
  }
  // Ties at the top stay a fair draw between them.
  std::vector<float> tied = {5.0f, 1.0f, 5.0f};
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 64; ++seed)
    seen.insert(sampleToken(tied.data(), 3, sampled(1e-320, seed), 0).token);
  EXPECT_EQ(seen, (std::set<int32_t>{0, 2}));
}

TEST(Sampler, SameSeedAndStepGiveTheSameToken) {
  std::vector<float> flat(64, 0.0f);
  SamplingParams p = sampled(1.0, 12345);
  std::set<int32_t> seen;
  for (int64_t step = 0; step < 200; ++step) {
    int32_t t = sampleToken(flat.data(), 64, p, step).token;
    EXPECT_EQ(sampleToken(flat.data(), 64, p, step).token, t);
    seen.insert(t);
  }
  EXPECT_GT(seen.size(), 30u) << "steps must draw different numbers";
  // Different seeds at the same step differ too.
  std::set<int32_t> bySeed;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    p.seed = seed;
    bySeed.insert(sampleToken(flat.data(), 64, p, 3).token);
  }
  EXPECT_GT(bySeed.size(), 30u);
}

// Batched and solo runs give logits that differ by rounding (~1e-6); where two candidates are
// that close their sorted order can swap. The sampled token must not change with it: the
// load test (load_test.cpp) caught a seeded request that took a different token alone.
TEST(Sampler, RoundingThatSwapsNearTiesKeepsTheToken) {
  std::vector<float> l = {0.3f, 1.5f, 1.5f, -0.2f, 1.0f, 0.9f, -1.0f, 0.4f};
  std::vector<float> swapped = l;
  swapped[1] += 2e-6f; // token 1 sorts before token 2 here...
  swapped[2] -= 2e-6f;
  l[1] -= 2e-6f;       // ... and after it here
  l[2] += 2e-6f;
  std::vector<float> noisy = l; // and every logit moved by rounding-sized noise
  for (size_t i = 0; i < noisy.size(); ++i)
    noisy[i] += (i % 2 ? 1e-6f : -1e-6f);
  int differ = 0, draws = 0;
  for (double T : {0.7, 1.0, 1.6})
    for (int64_t topK : {0, 5})
      for (uint64_t seed = 0; seed < 400; ++seed) {
        SamplingParams p = sampled(T, seed);
        p.top_k = topK;
        int32_t want = sampleToken(l.data(), (int64_t)l.size(), p, (int64_t)seed % 7).token;
        differ += sampleToken(swapped.data(), (int64_t)l.size(), p, (int64_t)seed % 7).token != want;
        differ += sampleToken(noisy.data(), (int64_t)l.size(), p, (int64_t)seed % 7).token != want;
        draws += 2;
      }
  EXPECT_EQ(differ, 0) << "of " << draws << " draws";
}

TEST(Sampler, ValidateAcceptsGoodParameters) {
  SamplingParams p;
  EXPECT_EQ(validateSampling(p), "");
  p.temperature = 0.7;
  p.top_k = 50;
  p.top_p = 1.0;
  p.min_p = 1.0;
  p.max_new_tokens = 1;
  EXPECT_EQ(validateSampling(p), "");
  p.min_p = 0.0;
  p.top_p = 1e-9;
  EXPECT_EQ(validateSampling(p), "");
}

TEST(Sampler, ValidateRejectsBadParameters) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string name, mention;
    std::function<void(SamplingParams &)> set;
  };
  std::vector<Case> cases = {
      {"negative temperature", "temperature", [](SamplingParams &p) { p.temperature = -0.5; }},
      {"NaN temperature", "temperature", [&](SamplingParams &p) { p.temperature = nan; }},
      {"infinite temperature", "temperature", [&](SamplingParams &p) { p.temperature = inf; }},
      {"top_p 0", "top_p", [](SamplingParams &p) { p.top_p = 0; }},
      {"negative top_p", "top_p", [](SamplingParams &p) { p.top_p = -0.1; }},
      {"top_p above 1", "top_p", [](SamplingParams &p) { p.top_p = 1.01; }},
      {"NaN top_p", "top_p", [&](SamplingParams &p) { p.top_p = nan; }},
      {"infinite top_p", "top_p", [&](SamplingParams &p) { p.top_p = inf; }},
      {"negative min_p", "min_p", [](SamplingParams &p) { p.min_p = -0.01; }},
      {"min_p above 1", "min_p", [](SamplingParams &p) { p.min_p = 1.5; }},
      {"NaN min_p", "min_p", [&](SamplingParams &p) { p.min_p = nan; }},
      {"infinite min_p", "min_p", [&](SamplingParams &p) { p.min_p = inf; }},
      {"-infinite temperature", "temperature", [&](SamplingParams &p) { p.temperature = -inf; }},
      {"max_new_tokens 0", "max_new_tokens", [](SamplingParams &p) { p.max_new_tokens = 0; }},
      {"negative max_new_tokens", "max_new_tokens",
       [](SamplingParams &p) { p.max_new_tokens = -3; }},
      {"negative top_k", "top_k", [](SamplingParams &p) { p.top_k = -1; }},
  };
  for (const Case &c : cases) {
    SamplingParams p;
    p.temperature = 0.8;
    c.set(p);
    std::string why = validateSampling(p);
    EXPECT_NE(why, "") << c.name;
    EXPECT_NE(why.find(c.mention), std::string::npos) << c.name << ": '" << why << "'";
  }
}

} // namespace
} // namespace cbc::rt
