// The cache's verbs on a real model, through the CPU backend: a request forked after its prompt
// continues exactly as its parent does (the coordinator shares the whole blocks and the state,
// the backend copies the partial block, the state is copied on write), and a step kept for a
// rollback can be undone and retried. olmo_hybrid has both kinds of cache: attention layers in a
// paged group and gated delta nets in the state group.
#include "runtime/cache/coordinator.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/scheduler.h"
#include "runtime/weights.h"
#include "test/support/test_support.h"

#include <gtest/gtest.h>

#include <memory>

namespace cbc::rt {
namespace {

class Fork : public ::testing::Test {
protected:
  void SetUp() override {
    artefact_ = std::make_unique<Artefact>(test::committedArtefact("olmo_hybrid"));
    ASSERT_EQ(artefact_->cache_plan.groups.size(), 2u);
    ASSERT_EQ(artefact_->cache_plan.groups[1].kind, CacheGroup::State);
    backend_ = makeCpuBackend(*artefact_, WeightStore::load(*artefact_, {test::fixtureDir("olmo_hybrid"), 0}),
                              {64, 8}, 1);
    backend_->allocateCache(kBlocks, kUnits);
    cache_ = std::make_unique<CacheCoordinator>(artefact_->cache_plan, kBlocks, kUnits, 4, 16);
  }

  Request *request(std::vector<int32_t> prompt) {
    requests_.push_back(std::make_unique<Request>());
    Request *r = requests_.back().get();
    r->prompt = std::move(prompt);
    r->slot = cache_->acquireSlot();
    return r;
  }

  // One step over `chunks` ({request, tokens from its computed position}); the logits of each.
  std::vector<std::vector<float>> step(const std::vector<std::pair<Request *, int64_t>> &chunks,
                                       bool keepStates = false) {
    StepPlan plan;
    for (auto [r, count] : chunks) {
      EXPECT_TRUE(cache_->allocate(r->slot, r->computed + count));
      plan.chunks.push_back({r, r->computed, count, true});
      plan.tokens += count;
    }
    buildStepBatch(plan, *cache_, batch_, keepStates);
    std::vector<float> logits;
    backend_->run(batch_, logits);
    int64_t vocab = artefact_->meta.vocab_size;
    std::vector<std::vector<float>> rows;
    for (size_t i = 0; i < chunks.size(); ++i)
      rows.emplace_back(logits.begin() + i * vocab, logits.begin() + (i + 1) * vocab);
    return rows;
  }

  void commit(Request *r, int64_t count) {
    r->computed += count;
    cache_->commit(r->slot, r->computed);
  }

  static constexpr int32_t kBlocks = 32, kUnits = 8;
  std::unique_ptr<Artefact> artefact_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<CacheCoordinator> cache_;
  std::vector<std::unique_ptr<Request>> requests_;
  StepBatch batch_;
};

// The prompt ends inside a block, so the fork needs the backend's copy of it; without the copy
// the child would attend to whatever the new block held.
TEST_F(Fork, AForkedRequestContinuesAsItsParent) {
  Request *parent = request({5, 9, 14, 3, 22, 7, 11});
  step({{parent, 7}});
  commit(parent, 7);

  Request *child = request({});
  std::vector<UnitCopy> copies;
  ASSERT_TRUE(cache_->fork(parent->slot, child->slot, copies));
  ASSERT_EQ(copies.size(), 1u) << "the partial block of the paged group";
  backend_->copyUnits(copies);
  child->prompt = parent->prompt;
  child->computed = parent->computed;

  // Both take the same next token: the same logits, the child's states written to a new unit.
  for (Request *r : {parent, child})
    r->prompt.push_back(40);
  std::vector<std::vector<float>> logits = step({{parent, 1}, {child, 1}});
  EXPECT_EQ(logits[0], logits[1]);
  EXPECT_EQ(batch_.state_in[0], batch_.state_in[1]) << "both read the shared state";
  EXPECT_NE(batch_.state_out[0], batch_.state_out[1]) << "and write their own";
  commit(parent, 1);
  commit(child, 1);

  // Then they diverge and each goes on from its own cache: a parent alone, replayed from scratch
  // with the child's tokens, gives the child's logits.
  parent->prompt.push_back(41);
  child->prompt.push_back(60);
  std::vector<std::vector<float>> apart = step({{parent, 1}, {child, 1}});
  commit(parent, 1);
  commit(child, 1);
  Request *alone = request(child->prompt);
  std::vector<std::vector<float>> replay = step({{alone, (int64_t)alone->prompt.size()}});
  for (size_t i = 0; i < replay[0].size(); ++i)
    ASSERT_NEAR(replay[0][i], apart[1][i], 1e-3) << "logit " << i;

  for (Request *r : {parent, child, alone})
    cache_->free(r->slot);
  EXPECT_EQ(cache_->usedBlocks(), 0);
  EXPECT_EQ(cache_->usedStateUnits(), 0);
}

// A step that keeps its input (a speculative step) and is rolled back leaves the cache as it was:
// the retried step gives the logits the first attempt gave.
TEST_F(Fork, ARolledBackStepCanBeRetried) {
  Request *r = request({5, 9, 14, 3, 22, 7, 11});
  step({{r, 7}});
  commit(r, 7);
  r->prompt.push_back(40);
  std::vector<std::vector<float>> first = step({{r, 1}}, /*keepStates=*/true);
  ASSERT_NE(batch_.state_in[0], batch_.state_out[0]);
  ASSERT_TRUE(cache_->truncate(r->slot, r->computed));
  std::vector<std::vector<float>> again = step({{r, 1}});
  EXPECT_EQ(first, again);
  commit(r, 1);
  cache_->free(r->slot);
  EXPECT_EQ(cache_->usedStateUnits(), 0);
}

TEST_F(Fork, CopiesNamingNoUnitAreRefused) {
  EXPECT_THROW(backend_->copyUnits({{5, 0, 1}}), std::logic_error);
  EXPECT_THROW(backend_->copyUnits({{0, 0, kBlocks}}), std::logic_error);
  EXPECT_THROW(backend_->copyUnits({{1, -1, 0}}), std::logic_error);
  EXPECT_NO_THROW(backend_->copyUnits({{1, 0, kUnits - 1}}));
  std::vector<uint8_t> host(1 << 20);
  EXPECT_THROW(backend_->transferUnits(5, {0}, host.data(), true), std::logic_error);
  EXPECT_THROW(backend_->transferUnits(0, {kBlocks}, host.data(), true), std::logic_error);
  EXPECT_THROW(backend_->transferUnits(1, {-1}, host.data(), false), std::logic_error);
}

// A request's units saved to host memory and loaded into other units (swapping) continue it
// exactly: the next token's logits are those of the request never moved.
TEST_F(Fork, UnitsSavedToHostAndLoadedElsewhereContinueTheRequest) {
  Request *kept = request({5, 9, 14, 3, 22, 7, 11, 2, 8, 30, 1, 4, 6, 19, 23, 17, 12, 13});
  Request *moved = request(kept->prompt);
  step({{kept, 18}, {moved, 18}});
  commit(kept, 18);
  commit(moved, 18);
  std::vector<UnitRef> units;
  SwapLayout layout = cache_->swapLayout(moved->slot, units);
  std::vector<uint8_t> host;
  for (const UnitRef &u : units) {
    int64_t bytes = artefact_->cache_plan.groups[u.group].kind == CacheGroup::State
                        ? backend_->stateBytesPerUnit()
                        : backend_->cacheBytesPerToken(u.group) * artefact_->cache_plan.block_size;
    size_t at = host.size();
    host.resize(at + bytes);
    ASSERT_TRUE(backend_->transferUnits(u.group, {u.unit}, host.data() + at, true));
  }
  // Another request takes the freed units and overwrites them; the moved one comes back elsewhere.
  cache_->free(moved->slot);
  Request *other = request({40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58});
  step({{other, 19}});
  commit(other, 19);
  moved->slot = cache_->acquireSlot();
  std::vector<UnitRef> fresh;
  ASSERT_TRUE(cache_->restore(moved->slot, layout, fresh));
  ASSERT_EQ(fresh.size(), units.size());
  size_t at = 0;
  for (const UnitRef &u : fresh) {
    ASSERT_TRUE(backend_->transferUnits(u.group, {u.unit}, host.data() + at, false));
    at += artefact_->cache_plan.groups[u.group].kind == CacheGroup::State
              ? backend_->stateBytesPerUnit()
              : backend_->cacheBytesPerToken(u.group) * artefact_->cache_plan.block_size;
  }
  for (Request *r : {kept, moved})
    r->prompt.push_back(40);
  std::vector<std::vector<float>> next = step({{kept, 1}, {moved, 1}});
  EXPECT_EQ(next[0], next[1]);
  for (Request *r : {kept, moved, other})
    cache_->free(r->slot);
  EXPECT_EQ(cache_->usedBlocks(), 0);
}

} // namespace
} // namespace cbc::rt
