// The CPU kernels block attention residuals and clipped attention add, against their definitions:
// cbc.math.l2_clip, cbc.stream.attend, the conv's per-token taps with lag order and output
// scale, per-row sink logits in the paged attention, and the soft-capped SwiGLU.
#include "runtime/cpu/kernels.h"
#include "test/unit/kernel_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace cbc::rt::cpu {
namespace {

TEST(L2Clip, ShortGroupsPassLongOnesShrink) {
  // Two groups of 2: [3, 4] (length 5) is cut to 2.5, [0.6, 0.8] (length 1) passes unchanged.
  std::vector<float> x = {3, 4, 0.6f, 0.8f}, y(4);
  l2Clip(x.data(), 1, 4, 2, nullptr, 2.5f, 1e-6f, y.data());
  float f = 2.5f / (5.0f + 1e-6f);
  EXPECT_FLOAT_EQ(y[0], 3 * f);
  EXPECT_FLOAT_EQ(y[1], 4 * f);
  EXPECT_EQ(y[2], 0.6f);
  EXPECT_EQ(y[3], 0.8f);
  // A scale applies first: [0.6, 0.8] * [5, 5] has length 5 and is cut too.
  const float scale[] = {1, 1, 5, 5};
  l2Clip(x.data(), 1, 4, 2, scale, 2.5f, 1e-6f, y.data());
  EXPECT_FLOAT_EQ(y[2], 3 * f);
  EXPECT_FLOAT_EQ(y[3], 4 * f);
  EXPECT_NEAR(std::hypot(y[2], y[3]), 2.5, 1e-6);
}

// Per token, each query's softmax over the normed sources weighs those normed sources.
TEST(StreamAttend, MatchesItsDefinition) {
  std::mt19937 rng(41);
  const int64_t T = 3, N = 3, H = 5, Q = 2;
  const float eps = 1e-6f;
  auto s = randoms(T * N * H, rng, -2.0f, 2.0f), q = randoms(Q * H, rng, -3.0f, 3.0f);
  std::vector<float> y(T * Q * H);
  streamAttend(s.data(), T, N, H, q.data(), Q, eps, y.data());
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> n(N * H);
    for (int64_t i = 0; i < N; ++i) {
      double ms = 0;
      for (int64_t h = 0; h < H; ++h)
        ms += (double)s[(t * N + i) * H + h] * s[(t * N + i) * H + h] / H;
      for (int64_t h = 0; h < H; ++h)
        n[i * H + h] = s[(t * N + i) * H + h] / std::sqrt(ms + eps);
    }
    for (int64_t k = 0; k < Q; ++k) {
      std::vector<double> w(N);
      double total = 0;
      for (int64_t i = 0; i < N; ++i) {
        double dot = 0;
        for (int64_t h = 0; h < H; ++h)
          dot += q[k * H + h] * n[i * H + h];
        total += w[i] = std::exp(dot / std::sqrt((double)H));
      }
      for (int64_t h = 0; h < H; ++h) {
        double ref = 0;
        for (int64_t i = 0; i < N; ++i)
          ref += w[i] / total * n[i * H + h];
        EXPECT_NEAR(y[(t * Q + k) * H + h], ref, 1e-5) << "t " << t << " query " << k << " h " << h;
      }
    }
  }
  // A zero query weighs the sources equally: the mean of the normed sources.
  std::vector<float> zero(H, 0.0f), mean(T * H);
  streamAttend(s.data(), T, N, H, zero.data(), 1, eps, mean.data());
  float rms0 = 0;
  for (int64_t h = 0; h < H; ++h)
    rms0 += s[h] * s[h] / H;
  float expect = 0;
  for (int64_t i = 0; i < N; ++i) {
    float ms = 0;
    for (int64_t h = 0; h < H; ++h)
      ms += s[i * H + h] * s[i * H + h] / H;
    expect += s[i * H] / std::sqrt(ms + eps) / N;
  }
  EXPECT_NEAR(mean[0], expect, 1e-5);
}

// A dynamic conv: taps per token shared by runs of channels, in lag order, scaled, carried over
// two calls (the second continues the first one's state).
TEST(Conv1d, TokenTapsInLagOrderAcrossChunks) {
  std::mt19937 rng(7);
  const int64_t C = 4, K = 3, T = 5, runs = 2, D = C / runs;
  auto x = randoms(T * C, rng), w = randoms(C * K, rng), taps = randoms(T * runs * K, rng);
  const float scale = 0.4f;
  std::vector<float> y(T * C), pool(C * (K - 1), 0.0f);
  int32_t split = 2, zero = 0, one = 1;
  auto run = [&](int64_t from, int64_t to, int32_t hasInitial) {
    int32_t cu[2] = {0, (int32_t)(to - from)};
    StateRows rows{cu, &zero, &zero, &hasInitial, 1};
    ConvForm f{taps.data() + from * runs * K, runs * K, true, scale};
    conv1dStates(x.data() + from * C, C, K, w.data(), nullptr, Act::None, rows, pool.data(), y.data() + from * C,
                 serial, true, 1, nullptr, f);
  };
  run(0, split, zero);
  run(split, T, one);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t lag = 0; lag < K && lag <= t; ++lag)
        acc += ((double)w[c * K + lag] + taps[(t * runs + c / D) * K + lag]) * x[(t - lag) * C + c];
      EXPECT_NEAR(y[t * C + c], scale * (x[t * C + c] + acc), 1e-5) << "t " << t << " c " << c;
    }
}

// Sink logits per query row: each row's softmax denominator gains exp(its own sink).
TEST(PagedAttention, SinkLogitsPerRow) {
  const int64_t H = 2, D = 2, n = 3, B = 4;
  std::vector<float> q = {1, 0, 0, 1, /**/ 0.5f, 0.5f, 1, -1, /**/ -1, 1, 0.2f, 0.3f};
  std::vector<float> k = {1, 2, /**/ -1, 0.5f, /**/ 0.3f, -0.7f}, v = {1, 0, /**/ 0, 1, /**/ 2, 2};
  std::vector<float> sinks = {0.5f, -1.0f, /**/ 2.0f, 0.0f, /**/ -3.0f, 1.5f};
  std::vector<int32_t> positions = {0, 1, 2}, seqIds = {0, 0, 0}, slots = {0}, table = {0};
  KvLayout layout{B, 2 * D, D};
  std::vector<float> pool(B * 2 * D);
  kvAppend(k.data(), v.data(), n, positions.data(), seqIds.data(), slots.data(), table.data(), 1, layout, pool.data());
  AttentionParams p;
  p.num_heads = H;
  p.num_kv_heads = 1;
  p.head_dim = D;
  p.v_head_dim = D;
  p.scale = 0.7f;
  p.sink_rows = sinks.data();
  std::vector<float> out(n * H * D);
  pagedAttention(q.data(), n, positions.data(), seqIds.data(), slots.data(), table.data(), 1, layout, pool.data(), p,
                 out.data(), serial);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < H; ++h) {
      double denom = std::exp((double)sinks[t * H + h]), o[2] = {0, 0};
      for (int64_t j = 0; j <= t; ++j) {
        double e = std::exp(0.7 * (q[(t * H + h) * D] * k[j * D] + q[(t * H + h) * D + 1] * k[j * D + 1]));
        denom += e;
        o[0] += e * v[j * D];
        o[1] += e * v[j * D + 1];
      }
      for (int64_t d = 0; d < D; ++d)
        EXPECT_NEAR(out[(t * H + h) * D + d], o[d] / denom, 1e-6) << "t " << t << " h " << h;
    }
}

// The soft-capped SwiGLU: the gate's linear factor and the up input capped, the sigmoid not.
TEST(Glu, SoftcappedSwiglu) {
  SwigluClamp f{.gate_cap = 2.0f, .up_cap = 3.0f};
  for (float g : {-5.0f, -0.5f, 0.0f, 1.0f, 6.0f})
    for (float u : {-9.0f, 0.25f, 4.0f}) {
      float ref = 2.0f * std::tanh(g / 2.0f) / (1.0f + std::exp(-g)) * (3.0f * std::tanh(u / 3.0f));
      EXPECT_NEAR(swigluUnit(f, g, u), ref, 1e-6) << "g " << g << " u " << u;
    }
  // Interleaved gate/up columns through glu() use the same unit.
  std::vector<float> x = {6.0f, -9.0f, 1.0f, 0.25f}, y(2);
  glu(x.data(), 1, 2, Act::Silu, true, &f, y.data());
  EXPECT_FLOAT_EQ(y[0], swigluUnit(f, 6.0f, -9.0f));
  EXPECT_FLOAT_EQ(y[1], swigluUnit(f, 1.0f, 0.25f));
}

} // namespace
} // namespace cbc::rt::cpu
