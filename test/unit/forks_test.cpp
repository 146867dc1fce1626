// Forked requests (SamplingParams::n, num_return_sequences) through the engine: the forks share
// the prompt's cache (blocks and states), greedy forks equal the parent's solo tokens, sampled
// forks with a seed reproduce across runs and differ from each other, a waiting fork can be
// cancelled alone, and a bad n is refused; requests sharing a prefix that arrive together share
// the first one's blocks. A dense model and a hybrid with states.
#include "test/support/test_support.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace cbc::test {
namespace {

class Forks : public ::testing::TestWithParam<std::string> {
protected:
  std::unique_ptr<rt::Engine> engine() const {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    o.max_batch_tokens = 64;
    o.cache_memory_bytes = 16ll << 20;
    return rt::Engine::create(committedArtefact(GetParam()), {fixtureDir(GetParam()), 0}, o);
  }

  static std::map<rt::RequestId, rt::RequestOutput> drain(rt::Engine &e) {
    std::map<rt::RequestId, rt::RequestOutput> out;
    for (int i = 0; i < 10000 && !e.idle(); ++i)
      e.step();
    for (auto &o : e.take_finished())
      out[o.id] = std::move(o);
    return out;
  }

  static std::vector<int32_t> prompt(int64_t n) {
    std::vector<int32_t> p;
    for (int64_t i = 0; i < n; ++i)
      p.push_back((int32_t)((i * 37 + 11) % 200));
    return p;
  }

  static rt::SamplingParams params(int64_t n, double temperature = 0) {
    rt::SamplingParams p;
    p.max_new_tokens = 6;
    p.ignore_eos = true;
    p.n = n;
    p.temperature = temperature;
    p.seed = 1234;
    p.logprobs = true;
    return p;
  }
};

TEST_P(Forks, GreedyForksEqualTheParentAlone) {
  for (int64_t len : {1, 7, 16, 37}) {
    auto e = engine();
    rt::AddResult solo = e->add_request(prompt(len), params(1));
    auto want = drain(*e).at(solo.id);
    rt::AddResult a = e->add_request(prompt(len), params(3));
    ASSERT_TRUE(a.accepted) << a.error;
    ASSERT_EQ(a.forks.size(), 2u);
    auto out = drain(*e);
    ASSERT_EQ(out.size(), 3u);
    for (auto &[id, o] : out) {
      EXPECT_EQ(o.tokens, want.tokens) << GetParam() << " prompt " << len << " sequence " << o.fork_index;
      EXPECT_EQ(o.parent, o.fork_index ? a.id : -1);
    }
    if (len > 1)
      EXPECT_EQ(e->stats().forks, 2) << "both forks shared the parent's cache";
  }
}

TEST_P(Forks, SampledForksReproduceAcrossRuns) {
  std::vector<std::vector<int32_t>> first;
  for (int run = 0; run < 2; ++run) {
    auto e = engine();
    rt::AddResult a = e->add_request(prompt(21), params(4, 1.0));
    ASSERT_TRUE(a.accepted);
    auto out = drain(*e);
    std::vector<std::vector<int32_t>> seqs;
    for (auto &[id, o] : out)
      seqs.push_back(o.tokens);
    if (run == 0)
      first = seqs;
    else
      EXPECT_EQ(seqs, first) << "a seeded run reproduces";
    EXPECT_GT(std::set<std::vector<int32_t>>(seqs.begin(), seqs.end()).size(), 1u)
        << "forks draw with seeds of their own";
    // Each fork alone, with the seed the engine derived for it, gives its tokens.
    for (size_t i = 1; i < seqs.size(); ++i) {
      rt::SamplingParams p = params(1, 1.0);
      p.seed = rt::forkSeed(1234, (int64_t)i);
      rt::AddResult s = e->add_request(prompt(21), p);
      EXPECT_EQ(drain(*e).at(s.id).tokens, seqs[i]) << "fork " << i;
    }
  }
}

TEST_P(Forks, AWaitingForkIsCancelledAloneAndABadNIsRefused) {
  auto e = engine();
  rt::AddResult a = e->add_request(prompt(30), params(3));
  ASSERT_TRUE(a.accepted);
  EXPECT_TRUE(e->cancel(a.forks[0])) << "still waiting for the parent's prompt";
  EXPECT_FALSE(e->cancel(a.forks[0]));
  auto out = drain(*e);
  EXPECT_EQ(out.at(a.forks[0]).finish, rt::FinishReason::Cancelled);
  EXPECT_EQ(out.at(a.forks[1]).tokens.size(), 6u);
  // Cancelling the parent before it reaches its forks hands them on to compute alone.
  rt::AddResult b = e->add_request(prompt(30), params(2));
  EXPECT_TRUE(e->cancel(b.id));
  out = drain(*e);
  EXPECT_EQ(out.at(b.id).finish, rt::FinishReason::Cancelled);
  EXPECT_EQ(out.at(b.forks[0]).tokens.size(), 6u);
  for (int64_t n : {0, -1, 1025}) {
    rt::AddResult bad = e->add_request(prompt(4), params(n));
    EXPECT_FALSE(bad.accepted);
    EXPECT_NE(bad.error.find("n must be"), std::string::npos) << bad.error;
  }
  drain(*e);
  EXPECT_EQ(e->cache().usedBlocks(), 0);
}

// Requests sharing a prefix that arrive together: the first computes it, the others wait a step
// for its blocks (and, for a recurrent model, the snapshot it keeps where they part) and find them
// cached, instead of all computing it at once.
TEST_P(Forks, RequestsArrivingTogetherShareTheFirstOnesPrefix) {
  auto e = engine();
  std::vector<int32_t> stem = prompt(70);
  std::vector<rt::RequestId> ids;
  for (int32_t k = 0; k < 3; ++k) {
    std::vector<int32_t> p = stem;
    p.push_back(100 + k);
    p.push_back(150 + k);
    ids.push_back(e->add_request(p, params(1)).id);
  }
  auto out = drain(*e);
  EXPECT_EQ(out.at(ids[0]).cached_tokens, 0);
  EXPECT_GT(out.at(ids[2]).cached_tokens, 0) << GetParam();
  EXPECT_GE(e->stats().prefix_hits, 64);
  // The same tokens as each alone.
  for (int32_t k = 0; k < 3; ++k) {
    auto alone = engine();
    std::vector<int32_t> p = stem;
    p.push_back(100 + k);
    p.push_back(150 + k);
    rt::AddResult a = alone->add_request(p, params(1));
    EXPECT_EQ(drain(*alone).at(a.id).tokens, out.at(ids[k]).tokens) << k;
  }
}

// A backend that cannot move units to host memory: swap space is ignored, said at start-up, and
// preempted requests are recomputed.
TEST(SwapSpace, IgnoredWhereTheBackendCannotMoveUnits) {
  const rt::Artefact &a = committedArtefact("llama");
  std::vector<std::string> said;
  rt::EngineOptions o;
  o.max_batch_tokens = 64;
  o.cache_memory_bytes = 1 << 20;
  o.swap_space_bytes = 1 << 20;
  o.log = [&](const std::string &m) { said.push_back(m); };
  auto e = rt::Engine::withBackend(a, rt::makeNullBackend(a), o);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "swap space is ignored: the null backend cannot move this model's cache to host memory; "
                     "preempted requests are recomputed");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Forks, ::testing::Values("llama", "olmo_hybrid"),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace cbc::test
