// Safetensors checkpoints and the weight manifest: every fault is a WeightError naming the
// tensor or file; sharded checkpoints load like single files; dtype conversions; random weights.
#include "runtime/checkpoint_config.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/safetensors.h"
#include "runtime/schema/python_json.h"
#include "runtime/weights.h"
#include "test/support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <tuple>
#include <unistd.h>

namespace cbc::test {
namespace {

namespace fs = std::filesystem;

using Tensors = std::vector<std::pair<std::string, rt::TensorView>>;

// A scratch directory per test, removed afterwards.
class TempDir {
public:
  TempDir() {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("cbc-unit-" + std::string(info->test_suite_name()) + "-" +
                                         info->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string &name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

private:
  fs::path path_;
};

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), (std::streamsize)bytes.size());
}

std::string rawHeader(const std::string &json, uint64_t declaredLength) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &declaredLength, 8);
  return out + json;
}

// Asserts that `fn` throws a WeightError whose message contains every word.
template <typename Fn>
void expectWeightError(Fn &&fn, const std::vector<std::string> &words, const std::string &what) {
  try {
    fn();
    ADD_FAILURE() << what << ": no WeightError";
  } catch (const rt::WeightError &e) {
    std::string msg = e.what();
    for (const std::string &w : words)
      EXPECT_NE(msg.find(w), std::string::npos) << what << ": '" << msg << "' lacks '" << w << "'";
  } catch (const std::exception &e) {
    ADD_FAILURE() << what << ": threw something else than WeightError: " << e.what();
  }
}

// A fixture's committed artefact (read once per process) and its checkpoint tensors (per
// test), with the helpers both weight suites use. Derived::kFamily names the parity fixture.
template <class Derived> class FixtureWeights : public ::testing::Test {
protected:
  void SetUp() override {
    model_ = std::make_unique<rt::SafetensorsFile>(fixtureDir(Derived::kFamily) + "/model.safetensors");
    for (const std::string &n : model_->names())
      tensors_.emplace_back(n, model_->get(n));
  }

  static rt::TensorView &tensor(Tensors &ts, const std::string &name) {
    for (auto &[n, t] : ts)
      if (n == name)
        return t;
    throw std::runtime_error("no tensor " + name);
  }

  // Writes `ts` as <dir>/model.safetensors and loads the fixture's manifest from it.
  void load(const Tensors &ts, const TempDir &dir) {
    rt::writeSafetensors(dir / "model.safetensors", ts);
    rt::WeightStore::load(*artefact_, {dir.str(), 0});
  }

  const rt::Artefact *artefact_ = &committedArtefact(Derived::kFamily);
  std::unique_ptr<rt::SafetensorsFile> model_;
  Tensors tensors_;
};

class Weights : public FixtureWeights<Weights> {
public:
  static constexpr const char *kFamily = "llama";

protected:

  // Greedy tokens and logits of a few prompts.
  std::vector<rt::RequestOutput> run(const rt::WeightSource &w) {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    std::vector<test::Run> runs;
    for (std::vector<int32_t> p :
         {std::vector<int32_t>{1, 5, 9}, std::vector<int32_t>{200, 3, 3, 70, 12}}) {
      rt::SamplingParams sp;
      sp.max_new_tokens = 5;
      sp.ignore_eos = true;
      sp.keep_logits = true;
      runs.push_back({p, sp});
    }
    return serve(*artefact_, w, o, runs).outputs;
  }
};

TEST_F(Weights, FixtureLoads) {
  TempDir dir;
  load(tensors_, dir);
  rt::WeightStore s = rt::WeightStore::load(*artefact_, {fixtureDir("llama"), 0});
  EXPECT_EQ(s.size(), artefact_->weights.size());
  for (size_t i = 0; i < s.size(); ++i)
    EXPECT_EQ(s.get((int)i).shape(), artefact_->weights[i].shape) << artefact_->weights[i].name;
}

// A fixture stores bf16: its matrices load as bf16 when asked (read straight from the file where
// assembling only concatenates or stacks, as stacked experts, through float32 otherwise), with
// the values the float32 load gives; the rest (norm scales, and everything when not asked) stays
// float32. Returns how many weights were held as bf16.
int expectBf16LoadsExactly(const rt::Artefact &artefact, const std::string &family) {
  rt::WeightSource src{fixtureDir(family), 0};
  std::vector<bool> want = rt::storedAsBf16(artefact, src, rt::cpuBf16Weights(artefact));
  rt::WeightStore f32 = rt::WeightStore::load(artefact, src);
  rt::WeightStore held = rt::WeightStore::load(artefact, src, nullptr, want);
  int bf16 = 0, kept = 0;
  for (size_t i = 0; i < held.size(); ++i) {
    const rt::HostTensor &h = held.get((int)i), &f = f32.get((int)i);
    const std::string &name = family + ": " + artefact.weights[i].name;
    EXPECT_EQ(f.format(), rt::Storage::F32) << name;
    EXPECT_EQ(h.format(), want[i] ? rt::Storage::BF16 : rt::Storage::F32) << name;
    EXPECT_EQ(h.shape(), f.shape()) << name;
    if (h.format() != rt::Storage::BF16) {
      EXPECT_EQ(floats(h), floats(f)) << name;
      ++kept;
      continue;
    }
    ++bf16;
    EXPECT_EQ(h.bytes(), 2 * f.numel()) << name;
    std::span<const uint16_t> hb = h.bf16();
    std::vector<float> fv = floats(f);
    for (size_t j = 0; j < hb.size() && j < fv.size(); ++j)
      if (rt::bf16ToFloat(hb[j]) != fv[j]) {
        ADD_FAILURE() << name << " differs at " << j;
        break;
      }
  }
  EXPECT_GT(kept, 0) << family << ": norm scales must stay float32";
  return bf16;
}

TEST_F(Weights, Bf16FixtureMatricesStayBf16) {
  EXPECT_GT(expectBf16LoadsExactly(*artefact_, "llama"), 0) << "no matrix held as bf16";
  // Stacked experts (qwen3_moe, deepseek_v3) and experts the manifest transposes (gpt_oss).
  for (const char *family : {"qwen3_moe", "deepseek_v3", "gpt_oss"})
    EXPECT_GT(expectBf16LoadsExactly(committedArtefact(family), family), 0) << family;
  // Random weights are bf16 values: every candidate is held as bf16, with the same values.
  std::vector<bool> candidates = rt::cpuBf16Weights(*artefact_);
  EXPECT_EQ(rt::storedAsBf16(*artefact_, {"", 3}, candidates), candidates);
  rt::WeightStore f32 = rt::WeightStore::load(*artefact_, {"", 3});
  rt::WeightStore held = rt::WeightStore::load(*artefact_, {"", 3}, nullptr, candidates);
  for (size_t i = 0; i < held.size(); ++i) {
    const rt::HostTensor &h = held.get((int)i);
    EXPECT_EQ(h.format(), candidates[i] ? rt::Storage::BF16 : rt::Storage::F32) << artefact_->weights[i].name;
    if (h.format() != rt::Storage::BF16)
      continue;
    std::vector<float> fv = floats(f32.get((int)i));
    for (size_t j = 0; j < h.bf16().size(); ++j)
      ASSERT_EQ(rt::bf16ToFloat(h.bf16()[j]), fv[j]) << artefact_->weights[i].name;
  }
}

TEST_F(Weights, MissingTensorIsNamed) {
  for (std::string name : {"model.layers.1.self_attn.k_proj.weight", "model.norm.weight",
                           "lm_head.weight", "model.layers.0.mlp.down_proj.weight"}) {
    TempDir dir;
    Tensors ts;
    for (auto &[n, t] : tensors_)
      if (n != name)
        ts.emplace_back(n, t);
    expectWeightError([&] { load(ts, dir); }, {name, "missing"}, name);
  }
}

TEST_F(Weights, WrongShapeIsNamed) {
  struct Case {
    std::string name;
    std::vector<int64_t> shape;
  };
  // Same element count, other layout; fewer rows in one part of a fused weight; a different
  // row width in a fused part; a norm of the wrong length.
  for (const Case &c : std::vector<Case>{{"model.layers.0.mlp.down_proj.weight", {96, 64}},
                                         {"model.layers.1.self_attn.q_proj.weight", {48, 64}},
                                         {"model.layers.0.mlp.up_proj.weight", {64, 96}},
                                         {"model.norm.weight", {32}},
                                         {"model.embed_tokens.weight", {256, 64, 1}}}) {
    TempDir dir;
    Tensors ts = tensors_;
    rt::TensorView &t = tensor(ts, c.name);
    int64_t numel = 1;
    for (int64_t d : c.shape)
      numel *= d;
    ASSERT_LE(numel * 2, (int64_t)t.bytes);
    t.shape = c.shape;
    t.bytes = numel * 2;
    expectWeightError([&] { load(ts, dir); }, {c.name, "shape"}, c.name);
  }
}

// A tensor the manifest transposes, with an empty dimension: named by the shape check (the
// transposition of no rows once divided by zero).
class GptOssWeights : public FixtureWeights<GptOssWeights> {
public:
  static constexpr const char *kFamily = "gpt_oss";
};

TEST_F(GptOssWeights, AnEmptyTransposedTensorIsNamed) {
  const std::string name = "model.layers.0.mlp.experts.down_proj";
  TempDir dir;
  Tensors ts = tensors_;
  rt::TensorView &t = tensor(ts, name);
  ASSERT_EQ(t.shape, (std::vector<int64_t>{4, 96, 64}));
  t.shape = {4, 0, 64};
  t.bytes = 0;
  expectWeightError([&] { load(ts, dir); }, {name, "shape [4, 64, 0]", "[4, 64, 96]"}, name);
}

// Integer tensors are read as floats (a hash router's expert ids), exact below 2^24; a larger
// value is refused, naming the tensor and the value.
TEST_F(Weights, IntegerTensorsPastTwoTo24AreRefused) {
  for (std::string dtype : {"I64", "I32"}) {
    TempDir dir;
    Tensors ts = tensors_;
    std::string name = "model.layers.0.self_attn.o_proj.weight";
    rt::TensorView &t = tensor(ts, name);
    size_t elemBytes = dtype == "I64" ? 8 : 4;
    std::vector<uint8_t> data(t.numel() * elemBytes, 0);
    int32_t big = 1 << 24;
    std::memcpy(data.data(), &big, 4);
    t.dtype_name = dtype;
    t.data = data.data();
    t.bytes = data.size();
    expectWeightError([&] { load(ts, dir); }, {name, "16777216", "2^24"}, dtype);
  }
}

TEST_F(Weights, UnsupportedDtypeIsNamed) {
  for (std::string dtype : {"F64", "U8", "I8"}) {
    TempDir dir;
    Tensors ts = tensors_;
    std::string name = "model.layers.0.self_attn.o_proj.weight";
    rt::TensorView &t = tensor(ts, name);
    size_t elemBytes = dtype == "F64" ? 8 : 1;
    std::vector<uint8_t> data(t.numel() * elemBytes, 0);
    t.dtype_name = dtype;
    t.data = data.data();
    t.bytes = data.size();
    expectWeightError([&] { load(ts, dir); }, {name, dtype}, dtype);
  }
}

// Encodes a float as f16 when it is exactly representable (the test's own encoder).
std::optional<uint16_t> exactF16(float f) {
  if (f == 0)
    return std::signbit(f) ? 0x8000 : 0;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs((double)f);
  int e;
  double m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;         // biased exponent of 1.m form
  if (exp >= 31)
    return std::nullopt;
  if (exp <= 0) { // subnormal: a = k * 2^-24
    double k = std::ldexp(a, 24);
    if (k != std::floor(k) || k >= 1024)
      return std::nullopt;
    return (uint16_t)(sign | (uint16_t)k);
  }
  double frac = std::ldexp(m * 2 - 1, 10);
  if (frac != std::floor(frac))
    return std::nullopt;
  return (uint16_t)(sign | (exp << 10) | (uint16_t)frac);
}

TEST_F(Weights, F32AndF16CheckpointsLoadLikeBf16) {
  // The fixture's bf16 values are exact in f32, and (where the test encoder says so) in f16:
  // every other tensor is stored as f16, the rest as f32.
  rt::WeightStore ref = rt::WeightStore::load(*artefact_, {fixtureDir("llama"), 0});
  TempDir dir;
  Tensors ts = tensors_;
  std::vector<std::vector<uint8_t>> storage;
  int asF16 = 0;
  for (size_t k = 0; k < ts.size(); ++k) {
    rt::TensorView &t = ts[k].second;
    const uint16_t *src = reinterpret_cast<const uint16_t *>(t.data);
    std::vector<uint8_t> f16(t.numel() * 2);
    bool exact = k % 2 == 1;
    for (int64_t i = 0; exact && i < t.numel(); ++i) {
      auto h = exactF16(rt::bf16ToFloat(src[i]));
      exact = h.has_value();
      if (exact)
        std::memcpy(&f16[i * 2], &*h, 2);
    }
    if (exact) {
      storage.push_back(std::move(f16));
      t.dtype_name = "F16";
      ++asF16;
    } else {
      std::vector<uint8_t> data(t.numel() * 4);
      for (int64_t i = 0; i < t.numel(); ++i) {
        float f = rt::bf16ToFloat(src[i]);
        std::memcpy(&data[i * 4], &f, 4);
      }
      storage.push_back(std::move(data));
      t.dtype_name = "F32";
    }
    t.data = storage.back().data();
    t.bytes = storage.back().size();
  }
  EXPECT_GT(asF16, 3);
  rt::writeSafetensors(dir / "model.safetensors", ts);
  rt::WeightStore mixed = rt::WeightStore::load(*artefact_, {dir.str(), 0});
  ASSERT_EQ(mixed.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_EQ(floats(mixed.get((int)i)), floats(ref.get((int)i))) << artefact_->weights[i].name;
}

TEST_F(Weights, ReadTensorAsFloatConvertsEachDtype) {
  TempDir dir;
  std::vector<float> f32 = {1.0f, -2.5f, 0.0f, 65504.0f, 1e-30f, -INFINITY};
  std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x0000, 0x7bff, 0x0001, 0xfc00};
  std::vector<uint16_t> bf16 = {0x3f80, 0xc020, 0x8000, 0x477f, 0x0001, 0xff80};
  auto view = [](const char *dtype, const void *p, size_t bytes, int64_t n) {
    rt::TensorView t;
    t.dtype_name = dtype;
    t.shape = {2, n / 2};
    t.data = static_cast<const uint8_t *>(p);
    t.bytes = bytes;
    return t;
  };
  rt::writeSafetensors(dir / "t.safetensors", {{"a", view("F32", f32.data(), 24, 6)},
                                               {"b", view("F16", f16.data(), 12, 6)},
                                               {"c", view("BF16", bf16.data(), 12, 6)}});
  rt::Checkpoint ck(dir / "t.safetensors");
  rt::ModelMeta meta;
  rt::HostTensor a = rt::readTensorAsFloat(ck, "a", meta);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(floats(a), f32);
  rt::HostTensor b = rt::readTensorAsFloat(ck, "b", meta);
  std::vector<float> wantB = {1.0f, -2.0f, 0.0f, 65504.0f, std::ldexp(1.0f, -24), -INFINITY};
  EXPECT_EQ(floats(b), wantB);
  rt::HostTensor c = rt::readTensorAsFloat(ck, "c", meta);
  std::vector<float> wantC = {1.0f, -2.5f, -0.0f, 65280.0f, std::ldexp(1.0f, -133), -INFINITY};
  EXPECT_EQ(floats(c), wantC);
  expectWeightError([&] { rt::readTensorAsFloat(ck, "zzz", meta); }, {"zzz"}, "missing");
}

TEST(Conversions, F16KnownBitPatterns) {
  EXPECT_EQ(rt::f16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(rt::f16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(rt::f16ToFloat(0x3800), 0.5f);
  EXPECT_EQ(rt::f16ToFloat(0x3e00), 1.5f);
  EXPECT_EQ(rt::f16ToFloat(0x7bff), 65504.0f);              // largest normal
  EXPECT_EQ(rt::f16ToFloat(0x0400), std::ldexp(1.0f, -14)); // smallest normal
  EXPECT_EQ(rt::f16ToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(rt::f16ToFloat(0x0200), std::ldexp(1.0f, -15));
  EXPECT_EQ(rt::f16ToFloat(0x03ff), std::ldexp(1023.0f, -24)); // largest subnormal
  EXPECT_EQ(rt::f16ToFloat(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(rt::f16ToFloat(0x3555), 1365.0f / 4096.0f);
  EXPECT_EQ(rt::f16ToFloat(0x0000), 0.0f);
  EXPECT_FALSE(std::signbit(rt::f16ToFloat(0x0000)));
  EXPECT_EQ(rt::f16ToFloat(0x8000), 0.0f);
  EXPECT_TRUE(std::signbit(rt::f16ToFloat(0x8000)));
  EXPECT_EQ(rt::f16ToFloat(0x7c00), INFINITY);
  EXPECT_EQ(rt::f16ToFloat(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(rt::f16ToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(rt::f16ToFloat(0x7c01)));
  EXPECT_TRUE(std::isnan(rt::f16ToFloat(0xfe00)));
}

TEST(Conversions, F16EveryFiniteValueMatchesItsDefinition) {
  // value = (-1)^s * 2^(e-15) * (1 + m/1024) for normals, 2^-14 * m/1024 for subnormals.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 31)
      continue;
    double v = e == 0 ? std::ldexp((double)m, -24) : std::ldexp(1.0 + m / 1024.0, (int)e - 15);
    if (h & 0x8000)
      v = -v;
    ASSERT_EQ(rt::f16ToFloat((uint16_t)h), (float)v) << std::hex << h;
  }
}

TEST(Conversions, Bf16RoundTripsEveryNonNanPattern) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = rt::bf16ToFloat((uint16_t)b);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(rt::bf16ToFloat(rt::floatToBf16(f)))) << std::hex << b;
      continue;
    }
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    ASSERT_EQ(bits, b << 16) << "bf16 is the top half of an f32";
    ASSERT_EQ(rt::floatToBf16(f), b) << std::hex << b;
  }
}

TEST(Conversions, FloatToBf16RoundsToNearestEven) {
  auto fromBits = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  auto bitsOf = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  };
  EXPECT_EQ(rt::floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(rt::floatToBf16(fromBits(0x3f808000)), 0x3f80); // tie, even stays
  EXPECT_EQ(rt::floatToBf16(fromBits(0x3f818000)), 0x3f82); // tie, odd rounds up
  EXPECT_EQ(rt::floatToBf16(fromBits(0x3f808001)), 0x3f81); // above the tie
  EXPECT_EQ(rt::floatToBf16(fromBits(0x3f807fff)), 0x3f80); // below the tie
  EXPECT_EQ(rt::floatToBf16(fromBits(0xbf808001)), 0xbf81); // sign is kept
  EXPECT_EQ(rt::floatToBf16(INFINITY), 0x7f80);
  EXPECT_EQ(rt::floatToBf16(-INFINITY), 0xff80);
  EXPECT_EQ(rt::floatToBf16(std::numeric_limits<float>::max()), 0x7f80); // rounds up to inf
  EXPECT_TRUE(std::isnan(rt::bf16ToFloat(rt::floatToBf16(NAN))));
  EXPECT_TRUE(std::isnan(rt::bf16ToFloat(rt::floatToBf16(fromBits(0x7f800001)))))
      << "a NaN whose payload sits in the low half must not become inf";
  // Any float: the result is one of the two neighbouring bf16 values, the nearer one.
  std::mt19937 rng(3);
  for (int i = 0; i < 100000; ++i) {
    float f = fromBits(rng());
    if (!std::isfinite(f) || std::fabs(f) > 3e38f)
      continue;
    uint16_t b = rt::floatToBf16(f);
    float r = rt::bf16ToFloat(b);
    float lo = fromBits(bitsOf(f) & 0xffff0000u),
          hi = rt::bf16ToFloat((uint16_t)((bitsOf(f) >> 16) + 1));
    ASSERT_TRUE(r == lo || r == hi) << f;
    ASSERT_LE(std::fabs((double)r - f), std::fabs((double)(r == lo ? hi : lo) - f)) << f;
  }
}

TEST_F(Weights, TruncatedFilesAreRejectedNamingTheFile) {
  std::string bytes = readFile(fixtureDir("llama") + "/model.safetensors");
  uint64_t headerLen;
  std::memcpy(&headerLen, bytes.data(), 8);
  size_t dataStart = 8 + headerLen;
  std::vector<size_t> cuts = {0,
                              1,
                              4,
                              7,
                              8,
                              9,
                              8 + headerLen / 3,
                              8 + headerLen / 2,
                              dataStart - 1,
                              dataStart,
                              dataStart + 1,
                              dataStart + 1000,
                              bytes.size() / 2,
                              bytes.size() - 2,
                              bytes.size() - 1};
  for (size_t cut : cuts) {
    TempDir dir;
    std::string path = dir / "model.safetensors";
    writeBytes(path, bytes.substr(0, cut));
    std::string what = "cut at " + std::to_string(cut);
    std::vector<std::string> words = {path};
    if (cut >= dataStart)
      words.push_back("tensor '"); // the header is intact: the error names a tensor
    expectWeightError([&] { rt::Checkpoint ck(path); }, words, what);
    expectWeightError([&] { rt::WeightStore::load(*artefact_, {dir.str(), 0}); }, {path}, what);
  }
}

TEST_F(Weights, BadHeadersAreRejected) {
  struct Case {
    std::string name, bytes;
    std::vector<std::string> words;
  };
  std::string tail(64, 'x');
  std::vector<Case> cases = {
      {"garbage JSON", rawHeader("{not json!", 10) + tail, {"header"}},
      {"header longer than the file", rawHeader("{}", 1000) + tail, {"header", "exceeds"}},
      {"huge header length", rawHeader("{}", ~0ull) + tail, {"header"}},
      {"header that is an array", rawHeader("[1, 2, 3]", 9) + tail, {"header"}},
      {"entry without offsets",
       rawHeader(R"({"w": {"dtype": "F32", "shape": [2]}})", 37) + tail,
       {"'w'"}},
      {"offsets past the end",
       rawHeader(R"({"w": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]}})", 64) + tail,
       {"'w'", "end"}},
      {"offsets backwards",
       rawHeader(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 62) + tail,
       {"'w'"}},
      {"size disagrees with shape",
       rawHeader(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 62) + tail,
       {"'w'", "bytes"}},
      {"negative dimension",
       rawHeader(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 63) + tail,
       {"'w'", "negative"}},
      {"non-numeric shape",
       rawHeader(R"({"w": {"dtype": "F32", "shape": ["a"], "data_offsets": [0, 4]}})", 64) + tail,
       {"'w'"}},
      {"dtype not a string",
       rawHeader(R"({"w": {"dtype": 5, "shape": [1], "data_offsets": [0, 4]}})", 58) + tail,
       {"'w'"}},
  };
  for (Case &c : cases) {
    // Fix up the declared lengths of the JSON cases that are meant to be consistent.
    if (c.name != "header longer than the file" && c.name != "huge header length") {
      size_t jsonLen = c.bytes.size() - 8 - tail.size();
      uint64_t len = jsonLen;
      std::memcpy(c.bytes.data(), &len, 8);
    }
    TempDir dir;
    std::string path = dir / "model.safetensors";
    writeBytes(path, c.bytes);
    std::vector<std::string> words = c.words;
    words.push_back(path);
    expectWeightError([&] { rt::Checkpoint ck(path); }, words, c.name);
  }
}

// Crafted headers: each is refused naming the tensor and what is wrong, before any product of
// dimensions or offsets can wrap (a wrapped numel() could match the byte count).
TEST_F(Weights, HostileHeadersAreRejected) {
  struct Case {
    std::string name, header;
    std::vector<std::string> words;
  };
  std::string tail(64, 'x');
  std::vector<Case> cases = {
      // 2^32 * 2^32 wraps to 0 in 64 bits, which matched the 0 bytes of an empty range.
      {"wrapping shape", R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})",
       {"'w'", "elements"}},
      {"wrapping shape to the byte count",
       R"({"w": {"dtype": "U8", "shape": [4294967297, 4294967297, 4294967296], "data_offsets": [0, 0]}})",
       {"'w'", "elements"}},
      {"one dimension past the bound", R"({"w": {"dtype": "U8", "shape": [1099511627777], "data_offsets": [0, 1]}})",
       {"'w'", "elements"}},
      {"huge float dimension", R"({"w": {"dtype": "F32", "shape": [1e30], "data_offsets": [0, 4]}})",
       {"'w'", "dimension", "integers"}},
      {"fractional dimension", R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})",
       {"'w'", "2.5"}},
      {"negative dimension", R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})",
       {"'w'", "-1"}},
      {"dimension past int64", R"({"w": {"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 4]}})",
       {"'w'", "elements"}},
      {"shape not a list", R"({"w": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}})", {"'w'", "shape"}},
      {"float offsets", R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [0.5, 4.5]}})",
       {"'w'", "data_offsets"}},
      {"negative offset", R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [-4, 0]}})",
       {"'w'", "data_offsets"}},
      {"end past the data", R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [18446744073709551612, 18446744073709551615]}})",
       {"'w'", "end of the file"}},
      {"three offsets", R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4, 8]}})", {"'w'", "data_offsets"}},
      {"unknown dtype", R"({"w": {"dtype": "F12", "shape": [4], "data_offsets": [0, 4]}})",
       {"'w'", "unknown dtype 'F12'"}},
      {"duplicate name",
       R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "w": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})",
       {"'w'", "twice"}},
  };
  for (const Case &c : cases) {
    TempDir dir;
    std::string path = dir / "model.safetensors";
    writeBytes(path, rawHeader(c.header, c.header.size()) + tail);
    std::vector<std::string> words = c.words;
    words.push_back(path);
    expectWeightError([&] { rt::Checkpoint ck(path); }, words, c.name);
  }
  // The header length is checked against the file, and against safetensors' 100 MB bound.
  TempDir dir;
  writeBytes(dir / "long.safetensors", rawHeader("{}", 200'000'000) + tail);
  expectWeightError([&] { rt::Checkpoint ck(dir / "long.safetensors"); }, {"exceeds the file of 74 bytes"},
                    "header past the file");
  writeBytes(dir / "big.safetensors", rawHeader("{}", 150'000'000) + tail);
  fs::resize_file(dir / "big.safetensors", 160'000'000); // sparse: no disk written
  expectWeightError([&] { rt::Checkpoint ck(dir / "big.safetensors"); }, {"150000000", "100000000"}, "huge header");
  // A file that is not safetensors at all (the index, given as a .safetensors) says so.
  writeBytes(dir / "index.safetensors", R"({"weight_map": {"a": "b.safetensors"}})");
  expectWeightError([&] { rt::Checkpoint ck(dir / "index.safetensors"); }, {"safetensors file?"}, "JSON as weights");
}

// The config.json beside the weights must be the compiled model's on every key it read.
TEST(CheckpointConfig, ValuesCompareAsTransformersReadsThem) {
  auto same = [](const std::string &a, const std::string &b) {
    return rt::sameConfigValue(parsePythonJson(a), parsePythonJson(b));
  };
  EXPECT_TRUE(same("1e-5", "1e-05"));
  EXPECT_TRUE(same("2", "2.0"));
  EXPECT_TRUE(same("[1, 2.0]", "[1.0, 2]"));
  EXPECT_TRUE(same(R"({"a": 1, "b": null})", R"({"a": 1.0})"));
  EXPECT_TRUE(same("[0.0, Infinity]", R"([0, {"__float__": "Infinity"}])"));
  // Beyond double range reads as Infinity, as in Python and in the front end (one reader).
  EXPECT_TRUE(same("[0.0, 1e400]", "[0, Infinity]"));
  EXPECT_TRUE(same("-1e400", "-Infinity"));
  EXPECT_TRUE(same(R"("NaN")", R"("NaN")")); // a string, not the float
  EXPECT_FALSE(same(R"("NaN")", "NaN"));
  EXPECT_FALSE(same("Infinity", "-Infinity"));
  EXPECT_FALSE(same("1e-5", "1e-6"));
  EXPECT_FALSE(same("true", "1"));
  EXPECT_FALSE(same("null", "false"));
  EXPECT_FALSE(same(R"("llama")", R"("mistral")"));
  EXPECT_FALSE(same("[1, 2]", "[1, 2, 3]"));
  EXPECT_FALSE(same(R"({"a": 1})", R"({"a": 1, "b": 2})"));
  EXPECT_FALSE(same("9007199254740993", "9007199254740992")); // equal as doubles, not as integers
}

TEST_F(Weights, AnotherModelsCheckpointIsRefusedNamingTheKey) {
  const auto &keys = artefact_->config_keys;
  auto listed = [&](const char *k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  ASSERT_FALSE(keys.empty());
  EXPECT_EQ(keys[0], "model_type");
  EXPECT_TRUE(listed("rms_norm_eps") && listed("rope_parameters") && listed("hidden_size"));
  EXPECT_FALSE(listed("transformers_version") || listed("initializer_range"));

  std::string config = readFile(fixtureDir("llama") + "/config.json");
  auto edited = [&](const std::string &from, const std::string &to) {
    std::string c = config;
    size_t at = c.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? c : c.replace(at, from.size(), to);
  };
  TempDir dir;
  fs::create_symlink(fixtureDir("llama") + "/model.safetensors", dir / "model.safetensors");
  auto loadWith = [&](const std::string &text, const std::string &path) {
    writeBytes(dir / "config.json", text);
    rt::WeightStore::load(*artefact_, {path, 0});
  };
  // Same shapes, another model: mistral's config beside llama's tensors.
  for (const std::string &path : {dir.str(), dir / "model.safetensors", dir / "config.json"})
    expectWeightError([&] { loadWith(readFile(fixtureDir("mistral") + "/config.json"), path); },
                      {dir / "config.json", "\"model_type\": \"mistral\" vs \"llama\""}, "mistral's config via " + path);
  expectWeightError([&] { loadWith(edited("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 1e-06"), dir.str()); },
                    {"\"rms_norm_eps\": 1e-06 vs 1e-05"}, "another eps");
  expectWeightError([&] { loadWith(edited("\"rope_type\": \"llama3\"", "\"rope_type\": \"default\""), dir.str()); },
                    {"\"rope_parameters\""}, "another rope");
  expectWeightError([&] { loadWith(edited("\"tie_word_embeddings\": false,", ""), dir.str()); },
                    {"\"tie_word_embeddings\": null vs false"}, "a key removed");
  expectWeightError([&] { loadWith("{\"model_type\": ", dir.str()); }, {dir / "config.json", "JSON"}, "broken JSON");
  // Spelled differently, or differing only where nothing is read: the same model.
  EXPECT_NO_THROW(loadWith(edited("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 1e-5"), dir.str()));
  EXPECT_NO_THROW(loadWith(edited("\"hidden_size\": 64", "\"hidden_size\": 64.0"), dir.str()));
  EXPECT_NO_THROW(loadWith(edited("\"transformers_version\": \"5.23.0\"", "\"transformers_version\": \"4.0\""), dir.str()));
  EXPECT_NO_THROW(loadWith(edited("\"initializer_range\": 0.02", "\"initializer_range\": 1"), dir.str()));
  // Without a config.json beside the weights nothing is compared.
  fs::remove(dir / "config.json");
  EXPECT_NO_THROW(rt::WeightStore::load(*artefact_, {dir.str(), 0}));
}

// A rejected file must not stay mapped: a process that retries loads (the embedding API, a
// fuzzer) would run out of mappings. Found by test/fuzz/safetensors_fuzz.
TEST_F(Weights, RejectedFilesAreUnmapped) {
  TempDir dir;
  std::string path = dir / "model.safetensors";
  writeBytes(path, rawHeader("{not json!", 10) + std::string(64, 'x'));
  for (int i = 0; i < 3; ++i)
    EXPECT_THROW(rt::SafetensorsFile f(path), rt::WeightError);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    EXPECT_EQ(line.find(path), std::string::npos) << "still mapped: " << line;
}

TEST_F(Weights, MissingCheckpointsAreNamed) {
  expectWeightError([] { rt::Checkpoint ck("/nonexistent/cbc/ckpt"); }, {"/nonexistent/cbc/ckpt"},
                    "missing path");
  expectWeightError(
      [&] {
        rt::WeightStore::load(*artefact_, {"/nonexistent/cbc/ckpt", 0});
      },
      {"/nonexistent/cbc/ckpt"}, "missing dir via the store");
  TempDir empty;
  expectWeightError([&] { rt::Checkpoint ck(empty.str()); }, {empty.str(), "model.safetensors"},
                    "empty dir");
  // An index naming a shard that is not there.
  TempDir dir;
  writeBytes(dir / "model.safetensors.index.json",
             R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors"}})");
  expectWeightError([&] { rt::Checkpoint ck(dir.str()); }, {"model-00001-of-00002.safetensors"},
                    "missing shard");
  // A malformed index.
  TempDir bad;
  writeBytes(bad / "model.safetensors.index.json", "{\"weight_map\": [");
  expectWeightError([&] { rt::Checkpoint ck(bad.str()); }, {"model.safetensors.index.json"},
                    "malformed index");
  TempDir noMap;
  writeBytes(noMap / "model.safetensors.index.json", "{\"metadata\": {}}");
  expectWeightError([&] { rt::Checkpoint ck(noMap.str()); }, {"weight_map"}, "index without map");
  // Engine creation reports the same error.
  rt::EngineOptions o;
  o.backend = "cpu";
  EXPECT_THROW(rt::Engine::create(*artefact_, {"/nonexistent/cbc/ckpt", 0}, o), rt::WeightError);
}

TEST_F(Weights, ShardedCheckpointMatchesTheSingleFile) {
  TempDir dir;
  Tensors a, b;
  for (size_t i = 0; i < tensors_.size(); ++i)
    (i % 2 ? a : b).push_back(tensors_[i]);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  rt::writeSafetensors(dir / "model-00001-of-00002.safetensors", a);
  rt::writeSafetensors(dir / "model-00002-of-00002.safetensors", b);
  std::string index = R"({"metadata": {"total_size": 0}, "weight_map": {)";
  bool first = true;
  for (auto *part : {&a, &b})
    for (auto &[n, t] : *part) {
      index +=
          std::string(first ? "" : ", ") + "\"" + n + "\": \"" +
          (part == &a ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors") +
          "\"";
      first = false;
    }
  index += "}}";
  writeBytes(dir / "model.safetensors.index.json", index);

  rt::Checkpoint ck(dir.str());
  EXPECT_EQ(ck.names().size(), tensors_.size());

  auto single = run({fixtureDir("llama"), 0});
  // The directory, its index, and the config.json beside the shards name the same checkpoint.
  fs::copy_file(fixtureDir("llama") + "/config.json", dir / "config.json");
  for (const std::string &path : {dir.str(), dir / "model.safetensors.index.json", dir / "config.json"}) {
    EXPECT_EQ(rt::Checkpoint(path).names().size(), tensors_.size()) << path;
    auto sharded = run({path, 0});
    ASSERT_EQ(single.size(), sharded.size()) << path;
    for (size_t i = 0; i < single.size(); ++i) {
      EXPECT_EQ(single[i].tokens, sharded[i].tokens) << path;
      EXPECT_EQ(single[i].logits, sharded[i].logits) << path;
    }
  }
  // The fixture's config.json names its single model.safetensors.
  EXPECT_EQ(run({fixtureDir("llama") + "/config.json", 0})[0].tokens, single[0].tokens);
  // A tensor in two shards is ambiguous.
  TempDir twice;
  rt::writeSafetensors(twice / "a.safetensors", a);
  rt::writeSafetensors(twice / "b.safetensors", {a[0]});
  writeBytes(twice / "model.safetensors.index.json",
             R"({"weight_map": {"x": "a.safetensors", "y": "b.safetensors"}})");
  expectWeightError([&] { rt::Checkpoint ck(twice.str()); }, {"'" + a[0].first + "'", "both"}, "tensor in two shards");
  // A JSON file with neither a weight_map nor weights beside it says where it looked.
  TempDir lone;
  writeBytes(lone / "config.json", "{}");
  expectWeightError([&] { rt::Checkpoint ck(lone / "config.json"); },
                    {lone / "config.json", "weight_map", "model.safetensors"}, "config.json without weights");
  // A tensor missing from every shard is still named.
  TempDir partial;
  rt::writeSafetensors(partial / "model-00001-of-00002.safetensors", a);
  writeBytes(partial / "model.safetensors.index.json",
             R"({"weight_map": {"x": "model-00001-of-00002.safetensors"}})");
  try {
    rt::WeightStore::load(*artefact_, {partial.str(), 0});
    ADD_FAILURE() << "a tensor in no shard must be an error";
  } catch (const rt::WeightError &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
    bool named = false;
    for (auto &[n, t] : b)
      named |= msg.find("'" + n + "'") != std::string::npos;
    EXPECT_TRUE(named) << "'" << msg << "' names none of the absent tensors";
  }
}

TEST_F(Weights, RandomWeightsDependOnlyOnTheSeed) {
  rt::WeightStore a = rt::WeightStore::load(*artefact_, {"", 7});
  rt::WeightStore b = rt::WeightStore::load(*artefact_, {"", 7});
  rt::WeightStore c = rt::WeightStore::load(*artefact_, {"", 8});
  ASSERT_EQ(a.size(), artefact_->weights.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const auto &w = artefact_->weights[i];
    EXPECT_EQ(a.get((int)i).shape(), w.shape) << w.name;
    EXPECT_EQ(floats(a.get((int)i)), floats(b.get((int)i))) << w.name;
    EXPECT_NE(floats(a.get((int)i)), floats(c.get((int)i))) << w.name;
    for (float v : a.get((int)i).f32())
      ASSERT_TRUE(std::isfinite(v)) << w.name;
  }
  // Different weights of one store differ from each other, too.
  EXPECT_NE(floats(a.get(0)), floats(a.get((int)a.size() - 1)));
  // And they produce the same tokens twice.
  auto r1 = run({"", 7}), r2 = run({"", 7}), r3 = run({"", 8});
  EXPECT_EQ(r1[0].logits, r2[0].logits);
  EXPECT_NE(r1[0].logits, r3[0].logits);
}

// OLMo-Hybrid checkpoints spell two layer norms two ways: released checkpoints and
// save_pretrained write OLMo-core's attention_layer_norm / feedforward_layer_norm (the fixture's
// spelling, the artefact's), transformers holds them as input_layernorm /
// post_attention_layernorm in memory. The artefact carries the pairs as weight aliases and the
// loader takes whichever spelling the checkpoint has, per tensor.
class OlmoHybridWeights : public FixtureWeights<OlmoHybridWeights> {
public:
  static constexpr const char *kFamily = "olmo_hybrid";

protected:

  // The fixture's tensors with the first occurrence of `from` in each name replaced by `to`, in
  // the layers `layers` selects; returns how many were renamed.
  int rename(Tensors &ts, const std::string &from, const std::string &to,
             const std::function<bool(int)> &layers = [](int) { return true; }) {
    int renamed = 0;
    for (auto &[n, t] : ts) {
      size_t at = n.find(from);
      if (at == std::string::npos)
        continue;
      int layer = std::stoi(n.substr(std::string("model.layers.").size()));
      if (!layers(layer))
        continue;
      n = n.substr(0, at) + to + n.substr(at + from.size());
      ++renamed;
    }
    return renamed;
  }

  int index(const std::string &programName) const {
    for (size_t i = 0; i < artefact_->weights.size(); ++i)
      if (artefact_->weights[i].name == programName)
        return (int)i;
    throw std::runtime_error("no program weight " + programName);
  }

  // Every program weight loaded from `dir` is the fixture's, value for value.
  void expectSameAsFixture(const rt::WeightStore &got, const std::string &what) {
    rt::WeightStore ref = rt::WeightStore::load(*artefact_, {fixtureDir("olmo_hybrid"), 0});
    ASSERT_EQ(got.size(), ref.size()) << what;
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(got.get((int)i).shape(), ref.get((int)i).shape()) << what << ": " << artefact_->weights[i].name;
      EXPECT_EQ(floats(got.get((int)i)), floats(ref.get((int)i))) << what << ": " << artefact_->weights[i].name;
    }
  }

  std::vector<rt::RequestOutput> run(const rt::WeightSource &w) {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    rt::SamplingParams sp;
    sp.max_new_tokens = 4;
    sp.ignore_eos = true;
    sp.keep_logits = true;
    return serve(*artefact_, w, o, {{{1, 5, 9, 77, 3}, sp}}).outputs;
  }
};

TEST_F(OlmoHybridWeights, ArtefactNamesOlmoCoreNormsWithTransformersAliases) {
  using Pair = std::pair<std::string, std::string>;
  EXPECT_EQ(artefact_->meta.weight_aliases,
            (std::vector<Pair>{{".attention_layer_norm.", ".input_layernorm."},
                               {".feedforward_layer_norm.", ".post_attention_layernorm."}}));
  // The fixture is in the artefact's spelling, and the two norms of a layer differ, so a loader
  // that swapped or merged them would be caught below.
  rt::Checkpoint ck(fixtureDir("olmo_hybrid"));
  EXPECT_TRUE(ck.has("model.layers.0.attention_layer_norm.weight"));
  EXPECT_TRUE(ck.has("model.layers.2.feedforward_layer_norm.weight"));
  EXPECT_FALSE(ck.has("model.layers.0.input_layernorm.weight"));
  EXPECT_FALSE(ck.has("model.layers.2.post_attention_layernorm.weight"));
  rt::WeightStore ref = rt::WeightStore::load(*artefact_, {fixtureDir("olmo_hybrid"), 0});
  EXPECT_NE(floats(ref.get(index("layers.0.attention_layer_norm"))),
            floats(ref.get(index("layers.0.feedforward_layer_norm"))));
  EXPECT_NE(floats(ref.get(index("layers.2.feedforward_layer_norm"))),
            floats(ref.get(index("layers.2.post_feedforward_layernorm"))));
}

TEST_F(OlmoHybridWeights, TransformersNormNamesLoadTheSameValues) {
  // Linear layers 0, 1 and 3 have both norms; attention layer 2 has feedforward_layer_norm only
  // (its post-norm on the attention output: post_attention_layernorm in transformers).
  TempDir dir;
  Tensors ts = tensors_;
  EXPECT_EQ(rename(ts, ".attention_layer_norm.", ".input_layernorm."), 3);
  EXPECT_EQ(rename(ts, ".feedforward_layer_norm.", ".post_attention_layernorm."), 4);
  rt::writeSafetensors(dir / "model.safetensors", ts);
  rt::Checkpoint ck(dir.str());
  EXPECT_TRUE(ck.has("model.layers.0.input_layernorm.weight"));
  EXPECT_TRUE(ck.has("model.layers.2.post_attention_layernorm.weight"));
  EXPECT_FALSE(ck.has("model.layers.0.attention_layer_norm.weight"));
  EXPECT_FALSE(ck.has("model.layers.2.feedforward_layer_norm.weight"));
  // post_feedforward_layernorm is no alias: it keeps its name.
  EXPECT_TRUE(ck.has("model.layers.2.post_feedforward_layernorm.weight"));
  expectSameAsFixture(rt::WeightStore::load(*artefact_, {dir.str(), 0}), "transformers names");

  // And the same tokens and logits.
  auto a = run({fixtureDir("olmo_hybrid"), 0}), b = run({dir.str(), 0});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].tokens, b[0].tokens);
  EXPECT_EQ(a[0].logits, b[0].logits);
}

TEST_F(OlmoHybridWeights, SpellingsMayMixAcrossLayers) {
  // Each tensor resolves on its own: odd layers in transformers' spelling, even ones in
  // OLMo-core's.
  TempDir dir;
  Tensors ts = tensors_;
  auto odd = [](int l) { return l % 2 == 1; };
  EXPECT_EQ(rename(ts, ".attention_layer_norm.", ".input_layernorm.", odd), 2);
  EXPECT_EQ(rename(ts, ".feedforward_layer_norm.", ".post_attention_layernorm.", odd), 2);
  rt::writeSafetensors(dir / "model.safetensors", ts);
  expectSameAsFixture(rt::WeightStore::load(*artefact_, {dir.str(), 0}), "mixed names");
}

TEST_F(OlmoHybridWeights, ArtefactSpellingWinsWhenBothArePresent) {
  // A checkpoint with both spellings of layer 0's input norm: the artefact's name is taken, the
  // alias only when it is absent.
  TempDir dir;
  Tensors ts = tensors_;
  rt::TensorView other = tensor(ts, "model.layers.0.feedforward_layer_norm.weight");
  ts.emplace_back("model.layers.0.input_layernorm.weight", other);
  rt::writeSafetensors(dir / "model.safetensors", ts);
  expectSameAsFixture(rt::WeightStore::load(*artefact_, {dir.str(), 0}), "both names");
}

TEST_F(OlmoHybridWeights, NeitherSpellingIsNamed) {
  // Without either spelling the error names the tensor the artefact asks for.
  for (std::string name : {"model.layers.0.attention_layer_norm.weight",
                           "model.layers.3.feedforward_layer_norm.weight",
                           "model.layers.2.feedforward_layer_norm.weight"}) {
    TempDir dir;
    Tensors ts;
    for (auto &[n, t] : tensors_)
      if (n != name)
        ts.emplace_back(n, t);
    ASSERT_EQ(ts.size() + 1, tensors_.size()) << name;
    expectWeightError([&] { load(ts, dir); }, {"'" + name + "'", "missing"}, name);
  }
  // Transformers' spelling of another layer's norm does not stand in for this one.
  TempDir dir;
  Tensors ts;
  for (auto &[n, t] : tensors_)
    if (n != "model.layers.1.attention_layer_norm.weight")
      ts.emplace_back(n, t);
  ts.emplace_back("model.layers.0.input_layernorm.weight",
                  tensor(tensors_, "model.layers.0.attention_layer_norm.weight"));
  expectWeightError([&] { load(ts, dir); }, {"'model.layers.1.attention_layer_norm.weight'", "missing"},
                    "layer 0's alias for layer 1");
}

// gpt-oss's experts as released: MXFP4 blocks and scales, dequantised while loading because
// the front end marked the weights so (the runtime knows no naming convention).
class Mxfp4Weights : public FixtureWeights<Mxfp4Weights> {
public:
  static constexpr const char *kFamily = "gpt_oss_mxfp4";

protected:
  const rt::WeightEntry &entry(const std::string &programName) const {
    for (const rt::WeightEntry &w : artefact_->weights)
      if (w.name == programName)
        return w;
    throw std::runtime_error("no program weight " + programName);
  }

  // The fixture with tensor `name` dropped, or stood in for by `standIn`.
  Tensors without(const std::string &name, const rt::TensorView *standIn = nullptr) const {
    Tensors ts;
    for (const auto &[n, t] : tensors_)
      if (n != name)
        ts.emplace_back(n, t);
    if (standIn)
      ts.emplace_back(name, *standIn);
    return ts;
  }
};

constexpr const char *kGateUpBlocks = "model.layers.0.mlp.experts.gate_up_proj_blocks";
constexpr const char *kGateUpScales = "model.layers.0.mlp.experts.gate_up_proj_scales";

TEST_F(Mxfp4Weights, TheArtefactAsksForBlocksAndScales) {
  const rt::WeightEntry &w = entry("layers.0.moe.gate_up");
  EXPECT_TRUE(w.mxfp4);
  EXPECT_TRUE(w.transpose);
  ASSERT_EQ(w.parts.size(), 1u);
  EXPECT_EQ(w.parts[0], (std::vector<std::string>{kGateUpBlocks, kGateUpScales}));
  EXPECT_FALSE(entry("layers.0.moe.gate_up_bias").mxfp4);
  rt::Checkpoint ck(fixtureDir(kFamily));
  EXPECT_FALSE(ck.has("model.layers.0.mlp.experts.gate_up_proj"));
  EXPECT_EQ(ck.get(kGateUpBlocks).dtype, rt::StDType::U8);
}

TEST_F(Mxfp4Weights, ElementsDecodeFromTheirNibbleAndScale) {
  // Program weight [E, out, in]: element (e, r, c) is FP4 value nibble c % 2 of byte
  // blocks[e, r, c / 32, (c % 32) / 2], times 2^(scales[e, r, c / 32] - 127).
  static const float kFp4[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  rt::WeightStore s = rt::WeightStore::load(*artefact_, {fixtureDir(kFamily), 0});
  int index = (int)(&entry("layers.0.moe.gate_up") - artefact_->weights.data());
  const rt::HostTensor &got = s.get(index);
  rt::Checkpoint ck(fixtureDir(kFamily));
  const rt::TensorView &blocks = ck.get(kGateUpBlocks), &scales = ck.get(kGateUpScales);
  int64_t E = blocks.shape[0], R = blocks.shape[1], G = blocks.shape[2], C = G * 32;
  ASSERT_EQ(got.shape(), (std::vector<int64_t>{E, R, C}));
  int nonzero = 0;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        uint8_t byte = blocks.data[((e * R + r) * G + c / 32) * 16 + (c % 32) / 2];
        int exp = (int)scales.data[(e * R + r) * G + c / 32] - 127;
        float want = std::ldexp(kFp4[c % 2 ? byte >> 4 : byte & 15], exp);
        ASSERT_EQ(got.f32()[(e * R + r) * C + c], want) << e << "," << r << "," << c;
        nonzero += want != 0;
      }
  EXPECT_GT(nonzero, E * R * C / 2);
}

TEST_F(Mxfp4Weights, MissingBlocksOrScalesAreNamed) {
  for (std::string name : {kGateUpBlocks, kGateUpScales, "model.layers.1.mlp.experts.down_proj_scales"}) {
    TempDir dir;
    expectWeightError([&] { load(without(name), dir); }, {"'" + name + "'", "missing"}, name);
  }
}

TEST_F(Mxfp4Weights, MalformedBlocksAreRejected) {
  // Scales where the blocks belong (three dimensions), and bf16 where bytes belong.
  const rt::TensorView &scales = tensor(tensors_, kGateUpScales);
  const rt::TensorView &bias = tensor(tensors_, "model.layers.0.mlp.experts.gate_up_proj_bias");
  for (const rt::TensorView *standIn : {&scales, &bias}) {
    TempDir dir;
    expectWeightError([&] { load(without(kGateUpBlocks, standIn), dir); },
                      {kGateUpBlocks, "MXFP4 blocks/scales have unexpected shapes or dtypes"},
                      standIn->dtype_name);
  }
}

// e4m3fn by an independent route: the float32 bit pattern a normal code maps to (sign, exponent
// rebiased from 7 to 127, mantissa in the top three bits), subnormals as m/8 * 2^-6.
TEST(Fp8, EveryE4m3CodeDecodesByTheFormula) {
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    uint32_t sign = (uint32_t)(c >> 7), exp = (uint32_t)(c >> 3) & 15, mant = (uint32_t)c & 7;
    float got = rt::fp8E4m3ToFloat((uint8_t)c);
    if (exp == 15 && mant == 7) {
      EXPECT_TRUE(std::isnan(got)) << c;
      ++nans;
      continue;
    }
    float want;
    if (exp == 0) {
      want = (float)(mant / 512.0) * (sign ? -1.0f : 1.0f);
    } else {
      uint32_t bits = sign << 31 | (exp - 7 + 127) << 23 | mant << 20;
      std::memcpy(&want, &bits, 4);
    }
    EXPECT_EQ(got, want) << c;
    EXPECT_EQ(std::signbit(got), sign == 1) << c;
  }
  EXPECT_EQ(nans, 2); // 0x7f and 0xff: e4m3fn has no infinities
  EXPECT_EQ(rt::fp8E4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(rt::fp8E4m3ToFloat(0x77), 240.0f);
  EXPECT_EQ(rt::fp8E4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(rt::fp8E4m3ToFloat(0xc0), -2.0f);
  EXPECT_EQ(rt::fp8E4m3ToFloat(0x08), std::ldexp(1.0f, -6)); // smallest normal
  EXPECT_EQ(rt::fp8E4m3ToFloat(0x07), std::ldexp(7.0f, -9)); // largest subnormal
  EXPECT_EQ(rt::fp8E4m3ToFloat(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  for (int c = 1; c < 0x7f; ++c)
    EXPECT_LT(rt::fp8E4m3ToFloat((uint8_t)(c - 1)), rt::fp8E4m3ToFloat((uint8_t)c)) << c;
}

rt::TensorView fp8View(const std::vector<uint8_t> &codes, std::vector<int64_t> shape) {
  rt::TensorView t;
  t.dtype = rt::StDType::F8E4M3;
  t.dtype_name = "F8_E4M3";
  t.shape = std::move(shape);
  t.data = codes.data();
  t.bytes = codes.size();
  return t;
}

// Blocks that do not divide the tensor: the last row and column of blocks are partial, and a
// leading (expert) dimension has its own grid.
TEST(Fp8, BlocksWithPartialEdges) {
  std::mt19937 rng(7);
  for (auto [shape, bR, bC] : {std::tuple{std::vector<int64_t>{5, 7}, 2, 3},
                               std::tuple{std::vector<int64_t>{2, 9, 10}, 4, 4},
                               std::tuple{std::vector<int64_t>{3, 4}, 8, 8},
                               std::tuple{std::vector<int64_t>{6, 6}, 3, 2}}) {
    int64_t R = shape[shape.size() - 2], C = shape.back(), E = shape.size() == 3 ? shape[0] : 1;
    int64_t SR = (R + bR - 1) / bR, SC = (C + bC - 1) / bC;
    std::vector<uint8_t> codes((size_t)(E * R * C));
    for (uint8_t &c : codes)
      do c = (uint8_t)rng(); while ((c & 0x7f) == 0x7f);
    rt::HostTensor scale(rt::Storage::F32,
                         shape.size() == 3 ? std::vector<int64_t>{E, SR, SC} : std::vector<int64_t>{SR, SC});
    for (int64_t i = 0; i < E * SR * SC; ++i)
      scale.f32()[i] = 0.5f + (float)i * 0.37f;
    rt::HostTensor got = rt::dequantFp8Blocks(fp8View(codes, shape), scale, bR, bC, "w", "w_scale_inv");
    ASSERT_EQ(got.shape(), shape);
    // Walk the grid block by block and check the elements each block covers.
    int64_t seen = 0;
    for (int64_t e = 0; e < E; ++e)
      for (int64_t br = 0; br < SR; ++br)
        for (int64_t bc = 0; bc < SC; ++bc) {
          float s = scale.f32()[(e * SR + br) * SC + bc];
          for (int64_t i = br * bR; i < std::min<int64_t>(R, (br + 1) * bR); ++i)
            for (int64_t j = bc * bC; j < std::min<int64_t>(C, (bc + 1) * bC); ++j, ++seen) {
              int64_t at = (e * R + i) * C + j;
              ASSERT_EQ(got.f32()[at], rt::fp8E4m3ToFloat(codes[at]) * s) << e << "," << i << "," << j;
            }
        }
    EXPECT_EQ(seen, E * R * C);
  }
}

TEST(Fp8, MisShapedScalesAreNamed) {
  std::vector<uint8_t> codes(5 * 7, 0x38);
  auto scales = [](std::vector<int64_t> shape) {
    rt::HostTensor s(rt::Storage::F32, shape);
    for (float &v : s.f32())
      v = 1.0f;
    return s;
  };
  // [5, 7] in 2x3 blocks needs [3, 3]: the divided-down grid, a transposed one, a missing
  // leading dimension are all refused.
  for (std::vector<int64_t> bad : {std::vector<int64_t>{2, 2}, {3, 2}, {3}, {1, 3, 3}, {4, 3}}) {
    expectWeightError([&] { rt::dequantFp8Blocks(fp8View(codes, {5, 7}), scales(bad), 2, 3, "x.weight", "x.weight_scale_inv"); },
                      {"'x.weight_scale_inv'", "'x.weight'", "[5, 7]", "2x3", "needs [3, 3]"}, "scales " + std::to_string(bad.size()));
  }
  expectWeightError([&] { rt::dequantFp8Blocks(fp8View(codes, {35}), scales({1}), 2, 3, "v", "v_scale_inv"); },
                    {"'v'", "at least 2 dimensions"}, "1-D");
}

// llama's fixture with its decoder linears in block-scaled FP8 (40x48 blocks, partial edges).
class Fp8Weights : public FixtureWeights<Fp8Weights> {
public:
  static constexpr const char *kFamily = "llama_fp8";

protected:
  Tensors without(const std::string &name, const rt::TensorView *standIn = nullptr) const {
    Tensors ts;
    for (const auto &[n, t] : tensors_)
      if (n != name)
        ts.emplace_back(n, t);
    if (standIn)
      ts.emplace_back(name, *standIn);
    return ts;
  }
};

constexpr const char *kQProj = "model.layers.0.self_attn.q_proj.weight";
constexpr const char *kQScales = "model.layers.0.self_attn.q_proj.weight_scale_inv";

TEST_F(Fp8Weights, TheArtefactRecordsTheBlockAndTheLinearsDequantise) {
  EXPECT_EQ(artefact_->meta.quantization, "fp8");
  EXPECT_EQ(artefact_->meta.fp8_block_rows, 40);
  EXPECT_EQ(artefact_->meta.fp8_block_cols, 48);
  rt::Checkpoint ck(fixtureDir(kFamily));
  const rt::TensorView &q = ck.get(kQProj), &s = ck.get(kQScales);
  ASSERT_EQ(q.dtype, rt::StDType::F8E4M3);
  ASSERT_EQ(s.dtype, rt::StDType::F32);
  ASSERT_EQ(s.shape, (std::vector<int64_t>{2, 2})); // 64 rows in 40 + 24, 64 columns in 48 + 16
  rt::HostTensor got = rt::readTensorAsFloat(ck, kQProj, artefact_->meta);
  ASSERT_EQ(got.shape(), (std::vector<int64_t>{64, 64}));
  const float *scale = reinterpret_cast<const float *>(s.data);
  int nonzero = 0;
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 64; ++j) {
      float want = rt::fp8E4m3ToFloat(q.data[i * 64 + j]) * scale[(i / 40) * 2 + j / 48];
      ASSERT_EQ(got.f32()[i * 64 + j], want) << i << "," << j;
      nonzero += want != 0;
    }
  EXPECT_GT(nonzero, 64 * 64 / 2);
  // The whole manifest loads; the norms and embeddings are the bf16 tensors as stored.
  rt::WeightStore store = rt::WeightStore::load(*artefact_, {fixtureDir(kFamily), 0});
  EXPECT_EQ(store.size(), artefact_->weights.size());
}

TEST_F(Fp8Weights, MissingScalesAreNamed) {
  for (std::string name : {std::string(kQScales), std::string("model.layers.1.mlp.down_proj.weight_scale_inv")}) {
    TempDir dir;
    std::string weight = name.substr(0, name.size() - std::string("_scale_inv").size());
    expectWeightError([&] { load(without(name), dir); }, {"'" + name + "'", "missing", "'" + weight + "'"}, name);
  }
}

TEST_F(Fp8Weights, MisShapedOrMistypedScalesAreNamed) {
  // gate_proj's [3, 2] grid where q_proj's [2, 2] belongs.
  const rt::TensorView &other = tensor(tensors_, "model.layers.0.mlp.gate_proj.weight_scale_inv");
  TempDir dir;
  expectWeightError([&] { load(without(kQScales, &other), dir); },
                    {"'" + std::string(kQScales) + "'", "[3, 2]", "40x48", "needs [2, 2]"}, "mis-shaped");
  // Scales as bytes (E8M0 exponents, say) are not read as floats.
  std::vector<uint8_t> bytes(4, 127);
  rt::TensorView u8 = tensor(tensors_, kQScales);
  u8.dtype_name = "U8";
  u8.data = bytes.data();
  u8.bytes = bytes.size();
  TempDir dir2;
  expectWeightError([&] { load(without(kQScales, &u8), dir2); }, {"'" + std::string(kQScales) + "'", "U8", "F32"},
                    "U8 scales");
}

TEST_F(Fp8Weights, E5m2IsRefusedByName) {
  Tensors ts = tensors_;
  tensor(ts, kQProj).dtype_name = "F8_E5M2";
  TempDir dir;
  expectWeightError([&] { load(ts, dir); }, {"'" + std::string(kQProj) + "'", "F8_E5M2", "F8_E4M3"}, "e5m2");
}

// The checkpoint's FP8 tensors need the artefact's block size: compiled from a config without
// the quantization_config, the model has none.
TEST_F(Fp8Weights, Fp8TensorsNeedAnFp8Model) {
  const rt::Artefact &plain = committedArtefact("llama");
  ASSERT_EQ(plain.meta.quantization, "");
  // Without a config.json beside them the tensors themselves give it away...
  TempDir dir;
  fs::create_symlink(fixtureDir(kFamily) + "/model.safetensors", dir / "model.safetensors");
  expectWeightError([&] { rt::WeightStore::load(plain, {dir.str(), 0}); },
                    {"F8_E4M3", "without an fp8 quantization_config", "model.layers.0."}, "plain artefact");
  // ...and with the fixture's, the configs differ first.
  expectWeightError([&] { rt::WeightStore::load(plain, {fixtureDir(kFamily), 0}); },
                    {"\"quantization_config\": {\"activation_scheme\"", "vs null"}, "plain artefact, fp8 config");
}

// Tensors the manifest does not name are never read: an MTP layer past the last decoder layer
// (FP8 without its scales, even), an `mtp` or `mtp_*` module, anything else; dump reports their roles.
TEST_F(Fp8Weights, UnusedAndMtpTensorsAreNotRead) {
  Tensors ts = tensors_;
  rt::TensorView orphan = tensor(tensors_, kQProj); // FP8 with no scales beside it
  ts.emplace_back("model.layers.2.self_attn.q_proj.weight", orphan);
  ts.emplace_back("model.layers.2.input_layernorm.weight", tensor(tensors_, "model.layers.0.input_layernorm.weight"));
  rt::TensorView e5m2 = orphan;
  e5m2.dtype_name = "F8_E5M2";
  ts.emplace_back("model.layers.17.mlp.experts.3.up_proj.weight", e5m2);
  std::vector<uint8_t> longs(8 * 4, 0);
  rt::TensorView i64 = orphan;
  i64.dtype_name = "I64";
  i64.shape = {4};
  i64.data = longs.data();
  i64.bytes = longs.size();
  ts.emplace_back("mtp.fc.weight", i64);
  ts.emplace_back("model.mtp_layers.0.eh_proj.weight", i64);
  ts.emplace_back("mtp_dspark.norm.weight", i64);
  ts.emplace_back("model.layers.1.mlp.mtpx.weight", i64);
  ts.emplace_back("model.rotary_emb.inv_freq", i64);
  ts.emplace_back("model.layers.1.self_attn.rotary_emb.inv_freq", i64);
  TempDir dir;
  load(ts, dir);
  rt::Checkpoint ck(dir.str());
  auto roles = rt::checkpointRoles(*artefact_, ck);
  EXPECT_EQ(roles.size(), ts.size());
  using R = rt::TensorRole;
  EXPECT_EQ(roles.at(kQProj), R::Fp8);
  EXPECT_EQ(roles.at(kQScales), R::Fp8Scales);
  EXPECT_EQ(roles.at("model.layers.0.input_layernorm.weight"), R::Read);
  EXPECT_EQ(roles.at("lm_head.weight"), R::Read);
  EXPECT_EQ(roles.at("model.layers.2.self_attn.q_proj.weight"), R::MtpLayer);
  EXPECT_EQ(roles.at("model.layers.2.input_layernorm.weight"), R::MtpLayer);
  EXPECT_EQ(roles.at("model.layers.17.mlp.experts.3.up_proj.weight"), R::MtpLayer);
  EXPECT_EQ(roles.at("mtp.fc.weight"), R::MtpLayer);
  EXPECT_EQ(roles.at("model.mtp_layers.0.eh_proj.weight"), R::MtpLayer); // HY-V4
  EXPECT_EQ(roles.at("mtp_dspark.norm.weight"), R::MtpLayer);            // Mistral Large 4
  EXPECT_EQ(roles.at("model.layers.1.mlp.mtpx.weight"), R::Unused);
  EXPECT_EQ(roles.at("model.rotary_emb.inv_freq"), R::Unused);
  EXPECT_EQ(roles.at("model.layers.1.self_attn.rotary_emb.inv_freq"), R::Unused);
  int fp8 = 0, scales = 0;
  for (const auto &[n, r] : roles) {
    fp8 += r == R::Fp8;
    scales += r == R::Fp8Scales;
  }
  EXPECT_EQ(fp8, 14); // 2 layers x (q, k, v, o, gate, up, down)
  EXPECT_EQ(scales, 14);
}

// bitnet's fixture as BitNet b1.58 checkpoints are published: BitLinear weights of ternary codes
// packed four to a byte, U8 [rows / 4, cols], each with a one-element weight_scale.
class TernaryWeights : public FixtureWeights<TernaryWeights> {
public:
  static constexpr const char *kFamily = "bitnet_ternary";

protected:
  // The tensors with `name` replaced by `standIn`.
  Tensors with(const std::string &name, const rt::TensorView &standIn) const {
    Tensors ts;
    for (const auto &[n, t] : tensors_)
      ts.emplace_back(n, n == name ? standIn : t);
    return ts;
  }
};

constexpr const char *kTernaryO = "model.layers.0.self_attn.o_proj.weight";
constexpr const char *kTernaryOScale = "model.layers.0.self_attn.o_proj.weight_scale";

// Row i * R / 4 + r of the weight is bits 2i..2i+1 of packed row r, less one, over the scale.
TEST_F(TernaryWeights, CodesUnpackByRowBlocksOverTheScale) {
  EXPECT_EQ(artefact_->meta.quantization, "ternary");
  rt::Checkpoint ck(fixtureDir(kFamily));
  const rt::TensorView &q = ck.get(kTernaryO);
  ASSERT_EQ(q.dtype, rt::StDType::U8);
  ASSERT_EQ(q.shape, (std::vector<int64_t>{16, 64}));
  float scale = rt::readTensorAsFloat(ck, kTernaryOScale, artefact_->meta).f32()[0];
  ASSERT_GT(scale, 0.0f);
  EXPECT_NE(scale, 1.0f); // the fixture's scales are powers of two other than 1
  rt::HostTensor got = rt::readTensorAsFloat(ck, kTernaryO, artefact_->meta);
  ASSERT_EQ(got.shape(), (std::vector<int64_t>{64, 64}));
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 4; ++i)
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t c = 0; c < 64; ++c) {
        int code = ((q.data[r * 64 + c] >> (2 * i)) & 3) - 1;
        ASSERT_EQ(got.f32()[(i * 16 + r) * 64 + c], (float)code / scale) << i << "," << r << "," << c;
        ++counts[code + 1];
      }
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[2], 0);
  rt::WeightStore store = rt::WeightStore::load(*artefact_, {fixtureDir(kFamily), 0});
  EXPECT_EQ(store.size(), artefact_->weights.size());
  // dump's roles: 14 packed linears with their scales; the norms, embedding and head as stored.
  auto roles = rt::checkpointRoles(*artefact_, ck);
  int ternary = 0, scales = 0;
  for (const auto &[n, r] : roles) {
    ternary += r == rt::TensorRole::Ternary;
    scales += r == rt::TensorRole::TernaryScales;
  }
  EXPECT_EQ(ternary, 14);
  EXPECT_EQ(scales, 14);
  EXPECT_EQ(roles.at("lm_head.weight"), rt::TensorRole::Read);
}

TEST_F(TernaryWeights, BadPackedTensorsAndScalesAreNamed) {
  const rt::TensorView &q = tensor(tensors_, kTernaryO);
  // The code 3 (bits 11) is no ternary value.
  std::vector<uint8_t> codes(q.data, q.data + q.bytes);
  codes[5 * 64 + 7] |= 0xC0;
  rt::TensorView three = q;
  three.data = codes.data();
  TempDir d1;
  expectWeightError([&] { load(with(kTernaryO, three), d1); }, {"'" + std::string(kTernaryO) + "'", "code 3", "row 5, column 7"},
                    "code 3");
  // A scale of zero (or several) cannot divide the codes.
  std::vector<float> zero = {0.0f}, two = {1.0f, 2.0f};
  for (const std::vector<float> *bad : {&zero, &two}) {
    rt::TensorView s = tensor(tensors_, kTernaryOScale);
    s.dtype_name = "F32";
    s.shape = {(int64_t)bad->size()};
    s.data = reinterpret_cast<const uint8_t *>(bad->data());
    s.bytes = bad->size() * 4;
    TempDir d;
    expectWeightError([&] { load(with(kTernaryOScale, s), d); },
                      {"'" + std::string(kTernaryOScale) + "'", "one positive finite value"}, "bad scale");
  }
  // Without its scale the packed tensor cannot be read.
  Tensors noScale;
  for (const auto &[n, t] : tensors_)
    if (n != kTernaryOScale)
      noScale.emplace_back(n, t);
  TempDir d2;
  expectWeightError([&] { load(noScale, d2); }, {"'" + std::string(kTernaryOScale) + "'", "missing"}, "no scale");
  // Packed codes must be a matrix.
  rt::TensorView flat = q;
  flat.shape = {16 * 64};
  TempDir d3;
  expectWeightError([&] { load(with(kTernaryO, flat), d3); }, {"'" + std::string(kTernaryO) + "'", "[rows / 4, cols]"},
                    "flat");
}

// Outside a ternary model a U8 tensor is no weight format cbc reads.
TEST_F(TernaryWeights, PackedTensorsNeedATernaryModel) {
  const rt::Artefact &plain = committedArtefact("llama");
  TempDir dir;
  fs::create_symlink(fixtureDir(kFamily) + "/model.safetensors", dir / "model.safetensors");
  expectWeightError([&] { rt::WeightStore::load(plain, {dir.str(), 0}); }, {"U8"}, "plain artefact");
}

// DeepSeek-V4: save_pretrained keeps the model. prefix and the runtime names of the embedding,
// the final norm and the HC head; the hub's files drop the prefix and name those as the reference
// code does (embed.weight, hc_head_fn, ...). The artefact carries aliases for both.
class DeepseekV4Weights : public FixtureWeights<DeepseekV4Weights> {
public:
  static constexpr const char *kFamily = "deepseek_v4";
};

TEST_F(DeepseekV4Weights, HubNamesLoadTheSameValues) {
  TempDir dir;
  Tensors ts = tensors_;
  int renamed = 0;
  for (auto &[n, t] : ts) {
    for (auto [from, to] : {std::pair<std::string, std::string>{"model.embed_tokens.", "embed."},
                            {"model.hc_head.hc_", "hc_head_"}, {"model.", ""}})
      if (n.rfind(from, 0) == 0) {
        n = to + n.substr(from.size());
        ++renamed;
        break;
      }
  }
  EXPECT_EQ(renamed, (int)ts.size() - 1) << "every tensor but head.weight is renamed";
  rt::writeSafetensors(dir / "model.safetensors", ts);
  rt::Checkpoint ck(dir.str());
  EXPECT_TRUE(ck.has("embed.weight"));
  EXPECT_TRUE(ck.has("hc_head_fn"));
  EXPECT_TRUE(ck.has("layers.0.attn.wq_a.weight"));
  EXPECT_TRUE(ck.has("norm.weight"));
  rt::WeightStore got = rt::WeightStore::load(*artefact_, {dir.str(), 0});
  rt::WeightStore ref = rt::WeightStore::load(*artefact_, {fixtureDir(kFamily), 0});
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_EQ(floats(got.get((int)i)), floats(ref.get((int)i))) << artefact_->weights[i].name;
}

} // namespace
} // namespace cbc::test
