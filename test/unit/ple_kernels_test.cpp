// The CPU kernels Qwen4-Exp added: the hashed n-gram rows against the ones transformers' module
// computes (SEMANTICS_QWEN4_EXP.md section 6's test vectors, measured on the fixture's config),
// the n-gram and dilated-conv states carried across pieces, the signed square root of a group
// dot, and the mean-pooled block selection against its definition.
#include "runtime/cpu/kernels.h"
#include "test/unit/kernel_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace cbc::rt::cpu {
namespace {

// PLE layer 0 of the qwen4_exp_text fixture (vocab 256, seed 4321, base 61, 2 heads per n-gram).
NgramParams fixtureLayer0() {
  NgramParams p;
  p.eos = 2;
  p.heads_per_ngram = 2;
  p.multipliers = {19069627851602619, 352707164342603, 4783379026011727};
  p.primes = {61, 67, 71, 73};
  p.offsets = {0, 61, 128, 199};
  return p;
}

// A table whose row r holds r, so the result names the rows read.
std::vector<float> indexTable(int64_t rows) {
  std::vector<float> t(rows);
  std::iota(t.begin(), t.end(), 0.0f);
  return t;
}

TEST(NgramEmbed, RowsMatchTransformersInAnyPieces) {
  std::vector<int32_t> ids = {5, 7, 2, 9, 11};
  const std::vector<float> want = {52, 78, 185, 216, 7, 110, 192, 249, 23, 97, 177, 236,
                                   5, 120, 178, 205, 3, 79, 156, 223};
  NgramParams p = fixtureLayer0();
  std::vector<float> table = indexTable(288);
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {1}, {2}, {3}, {1, 2, 3, 4}}) {
    std::vector<float> pool(3 * 2, -9.0f), y(ids.size() * 4, NAN);
    runInPieces((int64_t)ids.size(), cuts, 1, [&](const StateRows &rows, int64_t begin, int64_t) {
      ngramEmbed(&ids[begin], Matrix(table.data()), 1, p, rows, pool.data(), &y[begin * 4], serial);
    });
    EXPECT_EQ(y, want) << cuts.size() << " cuts";
    EXPECT_EQ(pool[0], -9.0f) << "another request's state was written";
    EXPECT_EQ(pool[2], 9.0f) << "the state keeps the last two ids";
    EXPECT_EQ(pool[3], 11.0f);
  }
}

// The walk back stops at an EOS: the token right after one sees (t, EOS, EOS), an EOS itself
// hashes with the tokens before it, and a fresh request starts from EOS.
TEST(NgramEmbed, ContextsStopAtEos) {
  NgramParams p = fixtureLayer0();
  std::vector<float> table = indexTable(288);
  auto rowsOf = [&](std::vector<int32_t> ids) {
    std::vector<float> pool(2, 0.0f), y(ids.size() * 4);
    int32_t cu[2] = {0, (int32_t)ids.size()}, slots[1] = {0}, has[1] = {0};
    ngramEmbed(ids.data(), Matrix(table.data()), 1, p, StateRows{cu, slots, slots, has, 1}, pool.data(), y.data(),
               serial);
    return std::vector<float>(y.end() - 4, y.end()); // the last token's rows
  };
  EXPECT_EQ(rowsOf({9, 2, 11}), rowsOf({2, 2, 11})) << "after an EOS the context is EOS";
  EXPECT_EQ(rowsOf({11}), rowsOf({2, 2, 11})) << "before the start the context is EOS";
  EXPECT_NE(rowsOf({9, 7, 2}), rowsOf({2, 2, 2})) << "an EOS hashes with its predecessors";
  std::vector<float> twoBack = rowsOf({9, 2, 7, 11}), plain = rowsOf({5, 5, 7, 11});
  EXPECT_EQ(twoBack[0], plain[0]) << "the 2-gram does not reach the EOS";
  EXPECT_EQ(twoBack[1], plain[1]);
  EXPECT_NE(twoBack[2], plain[2]) << "the 3-gram's walk crosses it";
}

// Tap j reads the input (K - 1 - j) * d rows back; the state carries (K - 1) * d inputs.
TEST(Conv1dDilated, InPiecesEqualsDefinition) {
  int64_t n = 31, C = 3, K = 4, d = 3;
  std::mt19937 rng(5);
  auto x = randoms(n * C, rng), w = randoms(C * K, rng);
  std::vector<float> want(n * C);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < K; ++j)
        if (int64_t src = t - (K - 1 - j) * d; src >= 0)
          acc += (double)w[c * K + j] * x[src * C + c];
      want[t * C + c] = (float)(acc / (1.0 + std::exp(-acc)));
    }
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {1}, {2, 4, 5}, {8, 9, 20}, {30}}) {
    std::vector<float> pool(2 * C * (K - 1) * d, -7.0f), y(n * C, NAN);
    runInPieces(n, cuts, 1, [&](const StateRows &rows, int64_t begin, int64_t) {
      ConvForm form;
      form.dilation = d;
      conv1dStates(&x[begin * C], C, K, w.data(), nullptr, Act::Silu, rows, pool.data(), &y[begin * C], serial,
                   false, 1, nullptr, form);
    });
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], want[i], 1e-6) << cuts.size() << " cuts, element " << i;
    EXPECT_EQ(pool[0], -7.0f) << "another request's slot was written";
  }
}

TEST(GroupDot, SignedSquareRootOfEachGroup) {
  std::vector<float> a = {1, 2, 0, 0, -3, 1, 1e-6f, 0}, b = {2, 1, 5, 5, 1, 1, 1, 0}, y(4);
  groupDot(a.data(), b.data(), 1, 8, 4, 0.5f, Act::SignedSqrt, y.data());
  EXPECT_FLOAT_EQ(y[0], std::sqrt(2.0f));  // 0.5 * (2 + 2)
  EXPECT_FLOAT_EQ(y[1], 0.0f);             // sign(0) is 0
  EXPECT_FLOAT_EQ(y[2], -1.0f);            // 0.5 * (-3 + 1)
  EXPECT_FLOAT_EQ(y[3], 1e-3f);            // 5e-7 floored at 1e-6
}

// Mean pooling with a key norm and rotation, against the definition: a query at position p keeps
// the `pools` best complete blocks and its open one; with blocks, as pool indices.
TEST(PoolSelect, MeanPooledBlocksMatchTheDefinition) {
  int64_t H = 2, D = 4, K = 2, N = 2, positions = 11;
  std::mt19937 rng(9);
  auto keys = randoms(positions * D, rng), q = randoms(H * D, rng), norm = randoms(D, rng);
  KvLayout layout;
  layout.block_size = 16;
  layout.index_elems = D;
  layout.row_elems = D;
  PoolSelectParams p;
  p.num_heads = H, p.head_dim = D, p.pools = N, p.pool = K, p.key_scale = 0.5f, p.weight_scale = 1.0f;
  p.key_norm = norm.data(), p.eps = 1e-5f, p.norm_offset = 1.0f, p.key_freqs = {0.3f}, p.blocks = true;
  int32_t table[1] = {0}, slots[1] = {0}, seq[1] = {0};
  for (int32_t pos = 0; pos < positions; ++pos) {
    std::vector<int32_t> out(N + 1, 99);
    poolSelect(q.data(), nullptr, 1, &pos, seq, slots, table, 1, layout, keys.data(), nullptr, p, out.data(), serial);
    int64_t complete = (pos + 1) / K;
    std::vector<std::pair<float, int32_t>> scored;
    for (int64_t i = 0; i < complete; ++i) {
      std::vector<double> key(D);
      for (int64_t f = 0; f < D; ++f)
        key[f] = (keys[(2 * i) * D + f] + keys[(2 * i + 1) * D + f]) / 2;
      double ss = 0;
      for (double v : key)
        ss += v * v;
      for (int64_t f = 0; f < D; ++f)
        key[f] *= (norm[f] + 1.0) / std::sqrt(ss / D + 1e-5);
      double angle = (double)(i * K) * 0.3, x1 = key[0], x2 = key[1]; // one frequency: features 0 and 1
      key[0] = x1 * std::cos(angle) - x2 * std::sin(angle);
      key[1] = x2 * std::cos(angle) + x1 * std::sin(angle);
      double s = 0;
      for (int64_t h = 0; h < H; ++h) {
        double dot = 0;
        for (int64_t f = 0; f < D; ++f)
          dot += q[h * D + f] * key[f];
        s += std::max(0.5 * dot, 0.0);
      }
      scored.push_back({(float)-s, (int32_t)i});
    }
    std::sort(scored.begin(), scored.end());
    std::vector<int32_t> want;
    for (size_t i = 0; i < scored.size() && (int64_t)i < N; ++i)
      want.push_back(scored[i].second);
    std::sort(want.begin(), want.end());
    if (complete * K <= pos)
      want.push_back((int32_t)complete); // the open block
    want.resize(N + 1, -1);
    EXPECT_EQ(out, want) << "position " << pos;
  }
}

} // namespace
} // namespace cbc::rt::cpu
