// The CPU kernels Inkling adds, against their definitions: paged attention with a distance bias
// against a dense softmax over the same keys in double (inside and beyond the bias extent, with
// and without a window), the log_ratio position scale against its formula, sigmoid routing with
// sink experts against a hand-worked token, the residual short conv, and the scalar factor of
// cbc.math.mul.
#include "runtime/cpu/kernels.h"
#include "test/unit/kernel_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace cbc::rt::cpu {
namespace {

struct BiasCase {
  int64_t window, extent;
};

class DistanceBias : public ::testing::TestWithParam<BiasCase> {};

// One request of n tokens, 4 query heads over 2 kv heads; the bias reaches `extent` keys back.
TEST_P(DistanceBias, MatchesDenseSoftmax) {
  const BiasCase c = GetParam();
  std::mt19937 rng(23);
  const int64_t H = 4, KV = 2, D = 8, n = 19, B = 4, E = c.extent;
  const float scale = 0.125f;
  auto q = randoms(n * H * D, rng), k = randoms(n * KV * D, rng), v = randoms(n * KV * D, rng);
  auto bias = randoms(n * H * E, rng);
  for (float &b : bias)
    b *= 3.0f; // large enough to move the softmax
  std::vector<int32_t> positions(n), seqIds(n, 0), slots = {0};
  for (int64_t t = 0; t < n; ++t)
    positions[t] = (int32_t)t;
  std::vector<int32_t> table = {4, 1, 3, 0, 2};
  KvLayout layout{B, 2 * KV * D, KV * D};
  std::vector<float> pool(5 * B * 2 * KV * D);
  kvAppend(k.data(), v.data(), n, positions.data(), seqIds.data(), slots.data(), table.data(), 5, layout, pool.data());
  AttentionParams p;
  p.num_heads = H;
  p.num_kv_heads = KV;
  p.head_dim = D;
  p.v_head_dim = D;
  p.scale = scale;
  p.window = c.window;
  p.distance_bias = bias.data();
  p.bias_extent = E;
  std::vector<float> out(n * H * D);
  pagedAttention(q.data(), n, positions.data(), seqIds.data(), slots.data(), table.data(), 5, layout, pool.data(), p,
                 out.data(), serial);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < H; ++h) {
      int64_t kvh = h / (H / KV), lo = c.window > 0 ? std::max<int64_t>(0, t - c.window + 1) : 0;
      std::vector<double> s;
      double mx = -INFINITY;
      for (int64_t j = lo; j <= t; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += (double)q[(t * H + h) * D + d] * k[(j * KV + kvh) * D + d];
        double x = dot * scale + (t - j < E ? bias[(t * H + h) * E + (t - j)] : 0.0);
        s.push_back(x);
        mx = std::max(mx, x);
      }
      double sum = 0;
      for (double &x : s)
        sum += x = std::exp(x - mx);
      for (int64_t d = 0; d < D; ++d) {
        double ref = 0;
        for (int64_t j = lo; j <= t; ++j)
          ref += s[j - lo] / sum * v[(j * KV + kvh) * D + d];
        EXPECT_NEAR(out[(t * H + h) * D + d], ref, 2e-5) << "t " << t << " h " << h << " d " << d;
      }
    }
}

// Full causal with the bias stopping short of the first keys; a window the bias covers exactly
// (Inkling's sliding layers); a window longer than the bias.
INSTANTIATE_TEST_SUITE_P(Extents, DistanceBias,
                         ::testing::Values(BiasCase{0, 6}, BiasCase{5, 5}, BiasCase{9, 4}),
                         [](const auto &info) {
                           return "window" + std::to_string(info.param.window) + "_extent" +
                                  std::to_string(info.param.extent);
                         });

TEST(PositionScale, LogRatioFormula) {
  // 1 + beta * log(max((p + 1) / 16, 1)): one up to position 15, then log growth.
  std::vector<float> x = {2, 2, 2, 2};
  std::vector<int32_t> positions = {0, 15, 31, 100};
  std::vector<float> y(4);
  positionScale(x.data(), 4, 1, positions.data(), 0.3f, 16, 1, y.data(), fb::PositionScaleForm::LogRatio);
  EXPECT_FLOAT_EQ(y[0], 2.0f);
  EXPECT_FLOAT_EQ(y[1], 2.0f);
  EXPECT_NEAR(y[2], 2.0 * (1 + 0.3 * std::log(2.0)), 1e-6);
  EXPECT_NEAR(y[3], 2.0 * (1 + 0.3 * std::log(101.0 / 16.0)), 1e-5);
  // The floor form is unchanged: 1 + beta * log(1 + floor((p + 1) / 16)).
  positionScale(x.data(), 4, 1, positions.data(), 0.3f, 16, 1, y.data());
  EXPECT_NEAR(y[2], 2.0 * (1 + 0.3 * std::log(3.0)), 1e-6);
}

TEST(PositionScale, PowerFormula) {
  // (1 + (p + 1) / 16) ^ 0.3, a real quotient: grows from the first position.
  std::vector<float> x = {2, 2, 2};
  std::vector<int32_t> positions = {0, 15, 100};
  std::vector<float> y(3);
  positionScale(x.data(), 3, 1, positions.data(), 0.3f, 16, 1, y.data(), fb::PositionScaleForm::Power);
  EXPECT_NEAR(y[0], 2.0 * std::pow(1 + 1 / 16.0, 0.3), 1e-6);
  EXPECT_NEAR(y[1], 2.0 * std::pow(2.0, 0.3), 1e-6);
  EXPECT_NEAR(y[2], 2.0 * std::pow(1 + 101 / 16.0, 0.3), 1e-5);
}

TEST(MoeRoute, SinksShareTheNormalisation) {
  // 4 routed experts, 2 sinks (the last two logits), top-2 chosen on sigmoid + bias.
  std::vector<float> logits = {1.0f, -1.0f, 0.5f, 2.0f, /* sinks */ 0.0f, -0.5f};
  std::vector<float> bias = {0.0f, 0.9f, 0.0f, -0.5f}; // expert 1 chosen by its bias, 3 kept out
  RouteParams p;
  p.score = RouteScore::Sigmoid;
  p.selection_bias = bias.data();
  p.scaling = 1.5f;
  p.sinks = 2;
  std::vector<float> w(4);
  std::vector<int32_t> ids(4);
  moeRoute(logits.data(), 1, 6, 2, p, w.data(), ids.data());
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  // keys: 0.731, 1.169, 0.622, 0.381 -> experts 1 then 0; ids after the 2 sinks.
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 3, 2}));
  double sum = sig(0.0) + sig(-0.5) + sig(-1.0) + sig(1.0);
  EXPECT_NEAR(w[0], 1.5 * sig(0.0) / sum, 1e-6);
  EXPECT_NEAR(w[1], 1.5 * sig(-0.5) / sum, 1e-6);
  EXPECT_NEAR(w[2], 1.5 * sig(-1.0) / sum, 1e-6);
  EXPECT_NEAR(w[3], 1.5 * sig(1.0) / sum, 1e-6);
}

// A residual short conv is the plain conv plus its input, row by row, across two steps.
TEST(Conv1d, ResidualAddsTheRow) {
  std::mt19937 rng(3);
  const int64_t C = 5, K = 4, n = 9;
  auto x = randoms(n * C, rng), w = randoms(C * K, rng);
  std::vector<int32_t> cu = {0, 6}, cu2 = {0, 3}, slots = {0}, none = {0}, carried = {1};
  std::vector<float> plain(n * C), res(n * C), pool1(C * (K - 1)), pool2(C * (K - 1));
  // Rows 0-5 in one step, 6-8 in the next from the carried state.
  StateRows first{cu.data(), slots.data(), slots.data(), none.data(), 1},
      second{cu2.data(), slots.data(), slots.data(), carried.data(), 1};
  conv1dStates(x.data(), C, K, w.data(), nullptr, Act::None, first, pool1.data(), plain.data(), serial);
  conv1dStates(x.data() + 6 * C, C, K, w.data(), nullptr, Act::None, second, pool1.data(), plain.data() + 6 * C,
               serial);
  conv1dStates(x.data(), C, K, w.data(), nullptr, Act::None, first, pool2.data(), res.data(), serial, true);
  conv1dStates(x.data() + 6 * C, C, K, w.data(), nullptr, Act::None, second, pool2.data(), res.data() + 6 * C,
               serial, true);
  for (int64_t i = 0; i < n * C; ++i)
    EXPECT_FLOAT_EQ(res[i], plain[i] + x[i]) << i;
  EXPECT_EQ(pool1, pool2); // the state holds inputs, not outputs
}

TEST(Mul, ScalarWeight) {
  std::vector<float> x = {1, -2, 3, 4, 5, -6}, g = {0.5f}, y(6);
  sigmoidGate(x.data(), g.data(), 2, 3, 0, y.data(), false);
  EXPECT_EQ(y, (std::vector<float>{0.5f, -1, 1.5f, 2, 2.5f, -3}));
}

} // namespace
} // namespace cbc::rt::cpu
