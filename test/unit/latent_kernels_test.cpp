// The CPU kernels of latent attention against their definitions: cbc.math.head_linear against a
// plain loop, cbc.math.position_scale against its formula, and the absorbed form of
// multi-head latent attention (query through the key up-projection, attention over cached
// latents, value up-projection after) against the expanded form transformers computes, where
// every cached latent is first up-projected into per-head keys and values.
#include "runtime/cpu/kernels.h"
#include "test/unit/kernel_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace cbc::rt::cpu {
namespace {

TEST(HeadLinear, HandWorkedSlice) {
  // Two heads of R = 3 rows over C = 2; each head uses rows 1 and 2 of its block.
  std::vector<float> w = {1, 2, /**/ 3, 4, /**/ 5, 6, /* head 1 */ 7, 8, /**/ 9, 10, /**/ 11, 12};
  std::vector<float> x = {1, -1, /* head 1 */ 2, 1}; // one token, heads of C = 2
  std::vector<float> y(4);
  headLinear(x.data(), 1, w.data(), 2, 3, 2, 1, 2, false, y.data());
  // head 0: [3 - 4, 5 - 6]; head 1: [18 + 10, 22 + 12]
  EXPECT_EQ(y, (std::vector<float>{-1, -1, 28, 34}));
  // Transposed: heads of rows = 2 inputs, C = 2 outputs: W_h^T x.
  std::vector<float> xt = {1, 2, /* head 1 */ -1, 1};
  headLinear(xt.data(), 1, w.data(), 2, 3, 2, 1, 2, true, y.data());
  // head 0: [3 + 10, 4 + 12]; head 1: [-9 + 11, -10 + 12]
  EXPECT_EQ(y, (std::vector<float>{13, 16, 2, 2}));
}

TEST(HeadLinear, ManyTokensMatchLoop) {
  std::mt19937 rng(5);
  int64_t T = 7, heads = 3, R = 9, C = 5, offset = 4, rows = 4;
  auto w = randoms(heads * R * C, rng);
  for (bool transpose : {false, true}) {
    int64_t in = transpose ? rows : C, out = transpose ? C : rows;
    auto x = randoms(T * heads * in, rng);
    std::vector<float> y(T * heads * out);
    headLinear(x.data(), T, w.data(), heads, R, C, offset, rows, transpose, y.data());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t o = 0; o < out; ++o) {
          double ref = 0;
          for (int64_t i = 0; i < in; ++i) {
            int64_t n = transpose ? i : o, c = transpose ? o : i;
            ref += (double)w[(h * R + offset + n) * C + c] * x[(t * heads + h) * in + i];
          }
          EXPECT_NEAR(y[(t * heads + h) * out + o], ref, 1e-5) << "t " << t << " h " << h << " o " << o;
        }
  }
}

TEST(PositionScale, Formula) {
  std::vector<int32_t> pos = {0, 15, 16, 47, 48};
  std::vector<float> x(5 * 2, 2.0f), y(10);
  positionScale(x.data(), 5, 2, pos.data(), 0.1f, 16, 0, y.data());
  const float expect[] = {1, 1, 1 + 0.1f * std::log(2.0f), 1 + 0.1f * std::log(3.0f), 1 + 0.1f * std::log(4.0f)};
  for (int t = 0; t < 5; ++t)
    for (int j = 0; j < 2; ++j)
      EXPECT_FLOAT_EQ(y[t * 2 + j], 2.0f * expect[t]) << "position " << pos[t];
  // An offset shifts the position before the floor: 15 + 1 reaches the next period.
  positionScale(x.data(), 5, 2, pos.data(), 0.1f, 16, 1, y.data());
  EXPECT_FLOAT_EQ(y[2], 2.0f * (1 + 0.1f * std::log(2.0f)));
}

// Mistral Large 4's per-head factor: bias alone at position 0, negative factors kept (they flip
// a head, which is why the factor cannot be folded into a projection before a ReLU).
TEST(HeadPositionScale, Formula) {
  std::vector<int32_t> pos = {0, 1, 9};
  const float scale[] = {0.5f, -0.75f}, bias[] = {1.0f, 0.25f};
  std::vector<float> x(3 * 6), y(3 * 6);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.1f * (float)i - 0.4f;
  headPositionScale(x.data(), 3, 6, 2, pos.data(), scale, bias, y.data());
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 6; ++j) {
      int h = j / 3;
      float f = scale[h] * std::log((float)pos[t] + 1.0f) + bias[h];
      EXPECT_FLOAT_EQ(y[t * 6 + j], x[t * 6 + j] * f) << "token " << t << " column " << j;
    }
  EXPECT_FLOAT_EQ(y[3], x[3] * 0.25f); // position 0: the bias
  // Position 9, head 1: the factor is negative, so the kernel flips the head's signs.
  for (int j = 3; j < 6; ++j)
    EXPECT_LT(y[2 * 6 + j] * x[2 * 6 + j], 0.0f) << "column " << j;
}

// LeRoPE: learned log-scales multiply the frequencies, the same rotation as a schedule whose
// frequencies are inv_freq * exp(scale).
TEST(Rope, FreqLogScaleMultipliesTheFrequencies) {
  RopeParams p;
  p.head_dim = 8;
  p.rotary_dim = 8;
  p.interleaved = true;
  p.inv_freq = {1.0f, 0.1f, 0.01f, 0.001f};
  const float alpha[] = {0.5f, -0.3f, 1.2f, 0.0f};
  RopeParams folded = p;
  for (int i = 0; i < 4; ++i)
    folded.inv_freq[i] = p.inv_freq[i] * std::exp(alpha[i]);
  std::vector<int32_t> pos = {0, 3, 17};
  std::vector<int64_t> len = {18, 18, 18};
  std::vector<float> x(3 * 16), a(x.size()), b(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.7f * (float)i);
  ParallelFor serial = [](int64_t n, const std::function<void(int64_t)> &fn) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
  };
  rope(x.data(), 3, 16, p, pos.data(), len.data(), a.data(), serial, nullptr, alpha);
  rope(x.data(), 3, 16, folded, pos.data(), len.data(), b.data(), serial);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_FLOAT_EQ(a[i], b[i]) << i;
  rope(x.data(), 3, 16, p, pos.data(), len.data(), b.data(), serial);
  EXPECT_NE(a[16 + 2], b[16 + 2]); // the scales do change the rotation
}

// One request of n tokens prefilled in one step, latent rows appended, then attention of every
// token: absorbed (cbc) against expanded (K = [kv_b_k c | k_rope], V = kv_b_v c per head). With
// a rope part of 0 features the layer has no position embedding at all (NoPE latent attention).
class LatentAttention : public ::testing::TestWithParam<int64_t> {};

TEST_P(LatentAttention, AbsorbedEqualsExpanded) {
  std::mt19937 rng(11);
  const int64_t H = 3, L = 8, R = GetParam(), N = 6, V = 5, n = 13, B = 4;
  const float scale = 0.3f;
  auto latent = randoms(n * L, rng), kRope = randoms(n * R, rng);
  auto qNope = randoms(n * H * N, rng), qRope = randoms(n * H * R, rng);
  auto kvb = randoms(H * (N + V) * L, rng); // per head [N key rows | V value rows] over L
  std::vector<int32_t> positions(n), seqIds(n, 0), slots = {0};
  for (int64_t t = 0; t < n; ++t)
    positions[t] = (int32_t)t;
  // Blocks out of order, so that the table matters.
  std::vector<int32_t> table = {3, 0, 2, 1};
  KvLayout layout{B, L + R, L};
  std::vector<float> pool(4 * B * (L + R));
  kvAppend(latent.data(), kRope.data(), n, positions.data(), seqIds.data(), slots.data(), table.data(), 4, layout,
           pool.data());

  std::vector<float> qLatent(n * H * L), oLatent(n * H * L), out(n * H * V);
  headLinear(qNope.data(), n, kvb.data(), H, N + V, L, 0, N, true, qLatent.data());
  LatentAttentionParams p{H, L, R, scale, 0, 0};
  latentAttention(qLatent.data(), qRope.data(), n, positions.data(), seqIds.data(), slots.data(), table.data(), 4,
                  layout, pool.data(), p, oLatent.data(), serial);
  headLinear(oLatent.data(), n, kvb.data(), H, N + V, L, N, V, false, out.data());

  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < H; ++h) {
      // Expanded keys and values of every visible token, in double.
      std::vector<double> scores(t + 1);
      double m = -INFINITY;
      for (int64_t j = 0; j <= t; ++j) {
        double s = 0;
        for (int64_t i = 0; i < N; ++i) {
          double k = 0;
          for (int64_t c = 0; c < L; ++c)
            k += (double)kvb[(h * (N + V) + i) * L + c] * latent[j * L + c];
          s += qNope[(t * H + h) * N + i] * k;
        }
        for (int64_t i = 0; i < R; ++i)
          s += (double)qRope[(t * H + h) * R + i] * kRope[j * R + i];
        scores[j] = s * scale;
        m = std::max(m, scores[j]);
      }
      double denom = 0;
      for (double &s : scores)
        denom += s = std::exp(s - m);
      for (int64_t d = 0; d < V; ++d) {
        double o = 0;
        for (int64_t j = 0; j <= t; ++j) {
          double v = 0;
          for (int64_t c = 0; c < L; ++c)
            v += (double)kvb[(h * (N + V) + N + d) * L + c] * latent[j * L + c];
          o += scores[j] / denom * v;
        }
        EXPECT_NEAR(out[(t * H + h) * V + d], o, 1e-5) << "token " << t << " head " << h << " feature " << d;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(RopeWidths, LatentAttention, ::testing::Values(4, 0),
                         [](const auto &info) { return info.param ? "rope4" : "nope"; });

} // namespace
} // namespace cbc::rt::cpu
