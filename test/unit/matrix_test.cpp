// The bf16 weight product (runtime/cpu/matrix.h) against BLAS on the same weights widened to
// float32: both paths (GEMV for few rows, blocked GEMM for more), shapes that leave partial
// vector lanes and partial row blocks, and the same bits whatever the thread count.
#include "runtime/cpu/kernels.h"
#include "runtime/safetensors.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <cblas.h>

#include <cmath>
#include <random>
#include <vector>

namespace cbc::test {
namespace {

struct Case {
  std::vector<float> x, wf;
  std::vector<uint16_t> w;
};

Case makeCase(int64_t M, int64_t K, int64_t N, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Case c;
  for (int64_t i = 0; i < M * K; ++i)
    c.x.push_back(u(rng));
  for (int64_t i = 0; i < N * K; ++i) {
    c.w.push_back(rt::floatToBf16(u(rng)));
    c.wf.push_back(rt::bf16ToFloat(c.w.back()));
  }
  return c;
}

TEST(Bf16Matrix, MatchesBlasOnTheWidenedWeights) {
  rt::ThreadPool pool(3);
  rt::cpu::ParallelFor pfor = [&](int64_t n, const std::function<void(int64_t)> &fn) { pool.parallelFor(n, fn); };
  const int64_t K = 70, N = 197; // 70 = 2 lanes of 32 + 6; 197 = 3 blocks of 64 + 5 rows
  for (int64_t M : std::vector<int64_t>{1, 3, rt::cpu::kBf16GemvRows, rt::cpu::kBf16GemvRows + 1, 130}) {
    Case c = makeCase(M, K, N, 7 + (unsigned)M);
    std::vector<float> want(M * N), got(M * N), serial(M * N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, c.x.data(), (int)K,
                c.wf.data(), (int)K, 0.0f, want.data(), (int)N);
    rt::cpu::linear(c.x.data(), M, K, rt::cpu::Matrix(c.w.data()), N, nullptr, got.data(), pfor);
    rt::cpu::linear(c.x.data(), M, K, rt::cpu::Matrix(c.w.data()), N, nullptr, serial.data());
    for (int64_t i = 0; i < M * N; ++i) {
      // Sums of 70 products of magnitude <= 1, in another order: float32 rounding only.
      ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << "M=" << M << " at " << i;
      ASSERT_EQ(got[i], serial[i]) << "M=" << M << ": the thread count changed a result";
    }
  }
}

TEST(Bf16Matrix, BiasAndEmbeddingReadBf16) {
  Case c = makeCase(2, 40, 5, 3);
  std::vector<float> bias = {1, -2, 3, -4, 5}, y(10), yf(10);
  rt::cpu::linear(c.x.data(), 2, 40, rt::cpu::Matrix(c.w.data()), 5, bias.data(), y.data());
  rt::cpu::linear(c.x.data(), 2, 40, rt::cpu::Matrix(c.wf.data()), 5, bias.data(), yf.data());
  for (int i = 0; i < 10; ++i)
    EXPECT_NEAR(y[i], yf[i], 1e-5f * (1 + std::fabs(yf[i]))) << i;
  // The table is [5, 40]: rows 4 and 1, scaled.
  int32_t tokens[2] = {4, 1};
  std::vector<float> e(80), ef(80);
  rt::cpu::embed(tokens, 2, rt::cpu::Matrix(c.w.data()), 40, 0.5f, e.data());
  rt::cpu::embed(tokens, 2, rt::cpu::Matrix(c.wf.data()), 40, 0.5f, ef.data());
  EXPECT_EQ(e, ef);
  EXPECT_EQ(e[0], 0.5f * c.wf[4 * 40]);
}

} // namespace
} // namespace cbc::test
