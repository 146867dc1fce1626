// Prefix caching is exact: for every fixture family, a request sharing a prefix of 1, 15, 16, 17,
// 63, 64 or 200 tokens with an earlier one gets, warm, exactly the greedy tokens it gets cold
// (caching off), and logits within the fixture's parity tolerance; and where the cache plan
// allows a hit, it takes one. Warm runs come in two kinds: while the earlier request is still
// decoding (its blocks are held; the requests sharing with it are admitted together in one
// step), and after it finished (its blocks are free, cached until reused). State families keep
// a snapshot every 64 tokens here, so that they can hit at 64 and 192.
#include "runtime/cache/coordinator.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/weights.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace cbc::test {
namespace {

constexpr int64_t kSuffix = 24, kNew = 4, kStem = 232;
const int64_t kShared[] = {1, 15, 16, 17, 63, 64, 200};

class PrefixCache : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    family_ = GetParam();
    artefact_ = compileArtefact(readFile(fixtureDir(family_) + "/config.json"));
    weights_ = rt::WeightStore::load(artefact_, {fixtureDir(family_), 0});
    atol_ = loadExpected(family_).atol;
  }

  std::unique_ptr<rt::Engine> engine(bool caching) const {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    o.max_batch_tokens = 512;
    o.max_requests = 16;
    o.max_live_requests = 16;
    o.cache_memory_bytes = 64ll << 20;
    o.prefix_caching = caching;
    o.snapshot_interval = 64;
    auto cpu = rt::makeCpuBackend(artefact_, weights_, {o.max_batch_tokens, o.max_requests}, o.threads);
    return rt::Engine::withBackend(artefact_, std::move(cpu), o);
  }

  // Runs the engine until every request added so far is back.
  static void drain(rt::Engine &e, std::map<rt::RequestId, rt::RequestOutput> &out) {
    for (int i = 0; i < 10000 && !e.idle(); ++i)
      e.step();
    for (auto &o : e.take_finished())
      out[o.id] = std::move(o);
  }

  // Whether a warm run of a prompt of `length` tokens sharing `shared` with a cached one of
  // `cachedLength` must hit: not where the rows depend on a length past the plan's bound.
  bool mustHit(int64_t shared, int64_t length, int64_t cachedLength) const {
    const rt::CachePlan &plan = artefact_.cache_plan;
    rt::CacheCoordinator probe(plan, 1, 1, 1, 1);
    int64_t bound = plan.length_dependent_above;
    if (!probe.cachesPrefixes() || (bound > 0 && std::max(length, cachedLength) > bound))
      return false;
    return shared >= (probe.hasStates() ? probe.snapshotGrid() : plan.block_size);
  }

  void compare(const rt::RequestOutput &warm, const rt::RequestOutput &cold, const std::string &what) const {
    EXPECT_EQ(warm.tokens, cold.tokens) << family_ << ": " << what;
    ASSERT_EQ(warm.logits.size(), cold.logits.size()) << what;
    double diff = 0;
    for (size_t s = 0; s < warm.logits.size(); ++s)
      for (size_t v = 0; v < warm.logits[s].size(); ++v)
        diff = std::max(diff, (double)std::fabs(warm.logits[s][v] - cold.logits[s][v]));
    EXPECT_LE(diff, atol_) << family_ << ": " << what << ", max |dlogit| " << diff;
    maxDiff_ = std::max(maxDiff_, diff);
  }

  std::string family_;
  rt::Artefact artefact_;
  rt::WeightStore weights_;
  double atol_ = 0;
  mutable double maxDiff_ = 0;
};

TEST_P(PrefixCache, WarmRunsGiveTheColdRunsTokens) {
  const int64_t vocab = artefact_.meta.vocab_size;
  std::mt19937_64 rng(std::hash<std::string>{}(family_));
  auto tokens = [&](int64_t n) {
    std::vector<int32_t> t;
    for (int64_t i = 0; i < n; ++i)
      t.push_back((int32_t)(rng() % (uint64_t)vocab));
    return t;
  };
  std::vector<int32_t> stem = tokens(kStem);
  // The prompts that share a prefix with the stem, as long as the model's positions allow.
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> shared;
  for (int64_t n : kShared) {
    if (n + kSuffix + kNew > artefact_.meta.max_positions)
      continue;
    std::vector<int32_t> p(stem.begin(), stem.begin() + n), suffix = tokens(kSuffix);
    // The suffix's first token differs from the stem's next one: the prompts share exactly n.
    if (suffix[0] == stem[n])
      suffix[0] = (suffix[0] + 1) % (int32_t)vocab;
    p.insert(p.end(), suffix.begin(), suffix.end());
    prompts.push_back(std::move(p));
    shared.push_back(n);
  }
  ASSERT_GE(prompts.size(), 3u) << "the model allows " << artefact_.meta.max_positions << " positions";
  int64_t stemLen = std::min<int64_t>(kStem, artefact_.meta.max_positions - 40);
  stem.resize(stemLen);

  // Cold: each prompt alone, with caching off.
  std::vector<rt::RequestOutput> cold;
  {
    auto e = engine(false);
    std::map<rt::RequestId, rt::RequestOutput> out;
    for (const auto &p : prompts) {
      rt::AddResult a = e->add_request(p, greedyWithLogits(kNew));
      ASSERT_TRUE(a.accepted) << a.error;
      drain(*e, out);
      cold.push_back(out.at(a.id));
    }
    EXPECT_EQ(e->stats().prefix_hits, 0);
  }

  // Warm, while the stem's request decodes: the prompts arrive together after its first token.
  {
    auto e = engine(true);
    rt::AddResult a = e->add_request(stem, greedyWithLogits(30));
    ASSERT_TRUE(a.accepted) << a.error;
    for (int i = 0; i < 1000 && e->stats().generated_tokens == 0; ++i)
      e->step();
    std::vector<rt::RequestId> ids;
    for (const auto &p : prompts)
      ids.push_back(e->add_request(p, greedyWithLogits(kNew)).id);
    std::map<rt::RequestId, rt::RequestOutput> out;
    drain(*e, out);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const rt::RequestOutput &w = out.at(ids[i]);
      compare(w, cold[i], "shared " + std::to_string(shared[i]) + ", while the first decodes");
      if (shared[i] <= stemLen && mustHit(shared[i], (int64_t)prompts[i].size(), stemLen))
        EXPECT_GT(w.cached_tokens, 0) << family_ << ": shared " << shared[i] << " while the first decodes";
      EXPECT_LE(w.cached_tokens, shared[i]) << "a hit is a prefix of what is shared";
    }
  }

  // Warm, after the stem's request finished: one prompt at a time, each after the last.
  {
    auto e = engine(true);
    std::map<rt::RequestId, rt::RequestOutput> out;
    e->add_request(stem, greedyWithLogits(2));
    drain(*e, out);
    for (size_t i = 0; i < prompts.size(); ++i) {
      rt::AddResult a = e->add_request(prompts[i], greedyWithLogits(kNew));
      drain(*e, out);
      const rt::RequestOutput &w = out.at(a.id);
      compare(w, cold[i], "shared " + std::to_string(shared[i]) + ", after the first finished");
      if (shared[i] <= stemLen && mustHit(shared[i], (int64_t)prompts[i].size(), stemLen))
        EXPECT_GT(w.cached_tokens, 0) << family_ << ": shared " << shared[i] << " after the first finished";
    }
    const rt::EngineStats &s = e->stats();
    EXPECT_GE(s.prefix_queries, s.prefix_hits);
    RecordProperty("hit_tokens", std::to_string(s.prefix_hits));
    RecordProperty("query_tokens", std::to_string(s.prefix_queries));
    EXPECT_EQ(e->cache().usedBlocks(), 0);
  }
  RecordProperty("max_abs_dlogit", std::to_string(maxDiff_));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PrefixCache, ::testing::ValuesIn(fixtureFamilies()),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace cbc::test
