// Bad requests are rejected one by one with their reason while the others go on; cancel and
// the stop conditions (EOS, stop ids, max_new_tokens) end requests with the right reason.
#include "test/support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

// OpenBLAS's own, declared here because the tests do not see its header.
extern "C" int openblas_get_num_threads(void);
extern "C" void openblas_set_num_threads(int);

namespace cbc::test {
namespace {

class Requests : public ::testing::Test {
protected:

  std::unique_ptr<rt::Engine> engine(int64_t cacheBytes = 8ll << 20, int64_t budget = 32) {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    o.max_batch_tokens = budget;
    o.cache_memory_bytes = cacheBytes;
    return rt::Engine::create(*artefact_, {fixtureDir("llama"), 0}, o);
  }

  // An engine on the llama fixture whose only EOS id is `eos`.
  std::unique_ptr<rt::Engine> engineWithEos(int32_t eos) {
    rt::Artefact a = *artefact_;
    a.meta.eos_token_ids = {eos};
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    return rt::Engine::create(std::move(a), {fixtureDir("llama"), 0}, o);
  }

  static rt::SamplingParams greedy(int64_t n, bool ignoreEos = true) {
    rt::SamplingParams p;
    p.max_new_tokens = n;
    p.ignore_eos = ignoreEos;
    return p;
  }

  // Steps until idle; returns every finished output by id.
  static std::map<rt::RequestId, rt::RequestOutput> drain(rt::Engine &e) {
    std::map<rt::RequestId, rt::RequestOutput> out;
    for (int i = 0; i < 10000; ++i) {
      for (auto &o : e.take_finished()) {
        EXPECT_EQ(out.count(o.id), 0u) << "request " << o.id << " returned twice";
        out[o.id] = std::move(o);
      }
      if (e.idle())
        break;
      e.step();
    }
    for (auto &o : e.take_finished())
      out[o.id] = std::move(o);
    EXPECT_TRUE(e.idle());
    return out;
  }

  int64_t vocab() const { return artefact_->meta.vocab_size; }
  int64_t maxPositions() const { return artefact_->meta.max_positions; }

  const rt::Artefact *artefact_ = &committedArtefact("llama");
};

struct BadCase {
  std::string name;
  std::function<void(std::vector<int32_t> &, rt::SamplingParams &)> spoil;
  std::vector<std::string> mentions; // words the reason must contain
};

TEST_F(Requests, BadRequestsAreRejectedOneByOneWhileOthersFinish) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  int64_t V = vocab(), P = maxPositions();
  std::vector<BadCase> cases = {
      {"token id = vocab",
       [&](auto &ids, auto &) { ids[1] = (int32_t)V; },
       {std::to_string(V), "vocab"}},
      {"token id far above vocab", [&](auto &ids, auto &) { ids[0] = 1 << 30; }, {"vocab"}},
      {"negative token id", [](auto &ids, auto &) { ids[2] = -1; }, {"-1", "vocab"}},
      {"empty prompt", [](auto &ids, auto &) { ids.clear(); }, {"empty"}},
      {"prompt + max_new_tokens over max_positions",
       [&](auto &ids, auto &p) { p.max_new_tokens = P - (int64_t)ids.size() + 1; },
       {"max_new_tokens", std::to_string(P)}},
      {"prompt alone over max_positions",
       [&](auto &ids, auto &p) {
         ids.assign(P + 5, 3);
         p.max_new_tokens = 1;
       },
       {std::to_string(P)}},
      {"negative temperature", [](auto &, auto &p) { p.temperature = -1; }, {"temperature"}},
      {"NaN temperature", [&](auto &, auto &p) { p.temperature = nan; }, {"temperature"}},
      {"top_p = 0",
       [](auto &, auto &p) {
         p.temperature = 1;
         p.top_p = 0;
       },
       {"top_p"}},
      {"top_p > 1",
       [](auto &, auto &p) {
         p.temperature = 1;
         p.top_p = 1.5;
       },
       {"top_p"}},
      {"min_p > 1",
       [](auto &, auto &p) {
         p.temperature = 1;
         p.min_p = 1.2;
       },
       {"min_p"}},
      {"negative min_p", [](auto &, auto &p) { p.min_p = -0.2; }, {"min_p"}},
      {"negative top_k", [](auto &, auto &p) { p.top_k = -4; }, {"top_k"}},
      {"max_new_tokens = 0", [](auto &, auto &p) { p.max_new_tokens = 0; }, {"max_new_tokens"}},
  };

  // The good request's tokens when it runs alone.
  std::vector<int32_t> goodPrompt = {5, 17, 99, 3, 250, 1};
  auto aloneEngine = engine();
  rt::RequestId aloneId = aloneEngine->add_request(goodPrompt, greedy(6)).id;
  auto alone = drain(*aloneEngine);
  std::vector<int32_t> want = alone.at(aloneId).tokens;
  ASSERT_EQ(want.size(), 6u);

  for (const BadCase &c : cases) {
    SCOPED_TRACE(c.name);
    auto e = engine();
    rt::AddResult before = e->add_request(goodPrompt, greedy(6));
    ASSERT_TRUE(before.accepted) << before.error;
    std::vector<int32_t> ids = {4, 8, 15, 16, 23, 42};
    rt::SamplingParams p = greedy(4);
    c.spoil(ids, p);
    rt::AddResult bad = e->add_request(ids, p);
    EXPECT_FALSE(bad.accepted);
    EXPECT_GE(bad.id, 0);
    EXPECT_NE(bad.id, before.id);
    for (const std::string &word : c.mentions)
      EXPECT_NE(bad.error.find(word), std::string::npos)
          << "'" << bad.error << "' lacks '" << word << "'";
    rt::AddResult after = e->add_request(goodPrompt, greedy(6));
    ASSERT_TRUE(after.accepted) << after.error;
    EXPECT_FALSE(e->cancel(bad.id)) << "a rejected request cannot be cancelled";

    auto out = drain(*e);
    ASSERT_EQ(out.size(), 3u);
    const rt::RequestOutput &r = out.at(bad.id);
    EXPECT_EQ(r.finish, rt::FinishReason::Rejected);
    EXPECT_EQ(r.error, bad.error);
    EXPECT_TRUE(r.tokens.empty());
    for (rt::RequestId good : {before.id, after.id}) {
      EXPECT_EQ(out.at(good).finish, rt::FinishReason::Length);
      EXPECT_EQ(out.at(good).tokens, want) << "a rejection must not disturb the others";
      EXPECT_TRUE(out.at(good).error.empty());
    }
    EXPECT_EQ(e->stats().rejected, 1);
    EXPECT_EQ(e->stats().finished, 2);
  }
}

// prompt + max_new_tokens must not overflow: a huge max_new_tokens is rejected as too long.
TEST_F(Requests, HugeMaxNewTokensIsRejectedWithoutOverflow) {
  auto e = engine();
  for (int64_t n : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max() - 2,
                    maxPositions()}) {
    rt::AddResult r = e->add_request({1, 2, 3}, greedy(n));
    EXPECT_FALSE(r.accepted) << n;
    EXPECT_NE(r.error.find("max_new_tokens"), std::string::npos) << r.error;
  }
  drain(*e);
}

TEST_F(Requests, TheLongestLegalRequestIsAccepted) {
  auto e = engine(64ll << 20, 64);
  int64_t P = maxPositions();
  std::vector<int32_t> prompt(P - 2, 7);
  rt::AddResult r = e->add_request(prompt, greedy(2));
  EXPECT_TRUE(r.accepted) << r.error;
  auto out = drain(*e);
  EXPECT_EQ(out.at(r.id).finish, rt::FinishReason::Length);
  EXPECT_EQ(out.at(r.id).tokens.size(), 2u);
}

TEST_F(Requests, ARequestThatCanNeverFitTheCacheIsRejected) {
  // Room for a few blocks per group only.
  const rt::CachePlan &plan = artefact_->cache_plan;
  int64_t bytesPerBlockRow = 0;
  for (const rt::CacheLayer &l : plan.layers)
    bytesPerBlockRow += l.elemsPerToken() * 4 * plan.block_size;
  auto e = engine(3 * bytesPerBlockRow);
  ASSERT_EQ(e->cache().blocksPerGroup(), 3);
  std::vector<int32_t> fits(2 * plan.block_size, 9), tooLong(5 * plan.block_size, 9);
  rt::AddResult ok = e->add_request(fits, greedy(4));
  rt::AddResult big = e->add_request(tooLong, greedy(4));
  rt::AddResult ok2 = e->add_request({1, 2, 3}, greedy(4));
  EXPECT_TRUE(ok.accepted) << ok.error;
  EXPECT_FALSE(big.accepted);
  EXPECT_NE(big.error.find("cache"), std::string::npos) << big.error;
  EXPECT_NE(big.error.find("blocks"), std::string::npos) << big.error;
  EXPECT_TRUE(ok2.accepted) << ok2.error;
  auto out = drain(*e);
  EXPECT_EQ(out.at(big.id).finish, rt::FinishReason::Rejected);
  EXPECT_EQ(out.at(ok.id).finish, rt::FinishReason::Length);
  EXPECT_EQ(out.at(ok2.id).finish, rt::FinishReason::Length);
}

TEST_F(Requests, CacheTooSmallForOneBlockFailsAtCreation) {
  EXPECT_THROW(engine(100), std::runtime_error);
}

// The embedding API's speculative options are checked when the engine is made, each refusal
// naming what is wrong (cbc run and cbc.Engine check them earlier, with their flags' names).
TEST_F(Requests, BadSpeculativeOptionsFailAtCreation) {
  struct Case {
    std::function<void(rt::EngineOptions &)> spoil;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](auto &o) { o.speculative = "eagle"; }, "unknown speculative method 'eagle'"},
      {[](auto &o) { o.speculative = "mtp"; }, "--speculative mtp is not supported yet"},
      {[](auto &o) { o.speculative = "ngram", o.num_speculative_tokens = 0; }, "num_speculative_tokens must be in [1, 64]"},
      {[](auto &o) { o.speculative = "ngram", o.ngram_min = 3, o.ngram_max = 2; }, "1 <= ngram_min <= ngram_max"},
      {[](auto &o) { o.speculative = "ngram", o.speculative_max_tokens = -1; }, "speculative_max_tokens must be at least 0"}};
  for (const Case &c : cases) {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    c.spoil(o);
    try {
      rt::Engine::create(*artefact_, {fixtureDir("llama"), 0}, o);
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const std::runtime_error &e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

TEST_F(Requests, CancelOfUnknownOrFinishedIdsReturnsFalse) {
  auto e = engine();
  EXPECT_FALSE(e->cancel(0));
  EXPECT_FALSE(e->cancel(-1));
  EXPECT_FALSE(e->cancel(12345));
  rt::AddResult r = e->add_request({1, 2, 3}, greedy(2));
  auto out = drain(*e);
  EXPECT_EQ(out.at(r.id).finish, rt::FinishReason::Length);
  EXPECT_FALSE(e->cancel(r.id)) << "already finished and collected";
  EXPECT_EQ(e->stats().cancelled, 0);
}

TEST_F(Requests, CancelWaitingAndRunningRequests) {
  auto e = engine(8ll << 20, 8);
  rt::AddResult a = e->add_request(std::vector<int32_t>(20, 11), greedy(10));
  rt::AddResult b = e->add_request({1, 2, 3, 4}, greedy(10));
  rt::AddResult c = e->add_request({9, 8, 7}, greedy(3));
  e->step(); // a prefills 8 tokens; b and c wait
  EXPECT_EQ(e->num_running(), 1u);
  EXPECT_EQ(e->num_waiting(), 2u);
  EXPECT_TRUE(e->cancel(b.id)); // waiting
  EXPECT_FALSE(e->cancel(b.id)) << "twice";
  for (int i = 0; i < 4; ++i)
    e->step();
  EXPECT_TRUE(e->cancel(a.id)); // running, a few tokens in
  auto out = drain(*e);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.at(a.id).finish, rt::FinishReason::Cancelled);
  EXPECT_LT(out.at(a.id).tokens.size(), 10u);
  EXPECT_EQ(out.at(b.id).finish, rt::FinishReason::Cancelled);
  EXPECT_TRUE(out.at(b.id).tokens.empty());
  EXPECT_EQ(out.at(c.id).finish, rt::FinishReason::Length);
  EXPECT_EQ(e->stats().cancelled, 2);
  EXPECT_EQ(e->cache().usedBlocks(), 0);
}

TEST_F(Requests, StopTokenIdsAndEosEndGeneration) {
  std::vector<int32_t> prompt = {7, 3, 200, 45, 12, 9, 31};
  // First run: what the model says, unconstrained.
  auto e0 = engine();
  rt::RequestId id0 = e0->add_request(prompt, greedy(12)).id;
  std::vector<int32_t> natural = drain(*e0).at(id0).tokens;
  ASSERT_EQ(natural.size(), 12u);

  // Stop at the token the model emits at position k (its first occurrence).
  size_t k = 4;
  while (k < natural.size() &&
         std::find(natural.begin(), natural.begin() + k, natural[k]) != natural.begin() + k)
    ++k;
  ASSERT_LT(k, natural.size()) << "no fresh token to stop on";
  {
    auto e = engine();
    rt::SamplingParams p = greedy(12);
    p.stop_token_ids = {natural[k], 100000};
    rt::RequestId id = e->add_request(prompt, p).id;
    auto out = drain(*e).at(id);
    EXPECT_EQ(out.finish, rt::FinishReason::Stop);
    EXPECT_EQ(out.tokens, std::vector<int32_t>(natural.begin(), natural.begin() + k + 1))
        << "generation stops right after the stop token, which is reported";
  }
  // The same token as an EOS id. The fixture's EOS is fixed, so serve a copy of the artefact
  // whose metadata names the token as EOS.
  {
    auto e = engineWithEos(natural[k]);
    rt::RequestId id = e->add_request(prompt, greedy(12, /*ignoreEos=*/false)).id;
    rt::RequestId ignoring = e->add_request(prompt, greedy(12, /*ignoreEos=*/true)).id;
    auto out = drain(*e);
    EXPECT_EQ(out.at(id).finish, rt::FinishReason::Eos);
    EXPECT_EQ(out.at(id).tokens, std::vector<int32_t>(natural.begin(), natural.begin() + k + 1));
    EXPECT_EQ(out.at(ignoring).finish, rt::FinishReason::Length);
    EXPECT_EQ(out.at(ignoring).tokens, natural) << "ignore_eos runs to max_new_tokens";
  }
  // EOS wins over a stop id naming the same token.
  {
    auto e = engineWithEos(natural[k]);
    rt::SamplingParams p = greedy(12, false);
    p.stop_token_ids = {natural[k]};
    rt::RequestId id = e->add_request(prompt, p).id;
    EXPECT_EQ(drain(*e).at(id).finish, rt::FinishReason::Eos);
  }
  // max_new_tokens alone.
  {
    auto e = engine();
    rt::RequestId id = e->add_request(prompt, greedy(3)).id;
    auto out = drain(*e).at(id);
    EXPECT_EQ(out.finish, rt::FinishReason::Length);
    EXPECT_EQ(out.tokens, std::vector<int32_t>(natural.begin(), natural.begin() + 3));
  }
}

// A constraint over the ids below `limit` that ends its text after `length` tokens: the
// engine's structured-output hooks, without a grammar library.
class CountingConstraint : public rt::TokenConstraint {
public:
  CountingConstraint(int32_t limit, int64_t length) : limit_(limit), length_(length) {}
  void allowed(std::vector<uint32_t> &bits, int64_t vocab) override {
    bits.assign((size_t)((vocab + 31) / 32), 0u);
    for (int32_t i = 0; i < limit_; ++i)
      bits[i / 32] |= 1u << (i % 32);
  }
  bool accept(int32_t token) override {
    if (token >= limit_)
      return false;
    taken_.push_back(token);
    return true;
  }
  bool terminated() const override { return (int64_t)taken_.size() >= length_; }
  std::unique_ptr<rt::TokenConstraint> fork() const override { return std::make_unique<CountingConstraint>(*this); }
  std::vector<int32_t> taken_;

private:
  int32_t limit_;
  int64_t length_;
};

TEST_F(Requests, AConstraintMasksEveryRowAndEndsTheText) {
  auto e = engine();
  rt::SamplingParams p = greedy(40);
  p.temperature = 1.0;
  p.n = 3; // each fork its own copy, advanced by its own tokens
  auto c = std::make_shared<CountingConstraint>(7, 5);
  p.constraint = c;
  rt::RequestId id = e->add_request({5, 17, 200, 33}, p).id;
  rt::SamplingParams free = greedy(40);
  free.temperature = 1.0;
  rt::RequestId other = e->add_request({5, 17, 200, 33}, free).id;
  auto out = drain(*e);
  ASSERT_EQ(out.size(), 4u);
  std::set<std::vector<int32_t>> seen;
  for (auto &[rid, o] : out) {
    if (rid == other) {
      EXPECT_EQ(o.tokens.size(), 40u);
      EXPECT_TRUE(std::any_of(o.tokens.begin(), o.tokens.end(), [](int32_t t) { return t >= 7; }));
      continue;
    }
    EXPECT_EQ(o.finish, rt::FinishReason::Stop) << rid;
    EXPECT_EQ(o.tokens.size(), 5u) << rid;
    EXPECT_TRUE(std::all_of(o.tokens.begin(), o.tokens.end(), [](int32_t t) { return t < 7; })) << rid;
    seen.insert(o.tokens);
  }
  EXPECT_EQ(c->taken_, out[id].tokens); // the parent's own copy saw exactly its tokens
  EXPECT_GT(seen.size(), 1u);           // forks sampled their own ways
}

TEST_F(Requests, TokenEventsStreamEveryTokenOnce) {
  auto e = engine(8ll << 20, 8);
  std::vector<rt::RequestId> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(e->add_request(std::vector<int32_t>(3 + 4 * i, 20 + i), greedy(2 + i)).id);
  std::map<rt::RequestId, std::vector<int32_t>> streamed;
  std::map<rt::RequestId, int> finishedEvents;
  while (!e->idle())
    for (const rt::TokenEvent &ev : e->step()) {
      streamed[ev.id].push_back(ev.token);
      if (ev.finished) {
        finishedEvents[ev.id]++;
        EXPECT_EQ(ev.reason, rt::FinishReason::Length);
      }
    }
  auto out = drain(*e);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(streamed[ids[i]], out.at(ids[i]).tokens);
    EXPECT_EQ(finishedEvents[ids[i]], 1);
    EXPECT_EQ(out.at(ids[i]).tokens.size(), 2 + i);
  }
}

// Every preemption a request reports is in the engine's count too, steps that end up running
// nothing (every scheduled request preempted) included: the run summary adds these up.
TEST_F(Requests, PreemptionsAreCountedEvenInStepsThatRunNothing) {
  int64_t total = 0;
  for (const char *family : {"llama", "gpt_oss", "olmo_hybrid"}) {
    const rt::Artefact &a = committedArtefact(family);
    const rt::CachePlan &plan = a.cache_plan;
    int64_t bytesPerBlockRow = 0;
    for (const rt::CacheLayer &l : plan.layers)
      bytesPerBlockRow += l.elemsPerToken() * 4 * plan.block_size;
    int64_t B = plan.block_size;
    for (int64_t budget : {1, 3, 5, 8, 16, 32}) {
      for (int blocks : {2, 3, 4, 6}) {
        rt::EngineOptions o;
        o.backend = "cpu";
        o.threads = 1;
        o.max_batch_tokens = budget;
        o.cache_memory_bytes = blocks * bytesPerBlockRow;
        std::unique_ptr<rt::Engine> e;
        try {
          e = rt::Engine::create(a, {fixtureDir(family), 0}, o);
        } catch (const std::runtime_error &) {
          continue; // too small for this family's state slots
        }
        std::vector<rt::RequestId> ids;
        for (int i = 0; i < 6; ++i) {
          int64_t len = 1 + (i * 7 + blocks * 3) % (B + B / 2);
          ids.push_back(e->add_request(std::vector<int32_t>(len, 30 + i), greedy(B / 2 + i)).id);
        }
        auto out = drain(*e);
        int64_t reported = 0;
        for (rt::RequestId id : ids)
          reported += out.at(id).preemptions;
        EXPECT_EQ(e->stats().preemptions, reported) << family << ", budget " << budget << ", " << blocks << " blocks";
        total += reported;
      }
    }
  }
  EXPECT_GT(total, 0) << "the tiny caches are meant to force preemptions";
}

} // namespace

// OpenBLAS's own thread count follows EngineOptions::threads: before, --threads 1 still ran
// every GEMM on all cores and idle BLAS threads spun between steps.

// --threads owns the cores: BLAS runs on the calling thread, whatever the pool's size.
TEST_F(Requests, BlasRunsOnTheCallingThread) {
  for (int threads : {2, 1, 0}) {
    openblas_set_num_threads(2);
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = threads;
    auto e = rt::Engine::create(*artefact_, {fixtureDir("llama"), 0}, o);
    EXPECT_EQ(openblas_get_num_threads(), 1) << "--threads " << threads;
  }
}

} // namespace cbc::test
