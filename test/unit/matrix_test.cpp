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

// The kernel choices the CPU makes on its own, restored after a test forces others.
struct KernelChoice {
  KernelChoice(bool portable, bool blas) {
    rt::cpu::setGemvPortable(portable);
    rt::cpu::setGemmBlas(blas);
  }
  ~KernelChoice() {
    rt::cpu::setGemvPortable(false);
    rt::cpu::setGemmBlas(false);
  }
};

// Every path of the product over every layout (float32, row-major bf16, packed bf16), against
// a double-precision sum: the AVX-512 and portable matrix-vector kernels up to kGemvRows rows of
// x, AMX (packed only) and BLAS beyond. Shapes leave partial vector lanes (K = 70 for the
// row-major layouts), partial tiles of four rows and of four panels (N = 197, 208 = 13 panels),
// partial blocks of four and of 16 x rows (M up to 130), and AMX's last one or two panels of
// three (N = 208 and 224 packed).
TEST(Matrix, EveryPathMatchesADoubleSum) {
  rt::ThreadPool pool(3);
  rt::cpu::ParallelFor pfor = [&](int64_t n, const std::function<void(int64_t)> &fn) { pool.parallelFor(n, fn); };
  std::vector<int64_t> rows = {1, 2, 3, 4, 5, 7, rt::cpu::kGemvRows, rt::cpu::kGemvRows + 1, 17, 33, 130};
  for (auto [portable, blas] : std::vector<std::pair<bool, bool>>{{false, false}, {true, true}, {false, true}}) {
    KernelChoice choice(portable, blas);
    for (int64_t M : rows)
      for (int layout = 0; layout < 4; ++layout) { // f32, bf16, packed bf16 (two widths)
        int64_t K = layout >= 2 ? 96 : 70, N = layout == 2 ? 208 : layout == 3 ? 224 : 197;
        Case c = makeCase(M, K, N, 7 + (unsigned)M);
        std::vector<uint16_t> packed = c.w;
        if (layout >= 2)
          rt::cpu::packBf16(packed.data(), 1, N, K);
        rt::cpu::Matrix w = layout == 0   ? rt::cpu::Matrix(c.wf.data())
                            : layout == 1 ? rt::cpu::Matrix(c.w.data())
                                          : rt::cpu::Matrix(packed.data(), rt::Storage::BF16Panels);
        std::vector<float> got(M * N), serial(M * N);
        rt::cpu::linear(c.x.data(), M, K, w, N, nullptr, got.data(), pfor);
        rt::cpu::linear(c.x.data(), M, K, w, N, nullptr, serial.data());
        std::string path = std::string(M <= rt::cpu::kGemvRows ? rt::cpu::gemvKernel() : rt::cpu::gemmKernel()) +
                           " layout " + std::to_string(layout) + " M=" + std::to_string(M);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              want += (double)c.x[m * K + k] * c.wf[n * K + k];
              mag += std::fabs((double)c.x[m * K + k] * c.wf[n * K + k]);
            }
            // float32 products summed in some order: a few ulp of the sum of magnitudes.
            ASSERT_NEAR(got[m * N + n], want, 1e-6 * mag + 1e-30) << path << " at " << m << "," << n;
            ASSERT_EQ(got[m * N + n], serial[m * N + n]) << path << ": the thread count changed a result";
          }
      }
  }
}

// Attention's products over row pointers, both kernels, against double sums: head blocks of
// 1 to 4 and beyond (G = 6), widths the AVX-512 kernels take (64) and those they leave to the
// portable ones (40).
TEST(Matrix, AttentionProductsMatchDoubleSums) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (bool portable : {false, true}) {
    KernelChoice choice(portable, false);
    for (int64_t D : {64, 40})
      for (int64_t G : {1, 3, 6}) {
        const int64_t n = 37;
        std::vector<float> q(G * D), rows(n * 2 * D), scores(G * n), out(G * D);
        for (float &v : q)
          v = u(rng);
        for (float &v : rows)
          v = u(rng);
        std::vector<const float *> keys(n), values(n);
        for (int64_t j = 0; j < n; ++j)
          keys[j] = rows.data() + (n - 1 - j) * 2 * D, values[j] = keys[j] + D; // not in memory order
        rt::cpu::scoreKeys(q.data(), G, D, keys.data(), n, scores.data());
        for (int64_t g = 0; g < G; ++g)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (int64_t d = 0; d < D; ++d)
              want += (double)q[g * D + d] * keys[j][d];
            ASSERT_NEAR(scores[g * n + j], want, 1e-5) << "D=" << D << " G=" << G << " portable " << portable;
          }
        rt::cpu::sumValues(scores.data(), G, n, values.data(), D, out.data());
        for (int64_t g = 0; g < G; ++g)
          for (int64_t d = 0; d < D; ++d) {
            double want = 0;
            for (int64_t j = 0; j < n; ++j)
              want += (double)scores[g * n + j] * values[j][d];
            ASSERT_NEAR(out[g * D + d], want, 1e-4) << "D=" << D << " G=" << G << " portable " << portable;
          }
      }
  }
}

// A deep product (K = 4096) gives each AMX task fewer columns than N (their panels stay within
// L2): the tasks' column ranges must tile the output exactly, with whole panels, on 3 threads.
TEST(Matrix, AmxSplitsDeepProductsIntoColumnTasks) {
  rt::ThreadPool pool(3);
  rt::cpu::ParallelFor pfor = [&](int64_t n, const std::function<void(int64_t)> &fn) { pool.parallelFor(n, fn); };
  const int64_t M = 20, K = 4096, N = 224;
  Case c = makeCase(M, K, N, 3);
  rt::cpu::packBf16(c.w.data(), 1, N, K);
  std::vector<float> got(M * N, NAN);
  rt::cpu::linear(c.x.data(), M, K, rt::cpu::Matrix(c.w.data(), rt::Storage::BF16Panels), N, nullptr, got.data(), pfor);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        want += (double)c.x[m * K + k] * c.wf[n * K + k];
        mag += std::fabs((double)c.x[m * K + k] * c.wf[n * K + k]);
      }
      ASSERT_NEAR(got[m * N + n], want, 1e-6 * mag) << rt::cpu::gemmKernel() << " at " << m << "," << n;
    }
}

// The exact split behind the AMX path: x values that need all 24 bits of their significand,
// an infinity and values of every magnitude give the float32 product (up to summation order),
// so AMX accumulates what float32 would.
TEST(Matrix, AmxKeepsEveryBitOfX) {
  if (std::string(rt::cpu::gemmKernel()) != "amx")
    GTEST_SKIP() << "no AMX on this CPU";
  const int64_t M = 16, K = 32, N = 16;
  std::vector<float> x(M * K);
  for (int64_t i = 0; i < M * K; ++i)
    x[i] = std::ldexp(1.0f + (float)((i * 2654435761u) % (1 << 23)) / (1 << 23), (int)(i % 40) - 20) * (i % 3 ? 1 : -1);
  std::vector<uint16_t> w(N * K, rt::floatToBf16(0.0f));
  for (int64_t n = 0; n < N; ++n)
    w[n * K + n] = rt::floatToBf16(1.0f); // y[m, n] = x[m, n]: the product must return x exactly
  x[5 * K + 3] = INFINITY;
  rt::cpu::packBf16(w.data(), 1, N, K);
  std::vector<float> y(M * N);
  rt::cpu::linear(x.data(), M, K, rt::cpu::Matrix(w.data(), rt::Storage::BF16Panels), N, nullptr, y.data());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      if (m != 5)
        ASSERT_EQ(y[m * N + n], x[m * K + n]) << m << "," << n;
  // As in float32: inf * 1 + 0 is inf, and inf * 0 makes every other column NaN.
  for (int64_t n = 0; n < N; ++n)
    EXPECT_TRUE(n == 3 ? y[5 * N + n] == INFINITY : std::isnan(y[5 * N + n])) << n << ": " << y[5 * N + n];
}

// Packing moves each panel's elements within the panel: a stack of matrices keeps its blocks.
TEST(Matrix, PackingKeepsStackedMatricesInPlace) {
  const int64_t E = 3, N = 32, K = 64;
  Case c = makeCase(1, K, E * N, 5);
  std::vector<uint16_t> packed = c.w;
  rt::cpu::packBf16(packed.data(), E, N, K);
  for (int64_t e = 0; e < E; ++e) {
    std::vector<float> got(N), want(N);
    rt::cpu::Matrix panels(packed.data(), rt::Storage::BF16Panels);
    rt::cpu::linear(c.x.data(), 1, K, panels.at(e * N * K), N, nullptr, got.data());
    rt::cpu::linear(c.x.data(), 1, K, rt::cpu::Matrix(c.w.data()).at(e * N * K), N, nullptr, want.data());
    for (int64_t n = 0; n < N; ++n)
      EXPECT_NEAR(got[n], want[n], 1e-5f * (1 + std::fabs(want[n]))) << e << "," << n;
  }
  EXPECT_TRUE(rt::panelsFit(16, 32));
  EXPECT_FALSE(rt::panelsFit(24, 32));
  EXPECT_FALSE(rt::panelsFit(16, 48));
}

// This machine's CPU has AVX-512 and AMX (the CI machines do too): the fast kernels are the
// ones tested above, not only the portable ones.
TEST(Matrix, TheFastKernelsAreUsedWhereTheCpuHasThem) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "no AVX-512 on this CPU";
  EXPECT_STREQ(rt::cpu::gemvKernel(), "avx512");
  {
    KernelChoice choice(true, true);
    EXPECT_STREQ(rt::cpu::gemvKernel(), "portable");
    EXPECT_STREQ(rt::cpu::gemmKernel(), "blas");
  }
  EXPECT_STREQ(rt::cpu::gemvKernel(), "avx512");
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
