// The weight product (runtime/cpu/matrix.h) on every path (the AVX-512 and portable
// matrix-vector kernels, the blocked BLAS GEMM) over bf16 and float32 weights, against a double
// sum; shapes that leave partial vector lanes and partial row blocks; the same bits whatever
// the thread count.
#include "runtime/cpu/kernels.h"
#include "runtime/safetensors.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

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

// Every path of the product (the AVX-512 and the portable matrix-vector kernels for up to
// kGemvRows rows of x, the blocked BLAS GEMM beyond), over bf16 and float32 weights, against a
// double-precision sum: shapes leave partial vector lanes (K = 70 = 4 * 16 + 6), partial tiles
// of four rows and partial column blocks (N = 197), and partial blocks of four x rows.
TEST(Matrix, EveryPathMatchesADoubleSum) {
  rt::ThreadPool pool(3);
  rt::cpu::ParallelFor pfor = [&](int64_t n, const std::function<void(int64_t)> &fn) { pool.parallelFor(n, fn); };
  const int64_t K = 70, N = 197;
  std::vector<int64_t> rows = {1, 2, 3, 4, 5, 7, rt::cpu::kGemvRows, rt::cpu::kGemvRows + 1, 130};
  for (bool portable : {false, true}) {
    rt::cpu::setGemvPortable(portable);
    for (int64_t M : rows) {
      Case c = makeCase(M, K, N, 7 + (unsigned)M);
      for (bool bf16 : {true, false}) {
        rt::cpu::Matrix w = bf16 ? rt::cpu::Matrix(c.w.data()) : rt::cpu::Matrix(c.wf.data());
        std::vector<float> got(M * N), serial(M * N);
        rt::cpu::linear(c.x.data(), M, K, w, N, nullptr, got.data(), pfor);
        rt::cpu::linear(c.x.data(), M, K, w, N, nullptr, serial.data());
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              want += (double)c.x[m * K + k] * c.wf[n * K + k];
              mag += std::fabs((double)c.x[m * K + k] * c.wf[n * K + k]);
            }
            // 70 float32 products summed in some order: a few ulp of the sum of magnitudes.
            ASSERT_NEAR(got[m * N + n], want, 1e-6 * mag + 1e-30)
                << rt::cpu::gemvKernel() << (bf16 ? " bf16" : " f32") << " M=" << M << " at " << m << "," << n;
            ASSERT_EQ(got[m * N + n], serial[m * N + n]) << "M=" << M << ": the thread count changed a result";
          }
      }
    }
  }
  rt::cpu::setGemvPortable(false);
}

// This machine's CPU has AVX-512 (the CI machines do too): the fast kernel is the one tested
// above, not only the portable one.
TEST(Matrix, Avx512KernelIsUsedWhereTheCpuHasIt) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "no AVX-512 on this CPU";
  EXPECT_STREQ(rt::cpu::gemvKernel(), "avx512");
  rt::cpu::setGemvPortable(true);
  EXPECT_STREQ(rt::cpu::gemvKernel(), "portable");
  rt::cpu::setGemvPortable(false);
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
