// The CPU kernels of sparse (indexed) attention against their definitions: the index_key row
// sits after the latent rows without disturbing them, the indexer's scores and top-k against a
// brute-force ranking (ties to the lower position, fewer keys than k padded with -1), and latent
// attention over a selection against a softmax over exactly the selected rows.
#include "runtime/cpu/kernels.h"
#include "test/unit/kernel_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace cbc::rt::cpu {
namespace {

// One request of n tokens at positions 0..n-1 over blocks of B, the table out of order.
struct Request {
  static constexpr int64_t B = 4, L = 8, R = 4, DI = 6;
  int64_t n;
  std::vector<int32_t> positions, seqIds, slots = {0}, table;
  KvLayout layout{B, L + R + DI, L, DI};
  std::vector<float> pool;
  explicit Request(int64_t n) : n(n), positions(n), seqIds(n, 0) {
    std::iota(positions.begin(), positions.end(), 0);
    int64_t blocks = (n + B - 1) / B;
    table.resize(blocks);
    std::iota(table.rbegin(), table.rend(), 0);
    pool.assign(blocks * B * layout.row_elems, 0.0f);
  }
  const float *row(int64_t j) const { return pool.data() + (table[j / B] * B + j % B) * layout.row_elems; }
};

TEST(LayerNorm, HandWorkedRow) {
  // Row [1, 2, 3, 6]: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5.
  std::vector<float> x = {1, 2, 3, 6}, w = {1, 2, 1, 0.5f}, b = {0, 1, -1, 0}, y(4);
  layerNorm(x.data(), 1, 4, 4, w.data(), b.data(), false, 0.0f, 0.0f, y.data());
  float inv = 1.0f / std::sqrt(3.5f);
  EXPECT_FLOAT_EQ(y[0], -2 * inv);
  EXPECT_FLOAT_EQ(y[1], -1 * inv * 2 + 1);
  EXPECT_FLOAT_EQ(y[2], -1.0f);
  EXPECT_FLOAT_EQ(y[3], 3 * inv * 0.5f);
}

TEST(IndexAppend, WritesAfterTheLatentRows) {
  std::mt19937 rng(3);
  Request r(9);
  auto lat = randoms(r.n * r.L, rng), rope = randoms(r.n * r.R, rng), key = randoms(r.n * r.DI, rng);
  kvAppend(lat.data(), rope.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
           (int64_t)r.table.size(), r.layout, r.pool.data());
  indexAppend(key.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
              (int64_t)r.table.size(), r.layout, r.pool.data());
  for (int64_t j = 0; j < r.n; ++j) {
    const float *row = r.row(j);
    EXPECT_TRUE(std::equal(row, row + r.L, lat.begin() + j * r.L)) << j;
    EXPECT_TRUE(std::equal(row + r.L, row + r.L + r.R, rope.begin() + j * r.R)) << j;
    EXPECT_TRUE(std::equal(row + r.L + r.R, row + r.layout.row_elems, key.begin() + j * r.DI)) << j;
  }
}

// The definition, written out: per visible key, sum_h w_h ws relu(ks q_h . k); the K best
// with ties to the lower position; listed by ascending position, then -1.
std::vector<int32_t> referenceSelect(const std::vector<float> &q, const std::vector<float> &w, const Request &r,
                                     int64_t t, const IndexSelectParams &p) {
  int64_t n = r.positions[t] + 1;
  std::vector<std::pair<double, int32_t>> ranked;
  for (int32_t j = 0; j < n; ++j) {
    const float *k = r.row(j) + r.L + r.R;
    double s = 0;
    for (int64_t h = 0; h < p.num_heads; ++h) {
      double dot = 0;
      for (int64_t d = 0; d < p.head_dim; ++d)
        dot += (double)q[(t * p.num_heads + h) * p.head_dim + d] * k[d];
      s += (double)w[t * p.num_heads + h] * p.weight_scale * std::max(dot * p.key_scale, 0.0);
    }
    ranked.push_back({-s, j});
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<int32_t> out;
  for (int64_t i = 0; i < std::min<int64_t>(n, p.topk); ++i)
    out.push_back(ranked[i].second);
  std::sort(out.begin(), out.end());
  out.resize(p.topk, -1);
  return out;
}

TEST(IndexSelect, MatchesBruteForceRanking) {
  std::mt19937 rng(7);
  Request r(23);
  IndexSelectParams p{5, r.DI, 8, 0.4f, 0.45f};
  auto key = randoms(r.n * r.DI, rng), q = randoms(r.n * p.num_heads * r.DI, rng), w = randoms(r.n * p.num_heads, rng);
  indexAppend(key.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
              (int64_t)r.table.size(), r.layout, r.pool.data());
  std::vector<int32_t> out(r.n * p.topk);
  indexSelect(q.data(), w.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
              (int64_t)r.table.size(), r.layout, r.pool.data(), p, out.data(), serial);
  for (int64_t t = 0; t < r.n; ++t) {
    std::vector<int32_t> got(out.begin() + t * p.topk, out.begin() + (t + 1) * p.topk);
    EXPECT_EQ(got, referenceSelect(q, w, r, t, p)) << "token " << t;
  }
  // Token 2 sees three keys: all of them, then padding.
  EXPECT_EQ(std::vector<int32_t>(out.begin() + 2 * p.topk, out.begin() + 3 * p.topk),
            (std::vector<int32_t>{0, 1, 2, -1, -1, -1, -1, -1}));
}

TEST(IndexSelect, EqualScoresGoToTheLowerPosition) {
  Request r(10);
  IndexSelectParams p{2, r.DI, 3, 1.0f, 1.0f};
  // Keys 1, 4 and 7 score 2 (ties among themselves), the others 0 (ReLU of a negative dot).
  std::vector<float> key(r.n * r.DI, -1.0f), q(r.n * 2 * r.DI, 0.0f), w(r.n * 2, 1.0f);
  for (int64_t t = 0; t < r.n; ++t)
    q[t * 2 * r.DI] = q[(t * 2 + 1) * r.DI] = 1.0f;
  for (int64_t j : {1, 4, 7})
    key[j * r.DI] = 1.0f;
  indexAppend(key.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
              (int64_t)r.table.size(), r.layout, r.pool.data());
  std::vector<int32_t> out(r.n * 3);
  indexSelect(q.data(), w.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
              (int64_t)r.table.size(), r.layout, r.pool.data(), p, out.data(), serial);
  EXPECT_EQ(std::vector<int32_t>(out.end() - 3, out.end()), (std::vector<int32_t>{1, 4, 7}));
  // Token 5 sees 0..5: keys 1 and 4 score 2, then the tie at 0 goes to position 0.
  EXPECT_EQ(std::vector<int32_t>(out.begin() + 15, out.begin() + 18), (std::vector<int32_t>{0, 1, 4}));
  // Token 3 sees 0..3: key 1, then positions 0 and 2 of the zero scores.
  EXPECT_EQ(std::vector<int32_t>(out.begin() + 9, out.begin() + 12), (std::vector<int32_t>{0, 1, 2}));
}

// The k-pooled indexer's definition, written out in double: each complete pool's key per feature
// from softmax(g + ape) over its tokens, the pools best by sum_h w_h ws relu(ks q_h . key)
// (ties to the lower pool, all of them when no more than `pools`), expanded pool by pool in
// ascending order, -1 padded, then the query's own open pool up to it.
std::vector<int32_t> referencePools(const std::vector<float> &q, const std::vector<float> &w,
                                    const std::vector<float> &ape, const Request &r, int64_t t,
                                    const PoolSelectParams &p) {
  int64_t D = p.head_dim, K = p.pool, N = p.pools, pos = r.positions[t], complete = (pos + 1) / K;
  std::vector<std::pair<double, int32_t>> ranked;
  for (int32_t i = 0; i < complete; ++i) {
    std::vector<double> key(D);
    for (int64_t f = 0; f < D; ++f) {
      double sum = 0, acc = 0;
      for (int64_t j = 0; j < K; ++j) {
        const float *row = r.row(i * K + j) + r.L + r.R;
        double e = std::exp((double)row[D + f] + ape[j * D + f]);
        sum += e;
        acc += e * row[f];
      }
      key[f] = acc / sum;
    }
    double s = 0;
    for (int64_t h = 0; h < p.num_heads; ++h) {
      double dot = 0;
      for (int64_t f = 0; f < D; ++f)
        dot += (double)q[(t * p.num_heads + h) * D + f] * key[f];
      s += (double)w[t * p.num_heads + h] * p.weight_scale * std::max(dot * p.key_scale, 0.0);
    }
    ranked.push_back({-s, i});
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<int32_t> pools;
  for (int64_t i = 0; i < std::min<int64_t>(complete, N); ++i)
    pools.push_back(ranked[i].second);
  std::sort(pools.begin(), pools.end());
  std::vector<int32_t> out(N * K + K - 1, -1);
  for (size_t i = 0; i < pools.size(); ++i)
    for (int64_t j = 0; j < K; ++j)
      out[i * K + j] = (int32_t)(pools[i] * K + j);
  for (int64_t j = 0; complete * K + j <= pos; ++j)
    out[N * K + j] = (int32_t)(complete * K + j);
  return out;
}

TEST(PoolSelect, MatchesItsDefinition) {
  std::mt19937 rng(29);
  Request r(23);
  // Rows [k | g] of 3 + 3 (the Request's index width), 2 pools of 3 kept, 4 heads.
  PoolSelectParams p{4, r.DI / 2, 2, 3, 0.6f, 0.5f};
  auto rows = randoms(r.n * r.DI, rng), q = randoms(r.n * p.num_heads * p.head_dim, rng),
       w = randoms(r.n * p.num_heads, rng), ape = randoms(p.pool * p.head_dim, rng);
  indexAppend(rows.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
              (int64_t)r.table.size(), r.layout, r.pool.data());
  int64_t width = p.pools * p.pool + p.pool - 1;
  std::vector<int32_t> out(r.n * width);
  poolSelect(q.data(), w.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
             (int64_t)r.table.size(), r.layout, r.pool.data(), ape.data(), p, out.data(), serial);
  for (int64_t t = 0; t < r.n; ++t)
    EXPECT_EQ(std::vector<int32_t>(out.begin() + t * width, out.begin() + (t + 1) * width),
              referencePools(q, w, ape, r, t, p))
        << "token " << t;
  auto rowOf = [&](int64_t t) { return std::vector<int32_t>(out.begin() + t * width, out.begin() + (t + 1) * width); };
  // Token 1: no complete pool, its open pool 0..1. Token 5: two complete pools, both taken, no tail.
  EXPECT_EQ(rowOf(1), (std::vector<int32_t>{-1, -1, -1, -1, -1, -1, 0, 1}));
  EXPECT_EQ(rowOf(5), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, -1, -1}));
  // Token 22: seven complete pools, two chosen, and its open pool 21..22.
  EXPECT_EQ(std::vector<int32_t>(out.end() - 2, out.end()), (std::vector<int32_t>{21, 22}));
}

TEST(SparseLatentAttention, AttendsToExactlyTheSelectedRows) {
  std::mt19937 rng(13);
  Request r(17);
  const int64_t H = 3, K = 5;
  auto lat = randoms(r.n * r.L, rng), rope = randoms(r.n * r.R, rng);
  kvAppend(lat.data(), rope.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
           (int64_t)r.table.size(), r.layout, r.pool.data());
  auto ql = randoms(r.n * H * r.L, rng), qr = randoms(r.n * H * r.R, rng);
  // Each token selects up to K visible positions t, t - 2, t - 4, ..., -1 padded.
  std::vector<int32_t> sel(r.n * K, -1);
  for (int64_t t = 0; t < r.n; ++t)
    for (int64_t i = 0; i < K && t - 2 * i >= 0; ++i)
      sel[t * K + i] = (int32_t)(t - 2 * i);
  LatentAttentionParams p{H, r.L, r.R, 0.35f, 0, 0};
  std::vector<float> out(r.n * H * r.L), dense(r.n * H * r.L);
  sparseLatentAttention(ql.data(), qr.data(), r.n, r.seqIds.data(), r.slots.data(), r.table.data(),
                        (int64_t)r.table.size(), r.layout, r.pool.data(), p, sel.data(), K, out.data(), serial);
  for (int64_t t = 0; t < r.n; ++t)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> s;
      std::vector<int32_t> js;
      for (int64_t i = 0; i < K; ++i) {
        int32_t j = sel[t * K + i];
        if (j < 0)
          continue;
        double dot = 0;
        for (int64_t d = 0; d < r.L; ++d)
          dot += (double)ql[(t * H + h) * r.L + d] * lat[j * r.L + d];
        for (int64_t d = 0; d < r.R; ++d)
          dot += (double)qr[(t * H + h) * r.R + d] * rope[j * r.R + d];
        s.push_back(dot * p.scale);
        js.push_back(j);
      }
      double m = *std::max_element(s.begin(), s.end()), denom = 0;
      for (double &x : s)
        denom += x = std::exp(x - m);
      for (int64_t d = 0; d < r.L; ++d) {
        double o = 0;
        for (size_t i = 0; i < js.size(); ++i)
          o += s[i] / denom * lat[js[i] * r.L + d];
        EXPECT_NEAR(out[(t * H + h) * r.L + d], o, 1e-5) << "token " << t << " head " << h;
      }
    }
  // Selecting every visible row is dense latent attention.
  const int64_t KA = r.n;
  std::vector<int32_t> all(r.n * KA, -1);
  for (int64_t t = 0; t < r.n; ++t)
    for (int64_t j = 0; j <= t; ++j)
      all[t * KA + j] = (int32_t)j;
  sparseLatentAttention(ql.data(), qr.data(), r.n, r.seqIds.data(), r.slots.data(), r.table.data(),
                        (int64_t)r.table.size(), r.layout, r.pool.data(), p, all.data(), KA, out.data(), serial);
  latentAttention(ql.data(), qr.data(), r.n, r.positions.data(), r.seqIds.data(), r.slots.data(), r.table.data(),
                  (int64_t)r.table.size(), r.layout, r.pool.data(), p, dense.data(), serial);
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out[i], dense[i], 1e-6) << i;
}

} // namespace
} // namespace cbc::rt::cpu
