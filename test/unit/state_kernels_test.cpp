// The CPU state kernels against their own definitions: the chunked gated-delta and KDA forms,
// the lightning block form and the mLSTM chunkwise form against their token recurrences, and
// every state op split into pieces against one pass over the whole sequence. Chunked prefill and preemption rest on these: a
// request's rows may arrive in any number of steps, and its state must carry exactly.
#include "runtime/cpu/kernels.h"
#include "test/unit/kernel_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

namespace cbc::rt::cpu {
namespace {

double maxRelDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::fabs((double)a[i] - b[i]) / (1.0 + std::fabs((double)b[i])));
  return worst;
}

// Inputs of one head, already normalised the way gatedDeltaScan hands them over: unit-length k,
// q scaled by dk^-1/2, log decays g <= 0 and rates beta in (0, 2).
struct HeadInputs {
  int64_t n, dk, dv;
  std::vector<float> q, k, v, g, beta, state;
  HeadInputs(int64_t n, int64_t dk, int64_t dv, uint32_t seed) : n(n), dk(dk), dv(dv) {
    std::mt19937 rng(seed);
    q = randoms(n * dk, rng);
    k = randoms(n * dk, rng);
    for (int64_t t = 0; t < n; ++t) {
      double s = 0;
      for (int64_t i = 0; i < dk; ++i)
        s += k[t * dk + i] * k[t * dk + i];
      for (int64_t i = 0; i < dk; ++i) {
        k[t * dk + i] /= (float)std::sqrt(s);
        q[t * dk + i] /= (float)std::sqrt((double)dk);
      }
    }
    v = randoms(n * dv, rng, -2.0f, 2.0f);
    g = randoms(n, rng, -3.0f, 0.0f); // strong decays too: exp(cum) underflows within a chunk
    beta = randoms(n, rng, 0.0f, 2.0f);
    state = randoms(dk * dv, rng);
  }
};

// Every chunk size, including 1 and sizes that do not divide the sequence, is the recurrence.
TEST(GatedDelta, ChunkedFormEqualsRecurrence) {
  for (int64_t n : {1, 5, 64, 150}) {
    HeadInputs in(n, 16, 8, 7 + (uint32_t)n);
    std::vector<float> wantState = in.state, want(n * in.dv);
    gatedDeltaRecurrent(n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), in.dk,
                        in.dv, in.dk, in.dv, wantState.data(), want.data(), in.dv);
    for (int64_t chunk : {1, 7, 64}) {
      std::vector<float> state = in.state, got(n * in.dv, NAN);
      gatedDeltaChunked(n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), in.dk,
                        in.dv, in.dk, in.dv, state.data(), got.data(), in.dv, chunk);
      EXPECT_LE(maxRelDiff(got, want), 2e-5) << "n " << n << " chunk " << chunk;
      EXPECT_LE(maxRelDiff(state, wantState), 2e-5) << "n " << n << " chunk " << chunk;
    }
  }
}

// The recurrence itself on a 1x1 head, where the delta rule reduces to scalars:
// S = e^g S; S += k beta (v - S k); o = S q.
TEST(GatedDelta, RecurrenceIsTheDeltaRule) {
  float q[] = {0.5f, -1.0f}, k[] = {1.0f, 1.0f}, v[] = {2.0f, -1.0f}, g[] = {-0.5f, -1.0f},
        beta[] = {0.5f, 1.5f};
  float S = 0.25f, out[2];
  gatedDeltaRecurrent(2, q, k, v, g, beta, 1, 1, 1, 1, &S, out, 1);
  double s = 0.25;
  double o[2];
  for (int t = 0; t < 2; ++t) {
    s *= std::exp((double)g[t]);
    s += k[t] * beta[t] * (v[t] - s * k[t]);
    o[t] = s * q[t];
  }
  EXPECT_NEAR(out[0], o[0], 1e-6);
  EXPECT_NEAR(out[1], o[1], 1e-6);
  EXPECT_NEAR(S, s, 1e-6);
}

TEST(GatedDelta, ScanInPiecesEqualsWholeSequence) {
  GatedDeltaParams p;
  p.k_heads = 2, p.v_heads = 4, p.k_dim = 8, p.v_dim = 6, p.beta_scale = 2.0f;
  std::mt19937 rng(11);
  int64_t n = 90, qw = p.k_heads * p.k_dim, vw = p.v_heads * p.v_dim;
  auto q = randoms(n * qw, rng), k = randoms(n * qw, rng), v = randoms(n * vw, rng);
  auto a = randoms(n * p.v_heads, rng, -2.0f, 2.0f), b = randoms(n * p.v_heads, rng, -2.0f, 2.0f);
  auto A_log = randoms(p.v_heads, rng), dt_bias = randoms(p.v_heads, rng);
  p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
  int64_t stateElems = p.v_heads * p.k_dim * p.v_dim;

  auto run = [&](const std::vector<int64_t> &cuts, int64_t chunk) {
    // Slot 1 of 2, with slot 0 filled with garbage that must stay untouched.
    std::vector<float> pool(2 * stateElems, 123.0f), out(n * vw, NAN);
    runInPieces(n, cuts, 1, [&](const StateRows &rows, int64_t begin, int64_t) {
      gatedDeltaScan(&q[begin * qw], &k[begin * qw], &v[begin * vw], &a[begin * p.v_heads],
                     &b[begin * p.v_heads], p, rows, pool.data(), &out[begin * vw], serial, chunk);
    });
    for (int64_t i = 0; i < stateElems; ++i)
      EXPECT_EQ(pool[i], 123.0f) << "another request's slot was written";
    pool.erase(pool.begin(), pool.begin() + stateElems);
    return std::make_pair(out, pool);
  };
  std::vector<int64_t> everyToken(n - 1);
  std::iota(everyToken.begin(), everyToken.end(), 1);
  auto [wantOut, wantState] = run(everyToken, 64); // token by token: the decode path throughout
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84},
                                                     {64}, {1, 65, 66}, {30}})
    for (int64_t chunk : {1, 7, 64}) {
      auto [out, state] = run(cuts, chunk);
      EXPECT_LE(maxRelDiff(out, wantOut), 2e-5) << cuts.size() << " cuts, chunk " << chunk;
      EXPECT_LE(maxRelDiff(state, wantState), 2e-5) << cuts.size() << " cuts, chunk " << chunk;
    }
}

// ----- Kimi delta attention: a log decay per key channel -----

// As HeadInputs, with log decays per channel [n, dk].
struct KdaHeadInputs : HeadInputs {
  KdaHeadInputs(int64_t n, int64_t dk, int64_t dv, uint32_t seed) : HeadInputs(n, dk, dv, seed) {
    std::mt19937 rng(seed + 1000);
    g = randoms(n * dk, rng, -4.0f, 0.0f); // exp of a chunk's cumulative decay underflows for some channels
    beta = randoms(n, rng, 0.0f, 1.0f);
  }
};

TEST(Kda, ChunkedFormEqualsRecurrence) {
  for (int64_t n : {1, 5, 64, 150}) {
    KdaHeadInputs in(n, 16, 8, 17 + (uint32_t)n);
    std::vector<float> wantState = in.state, want(n * in.dv);
    kdaRecurrent(n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), in.dk, in.dv, in.dk, in.dv,
                 wantState.data(), want.data(), in.dv);
    for (int64_t chunk : {1, 7, 64}) {
      std::vector<float> state = in.state, got(n * in.dv, NAN);
      kdaChunked(n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), in.dk, in.dv, in.dk, in.dv,
                 state.data(), got.data(), in.dv, chunk);
      EXPECT_LE(maxRelDiff(got, want), 2e-5) << "n " << n << " chunk " << chunk;
      EXPECT_LE(maxRelDiff(state, wantState), 2e-5) << "n " << n << " chunk " << chunk;
    }
  }
}

// The whole op in double precision, straight from its definition (CbcOps.td): the gates, the
// normalisation and S = diag(exp(g)) S; S += k (beta (v - S^T k))^T; o = S^T q.
std::vector<double> kdaDefinition(int64_t n, const std::vector<float> &q, const std::vector<float> &k,
                                  const std::vector<float> &v, const std::vector<float> &f,
                                  const std::vector<float> &b, const KdaParams &p) {
  int64_t H = p.heads, dk = p.k_dim, dv = p.v_dim;
  std::vector<double> out(n * H * dv), S(H * dk * dv, 0.0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < H; ++h) {
      double *Sh = &S[h * dk * dv], sq = 0, sk = 0;
      for (int64_t i = 0; i < dk; ++i) {
        sq += (double)q[(t * H + h) * dk + i] * q[(t * H + h) * dk + i];
        sk += (double)k[(t * H + h) * dk + i] * k[(t * H + h) * dk + i];
      }
      std::vector<double> qn(dk), kn(dk), g(dk);
      double rate = std::exp((double)p.A_log[h]), beta = 1.0 / (1.0 + std::exp(-(double)b[t * H + h]));
      for (int64_t i = 0; i < dk; ++i) {
        qn[i] = q[(t * H + h) * dk + i] / std::sqrt(sq + 1e-6) / std::sqrt((double)dk);
        kn[i] = k[(t * H + h) * dk + i] / std::sqrt(sk + 1e-6);
        double x = (double)f[(t * H + h) * dk + i] + p.dt_bias[h * dk + i];
        g[i] = p.bounded ? p.lower_bound / (1.0 + std::exp(-rate * x)) : -rate * std::log1p(std::exp(x));
      }
      for (int64_t j = 0; j < dv; ++j) {
        double u = 0;
        for (int64_t i = 0; i < dk; ++i)
          u += (Sh[i * dv + j] *= std::exp(g[i])) * kn[i];
        double delta = beta * (v[(t * H + h) * dv + j] - u), o = 0;
        for (int64_t i = 0; i < dk; ++i)
          o += (Sh[i * dv + j] += kn[i] * delta) * qn[i];
        out[(t * H + h) * dv + j] = o;
      }
    }
  return out;
}

// Both gates, whole and in pieces (chunked prefill and decode mixed), against the definition.
TEST(Kda, ScanInPiecesEqualsDefinition) {
  for (bool bounded : {false, true}) {
    KdaParams p;
    p.heads = 3, p.k_dim = 8, p.v_dim = 6, p.bounded = bounded, p.lower_bound = bounded ? -5.0f : 0.0f;
    std::mt19937 rng(bounded ? 23 : 29);
    int64_t n = 90, kw = p.heads * p.k_dim, vw = p.heads * p.v_dim;
    auto q = randoms(n * kw, rng), k = randoms(n * kw, rng), v = randoms(n * vw, rng);
    auto f = randoms(n * kw, rng, -3.0f, 3.0f), b = randoms(n * p.heads, rng, -2.0f, 2.0f);
    auto A_log = randoms(p.heads, rng, -1.0f, 1.0f), dt_bias = randoms(kw, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
    std::vector<double> want = kdaDefinition(n, q, k, v, f, b, p);
    int64_t stateElems = p.heads * p.k_dim * p.v_dim;
    for (auto cuts : std::vector<std::vector<int64_t>>{{}, {7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84},
                                                       {64}, {1, 65, 66}, {30, 31, 32, 33}})
      for (int64_t chunk : {1, 7, 64}) {
        // Slot 0 of 2, with slot 1 filled with garbage that must stay untouched.
        std::vector<float> pool(2 * stateElems, 123.0f), out(n * vw, NAN);
        runInPieces(n, cuts, 0, [&](const StateRows &rows, int64_t begin, int64_t) {
          kdaScan(&q[begin * kw], &k[begin * kw], &v[begin * vw], &f[begin * kw], &b[begin * p.heads], p, rows,
                  pool.data(), &out[begin * vw], serial, chunk);
        });
        for (int64_t i = stateElems; i < 2 * stateElems; ++i)
          ASSERT_EQ(pool[i], 123.0f) << "another request's slot was written";
        double worst = 0;
        for (int64_t i = 0; i < n * vw; ++i)
          worst = std::max(worst, std::fabs(out[i] - want[i]) / (1.0 + std::fabs(want[i])));
        EXPECT_LE(worst, 2e-5) << (bounded ? "bounded" : "softplus") << ", " << cuts.size() << " cuts, chunk "
                               << chunk;
      }
  }
}

// A request that starts without a state ignores whatever its slot held.
TEST(Kda, FreshRequestIgnoresStaleSlot) {
  KdaParams p;
  p.heads = 1, p.k_dim = 4, p.v_dim = 4;
  std::mt19937 rng(31);
  auto q = randoms(20 * 4, rng), k = randoms(20 * 4, rng), v = randoms(20 * 4, rng), f = randoms(20 * 4, rng),
       b = randoms(20, rng), A_log = randoms(1, rng), dt_bias = randoms(4, rng);
  p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
  for (int32_t n : {1, 20}) {
    std::vector<float> clean(16, 0.0f), stale(16, 50.0f), a(n * 4), c(n * 4);
    int32_t cu[2] = {0, n}, slots[1] = {0}, has[1] = {0};
    StateRows rows{cu, slots, slots, has, 1};
    kdaScan(q.data(), k.data(), v.data(), f.data(), b.data(), p, rows, clean.data(), a.data(), serial);
    kdaScan(q.data(), k.data(), v.data(), f.data(), b.data(), p, rows, stale.data(), c.data(), serial);
    EXPECT_EQ(a, c) << n << " rows";
    EXPECT_EQ(clean, stale) << n << " rows";
  }
}

// Lightning attention's recurrence by its definition: two tokens, d = 1.
TEST(Lightning, RecurrenceIsTheDecayedOuterProductSum) {
  float q[2] = {2, -1}, k[2] = {3, 5}, v[2] = {0.5f, 2}, S = 1.0f, out[2];
  float s = 0.25f, r = std::exp(-s);
  lightningRecurrent(2, q, k, v, s, 1, 1, &S, out);
  float S1 = r * 1.0f + 3 * 0.5f, S2 = r * S1 + 5 * 2;
  EXPECT_FLOAT_EQ(out[0], 2 * S1);
  EXPECT_FLOAT_EQ(out[1], -1 * S2);
  EXPECT_FLOAT_EQ(S, S2);
}

// Every block size, including 1 and sizes that do not divide the sequence, is the recurrence,
// from a non-zero state, with rows strided as in the packed [T, H*d] layout.
TEST(Lightning, BlockFormEqualsRecurrence) {
  int64_t n = 77, d = 8, stride = 3 * d;
  for (float decay : {0.0f, 0.03f, 0.7f, 6.0f}) { // 6: exp(-decay * i) underflows within a block
    std::mt19937 rng(5);
    auto q = randoms(n * stride, rng), k = randoms(n * stride, rng), v = randoms(n * stride, rng, -2.0f, 2.0f);
    auto state = randoms(d * d, rng);
    std::vector<float> wantS = state, want(n * stride, 0.0f);
    lightningRecurrent(n, q.data(), k.data(), v.data(), decay, d, stride, wantS.data(), want.data());
    for (int64_t block : {1, 5, 16, 64, 128}) {
      std::vector<float> S = state, out(n * stride, 0.0f);
      lightningBlocks(n, q.data(), k.data(), v.data(), decay, d, stride, S.data(), out.data(), block);
      EXPECT_LE(maxRelDiff(out, want), 2e-5) << "decay " << decay << ", block " << block;
      EXPECT_LE(maxRelDiff(S, wantS), 2e-5) << "decay " << decay << ", block " << block;
    }
  }
}

TEST(Lightning, ScanInPiecesEqualsWholeSequence) {
  LightningParams p;
  p.heads = 3, p.head_dim = 6, p.decay = {0.9f, 0.12f, 0.004f};
  std::mt19937 rng(13);
  int64_t n = 150, w = p.heads * p.head_dim, stateElems = p.heads * p.head_dim * p.head_dim;
  auto q = randoms(n * w, rng), k = randoms(n * w, rng), v = randoms(n * w, rng);
  auto run = [&](const std::vector<int64_t> &cuts, int64_t block) {
    std::vector<float> pool(2 * stateElems, 123.0f), out(n * w, NAN);
    runInPieces(n, cuts, 1, [&](const StateRows &rows, int64_t begin, int64_t) {
      lightningScan(&q[begin * w], &k[begin * w], &v[begin * w], p, rows, pool.data(), &out[begin * w], serial,
                    block);
    });
    for (int64_t i = 0; i < stateElems; ++i)
      EXPECT_EQ(pool[i], 123.0f) << "another request's slot was written";
    pool.erase(pool.begin(), pool.begin() + stateElems);
    return std::make_pair(out, pool);
  };
  std::vector<int64_t> everyToken(n - 1);
  std::iota(everyToken.begin(), everyToken.end(), 1);
  auto [wantOut, wantState] = run(everyToken, 64); // token by token: the decode path throughout
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {7, 14, 21, 100}, {64}, {1, 65, 66}, {30, 129}})
    for (int64_t block : {1, 7, 64}) {
      auto [out, state] = run(cuts, block);
      EXPECT_LE(maxRelDiff(out, wantOut), 2e-5) << cuts.size() << " cuts, block " << block;
      EXPECT_LE(maxRelDiff(state, wantState), 2e-5) << cuts.size() << " cuts, block " << block;
    }
}

// The mLSTM chunkwise form is the recurrence for every chunk size (1, sizes that do not divide
// the sequence, longer than it), from a carried state with a non-zero stabiliser, with rows
// strided as in the packed layout, for gates from mild to ones where exp(i) alone would overflow
// fp32 (i up to 95) and forget gates that wipe the memory.
TEST(Mlstm, ChunkFormEqualsRecurrence) {
  int64_t n = 77, dk = 6, dv = 10, heads = 3;
  for (float spread : {1.0f, 8.0f, 95.0f}) {
    std::mt19937 rng(11);
    auto q = randoms(n * heads * dk, rng), k = randoms(n * heads * dk, rng);
    auto v = randoms(n * heads * dv, rng, -2.0f, 2.0f);
    auto ig = randoms(n * heads, rng, -spread, spread), fg = randoms(n * heads, rng, -spread, spread);
    auto state = randoms(dk * (dv + 1) + 1, rng, 0.0f, 0.5f);
    state.back() = 1.5f; // m
    MlstmHead x{q.data(), k.data(), v.data(), ig.data(), fg.data(), heads * dk, heads * dv, heads, dk, dv, 1e-6f};
    std::vector<float> wantS = state, want(n * heads * dv, 0.0f);
    mlstmRecurrent(x, n, wantS.data(), want.data());
    for (int64_t block : {1, 5, 16, 64, 128}) {
      std::vector<float> S = state, out(n * heads * dv, 0.0f);
      mlstmChunks(x, n, S.data(), out.data(), block);
      EXPECT_LE(maxRelDiff(out, want), 5e-5) << "spread " << spread << ", block " << block;
      EXPECT_LE(maxRelDiff(S, wantS), 5e-5) << "spread " << spread << ", block " << block;
    }
  }
}

TEST(Mlstm, ScanInPiecesEqualsWholeSequence) {
  MlstmParams p{2, 4, 5, 1e-6f};
  std::mt19937 rng(17);
  int64_t n = 150, wk = p.heads * p.k_dim, wv = p.heads * p.v_dim, stateElems = p.heads * (p.k_dim * (p.v_dim + 1) + 1);
  auto q = randoms(n * wk, rng), k = randoms(n * wk, rng), v = randoms(n * wv, rng);
  auto ig = randoms(n * p.heads, rng, -4.0f, 4.0f), fg = randoms(n * p.heads, rng, -2.0f, 6.0f);
  auto run = [&](const std::vector<int64_t> &cuts, int64_t block) {
    std::vector<float> pool(2 * stateElems, 123.0f), out(n * wv, NAN);
    runInPieces(n, cuts, 1, [&](const StateRows &rows, int64_t begin, int64_t) {
      mlstmScan(&q[begin * wk], &k[begin * wk], &v[begin * wv], &ig[begin * p.heads], &fg[begin * p.heads], p, rows,
                pool.data(), &out[begin * wv], serial, block);
    });
    for (int64_t i = 0; i < stateElems; ++i)
      EXPECT_EQ(pool[i], 123.0f) << "another request's slot was written";
    pool.erase(pool.begin(), pool.begin() + stateElems);
    return std::make_pair(out, pool);
  };
  std::vector<int64_t> everyToken(n - 1);
  std::iota(everyToken.begin(), everyToken.end(), 1);
  auto [wantOut, wantState] = run(everyToken, 64); // token by token: the decode path throughout
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {7, 14, 21, 100}, {64}, {1, 65, 66}, {30, 129}})
    for (int64_t block : {1, 7, 64}) {
      auto [out, state] = run(cuts, block);
      EXPECT_LE(maxRelDiff(out, wantOut), 5e-5) << cuts.size() << " cuts, block " << block;
      EXPECT_LE(maxRelDiff(state, wantState), 5e-5) << cuts.size() << " cuts, block " << block;
    }
}

TEST(Conv1d, InPiecesEqualsWholeSequence) {
  int64_t n = 40, C = 5, K = 4;
  std::mt19937 rng(3);
  auto x = randoms(n * C, rng), w = randoms(C * K, rng), bias = randoms(C, rng);
  auto run = [&](const std::vector<int64_t> &cuts) {
    std::vector<float> pool(3 * C * (K - 1), -7.0f), y(n * C, NAN);
    runInPieces(n, cuts, 2, [&](const StateRows &rows, int64_t begin, int64_t) {
      conv1dStates(&x[begin * C], C, K, w.data(), bias.data(), Act::Silu, rows, pool.data(), &y[begin * C],
                   serial);
    });
    for (int64_t i = 0; i < 2 * C * (K - 1); ++i)
      EXPECT_EQ(pool[i], -7.0f) << "another request's slot was written";
    return y;
  };
  // The definition: zero history, silu(bias + sum_j w[c, j] x[t - (K-1) + j]).
  std::vector<float> want(n * C);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = bias[c];
      for (int64_t j = 0; j < K; ++j) {
        int64_t src = t - (K - 1) + j;
        if (src >= 0)
          acc += (double)w[c * K + j] * x[src * C + c];
      }
      want[t * C + c] = (float)(acc / (1.0 + std::exp(-acc)));
    }
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {1}, {1, 2, 3}, {2, 5, 6, 30}, {39}})
    EXPECT_LE(maxRelDiff(run(cuts), want), 1e-6) << cuts.size() << " cuts";
}

// The SSD chunked form is the token recurrence, for every chunk size and length.
TEST(Ssd, ChunkedFormEqualsRecurrence) {
  int64_t P = 6, N = 5;
  for (int64_t n : {1, 5, 64, 150}) {
    std::mt19937 rng(21 + (uint32_t)n);
    auto x = randoms(n * P, rng), B = randoms(n * N, rng), C = randoms(n * N, rng);
    auto dt = randoms(n, rng, 0.0f, 1.5f), S0 = randoms(P * N, rng);
    float a = -1.7f, D = 0.6f;
    std::vector<float> wantS = S0, want(n * P);
    ssdRecurrent(n, x.data(), dt.data(), a, B.data(), C.data(), D, P, N, P, N, wantS.data(), want.data());
    for (int64_t chunk : {1, 7, 64}) {
      std::vector<float> S = S0, got(n * P, NAN);
      ssdChunked(n, x.data(), dt.data(), a, B.data(), C.data(), D, P, N, P, N, S.data(), got.data(), chunk);
      EXPECT_LE(maxRelDiff(got, want), 2e-5) << "n " << n << " chunk " << chunk;
      EXPECT_LE(maxRelDiff(S, wantS), 2e-5) << "n " << n << " chunk " << chunk;
    }
  }
}

// The recurrence on one head with P = N = 1: S = e^(dt a) S + dt x B; y = S C + D x.
TEST(Ssd, RecurrenceIsTheDefinition) {
  float x[] = {1.0f, -2.0f}, dt[] = {0.5f, 0.25f}, B[] = {2.0f, 1.0f}, C[] = {-1.0f, 3.0f};
  float S = 0.5f, out[2], a = -2.0f, D = 0.1f;
  ssdRecurrent(2, x, dt, a, B, C, D, 1, 1, 1, 1, &S, out);
  double s = 0.5;
  for (int t = 0; t < 2; ++t) {
    s = std::exp((double)dt[t] * a) * s + (double)dt[t] * x[t] * B[t];
    EXPECT_NEAR(out[t], s * C[t] + D * x[t], 1e-6);
  }
  EXPECT_NEAR(S, s, 1e-6);
}

TEST(Ssd, ScanInPiecesEqualsWholeSequence) {
  SsdParams p;
  p.heads = 4, p.head_dim = 3, p.groups = 2, p.state = 5, p.dt_min = 0.01f, p.dt_max = 2.0f;
  std::mt19937 rng(31);
  int64_t n = 90, xw = p.heads * p.head_dim, bw = p.groups * p.state;
  auto x = randoms(n * xw, rng), dt = randoms(n * p.heads, rng, -3.0f, 3.0f);
  auto B = randoms(n * bw, rng), C = randoms(n * bw, rng);
  auto A_log = randoms(p.heads, rng), dt_bias = randoms(p.heads, rng), D = randoms(p.heads, rng);
  p.A_log = A_log.data(), p.dt_bias = dt_bias.data(), p.D = D.data();
  int64_t stateElems = p.heads * p.head_dim * p.state;
  auto run = [&](const std::vector<int64_t> &cuts, int64_t chunk) {
    std::vector<float> pool(2 * stateElems, 5.0f), out(n * xw, NAN);
    runInPieces(n, cuts, 1, [&](const StateRows &rows, int64_t begin, int64_t) {
      ssdScan(&x[begin * xw], &dt[begin * p.heads], &B[begin * bw], &C[begin * bw], p, rows, pool.data(),
              &out[begin * xw], serial, chunk);
    });
    for (int64_t i = 0; i < stateElems; ++i)
      EXPECT_EQ(pool[i], 5.0f) << "another request's slot was written";
    pool.erase(pool.begin(), pool.begin() + stateElems);
    return std::make_pair(out, pool);
  };
  std::vector<int64_t> everyToken(n - 1);
  std::iota(everyToken.begin(), everyToken.end(), 1);
  auto [wantOut, wantState] = run(everyToken, 64);
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84}, {64}, {1, 65, 66}})
    for (int64_t chunk : {1, 7, 64}) {
      auto [out, state] = run(cuts, chunk);
      EXPECT_LE(maxRelDiff(out, wantOut), 2e-5) << cuts.size() << " cuts, chunk " << chunk;
      EXPECT_LE(maxRelDiff(state, wantState), 2e-5) << cuts.size() << " cuts, chunk " << chunk;
    }
}

TEST(Selective, InPiecesEqualsDefinition) {
  SelectiveParams p;
  p.channels = 6, p.groups = 2, p.state = 4;
  std::mt19937 rng(41);
  int64_t n = 40, I = p.channels, bw = p.groups * p.state;
  auto x = randoms(n * I, rng), dt = randoms(n * I, rng, -3.0f, 2.0f), z = randoms(n * I, rng);
  auto B = randoms(n * bw, rng), C = randoms(n * bw, rng);
  auto A_log = randoms(I * p.state, rng), dt_bias = randoms(I, rng), D = randoms(I, rng);
  p.A_log = A_log.data(), p.dt_bias = dt_bias.data(), p.D = D.data();
  // The definition, in double: channel i reads group i / (I / G).
  std::vector<float> want(n * I);
  for (int64_t i = 0; i < I; ++i) {
    int64_t g = i / (I / p.groups);
    std::vector<double> S(p.state, 0.0);
    for (int64_t t = 0; t < n; ++t) {
      double d = std::log1p(std::exp((double)dt[t * I + i] + dt_bias[i])), y = 0;
      for (int64_t k = 0; k < p.state; ++k) {
        double a = -std::exp((double)A_log[i * p.state + k]);
        S[k] = std::exp(d * a) * S[k] + d * B[t * bw + g * p.state + k] * x[t * I + i];
        y += S[k] * C[t * bw + g * p.state + k];
      }
      y += D[i] * x[t * I + i];
      double zv = z[t * I + i];
      want[t * I + i] = (float)(y * zv / (1.0 + std::exp(-zv)));
    }
  }
  for (auto cuts : std::vector<std::vector<int64_t>>{{}, {1}, {1, 2, 3}, {5, 17, 39}}) {
    std::vector<float> pool(3 * I * p.state, 9.0f), out(n * I, NAN);
    runInPieces(n, cuts, 2, [&](const StateRows &rows, int64_t begin, int64_t) {
      selectiveScan(&x[begin * I], &dt[begin * I], &B[begin * bw], &C[begin * bw], &z[begin * I], p, rows,
                    pool.data(), &out[begin * I], serial);
    });
    for (int64_t i = 0; i < 2 * I * p.state; ++i)
      EXPECT_EQ(pool[i], 9.0f) << "another request's slot was written";
    EXPECT_LE(maxRelDiff(out, want), 1e-5) << cuts.size() << " cuts";
  }
}

// A request that starts without an initial state ignores whatever its slot held before.
TEST(Conv1d, FreshRequestIgnoresStaleSlot) {
  int64_t C = 3, K = 3;
  std::vector<float> x = {1, 2, 3}, w(C * K, 1.0f), y(C), pool(C * (K - 1), 99.0f);
  int32_t cu[2] = {0, 1}, slots[1] = {0}, has[1] = {0};
  conv1dStates(x.data(), C, K, w.data(), nullptr, Act::None, StateRows{cu, slots, slots, has, 1}, pool.data(),
               y.data(), serial);
  EXPECT_EQ(y, x);
  EXPECT_EQ(pool, (std::vector<float>{0, 1, 0, 2, 0, 3}));
}

// Every scan reads a request's state from its input unit and leaves it in its output unit,
// leaving the input as it was: a second step from unit 1 into unit 2 gives what the same step in
// place in unit 1 gives, unit 1 keeps the first step's state, and unit 0 is never touched. (Forks
// and rollbacks step so: runtime/cache/coordinator.h.)
template <class Scan>
void expectStateMovesBetweenUnits(int64_t n, int64_t split, int64_t stateElems, int64_t outWidth, Scan scan) {
  std::vector<float> inPlace(3 * stateElems, 7.0f), moved(3 * stateElems, 7.0f);
  std::vector<float> outInPlace(n * outWidth), outMoved(n * outWidth);
  int32_t cuA[2] = {0, (int32_t)split}, cuB[2] = {0, (int32_t)(n - split)};
  int32_t one[1] = {1}, two[1] = {2}, fresh[1] = {0}, carried[1] = {1};
  StateRows first{cuA, one, one, fresh, 1}, again{cuB, one, one, carried, 1}, across{cuB, one, two, carried, 1};
  scan(first, 0, inPlace.data(), outInPlace.data());
  scan(again, split, inPlace.data(), outInPlace.data());
  scan(first, 0, moved.data(), outMoved.data());
  std::vector<float> afterFirst(moved.begin() + stateElems, moved.begin() + 2 * stateElems);
  scan(across, split, moved.data(), outMoved.data());
  EXPECT_EQ(outMoved, outInPlace);
  for (int64_t i = 0; i < stateElems; ++i) {
    ASSERT_EQ(moved[i], 7.0f) << "unit 0 was written";
    ASSERT_EQ(moved[stateElems + i], afterFirst[i]) << "the input unit was written";
    ASSERT_EQ(moved[2 * stateElems + i], inPlace[stateElems + i]) << "the output unit holds another state";
  }
}

TEST(StateUnits, EveryScanReadsItsInputUnitAndWritesItsOutputUnit) {
  std::mt19937 rng(5);
  const int64_t n = 70, split = 40; // the second step is long enough for the chunked forms
  {
    GatedDeltaParams p;
    p.k_heads = 1, p.v_heads = 2, p.k_dim = 4, p.v_dim = 3;
    auto q = randoms(n * 4, rng), k = randoms(n * 4, rng), v = randoms(n * 6, rng), a = randoms(n * 2, rng),
         b = randoms(n * 2, rng), A_log = randoms(2, rng), dt_bias = randoms(2, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
    expectStateMovesBetweenUnits(n, split, 2 * 4 * 3, 6, [&](const StateRows &rows, int64_t t, float *pool, float *out) {
      gatedDeltaScan(&q[t * 4], &k[t * 4], &v[t * 6], &a[t * 2], &b[t * 2], p, rows, pool, &out[t * 6], serial, 16);
    });
  }
  {
    KdaParams p;
    p.heads = 2, p.k_dim = 4, p.v_dim = 3;
    auto q = randoms(n * 8, rng), k = randoms(n * 8, rng), v = randoms(n * 6, rng), f = randoms(n * 8, rng),
         b = randoms(n * 2, rng), A_log = randoms(2, rng), dt_bias = randoms(8, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
    expectStateMovesBetweenUnits(n, split, 2 * 4 * 3, 6, [&](const StateRows &rows, int64_t t, float *pool, float *out) {
      kdaScan(&q[t * 8], &k[t * 8], &v[t * 6], &f[t * 8], &b[t * 2], p, rows, pool, &out[t * 6], serial, 16);
    });
  }
  {
    SsdParams p;
    p.heads = 2, p.head_dim = 3, p.groups = 1, p.state = 4;
    auto x = randoms(n * 6, rng), dt = randoms(n * 2, rng), B = randoms(n * 4, rng), C = randoms(n * 4, rng),
         A_log = randoms(2, rng), dt_bias = randoms(2, rng), D = randoms(2, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data(), p.D = D.data();
    expectStateMovesBetweenUnits(n, split, 2 * 3 * 4, 6, [&](const StateRows &rows, int64_t t, float *pool, float *out) {
      ssdScan(&x[t * 6], &dt[t * 2], &B[t * 4], &C[t * 4], p, rows, pool, &out[t * 6], serial, 16);
    });
  }
  {
    SelectiveParams p;
    p.channels = 4, p.groups = 2, p.state = 3;
    auto x = randoms(n * 4, rng), dt = randoms(n * 4, rng), B = randoms(n * 6, rng), C = randoms(n * 6, rng),
         z = randoms(n * 4, rng), A_log = randoms(12, rng), dt_bias = randoms(4, rng), D = randoms(4, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data(), p.D = D.data();
    expectStateMovesBetweenUnits(n, split, 4 * 3, 4, [&](const StateRows &rows, int64_t t, float *pool, float *out) {
      selectiveScan(&x[t * 4], &dt[t * 4], &B[t * 6], &C[t * 6], &z[t * 4], p, rows, pool, &out[t * 4], serial);
    });
  }
  {
    LightningParams p;
    p.heads = 2, p.head_dim = 3, p.decay = {0.1f, 0.4f};
    auto q = randoms(n * 6, rng), k = randoms(n * 6, rng), v = randoms(n * 6, rng);
    expectStateMovesBetweenUnits(n, split, 2 * 3 * 3, 6, [&](const StateRows &rows, int64_t t, float *pool, float *out) {
      lightningScan(&q[t * 6], &k[t * 6], &v[t * 6], p, rows, pool, &out[t * 6], serial, 16);
    });
  }
  {
    const int64_t C = 3, K = 4;
    auto x = randoms(n * C, rng), w = randoms(C * K, rng);
    expectStateMovesBetweenUnits(n, split, C * (K - 1), C, [&](const StateRows &rows, int64_t t, float *pool, float *out) {
      conv1dStates(&x[t * C], C, K, w.data(), nullptr, Act::Silu, rows, pool, &out[t * C], serial);
    });
  }
}


// The grouped conv against its definition on the whole sequence, in one step and split into
// steps of 1, 2 and 4 rows: groups of G = 3 channels mix inside the group, and a fresh request's
// inputs before its first row are `initial`.
TEST(Conv1d, GroupedWithInitialInputsCarriesAcrossSteps) {
  std::mt19937 rng(11);
  const int64_t C = 6, G = 3, K = 3, n = 7;
  auto x = randoms(n * C, rng), w = randoms(C * G * K, rng), bias = randoms(C, rng), init = randoms(C, rng);
  // xe[m] for m in [-(K-1), n): initial before the first row.
  auto input = [&](int64_t m, int64_t c) { return m < 0 ? init[c] : x[m * C + c]; };
  std::vector<float> want(n * C);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = bias[c];
      for (int64_t i = 0; i < G; ++i)
        for (int64_t j = 0; j < K; ++j)
          acc += (double)w[(c * G + i) * K + j] * input(t - (K - 1) + j, c / G * G + i);
      want[t * C + c] = (float)acc;
    }
  for (int64_t piece : {7, 1, 2, 4}) {
    std::vector<float> got(n * C, NAN), pool(C * (K - 1), NAN);
    std::vector<int32_t> slots = {0};
    for (int64_t t0 = 0; t0 < n; t0 += piece) {
      int64_t rows = std::min(piece, n - t0);
      std::vector<int32_t> cu = {0, (int32_t)rows}, carried = {t0 > 0};
      StateRows step{cu.data(), slots.data(), slots.data(), carried.data(), 1};
      conv1dStates(x.data() + t0 * C, C, K, w.data(), bias.data(), Act::None, step, pool.data(), got.data() + t0 * C,
                   serial, false, G, init.data());
    }
    EXPECT_LE(maxRelDiff(got, want), 1e-5) << "steps of " << piece;
    for (int64_t c = 0; c < C; ++c) // the state is the last K - 1 inputs
      for (int64_t j = 0; j < K - 1; ++j)
        EXPECT_EQ(pool[c * (K - 1) + j], x[(n - (K - 1) + j) * C + c]);
  }
}

// The shift hands each row the previous one: the first row of a fresh request gets `initial`
// (or zeros), a carried request's the last row of its previous step.
TEST(Shift, EachRowReadsThePreviousOne) {
  const int64_t C = 2;
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, init = {-1, -2}, pool(C, NAN), got(6, NAN);
  std::vector<int32_t> cu = {0, 2}, cu2 = {0, 1}, slots = {0}, fresh = {0}, carried = {1};
  StateRows first{cu.data(), slots.data(), slots.data(), fresh.data(), 1},
      second{cu2.data(), slots.data(), slots.data(), carried.data(), 1};
  shiftStates(x.data(), C, init.data(), first, pool.data(), got.data(), serial);
  shiftStates(x.data() + 4, C, init.data(), second, pool.data(), got.data() + 4, serial);
  EXPECT_EQ(got, (std::vector<float>{-1, -2, 1, 2, 3, 4}));
  EXPECT_EQ(pool, (std::vector<float>{5, 6}));
  shiftStates(x.data(), C, nullptr, first, pool.data(), got.data(), serial);
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], 0.0f);
}

} // namespace
} // namespace cbc::rt::cpu
