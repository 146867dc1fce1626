// Ring 1 across ranks: every parity fixture compiled for the job's rank count (mpiexec -n N)
// gives transformers' greedy tokens and logits within the fixture's tolerance, with rank 0
// scheduling and sampling and every rank running its shard (real processes, MPI collectives).
// MoE fixtures run twice: experts divided by features (--tp N) and among the ranks (--ep N).
// Beside the oracle, rank 0 compares the logits with those of the TP=1 artefact and records
// how far they are (0: bitwise equal).
//
// Every rank runs the same tests in the same order; rank 0 compiles, decides and asserts, the
// others load the artefact it sends and follow its engines. A fixture whose shapes the rank
// count does not divide is skipped, naming the rule (cbc compile's error).
#include "runtime/comm/ranks.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/engine.h"
#include "test/support/planted_proposer.h"
#include "test/support/compile_support.h"
#include "test/tp/tp_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace cbc::test {
namespace {

driver::CompileOptions cpuOnly() {
  driver::CompileOptions o;
  o.emit_cuda = false;
  return o;
}

// One engine over the ranks: rank 0 serves `runs`, the others follow until it is done.
RunResult serveOnRanks(const rt::Artefact &a, const rt::WeightSource &w, rt::EngineOptions o,
                       const std::vector<cbc::test::Run> &runs) {
  o.communicator = gComm;
  o.threads = 1;
  if (gComm->rank() > 0) {
    rt::followRank0(a, w, o);
    return {};
  }
  return serve(a, w, o, runs);
}

class TensorParallel : public ::testing::TestWithParam<std::string> {
protected:
  void check(bool expertParallel);
};

void TensorParallel::check(bool expertParallel) {
  const std::string family = GetParam();
  std::string why;
  bool failed = false;
  std::optional<rt::Artefact> a = shareArtefact(fixtureDir(family) + "/config.json", cpuOnly(), expertParallel, why, failed);
  if (failed && gComm->rank() == 0)
    FAIL() << family << " does not compile for " << gComm->size() << " ranks: " << why;
  if (!a)
    GTEST_SKIP() << family << " at " << gComm->size() << " ranks: " << why;
  // Expert parallelism only changes MoE layers: the other fixtures ran under the plain test.
  if (expertParallel && !shareFlag(gComm->rank() == 0 && hasExperts(*a)))
    GTEST_SKIP() << family << " has no experts";
  rt::WeightSource w;
  w.checkpoint_dir = fixtureDir(family);
  Expected expected = gComm->rank() == 0 ? loadExpected(family) : Expected{};
  std::vector<uint8_t> count = {(uint8_t)expected.prompts.size()};
  gComm->broadcast(count, true);
  std::vector<cbc::test::Run> runs;
  for (size_t i = 0; i < expected.prompts.size(); ++i)
    runs.push_back({expected.prompts[i], greedyWithLogits((int64_t)expected.tokens[i].size())});

  // The prompts together, then in chunks of 7 tokens a step: the oracle's tokens each time.
  rt::EngineOptions o;
  o.max_batch_tokens = 64;
  RunResult res = serveOnRanks(*a, w, o, runs);
  o.max_batch_tokens = 7;
  RunResult chunked = serveOnRanks(*a, w, o, runs);
  if (gComm->rank() > 0)
    return;
  // The same prompts on one process with the TP=1 artefact.
  rt::EngineOptions single;
  single.max_batch_tokens = 64;
  single.threads = 1;
  RunResult one = serve(compileArtefact(readFile(fixtureDir(family) + "/config.json")), w, single, runs);
  int64_t vocab = a->meta.vocab_size;
  double vsOracle = 0, vsOne = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const rt::RequestOutput &out = res.outputs[i];
    EXPECT_EQ(out.tokens, expected.tokens[i]) << family << " prompt " << i;
    EXPECT_EQ(chunked.outputs[i].tokens, expected.tokens[i]) << family << " prompt " << i << ", 7-token chunks";
    ASSERT_EQ(out.logits.size(), expected.tokens[i].size());
    for (size_t s = 0; s < out.logits.size(); ++s)
      for (int64_t v = 0; v < vocab; ++v) {
        vsOracle = std::max(vsOracle, (double)std::fabs(out.logits[s][v] - expected.logits[i][s * vocab + v]));
        vsOne = std::max(vsOne, (double)std::fabs(out.logits[s][v] - one.outputs[i].logits[s][v]));
      }
  }
  EXPECT_LE(vsOracle, expected.atol) << family << ": max |dlogit| against transformers";
  RecordProperty("max_abs_dlogit_vs_transformers", std::to_string(vsOracle));
  RecordProperty("max_abs_dlogit_vs_tp1", std::to_string(vsOne));
  std::printf("[ tp=%d%s ] %s: max |dlogit| %.3g against transformers, %.3g against TP=1%s\n", gComm->size(),
              expertParallel ? " ep" : "", family.c_str(), vsOracle, vsOne, vsOne == 0 ? " (bitwise equal)" : "");
}

TEST_P(TensorParallel, GreedyTokensAndLogitsMatchTransformers) { check(false); }

// Multimodal prompts over the ranks: every rank's step takes the injected rows (and the
// multimodal positions, the key ends) from rank 0's plan; the prompts together and in steps of
// 20 tokens (which split images where the model allows it).
class TensorParallelMultimodal : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorParallelMultimodal, GreedyTokensAndLogitsMatchTransformers) {
  std::string dir = mmFixtureDir(GetParam()), why;
  bool failed = false;
  std::optional<rt::Artefact> artefact = shareArtefact(dir + "/config.json", cpuOnly(), false, why, failed);
  if (failed && gComm->rank() == 0)
    FAIL() << GetParam() << " does not compile for " << gComm->size() << " ranks: " << why;
  if (!artefact)
    GTEST_SKIP() << GetParam() << " at " << gComm->size() << " ranks: " << why;
  const rt::Artefact &a = *artefact;
  std::vector<MultimodalPrompt> prompts = gComm->rank() == 0 ? loadMultimodal(dir) : std::vector<MultimodalPrompt>();
  std::vector<cbc::test::Run> runs;
  for (const MultimodalPrompt &p : prompts) {
    runs.push_back({p.ids, greedyWithLogits((int64_t)p.tokens.size())});
    runs.back().embeds = p.embeds;
  }
  rt::WeightSource w;
  w.checkpoint_dir = dir;
  for (int64_t budget : {64, 20}) {
    rt::EngineOptions o;
    o.max_batch_tokens = budget;
    RunResult res = serveOnRanks(a, w, o, runs);
    if (gComm->rank() > 0)
      continue;
    for (size_t i = 0; i < runs.size(); ++i)
      EXPECT_EQ(res.outputs[i].tokens, prompts[i].tokens) << GetParam() << " prompt " << i << ", budget " << budget;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TensorParallelMultimodal, ::testing::ValuesIn(mmFamilies()),
                         [](const auto &info) { return info.param; });
TEST_P(TensorParallel, ExpertParallelMatchesTransformers) { check(true); }

// Preemption by swapping over the ranks: a cache of a few blocks a group (and a state slot a
// prompt), so that the prompts take turns; every rank swaps its own shard of a preempted request's units
// out to host memory and back. The tokens are still the oracle's.
class TensorParallelSwap : public ::testing::TestWithParam<std::string> {};

// With `speculative`, every step of a decoding request also verifies a draft of the oracle's
// tokens with a planted mistake (test/support/planted_proposer.h): rejected rows are truncated
// and a state's step undone on every rank, by the units rank 0's plan names.
void swapOverRanks(const std::string &family, bool speculative) {
  std::string why;
  bool failed = false;
  std::optional<rt::Artefact> a = shareArtefact(fixtureDir(family) + "/config.json", cpuOnly(), false, why, failed);
  if (failed && gComm->rank() == 0)
    FAIL() << family << " does not compile for " << gComm->size() << " ranks: " << why;
  if (!a)
    GTEST_SKIP() << family << " at " << gComm->size() << " ranks: " << why;
  rt::WeightSource w;
  w.checkpoint_dir = fixtureDir(family);
  w.rank = gComm->rank();
  rt::EngineOptions o;
  o.max_batch_tokens = 64;
  o.max_requests = 8;
  o.threads = 1;
  o.prefix_caching = false;
  o.swap_space_bytes = 64ll << 20;
  auto cpu = rt::makeCpuBackend(*a, rt::WeightStore::load(*a, w), {o.max_batch_tokens, o.max_requests}, 1, gComm);
  if (gComm->rank() > 0) {
    rt::followRank0(*cpu, *gComm, a->cache_plan);
    return;
  }
  Expected expected = loadExpected(family);
  size_t longest = 0;
  for (size_t i = 0; i < expected.prompts.size(); ++i)
    longest = std::max(longest, expected.prompts[i].size() + expected.tokens[i].size());
  int64_t block = a->cache_plan.block_size, rowBytes = 0, stateBytes = cpu->stateBytesPerUnit();
  for (const rt::CacheGroup &g : a->cache_plan.groups)
    if (g.kind != rt::CacheGroup::State)
      rowBytes += cpu->cacheBytesPerToken(g.id) * block;
  int64_t slots = (int64_t)expected.prompts.size();
  if (stateBytes > 0) {
    o.max_live_requests = slots;
    o.max_state_fraction = 1.0;
  }
  o.cache_memory_bytes = ((int64_t)longest / block + 2) * rowBytes + slots * stateBytes;
  if (speculative) {
    o.num_speculative_tokens = 3;
    o.proposer = std::make_shared<PlantedProposer>(expected.prompts, expected.tokens, 3, a->meta.vocab_size);
  }
  auto engine = rt::Engine::withBackend(*a, rt::leadRanks(std::move(cpu), gComm), o);
  for (size_t i = 0; i < expected.prompts.size(); ++i)
    engine->add_request(expected.prompts[i], greedyWithLogits((int64_t)expected.tokens[i].size()));
  while (!engine->idle())
    engine->step();
  auto outs = engine->take_finished();
  rt::EngineStats stats = engine->stats();
  engine.reset(); // tells the other ranks to stop
  std::sort(outs.begin(), outs.end(), [](auto &x, auto &y) { return x.id < y.id; });
  ASSERT_EQ(outs.size(), expected.prompts.size());
  int64_t vocab = a->meta.vocab_size;
  double worst = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    EXPECT_EQ(outs[i].tokens, expected.tokens[i]) << family << " prompt " << i;
    for (size_t t = 0; t < outs[i].logits.size(); ++t)
      for (int64_t v = 0; v < vocab; ++v)
        worst = std::max(worst, (double)std::fabs(outs[i].logits[t][v] - expected.logits[i][t * vocab + v]));
  }
  EXPECT_LE(worst, expected.atol) << family << ": max |dlogit| against transformers";
  EXPECT_GT(stats.swaps_out, 0) << family << ": nothing was swapped out (" << stats.preemptions << " preemptions)";
  EXPECT_EQ(stats.swaps_in, stats.swaps_out) << family;
  if (speculative) {
    EXPECT_GT(stats.accepted_tokens, 0) << family;
    EXPECT_LT(stats.accepted_tokens, stats.draft_tokens) << family;
  }
  std::printf("[ tp=%d swap%s ] %s: %lld swaps out, %lld in, %lld preemptions, %lld drafts, %lld accepted\n",
              gComm->size(), speculative ? ", speculative" : "", family.c_str(), (long long)stats.swaps_out,
              (long long)stats.swaps_in, (long long)stats.preemptions, (long long)stats.draft_tokens,
              (long long)stats.accepted_tokens);
}

TEST_P(TensorParallelSwap, PreemptedRequestsResumeFromSwappedUnits) { swapOverRanks(GetParam(), false); }
TEST_P(TensorParallelSwap, SpeculativeDraftsVerifiedOverRanks) { swapOverRanks(GetParam(), true); }

// Attention, latent attention, and gated delta beside attention (states and blocks).
INSTANTIATE_TEST_SUITE_P(Families, TensorParallelSwap, ::testing::Values("llama", "deepseek_v3", "qwen3_next"),
                         [](const auto &info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Fixtures, TensorParallel, ::testing::ValuesIn(fixtureFamilies()),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace cbc::test

int main(int argc, char **argv) { return cbc::test::runOnRanks(argc, argv); }
