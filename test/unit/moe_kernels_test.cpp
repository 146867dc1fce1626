// The CPU router and experts (cbc.moe.route, cbc.moe.experts) on cases worked by hand:
// group-limited choice (top-2-sum and max group scores, -inf and zero fills, ties), a
// selection bias that steers the choice but not the weights, and identity experts.
//
// Scores are made exact by construction: a sigmoid router gets the logits log(p / (1 - p)) and
// a softmax router log(q) with the q summing to one, so the unbiased scores are p and q.
#include "runtime/cpu/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace cbc::rt::cpu {
namespace {

std::vector<float> sigmoidLogits(const std::vector<double> &p) {
  std::vector<float> l;
  for (double v : p)
    l.push_back((float)std::log(v / (1 - v)));
  return l;
}

std::vector<float> softmaxLogits(const std::vector<double> &q) {
  std::vector<float> l;
  for (double v : q)
    l.push_back((float)std::log(v));
  return l;
}

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

Routed route(const std::vector<float> &logits, int64_t k, const RouteParams &p) {
  Routed r{std::vector<int32_t>(k), std::vector<float>(k)};
  moeRoute(logits.data(), 1, (int64_t)logits.size(), k, p, r.weights.data(), r.ids.data());
  return r;
}

void expectWeights(const Routed &r, const std::vector<double> &want) {
  ASSERT_EQ(r.weights.size(), want.size());
  for (size_t j = 0; j < want.size(); ++j)
    EXPECT_NEAR(r.weights[j], want[j], 1e-5) << "choice " << j;
}

RouteParams groups(RouteScore score, int64_t count, int64_t keep, fb::GroupScore gs, fb::GroupFill fill) {
  RouteParams p;
  p.score = score;
  p.group_count = count;
  p.group_keep = keep;
  p.group_score = gs;
  p.group_fill = fill;
  return p;
}

// Eight sigmoid experts in four groups of two, DeepSeek-V3 style. Selection scores c = p + bias
// (only expert 4 is biased, +0.55):
//   p = 0.9 0.05 | 0.6 0.5 | 0.2 0.3 | 0.7 0.65    c = 0.9 0.05 | 0.6 0.5 | 0.75 0.3 | 0.7 0.65
const std::vector<double> kP = {0.9, 0.05, 0.6, 0.5, 0.2, 0.3, 0.7, 0.65};
const std::vector<float> kBias = {0, 0, 0, 0, 0.55f, 0, 0, 0};

// Top-2 sums of c: 0.95, 1.1, 1.05, 1.35; the two best groups are 3 and 1, so expert 0, the best
// single expert, is out. The top 3 of {2: 0.6, 3: 0.5, 6: 0.7, 7: 0.65} are 6, 7, 2, weighted by
// p = 0.7, 0.65, 0.6, renormalised (sum 1.95) and scaled by 2.5.
TEST(MoeRoute, GroupsTop2SumKeepTheBestPairs) {
  RouteParams p = groups(RouteScore::Sigmoid, 4, 2, fb::GroupScore::Top2Sum, fb::GroupFill::NegInf);
  p.selection_bias = kBias.data();
  p.renorm = true;
  p.renorm_eps = 1e-20f;
  p.scaling = 2.5f;
  Routed r = route(sigmoidLogits(kP), 3, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{6, 7, 2}));
  expectWeights(r, {2.5 * 0.7 / 1.95, 2.5 * 0.65 / 1.95, 2.5 * 0.6 / 1.95});
}

// The same router without groups picks the global top 3 of c: 0 (0.9), 4 (0.75), 6 (0.7).
TEST(MoeRoute, WithoutGroupsTheSameScoresPickTheGlobalBest) {
  RouteParams p;
  p.score = RouteScore::Sigmoid;
  p.selection_bias = kBias.data();
  Routed r = route(sigmoidLogits(kP), 3, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 4, 6}));
  expectWeights(r, {0.9, 0.2, 0.7});
}

// Group maxima of c: 0.9, 0.6, 0.75, 0.7; groups 0 and 2 are kept. The top 2 of
// {0: 0.9, 1: 0.05, 4: 0.75, 5: 0.3} are 0 and 4: the bias makes expert 4 beat expert 5
// (unbiased 0.2 < 0.3), but its weight is its unbiased 0.2. Renormalised: 0.9 / 1.1, 0.2 / 1.1.
TEST(MoeRoute, GroupsMaxAndABiasThatSteersOnlyTheChoice) {
  RouteParams p = groups(RouteScore::Sigmoid, 4, 2, fb::GroupScore::Max, fb::GroupFill::NegInf);
  p.selection_bias = kBias.data();
  p.renorm = true;
  Routed r = route(sigmoidLogits(kP), 2, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 4}));
  expectWeights(r, {0.9 / 1.1, 0.2 / 1.1});
}

// Negative selection scores: p = 0.3 0.2 | 0.25 0.1 with bias -0.5 -0.6 | -0.9 -0.05 give
// c = -0.2 -0.4 | -0.65 0.05. Group maxima -0.2 and 0.05 keep group 1. With a -inf fill the
// top 2 are 3 and 2 of the kept group; with a zero fill the dropped experts' 0 beats expert 2's
// -0.65, and of the tied zeros the lower index (0) wins. Weights are the unbiased p.
TEST(MoeRoute, GroupFillMattersWhenKeptScoresAreNegative) {
  std::vector<float> logits = sigmoidLogits({0.3, 0.2, 0.25, 0.1});
  std::vector<float> bias = {-0.5f, -0.6f, -0.9f, -0.05f};
  RouteParams p = groups(RouteScore::Sigmoid, 2, 1, fb::GroupScore::Max, fb::GroupFill::NegInf);
  p.selection_bias = bias.data();
  Routed negInf = route(logits, 2, p);
  EXPECT_EQ(negInf.ids, (std::vector<int32_t>{3, 2}));
  expectWeights(negInf, {0.1, 0.25});

  p.group_fill = fb::GroupFill::Zero;
  Routed zero = route(logits, 2, p);
  EXPECT_EQ(zero.ids, (std::vector<int32_t>{3, 0}));
  expectWeights(zero, {0.1, 0.3});
}

// DeepSeek-V2's group_limited_greedy: softmax q = 0.05 0.3 | 0.2 0.15 | 0.25 0.05, groups
// scored by their max (0.3, 0.2, 0.25), two kept (0 and 2). The top 3 of {0: 0.05, 1: 0.3,
// 4: 0.25, 5: 0.05} are 1, 4 and then 0, which ties with 5 and has the lower index; expert 2
// (0.2, the third best overall) is out. No renormalisation.
TEST(MoeRoute, SoftmaxGroupsMaxZeroFill) {
  RouteParams p = groups(RouteScore::Softmax, 3, 2, fb::GroupScore::Max, fb::GroupFill::Zero);
  Routed r = route(softmaxLogits({0.05, 0.3, 0.2, 0.15, 0.25, 0.05}), 3, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 4, 0}));
  expectWeights(r, {0.3, 0.25, 0.05});
}

// Equal logits: every softmax score is exactly 0.25 and both groups' top-2 sums 0.5. The tie
// keeps group 0, and its experts tie too: ids 0, 1, renormalised to 0.5 each.
TEST(MoeRoute, GroupAndExpertTiesGoToTheLowerIndex) {
  RouteParams p = groups(RouteScore::Softmax, 2, 1, fb::GroupScore::Top2Sum, fb::GroupFill::NegInf);
  p.renorm = true;
  Routed r = route({1.0f, 1.0f, 1.0f, 1.0f}, 2, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1}));
  expectWeights(r, {0.5, 0.5});
}

// Two ungated experts (H = 2, I = 1, no activation) and two identity experts (ids 2 and 3):
//   expert 0: up [1, 2], down [1, -1];  expert 1: up [0, 1], down [2, 0].
// Token 0, x = [3, 4], ids {0, 2}, weights {0.5, 0.25}: 0.5 * 11 * [1, -1] + 0.25 * [3, 4]
//   = [6.25, -4.5].
// Token 1, x = [1, -1], ids {3, 1}, weights {2, 0.5}: 2 * [1, -1] + 0.5 * (-1) * [2, 0] = [1, -2].
TEST(MoeExperts, IdentityExpertsAddTheWeightedInput) {
  std::vector<float> up = {1, 2, 0, 1}, down = {1, -1, 2, 0};
  ExpertWeights w{up.data(), down.data(), nullptr, nullptr, 2, 1, 2, /*ungated=*/true, /*identity=*/2};
  std::vector<float> x = {3, 4, 1, -1}, weights = {0.5f, 0.25f, 2.0f, 0.5f}, out(4);
  std::vector<int32_t> ids = {0, 2, 3, 1};
  moeExperts(x.data(), 2, ids.data(), weights.data(), 2, w, Act::None, false, nullptr, out.data());
  std::vector<float> want = {6.25f, -4.5f, 1.0f, -2.0f};
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(out[i], want[i]) << i;

  ids = {0, 4, 3, 1}; // past the last identity expert
  EXPECT_THROW(moeExperts(x.data(), 2, ids.data(), weights.data(), 2, w, Act::None, false, nullptr, out.data()),
               std::runtime_error);
  w.identity = 0; // without identity experts, id 2 is out of range
  ids = {0, 2, 1, 1};
  EXPECT_THROW(moeExperts(x.data(), 2, ids.data(), weights.data(), 2, w, Act::None, false, nullptr, out.data()),
               std::runtime_error);
}

// A null expert after the identity experts adds nothing: the same two tokens as above with
// token 0's identity choice replaced by the null expert (id 4) keep only 0.5 * 11 * [1, -1].
TEST(MoeExperts, NullExpertsAddNothing) {
  std::vector<float> up = {1, 2, 0, 1}, down = {1, -1, 2, 0};
  ExpertWeights w{up.data(), down.data(), nullptr, nullptr, 2, 1, 2, /*ungated=*/true, /*identity=*/2};
  w.null = 1;
  std::vector<float> x = {3, 4, 1, -1}, weights = {0.5f, 0.25f, 2.0f, 0.5f}, out(4);
  std::vector<int32_t> ids = {0, 4, 3, 1};
  moeExperts(x.data(), 2, ids.data(), weights.data(), 2, w, Act::None, false, nullptr, out.data());
  std::vector<float> want = {5.5f, -5.5f, 1.0f, -2.0f};
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(out[i], want[i]) << i;
  ids = {0, 5, 3, 1}; // past the null expert
  EXPECT_THROW(moeExperts(x.data(), 2, ids.data(), weights.data(), 2, w, Act::None, false, nullptr, out.data()),
               std::runtime_error);
}

// Llama 4 scales the expert's input by the routing weight: silu is not homogeneous, so the two
// placements differ. One gated expert of width 1 over H = 1: gate = up = x, down = 1.
TEST(MoeExperts, ScaleInputWeighsTheInputNotTheOutput) {
  std::vector<float> gateUp = {1, 1}, down = {1};
  ExpertWeights w{gateUp.data(), down.data(), nullptr, nullptr, 1, 1, 1};
  std::vector<float> x = {2}, weights = {0.5f}, out(1);
  std::vector<int32_t> ids = {0};
  auto silu = [](float v) { return v / (1 + std::exp(-v)); };
  moeExperts(x.data(), 1, ids.data(), weights.data(), 1, w, Act::Silu, false, nullptr, out.data());
  EXPECT_FLOAT_EQ(out[0], 0.5f * silu(2.0f) * 2.0f); // weight * down(silu(g) * u) at x = 2
  w.scale_input = true;
  moeExperts(x.data(), 1, ids.data(), weights.data(), 1, w, Act::Silu, false, nullptr, out.data());
  EXPECT_FLOAT_EQ(out[0], silu(1.0f) * 1.0f); // down(silu(g) * u) at 0.5 * x = 1
}

// Two experts of [N = 2, K = 2]: expert 0 = [[1, 0], [0, 2]], expert 1 = [[0, 1], [1, 1]].
// Fanned out, token x = [3, 4] with ids {1, 0} gets [expert 1 . x | expert 0 . x] = [4, 7 | 3, 8].
// Mixed, the token's blocks [1, 2] (choice 0, expert 1) and [3, -1] (choice 1, expert 0) with
// weights {0.5, 2}: 0.5 * [2, 3] + 2 * [3, -2] = [7, -2.5].
TEST(MoeSlotLinear, ProjectsEachChoiceByItsExpert) {
  std::vector<float> w = {1, 0, 0, 2, 0, 1, 1, 1};
  std::vector<int32_t> ids = {1, 0};
  std::vector<float> x = {3, 4}, out(4);
  moeSlotLinear(x.data(), 1, ids.data(), nullptr, 2, w.data(), 2, 2, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{4, 7, 3, 8}));
  std::vector<float> blocks = {1, 2, 3, -1}, mix = {0.5f, 2.0f}, mixed(2);
  moeSlotLinear(blocks.data(), 1, ids.data(), mix.data(), 2, w.data(), 2, 2, 2, mixed.data());
  EXPECT_EQ(mixed, (std::vector<float>{7, -2.5f}));
  ids = {1, 2}; // past the last expert
  EXPECT_THROW(moeSlotLinear(x.data(), 1, ids.data(), nullptr, 2, w.data(), 2, 2, 2, out.data()), std::runtime_error);
}

// Sparsemixer (Phi-3.5-MoE), threshold 0.2 over logits 2.0, 1.9, 0.5, -1.0. Round 0 (m = 2.0):
// expert 1's gap 0.1 / 2 is within, expert 2's 1.5 / 2 and expert 3's 3 / max(1, 2) are not, so
// w0 = 1 / (1 + e^-0.1). Round 1 (m = 1.9, expert 0 taken): 1.4 / 1.9 and 2.9 / 1.9 are out, w1 = 1.
// Threshold 0.8 lets expert 2 into both rounds: w0 = 1 / (1 + e^-0.1 + e^-1.5), w1 = 1 / (1 + e^-1.4).
TEST(MoeRoute, SparsemixerWeighsEachRoundByItsMaskedSoftmax) {
  RouteParams p;
  p.score = RouteScore::Sparsemixer;
  p.threshold = 0.2f;
  std::vector<float> logits = {2.0f, 1.9f, 0.5f, -1.0f};
  Routed r = route(logits, 2, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1}));
  expectWeights(r, {1 / (1 + std::exp(-0.1)), 1.0});
  p.threshold = 0.8f;
  r = route(logits, 2, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1}));
  expectWeights(r, {1 / (1 + std::exp(-0.1) + std::exp(-1.5)), 1 / (1 + std::exp(-1.4))});
}

// A selection bias on the logits (Kolibri-1) rather than on the sigmoid scores: logits 4, 0, 2, -1
// with bias 3.5 on expert 1 rank 4 > 3.5 (expert 0), where on the scores sigmoid(0) + 3.5 would
// beat sigmoid(4) (expert 1). The weight is the unbiased sigmoid either way.
TEST(MoeRoute, ABiasOnTheLogitsRanksLogitPlusBias) {
  std::vector<float> logits = {4.0f, 0.0f, 2.0f, -1.0f}, bias = {0, 3.5f, 0, 0};
  RouteParams p;
  p.score = RouteScore::Sigmoid;
  p.selection_bias = bias.data();
  p.bias_on_logits = true;
  Routed r = route(logits, 1, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0}));
  expectWeights(r, {1 / (1 + std::exp(-4.0))});
  p.bias_on_logits = false;
  r = route(logits, 1, p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1}));
  expectWeights(r, {0.5});
}

} // namespace
} // namespace cbc::rt::cpu
