// The weight transforms and kernels the hybrid families added: block_diag (Zamba's per-head
// x_proj/dt_proj, Zamba2's adapter up projections), row_scales (Falcon-H1's muP multipliers),
// shared program weights loaded once (Zamba's shared blocks), and the CPU definitions of
// ungated experts (Nemotron-H) and column concatenation. Each transform is checked value for
// value against the checkpoint tensors rearranged by hand, from the parity fixtures.
#include "driver/compile.h"
#include "runtime/cpu/kernels.h"
#include "runtime/schema/model_generated.h"
#include "runtime/weights.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

namespace cbc::test {
namespace {

struct Loaded {
  rt::Artefact artefact;
  rt::WeightStore store;
  rt::Checkpoint ckpt;
  explicit Loaded(const std::string &family)
      : artefact(compileArtefact(readFile(fixtureDir(family) + "/config.json"))),
        store(rt::WeightStore::load(artefact, {fixtureDir(family), 0})), ckpt(fixtureDir(family)) {}
  const rt::HostTensor &weight(const std::string &name) const {
    for (size_t i = 0; i < artefact.weights.size(); ++i)
      if (artefact.weights[i].name == name)
        return store.get((int)i);
    throw std::runtime_error("no program weight " + name);
  }
  const rt::WeightEntry &entry(const std::string &name) const {
    for (const auto &w : artefact.weights)
      if (w.name == name)
        return w;
    throw std::runtime_error("no program weight " + name);
  }
  rt::HostTensor raw(const std::string &hfName) const { return rt::readTensorAsFloat(ckpt, hfName, artefact.meta); }
};

TEST(WeightTransforms, ZambaPerHeadProjectionsOnBlockDiagonals) {
  Loaded z("zamba");
  // x_proj_weight [2 heads, R + 2N = 2 + 32, hd = 32]: program rows [dt of both heads | B | C],
  // columns the 64 channels; head h's block is x_proj_weight[h] at columns h * 32.
  rt::HostTensor xp = z.raw("model.layers.0.mamba.x_proj_weight");
  ASSERT_EQ(xp.shape(), (std::vector<int64_t>{2, 34, 32}));
  const rt::HostTensor &w = z.weight("layers.0.mamba.x_proj");
  ASSERT_EQ(w.shape(), (std::vector<int64_t>{68, 64}));
  const int64_t R = 2, N = 16, hd = 32, nh = 2, rows = R + 2 * N;
  for (int64_t h = 0; h < nh; ++h)
    for (int64_t seg = 0; seg < 3; ++seg) {
      int64_t size = seg ? N : R, src0 = seg == 0 ? 0 : seg == 1 ? R : R + N;
      int64_t dst0 = seg == 0 ? 0 : seg == 1 ? nh * R : nh * (R + N);
      for (int64_t r = 0; r < size; ++r)
        for (int64_t c = 0; c < nh * hd; ++c) {
          float want = c / hd == h ? xp.f32()[(h * rows + src0 + r) * hd + c % hd] : 0.0f;
          ASSERT_EQ(w.f32()[(dst0 + h * size + r) * nh * hd + c], want) << "head " << h << " segment " << seg;
        }
    }
  // dt_proj_weight [2, hd, R]: program [64, 2 x R], channel c of head h reads head h's dt.
  rt::HostTensor dp = z.raw("model.layers.0.mamba.dt_proj_weight");
  const rt::HostTensor &d = z.weight("layers.0.mamba.dt_proj");
  ASSERT_EQ(d.shape(), (std::vector<int64_t>{64, 4}));
  for (int64_t c = 0; c < nh * hd; ++c)
    for (int64_t j = 0; j < nh * R; ++j)
      ASSERT_EQ(d.f32()[c * nh * R + j], j / R == c / hd ? dp.f32()[c * R + j % R] : 0.0f) << c << ", " << j;
  // in_proj interleaves x (even rows) and z (odd rows): program rows [x | z].
  rt::HostTensor ip = z.raw("model.layers.0.mamba.in_proj.weight");
  const rt::HostTensor &in = z.weight("layers.0.mamba.in");
  const int64_t I = nh * hd, H = 32;
  ASSERT_EQ(in.shape(), (std::vector<int64_t>{2 * I, H}));
  for (int64_t c = 0; c < I; ++c)
    for (int64_t k = 0; k < H; ++k) {
      ASSERT_EQ(in.f32()[c * H + k], ip.f32()[(2 * c) * H + k]);
      ASSERT_EQ(in.f32()[(I + c) * H + k], ip.f32()[(2 * c + 1) * H + k]);
    }
}

// flatten (Inkling): the shared experts' [S, I, H] gate and up projections, regrouped per expert,
// lead the fused [E, 2I, H] routed experts in one [S + E, 2I, H] tensor; the relative-bias bank
// [d_rel, extent] repeats once per head.
TEST(WeightTransforms, InklingSinkExpertsLeadTheRoutedOnes) {
  Loaded k("inkling_text");
  const int64_t S = 2, E = 4, I = 16, H = 64;
  rt::HostTensor g = k.raw("model.layers.1.mlp.shared_experts.gate_proj");
  rt::HostTensor u = k.raw("model.layers.1.mlp.shared_experts.up_proj");
  rt::HostTensor r = k.raw("model.layers.1.mlp.experts.gate_up_proj");
  ASSERT_EQ(g.shape(), (std::vector<int64_t>{S, I, H}));
  ASSERT_EQ(r.shape(), (std::vector<int64_t>{E, 2 * I, H}));
  const rt::HostTensor &w = k.weight("layers.1.moe.gate_up");
  ASSERT_EQ(w.shape(), (std::vector<int64_t>{S + E, 2 * I, H}));
  for (int64_t e = 0; e < S + E; ++e)
    for (int64_t row = 0; row < 2 * I; ++row)
      for (int64_t c = 0; c < H; ++c) {
        float want = e >= S      ? r.f32()[((e - S) * 2 * I + row) * H + c]
                     : row < I   ? g.f32()[(e * I + row) * H + c]
                                 : u.f32()[(e * I + row - I) * H + c];
        ASSERT_EQ(w.f32()[(e * 2 * I + row) * H + c], want) << "expert " << e << " row " << row;
      }
  rt::HostTensor sd = k.raw("model.layers.1.mlp.shared_experts.down_proj");
  rt::HostTensor rd = k.raw("model.layers.1.mlp.experts.down_proj");
  const rt::HostTensor &d = k.weight("layers.1.moe.down");
  ASSERT_EQ(d.shape(), (std::vector<int64_t>{S + E, H, I}));
  for (int64_t i = 0; i < S * H * I; ++i)
    ASSERT_EQ(d.f32()[i], sd.f32()[i]);
  for (int64_t i = 0; i < E * H * I; ++i)
    ASSERT_EQ(d.f32()[S * H * I + i], rd.f32()[i]);
  rt::HostTensor bank = k.raw("model.layers.2.self_attn.rel_logits_proj.proj");
  const rt::HostTensor &rp = k.weight("layers.2.attn.rel_proj");
  ASSERT_EQ(rp.shape(), (std::vector<int64_t>{4 * 4, 24}));
  for (int64_t i = 0; i < 16 * 24; ++i)
    ASSERT_EQ(rp.f32()[i], bank.f32()[i % (4 * 24)]);
}

TEST(WeightTransforms, Zamba2AdapterUpProjectionsOnABlockDiagonal) {
  Loaded z("zamba2");
  const rt::HostTensor &up = z.weight("layers.4.attn.adapter_up");
  ASSERT_EQ(up.shape(), (std::vector<int64_t>{192, 24}));
  const char *which[] = {"q", "k", "v"};
  for (int b = 0; b < 3; ++b) {
    // Slot 2 (hybrid ordinal 2) of block 0, stored under layer 1.
    rt::HostTensor t = z.raw(std::string("model.layers.1.shared_transformer.self_attn.linear_") + which[b] +
                             "_adapter_list.2.1.weight");
    ASSERT_EQ(t.shape(), (std::vector<int64_t>{64, 8}));
    for (int64_t r = 0; r < 64; ++r)
      for (int64_t c = 0; c < 24; ++c)
        ASSERT_EQ(up.f32()[(b * 64 + r) * 24 + c], c / 8 == b ? t.f32()[r * 8 + c % 8] : 0.0f);
  }
}

TEST(WeightTransforms, FalconH1MultipliersScaleRuns) {
  Loaded f("falcon_h1");
  // in_proj rows [z 48 | x 48 | B 32 | C 32 | dt 6] times ssm_in_multiplier 0.7 x mup; hidden 32.
  const int64_t H = 32;
  rt::HostTensor ip = f.raw("model.layers.1.mamba.in_proj.weight");
  const rt::HostTensor &in = f.weight("layers.1.mamba.in");
  ASSERT_EQ(in.shape(), ip.shape());
  ASSERT_EQ(in.shape(), (std::vector<int64_t>{166, H}));
  const double mup[] = {0.5, 1.25, 0.75, 1.5, 0.8};
  const int64_t ends[] = {48, 96, 128, 160, 166};
  for (int64_t r = 0, s = 0; r < 166; ++r) {
    if (r == ends[s])
      ++s;
    for (int64_t k = 0; k < H; ++k)
      ASSERT_EQ(in.f32()[r * H + k], ip.f32()[r * H + k] * (float)(0.7 * mup[s])) << "row " << r;
  }
  // q (4 heads x 12 = 48 rows), k, v (2 x 12 = 24 rows each): attention_in_multiplier 1.5, and
  // key_multiplier 0.5 on k.
  const rt::HostTensor &qkv = f.weight("layers.1.attn.qkv");
  rt::HostTensor k = f.raw("model.layers.1.self_attn.k_proj.weight");
  ASSERT_EQ(k.shape(), (std::vector<int64_t>{24, H}));
  for (int64_t r = 0; r < 24; ++r)
    for (int64_t c = 0; c < H; ++c)
      ASSERT_EQ(qkv.f32()[(48 + r) * H + c], k.f32()[r * H + c] * (float)(1.5 * 0.5));
  // The MLP's down projection: down_multiplier 1.5 on every row.
  rt::HostTensor down = f.raw("model.layers.1.feed_forward.down_proj.weight");
  const rt::HostTensor &dw = f.weight("layers.1.mlp.down");
  for (size_t i = 0; i < down.f32().size(); ++i)
    ASSERT_EQ(dw.f32()[i], down.f32()[i] * 1.5f);
  EXPECT_EQ(f.entry("layers.1.mlp.down").row_scales, (std::vector<double>{32, 1.5}));
}

TEST(WeightTransforms, SharedBlocksAreLoadedOnce) {
  // Zamba2's two blocks serve three hybrid layers: each block weight is one manifest entry, and
  // no two entries are assembled from the same tensors.
  for (const char *family : {"zamba", "zamba2"}) {
    rt::Artefact a = compileArtefact(readFile(fixtureDir(family) + "/config.json"));
    std::set<std::vector<std::vector<std::string>>> sources;
    std::map<std::string, int> shared;
    for (const auto &w : a.weights) {
      EXPECT_TRUE(sources.insert(w.parts).second) << family << ": " << w.name << " repeats another entry's tensors";
      if (w.name.rfind("shared.", 0) == 0)
        ++shared[w.name.substr(0, w.name.find('.', 7))];
    }
    EXPECT_EQ(shared.size(), std::string(family) == "zamba" ? 1u : 2u) << family;
  }
}

TEST(WeightTransforms, BadTransformsAreWeightErrors) {
  // An artefact whose transforms do not fit the tensors (only a corrupt one: the verifier checks
  // them at compile time) is refused by the loader, naming the weight.
  Loaded z("zamba");
  auto expectError = [&](rt::Artefact a, const char *what) {
    try {
      rt::WeightStore::load(a, {fixtureDir("zamba"), 0});
      ADD_FAILURE() << what << ": no WeightError";
    } catch (const rt::WeightError &e) {
      EXPECT_NE(std::string(e.what()).find("layers.0.mamba"), std::string::npos) << what << ": " << e.what();
    }
  };
  for (auto &w : z.artefact.weights) {
    if (w.name == "layers.0.mamba.x_proj") {
      rt::Artefact a = z.artefact;
      for (auto &v : a.weights)
        if (v.name == w.name)
          v.block_diag = 5; // 68 rows do not split into 5 blocks
      expectError(a, "block_diag 5");
    }
    if (w.name == "layers.0.mamba.out") {
      rt::Artefact a = z.artefact;
      for (auto &v : a.weights)
        if (v.name == w.name)
          v.row_scales = {16, 2.0}; // 32 rows
      expectError(a, "row_scales over 16 of 32 rows");
    }
  }
}

// A flattened part whose element count is not the weight's is refused, naming it.
TEST(WeightTransforms, FlattenedPartOfTheWrongSizeIsAWeightError) {
  Loaded k("inkling_text");
  rt::Artefact a = k.artefact;
  for (auto &v : a.weights)
    if (v.name == "layers.1.moe.gate_up")
      v.parts[0].pop_back(); // the shared experts alone: 2 x 32 x 64 elements, not 6 x 32 x 64
  try {
    rt::WeightStore::load(a, {fixtureDir("inkling_text"), 0});
    ADD_FAILURE() << "no WeightError";
  } catch (const rt::WeightError &e) {
    EXPECT_NE(std::string(e.what()).find("hold 4096 elements but 'layers.1.moe.gate_up' needs [6, 32, 64]"),
              std::string::npos)
        << e.what();
  }
}

// The artefact loader refuses transforms no compiler writes: a negative block count, a row run
// that is not a positive whole number.
TEST(WeightTransforms, CorruptTransformsAreArtefactErrors) {
  auto bytesOf = [](const char *family) {
    driver::CompileOptions o;
    o.emit_cuda = false;
    return driver::compileConfig(readFile(fixtureDir(family) + "/config.json"), o).artefact;
  };
  auto errorOf = [](const std::vector<uint8_t> &b) -> std::string {
    try {
      rt::Artefact::fromBytes(b.data(), b.size(), /*verifyChecksum=*/false); // patched in place
    } catch (const rt::ArtefactError &e) {
      return e.what();
    }
    return "";
  };
  auto entry = [](const std::vector<uint8_t> &b, const std::string &name) -> const fb::WeightEntry * {
    for (const fb::WeightEntry *w : *fb::GetModel(b.data())->weights())
      if (w->name()->str() == name)
        return w;
    return nullptr;
  };
  std::vector<uint8_t> zamba = bytesOf("zamba");
  const fb::WeightEntry *xp = entry(zamba, "layers.0.mamba.x_proj");
  ASSERT_NE(xp, nullptr);
  ASSERT_EQ(xp->block_diag(), 2);
  const uint8_t *field = reinterpret_cast<const flatbuffers::Table *>(xp)->GetAddressOf(fb::WeightEntry::VT_BLOCK_DIAG);
  ASSERT_NE(field, nullptr);
  std::vector<uint8_t> b = zamba;
  int64_t bad = -2;
  std::memcpy(b.data() + (field - zamba.data()), &bad, 8);
  EXPECT_NE(errorOf(b).find("weight 'layers.0.mamba.x_proj' has a bad block_diag"), std::string::npos) << errorOf(b);

  std::vector<uint8_t> falcon = bytesOf("falcon_h1");
  const fb::WeightEntry *out = entry(falcon, "layers.0.mamba.out");
  ASSERT_NE(out, nullptr);
  ASSERT_NE(out->row_scales(), nullptr);
  ASSERT_EQ(out->row_scales()->size(), 2u);
  size_t at = (size_t)(reinterpret_cast<const uint8_t *>(out->row_scales()->data()) - falcon.data());
  for (double rows : {0.5, 0.0, -64.0, (double)INFINITY}) {
    std::vector<uint8_t> c = falcon;
    std::memcpy(c.data() + at, &rows, 8);
    EXPECT_NE(errorOf(c).find("weight 'layers.0.mamba.out' has bad row_scales"), std::string::npos) << rows;
  }
  double factor = NAN;
  std::vector<uint8_t> c = falcon;
  std::memcpy(c.data() + at + 8, &factor, 8);
  EXPECT_NE(errorOf(c).find("has bad row_scales"), std::string::npos);
}

TEST(FamilyKernels, UngatedExpertsAreDownOfActOfUp) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t T = 5, E = 3, I = 6, H = 4, k = 2;
  std::vector<float> x(T * H), up(E * I * H), down(E * H * I), upBias(E * I), downBias(E * H), wts(T * k);
  for (auto *v : {&x, &up, &down, &upBias, &downBias, &wts})
    for (float &f : *v)
      f = u(rng);
  std::vector<int32_t> ids = {0, 2, 1, 0, 2, 1, 0, 1, 2, 0};
  for (bool bias : {false, true}) {
    rt::cpu::ExpertWeights w{up.data(), down.data(), bias ? upBias.data() : nullptr,
                             bias ? downBias.data() : nullptr, E, I, H, true};
    std::vector<float> out(T * H);
    rt::cpu::moeExperts(x.data(), T, ids.data(), wts.data(), k, w, rt::cpu::Act::Relu2, false, nullptr, out.data());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        double want = 0;
        for (int64_t j = 0; j < k; ++j) {
          int64_t e = ids[t * k + j];
          double y = bias ? downBias[e * H + h] : 0.0;
          for (int64_t i = 0; i < I; ++i) {
            double a = bias ? upBias[e * I + i] : 0.0;
            for (int64_t c = 0; c < H; ++c)
              a += (double)up[(e * I + i) * H + c] * x[t * H + c];
            a = a > 0 ? a * a : 0.0;
            y += (double)down[(e * H + h) * I + i] * a;
          }
          want += wts[t * k + j] * y;
        }
        EXPECT_NEAR(out[t * H + h], want, 1e-5 * (1 + std::fabs(want))) << t << ", " << h;
      }
  }
}

TEST(FamilyKernels, ConcatPutsColumnsSideBySide) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8}, c = {9, 10, 11, 12};
  std::vector<float> y(2 * 6);
  rt::cpu::concatColumns({{a.data(), 3}, {b.data(), 1}, {c.data(), 2}}, 2, y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 7, 9, 10, 4, 5, 6, 8, 11, 12}));
}

} // namespace
} // namespace cbc::test
