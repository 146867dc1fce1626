// Scheduler decisions on a hand-built CacheCoordinator: token budget, decode-first order, chunked
// prefill, FIFO admission, preemption by recompute, and cancel.
#include "runtime/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

namespace cbc::rt {
namespace {

CachePlan onePlan(int blockSize, CacheGroup::Retention retention = CacheGroup::All,
                  int64_t tokens = 0) {
  CachePlan p;
  p.block_size = blockSize;
  CacheGroup g;
  g.id = 0;
  g.retention = retention;
  g.tokens = tokens;
  g.layers = {0};
  p.groups = {g};
  CacheLayer l;
  l.rows = {{"k", 4}, {"v", 4}};
  p.layers = {l};
  return p;
}

// Structural checks every plan must pass.
void checkPlan(const StepPlan &plan, int64_t budget, int64_t maxRequests) {
  int64_t tokens = 0;
  for (const ScheduledChunk &c : plan.chunks) {
    EXPECT_GT(c.count, 0);
    EXPECT_EQ(c.start, c.request->computed) << "chunks continue where the cache ends";
    EXPECT_LE(c.start + c.count, c.request->total());
    EXPECT_EQ(c.sample, c.start + c.count == c.request->total());
    EXPECT_EQ(c.request->status, RequestStatus::Running);
    tokens += c.count;
  }
  EXPECT_EQ(tokens, plan.tokens);
  EXPECT_LE(plan.tokens, budget);
  EXPECT_LE((int64_t)plan.chunks.size(), maxRequests);
  for (size_t i = 0; i < plan.chunks.size(); ++i)
    for (size_t j = i + 1; j < plan.chunks.size(); ++j)
      EXPECT_NE(plan.chunks[i].request, plan.chunks[j].request) << "a request twice in one step";
}

// Owns the requests and plays the engine's part: check the plan, commit, then append a token
// to every request whose chunk sampled, finishing it at max_new_tokens.
class Harness {
public:
  Harness(int blockSize, int32_t blocks, int64_t budget, int64_t maxRequests = 256)
      // Without prefix caching: the prompts here share their tokens, and the policy under test is
      // the one of requests computed from scratch (prefix_cache_test.cpp tests the caching).
      : cache(onePlan(blockSize), blocks, 64, 64, 1024), sched({budget, maxRequests, false}, cache), budget(budget),
        maxRequests(maxRequests) {}

  Request *add(int64_t promptLen, int64_t maxNew = 4) {
    auto r = std::make_unique<Request>();
    r->id = (RequestId)reqs.size();
    r->arrival = reqs.size();
    for (int64_t i = 0; i < promptLen; ++i)
      r->prompt.push_back((int32_t)(i % 7));
    r->params.max_new_tokens = maxNew;
    reqs.push_back(std::move(r));
    sched.enqueue(reqs.back().get());
    return reqs.back().get();
  }

  StepPlan step() {
    StepPlan plan = sched.schedule();
    checkPlan(plan, budget, maxRequests);
    commit(plan);
    return plan;
  }

  // Commits a plan as the engine would: every sampling chunk gets a token, and a request that
  // reaches max_new_tokens finishes.
  void commit(const StepPlan &plan) {
    sched.commit(plan);
    for (const ScheduledChunk &c : plan.chunks)
      if (c.sample) {
        c.request->generated.push_back(42);
        if ((int64_t)c.request->generated.size() >= c.request->params.max_new_tokens)
          sched.finish(c.request);
      }
  }

  const ScheduledChunk *find(const StepPlan &plan, const Request *r) const {
    for (const ScheduledChunk &c : plan.chunks)
      if (c.request == r)
        return &c;
    return nullptr;
  }

  CacheCoordinator cache;
  Scheduler sched;
  int64_t budget, maxRequests;
  std::vector<std::unique_ptr<Request>> reqs;
};

TEST(Scheduler, RespectsTokenBudgetAndRequestLimit) {
  for (int64_t budget : {1, 5, 16}) {
    for (int64_t maxRequests : {1, 3, 64}) {
      Harness h(4, 1000, budget, maxRequests);
      std::mt19937 rng(budget * 100 + maxRequests);
      for (int i = 0; i < 20; ++i)
        h.add(1 + rng() % 30, 1 + rng() % 5);
      int steps = 0;
      while (!h.sched.idle()) {
        StepPlan plan = h.sched.schedule();
        checkPlan(plan, budget, maxRequests);
        ASSERT_FALSE(plan.chunks.empty()) << "no progress with an ample cache";
        EXPECT_TRUE(plan.tokens == budget || (int64_t)plan.chunks.size() == maxRequests ||
                    h.sched.numWaiting() == 0)
            << "budget left unused while requests wait";
        h.commit(plan);
        ASSERT_LT(++steps, 10000);
      }
      for (auto &r : h.reqs)
        EXPECT_EQ((int64_t)r->generated.size(), r->params.max_new_tokens);
      EXPECT_EQ(h.cache.usedBlocks(), 0);
    }
  }
}

TEST(Scheduler, ChunkedPrefillSplitsALongPrompt) {
  Harness h(4, 100, 16);
  Request *r = h.add(37, 2);
  StepPlan p1 = h.step();
  ASSERT_EQ(p1.chunks.size(), 1u);
  EXPECT_EQ(p1.chunks[0].start, 0);
  EXPECT_EQ(p1.chunks[0].count, 16);
  EXPECT_FALSE(p1.chunks[0].sample);
  EXPECT_EQ(r->computed, 16);
  StepPlan p2 = h.step();
  ASSERT_EQ(p2.chunks.size(), 1u);
  EXPECT_EQ(p2.chunks[0].start, 16);
  EXPECT_EQ(p2.chunks[0].count, 16);
  EXPECT_FALSE(p2.chunks[0].sample);
  StepPlan p3 = h.step();
  ASSERT_EQ(p3.chunks.size(), 1u);
  EXPECT_EQ(p3.chunks[0].start, 32);
  EXPECT_EQ(p3.chunks[0].count, 5);
  EXPECT_TRUE(p3.chunks[0].sample);
  EXPECT_EQ(r->generated.size(), 1u);
  StepPlan p4 = h.step(); // decode
  ASSERT_EQ(p4.chunks.size(), 1u);
  EXPECT_EQ(p4.chunks[0].start, 37);
  EXPECT_EQ(p4.chunks[0].count, 1);
  EXPECT_TRUE(p4.chunks[0].sample);
  EXPECT_EQ(r->status, RequestStatus::Finished);
  EXPECT_TRUE(h.sched.idle());
  EXPECT_EQ(h.cache.usedBlocks(), 0);
}

TEST(Scheduler, DecodesFirstThenPrefillRemaindersThenAdmissions) {
  Harness h(4, 100, 8);
  Request *old = h.add(20, 4); // oldest: a long prefill
  StepPlan p1 = h.step();
  ASSERT_EQ(p1.chunks.size(), 1u);
  EXPECT_EQ(p1.chunks[0].count, 8);
  Request *young = h.add(2, 4); // younger, short: it will be decoding while `old` prefills
  StepPlan p2 = h.step();
  // Running prefill remainder before the new admission.
  ASSERT_EQ(p2.chunks.size(), 1u) << "the remainder takes the whole budget";
  EXPECT_EQ(p2.chunks[0].request, old);
  EXPECT_EQ(p2.chunks[0].count, 8);
  StepPlan p3 = h.step(); // old: 4 left, young admitted with 2
  ASSERT_EQ(p3.chunks.size(), 2u);
  EXPECT_EQ(p3.chunks[0].request, old);
  EXPECT_EQ(p3.chunks[0].count, 4);
  EXPECT_TRUE(p3.chunks[0].sample);
  EXPECT_EQ(p3.chunks[1].request, young);
  EXPECT_EQ(p3.chunks[1].count, 2);

  // Now both decode; a third request arrives with a long prompt.
  Request *third = h.add(30, 1);
  StepPlan p4 = h.step();
  ASSERT_EQ(p4.chunks.size(), 3u);
  EXPECT_EQ(p4.chunks[0].request, old);
  EXPECT_EQ(p4.chunks[0].count, 1);
  EXPECT_EQ(p4.chunks[1].request, young);
  EXPECT_EQ(p4.chunks[1].count, 1);
  EXPECT_EQ(p4.chunks[2].request, third);
  EXPECT_EQ(p4.chunks[2].count, 6);
  EXPECT_FALSE(p4.chunks[2].sample);

  // A decoding younger request goes before an older request's prefill remainder.
  Request *fourth = h.add(3, 10);
  StepPlan p5 = h.step();
  ASSERT_GE(p5.chunks.size(), 3u);
  EXPECT_EQ(p5.chunks[0].request, old);
  EXPECT_EQ(p5.chunks[1].request, young);
  EXPECT_EQ(p5.chunks[2].request, third);
  EXPECT_EQ(p5.chunks[2].start, 6);
  EXPECT_EQ(p5.chunks[2].count, 6);
  EXPECT_EQ(h.find(p5, fourth), nullptr) << "no budget left for admissions";
}

TEST(Scheduler, ADecodingYoungerRequestPrecedesAnOlderPrefill) {
  Harness h(4, 100, 6);
  Request *a = h.add(2, 10);
  h.step(); // a prefilled, decoding from now on
  Request *b = h.add(2, 10);
  Request *c = h.add(20, 10);
  StepPlan p = h.step(); // a decodes, b admitted, c admitted with the rest
  ASSERT_EQ(p.chunks.size(), 3u);
  EXPECT_EQ(p.chunks[0].request, a);
  EXPECT_EQ(p.chunks[1].request, b);
  EXPECT_EQ(p.chunks[2].request, c);
  EXPECT_EQ(p.chunks[2].count, 3);
  p = h.step(); // a and b decode, then c's prefill remainder
  ASSERT_EQ(p.chunks.size(), 3u);
  EXPECT_EQ(p.chunks[0].request, a);
  EXPECT_EQ(p.chunks[1].request, b);
  EXPECT_EQ(p.chunks[2].request, c);
  EXPECT_EQ(p.chunks[2].start, 3);
  EXPECT_EQ(p.chunks[2].count, 4);

  // Order by kind, not by arrival: an older request's prefill remainder goes after a younger
  // request's decode. (Reached after preemptions; built directly here.)
  Harness g(4, 100, 4);
  Request *o = g.add(10, 5); // older, long prompt
  Request *y = g.add(1, 5);  // younger, one token
  StepPlan q = g.step();     // o takes the whole budget
  ASSERT_EQ(q.chunks.size(), 1u);
  q = g.step(); // o: 4 more; budget gone
  ASSERT_EQ(q.chunks.size(), 1u);
  EXPECT_EQ(q.chunks[0].request, o);
  q = g.step(); // o: last 2 (sample); y admitted with 1 (sample)
  ASSERT_EQ(q.chunks.size(), 2u);
  EXPECT_EQ(q.chunks[1].request, y);
  o->generated.clear(); // make o look like a prefill remainder again
  o->computed = 8;
  q = g.sched.schedule();
  ASSERT_EQ(q.chunks.size(), 2u);
  EXPECT_EQ(q.chunks[0].request, y) << "the decode goes first";
  EXPECT_EQ(q.chunks[1].request, o);
  EXPECT_EQ(q.chunks[1].count, 2);
}

TEST(Scheduler, AdmissionIsFifoAndAHeadThatDoesNotFitBlocksTheRest) {
  // 6 blocks of 4 tokens. A holds 4 blocks; the head of the queue needs 3, a younger one 1.
  Harness h(4, 6, 64);
  Request *a = h.add(16, 3);
  h.step();
  ASSERT_EQ(h.cache.freeBlocks(0), 2);
  Request *big = h.add(12, 1);
  Request *small = h.add(3, 1);
  // a's decode needs a fifth block; big cannot fit; small would, but waits behind big.
  StepPlan p = h.step();
  EXPECT_NE(h.find(p, a), nullptr);
  EXPECT_EQ(h.find(p, big), nullptr);
  EXPECT_EQ(h.find(p, small), nullptr) << "FIFO: a younger request must not overtake the head";
  EXPECT_EQ(big->status, RequestStatus::Waiting);
  EXPECT_EQ(small->status, RequestStatus::Waiting);
  EXPECT_EQ(h.sched.numWaiting(), 2u);
  p = h.step(); // a finishes (3 tokens); its blocks come back after this step
  EXPECT_EQ(a->status, RequestStatus::Finished);
  p = h.step();
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[0].request, big);
  EXPECT_EQ(p.chunks[1].request, small);
}

TEST(Scheduler, PreemptsTheYoungestRunningRequestAndResumesItInArrivalOrder) {
  // 5 blocks of 4 tokens; three requests of 4 prompt tokens each take one block, decoding
  // needs a second block each.
  Harness h(4, 5, 64);
  Request *a = h.add(4, 2), *b = h.add(4, 2), *c = h.add(4, 6);
  StepPlan p = h.step();
  ASSERT_EQ(p.chunks.size(), 3u);
  ASSERT_EQ(h.cache.freeBlocks(0), 2);
  Request *d = h.add(2, 1); // arrives later than c

  p = h.step(); // a and b take the two free blocks (and finish); c, the youngest, is preempted
  EXPECT_EQ(h.sched.preemptions(), 1);
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], c);
  EXPECT_EQ(c->status, RequestStatus::Waiting);
  EXPECT_EQ(c->computed, 0) << "recompute: the cache is dropped";
  EXPECT_EQ(c->preemptions, 1);
  EXPECT_EQ(c->generated.size(), 1u) << "generated tokens are kept and replayed";
  EXPECT_FALSE((c->slot >= 0));
  EXPECT_EQ(h.find(p, c), nullptr);
  EXPECT_EQ(h.find(p, d), nullptr) << "a preempting step admits nothing";
  EXPECT_NE(h.find(p, a), nullptr);
  EXPECT_NE(h.find(p, b), nullptr);
  EXPECT_EQ(h.sched.numRunning(), 0u);
  ASSERT_EQ(h.sched.numWaiting(), 2u);

  EXPECT_EQ(a->status, RequestStatus::Finished);
  EXPECT_EQ(b->status, RequestStatus::Finished);
  EXPECT_EQ(h.cache.usedBlocks(), 0);

  // c is requeued before d, which arrived after it: c resumes first, replaying its prompt
  // and its generated token in one chunk.
  p = h.step();
  EXPECT_EQ(h.cache.freeBlocks(0), 3) << "c holds 2 blocks; d finished at once";
  const ScheduledChunk *rc = h.find(p, c);
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(rc->start, 0);
  EXPECT_EQ(rc->count, 5);
  EXPECT_TRUE(rc->sample);
  EXPECT_NE(h.find(p, d), nullptr) << "d is admitted behind c";
  EXPECT_LT(rc - p.chunks.data(), h.find(p, d) - p.chunks.data());
  EXPECT_EQ(c->generated.size(), 2u);

  while (!h.sched.idle())
    h.step();
  EXPECT_EQ(a->generated.size(), 2u);
  EXPECT_EQ(b->generated.size(), 2u);
  EXPECT_EQ(c->generated.size(), 6u);
  EXPECT_EQ(h.cache.usedBlocks(), 0);
}

TEST(Scheduler, OlderRequestTakesBlocksFromYoungerOneScheduledEarlier) {
  // y (younger) decodes and is placed in the plan first; o (older) then needs a block that
  // only y holds: y is dropped from the plan and its tokens return to the budget.
  Harness h(4, 4, 16);
  Request *o = h.add(8, 3); // 2 blocks
  Request *y = h.add(4, 5); // 1 block
  StepPlan p = h.step();    // both prefilled and sampled once
  ASSERT_EQ(p.chunks.size(), 2u);
  ASSERT_EQ(h.cache.freeBlocks(0), 1);
  // o: total 9 -> decode needs a third block; y: total 5 -> a second block. Make o a prefill
  // remainder, so y (a decode) is scheduled first and grabs the last free block.
  o->generated.clear();
  o->prompt.resize(12, 3);
  p = h.sched.schedule();
  checkPlan(p, 16, 256);
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], y);
  EXPECT_EQ(h.find(p, y), nullptr) << "the victim's chunk leaves the plan";
  const ScheduledChunk *oc = h.find(p, o);
  ASSERT_NE(oc, nullptr);
  EXPECT_EQ(oc->start, 8);
  EXPECT_EQ(oc->count, 4);
  EXPECT_EQ(p.tokens, 4);
  EXPECT_EQ(y->computed, 0);
  EXPECT_EQ(y->status, RequestStatus::Waiting);
}

TEST(Scheduler, CancelWaitingAndRunningRequestsFreesTheCache) {
  Harness h(4, 10, 8);
  Request *a = h.add(10, 5), *b = h.add(3, 5), *c = h.add(3, 5);
  StepPlan p = h.step(); // a: 8 tokens; b, c wait
  ASSERT_EQ(h.sched.numRunning(), 1u);
  ASSERT_EQ(h.sched.numWaiting(), 2u);
  EXPECT_TRUE(h.sched.remove(b)); // waiting
  EXPECT_EQ(b->status, RequestStatus::Finished);
  EXPECT_EQ(h.sched.numWaiting(), 1u);
  EXPECT_FALSE(h.sched.remove(b)) << "already gone";
  EXPECT_GT(h.cache.usedBlocks(), 0);
  EXPECT_TRUE(h.sched.remove(a)); // running
  EXPECT_EQ(a->status, RequestStatus::Finished);
  EXPECT_FALSE((a->slot >= 0));
  EXPECT_EQ(h.cache.usedBlocks(), 0);
  EXPECT_EQ(h.sched.numRunning(), 0u);
  p = h.step();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].request, c);
  EXPECT_TRUE(h.sched.remove(c));
  EXPECT_TRUE(h.sched.idle());
  EXPECT_EQ(h.cache.usedBlocks(), 0);
  Request stranger;
  stranger.id = 999;
  EXPECT_FALSE(h.sched.remove(&stranger));
}

TEST(Scheduler, CancelAPreemptedRequestWhileItWaits) {
  Harness h(4, 2, 64);
  Request *a = h.add(4, 5), *b = h.add(4, 5);
  h.step();
  StepPlan p = h.step(); // a needs a second block: b, the youngest, is preempted
  ASSERT_EQ(p.preempted.size(), 1u);
  ASSERT_EQ(p.preempted[0], b);
  EXPECT_TRUE(h.sched.remove(b));
  EXPECT_EQ(h.sched.numWaiting(), 0u);
  while (!h.sched.idle())
    h.step();
  EXPECT_EQ(a->generated.size(), 5u);
  EXPECT_EQ(h.cache.usedBlocks(), 0);
}

// A randomised run against a tiny cache: every request eventually finishes, plans stay
// well-formed, and no block leaks.
TEST(Scheduler, RandomWorkloadUnderCachePressure) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    std::mt19937 rng(seed);
    Harness h(4, 8, 12, 6);
    int added = 0, steps = 0;
    while (added < 40 || !h.sched.idle()) {
      if (added < 40 && rng() % 2) {
        // The longest request (prompt + new tokens) needs 8 blocks: it always fits alone.
        h.add(1 + rng() % 24, 1 + rng() % 8);
        ++added;
      }
      StepPlan plan = h.sched.schedule();
      checkPlan(plan, 12, 6);
      if (!h.sched.idle())
        ASSERT_FALSE(plan.chunks.empty()) << "stalled at step " << steps;
      h.commit(plan);
      ASSERT_LT(++steps, 5000);
    }
    EXPECT_GT(h.sched.preemptions(), 0) << "the cache is meant to be too small";
    for (auto &r : h.reqs) {
      EXPECT_EQ(r->status, RequestStatus::Finished);
      EXPECT_EQ((int64_t)r->generated.size(), r->params.max_new_tokens);
    }
    EXPECT_EQ(h.cache.usedBlocks(), 0);
  }
}

} // namespace
} // namespace cbc::rt
