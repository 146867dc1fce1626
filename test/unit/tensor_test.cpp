// Host tensors and the storage format tables (runtime/tensor.h, runtime/cpu/formats.h): each
// format's element size and row widening on known values, the panel layout against its formula,
// typed views that refuse another format, and the CPU backend's packing of product weights.
#include "runtime/cpu/kernels.h"
#include "runtime/safetensors.h"
#include "runtime/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace cbc::test {
namespace {

const rt::Storage kAll[] = {rt::Storage::F32, rt::Storage::BF16, rt::Storage::BF16Panels};

std::vector<float> row(const rt::HostTensor &t, int64_t r) {
  int64_t cols = t.shape().back();
  std::vector<float> out(cols);
  rt::storageTraits(t.format()).toFloatRow(t.data(), cols, r, out.data());
  return out;
}

// A distinct finite bf16 value per element.
uint16_t bits(int64_t n, int64_t k) { return (uint16_t)(0x3f80 + n * 64 + k); }

TEST(Formats, NamesAndElementSizes) {
  EXPECT_STREQ(rt::formatName(rt::Storage::F32), "f32");
  EXPECT_STREQ(rt::formatName(rt::Storage::BF16), "bf16");
  EXPECT_STREQ(rt::formatName(rt::Storage::BF16Panels), "bf16_panels");
  EXPECT_EQ(rt::storageTraits(rt::Storage::F32).bits, 32);
  EXPECT_EQ(rt::storageTraits(rt::Storage::BF16).bits, 16);
  EXPECT_EQ(rt::storageTraits(rt::Storage::BF16Panels).bits, 16);
  EXPECT_EQ(rt::formatBytes(rt::Storage::F32, 5), 20);
  EXPECT_EQ(rt::formatBytes(rt::Storage::BF16, 5), 10);
  EXPECT_TRUE(rt::storageTraits(rt::Storage::BF16).rowMajor);
  EXPECT_FALSE(rt::storageTraits(rt::Storage::BF16Panels).rowMajor);
  EXPECT_THROW(rt::storageTraits(rt::Format((rt::Storage)rt::kStorageCount)), std::logic_error);
}

TEST(Formats, F32AndBf16RowsWidenExactly) {
  rt::HostTensor f(rt::Storage::F32, {2, 3});
  std::vector<float> values = {1.0f, -2.5f, 0.0f, 65504.0f, 1e-30f, -INFINITY};
  std::copy(values.begin(), values.end(), f.f32().begin());
  EXPECT_EQ(row(f, 1), (std::vector<float>{65504.0f, 1e-30f, -INFINITY}));

  rt::HostTensor b(rt::Storage::BF16, {2, 3});
  std::vector<uint16_t> patterns = {0x3f80, 0xc020, 0x8000, 0x477f, 0x0001, 0xff80};
  std::copy(patterns.begin(), patterns.end(), b.bf16().begin());
  EXPECT_EQ(row(b, 0), (std::vector<float>{1.0f, -2.5f, -0.0f}));
  EXPECT_TRUE(std::signbit(row(b, 0)[2]));
  EXPECT_EQ(row(b, 1), (std::vector<float>{65280.0f, std::ldexp(1.0f, -133), -INFINITY}));
}

// Element (n, k) of a panel matrix sits where the layout's formula says; its rows widen to the
// values placed there, across the matrices of a stack.
TEST(Formats, PanelRowsFollowTheLayout) {
  EXPECT_EQ(rt::panelIndex(0, 0, 64), 0);
  EXPECT_EQ(rt::panelIndex(0, 1, 64), 1);
  EXPECT_EQ(rt::panelIndex(1, 0, 64), 2);
  EXPECT_EQ(rt::panelIndex(15, 1, 64), 31);
  EXPECT_EQ(rt::panelIndex(0, 2, 64), 32);
  EXPECT_EQ(rt::panelIndex(16, 0, 64), 16 * 64); // the second panel follows the first whole
  EXPECT_EQ(rt::panelIndex(17, 3, 64), 16 * 64 + 32 + 2 + 1);

  const int64_t E = 2, N = 32, K = 64;
  rt::HostTensor t(rt::Storage::BF16, {E, N, K});
  for (int64_t n = 0; n < E * N; ++n)
    for (int64_t k = 0; k < K; ++k)
      t.bf16()[n * K + k] = bits(n, k);
  rt::cpu::packBf16(t.bf16().data(), E, N, K);
  t.setFormat(rt::Storage::BF16Panels);
  const auto *raw = reinterpret_cast<const uint16_t *>(t.data());
  EXPECT_EQ(raw[2], bits(1, 0));
  EXPECT_EQ(raw[16 * K + 35], bits(17, 3));
  for (int64_t n = 0; n < E * N; ++n) {
    std::vector<float> got = row(t, n);
    for (int64_t k = 0; k < K; ++k)
      ASSERT_EQ(got[k], rt::bf16ToFloat(bits(n, k))) << n << "," << k;
  }
}

TEST(HostTensor, SizesZerosAndAlignment) {
  for (rt::Storage s : kAll) {
    rt::HostTensor t(s, {3, 32, 64});
    EXPECT_EQ(t.format(), s);
    EXPECT_EQ(t.numel(), 3 * 32 * 64);
    EXPECT_EQ(t.bytes(), t.numel() * rt::storageTraits(s).bits / 8) << rt::formatName(s);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u) << rt::formatName(s);
    std::vector<uint8_t> zeros(t.bytes(), 0);
    EXPECT_EQ(std::memcmp(t.data(), zeros.data(), zeros.size()), 0) << rt::formatName(s);
  }
  rt::HostTensor empty;
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.bytes(), 0);
  EXPECT_TRUE(empty.f32().empty());
  rt::HostTensor scalar(rt::Storage::F32, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.bytes(), 4);
}

TEST(HostTensor, BadShapesAreRefused) {
  EXPECT_THROW(rt::HostTensor(rt::Storage::F32, {2, -1}), std::invalid_argument);
  EXPECT_THROW(rt::HostTensor(rt::Storage::F32, {int64_t(1) << 40, int64_t(1) << 40}), std::invalid_argument);
  // Panels need whole panels: 16 rows, a multiple of 32 columns, and a matrix at all.
  EXPECT_THROW(rt::HostTensor(rt::Storage::BF16Panels, {24, 32}), std::invalid_argument);
  EXPECT_THROW(rt::HostTensor(rt::Storage::BF16Panels, {16, 48}), std::invalid_argument);
  EXPECT_THROW(rt::HostTensor(rt::Storage::BF16Panels, {512}), std::invalid_argument);
}

TEST(HostTensor, AViewOfAnotherFormatIsRefused) {
  rt::HostTensor f(rt::Storage::F32, {4}), b(rt::Storage::BF16, {4}), p(rt::Storage::BF16Panels, {16, 32});
  EXPECT_NO_THROW(f.f32());
  EXPECT_NO_THROW(b.bf16());
  EXPECT_THROW(f.bf16(), std::logic_error);
  EXPECT_THROW(b.f32(), std::logic_error);
  EXPECT_THROW(p.f32(), std::logic_error);
  EXPECT_THROW(p.bf16(), std::logic_error); // panels are not row-major bf16
  const rt::HostTensor &cb = b;
  try {
    cb.f32();
    ADD_FAILURE() << "f32() of a bf16 tensor";
  } catch (const std::logic_error &e) {
    EXPECT_STREQ(e.what(), "host tensor: f32() of a bf16 tensor");
  }
}

TEST(HostTensor, ReshapeAndSetFormatKeepTheBytes) {
  rt::HostTensor t(rt::Storage::F32, {2, 3});
  for (int i = 0; i < 6; ++i)
    t.f32()[i] = (float)i;
  t.reshape({3, 2});
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.f32()[5], 5.0f);
  EXPECT_THROW(t.reshape({4, 2}), std::invalid_argument);
  // Another format must take the same bytes and fit the shape.
  EXPECT_THROW(t.setFormat(rt::Storage::BF16), std::logic_error);
  rt::HostTensor b(rt::Storage::BF16, {16, 48});
  EXPECT_THROW(b.setFormat(rt::Storage::BF16Panels), std::logic_error);
  rt::HostTensor p(rt::Storage::BF16, {16, 32});
  p.setFormat(rt::Storage::BF16Panels);
  EXPECT_EQ(p.format(), rt::Storage::BF16Panels);
  EXPECT_THROW(p.reshape({32, 16}), std::logic_error); // a panel layout is tied to its matrix
}

TEST(HostTensor, CopiesAreDeepAndMovesTakeTheBuffer) {
  rt::HostTensor a(rt::Storage::F32, {3});
  a.f32()[1] = 2.0f;
  rt::HostTensor b = a;
  b.f32()[1] = 3.0f;
  EXPECT_EQ(a.f32()[1], 2.0f);
  EXPECT_NE(a.data(), b.data());
  const uint8_t *buffer = b.data();
  rt::HostTensor c = std::move(b);
  EXPECT_EQ(c.data(), buffer);
  EXPECT_EQ(c.f32()[1], 3.0f);
  a = c;
  EXPECT_EQ(a.f32()[1], 3.0f);
  EXPECT_NE(a.data(), c.data());
}

// The CPU backend packs bf16 product weights whose matrices fit panels and leaves the rest.
TEST(CpuFormats, ProductWeightsPackWhereTheyFit) {
  EXPECT_TRUE(rt::cpu::formatKernels(rt::Storage::BF16Panels).amxTiles);
  EXPECT_FALSE(rt::cpu::formatKernels(rt::Storage::BF16).amxTiles);
  EXPECT_TRUE(rt::cpu::formatKernels(rt::Storage::F32).sgemmReads);
  EXPECT_EQ(rt::cpu::formatKernels(rt::Storage::BF16Panels).rowBlock, rt::kPanelRows);

  rt::HostTensor stack(rt::Storage::BF16, {2, 16, 32});
  for (int64_t i = 0; i < stack.numel(); ++i)
    stack.bf16()[i] = bits(i / 32, i % 32);
  rt::HostTensor rowMajor = stack;
  rt::cpu::packForProducts(stack);
  EXPECT_EQ(stack.format(), rt::Storage::BF16Panels);
  for (int64_t n = 0; n < 32; ++n)
    EXPECT_EQ(row(stack, n), row(rowMajor, n)) << n;

  rt::HostTensor odd(rt::Storage::BF16, {24, 32}), f32(rt::Storage::F32, {16, 32});
  rt::cpu::packForProducts(odd);
  rt::cpu::packForProducts(f32);
  rt::cpu::packForProducts(stack); // already packed
  EXPECT_EQ(odd.format(), rt::Storage::BF16);
  EXPECT_EQ(f32.format(), rt::Storage::F32);
  EXPECT_EQ(stack.format(), rt::Storage::BF16Panels);
}

// A product over the same values gives the same result in every format, each matrix of a stack
// reached through Matrix::at (whole panels for the packed one).
TEST(CpuFormats, ProductsReadEveryFormatAlike) {
  const int64_t E = 2, N = 32, K = 64, M = 3;
  rt::HostTensor b(rt::Storage::BF16, {E, N, K}), f(rt::Storage::F32, {E, N, K});
  for (int64_t i = 0; i < b.numel(); ++i) {
    b.bf16()[i] = rt::floatToBf16(std::sin((float)i));
    f.f32()[i] = rt::bf16ToFloat(b.bf16()[i]);
  }
  rt::HostTensor p = b;
  rt::cpu::packForProducts(p);
  ASSERT_EQ(p.format(), rt::Storage::BF16Panels);
  std::vector<float> x(M * K);
  for (int64_t i = 0; i < M * K; ++i)
    x[i] = std::cos((float)i);
  for (int64_t e = 0; e < E; ++e) {
    std::vector<float> want(M * N), got(M * N);
    rt::cpu::linear(x.data(), M, K, rt::cpu::Matrix(f).at(e * N * K), N, nullptr, want.data());
    for (const rt::HostTensor *t : {&b, &p}) {
      rt::cpu::linear(x.data(), M, K, rt::cpu::Matrix(*t).at(e * N * K), N, nullptr, got.data());
      for (int64_t i = 0; i < M * N; ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << rt::formatName(t->format()) << " " << e;
    }
  }
  // Embedding rows read any row-major format.
  int32_t tokens[2] = {5, 40};
  std::vector<float> eb(2 * K), ef(2 * K);
  rt::cpu::embed(tokens, 2, rt::cpu::Matrix(b), K, 0.5f, eb.data());
  rt::cpu::embed(tokens, 2, rt::cpu::Matrix(f), K, 0.5f, ef.data());
  EXPECT_EQ(eb, ef);
  EXPECT_EQ(ef[K + 3], 0.5f * f.f32()[40 * K + 3]);
}

} // namespace
} // namespace cbc::test
