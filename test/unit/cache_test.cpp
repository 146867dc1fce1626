// The paged cache's bookkeeping: block allocator, block tables, window release and state slots,
// on cache plans built by hand.
#include "runtime/cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace cbc::rt {
namespace {

CacheGroup group(int id, CacheGroup::Retention retention, int64_t tokens = 0) {
  CacheGroup g;
  g.id = id;
  g.retention = retention;
  g.tokens = tokens;
  g.layers = {id};
  return g;
}

CachePlan plan(int blockSize, std::vector<CacheGroup> groups) {
  CachePlan p;
  p.block_size = blockSize;
  p.groups = std::move(groups);
  for (const CacheGroup &g : p.groups) {
    CacheLayer l;
    l.layer = g.id;
    l.group = g.id;
    l.rows = {{"k", 8}, {"v", 8}};
    p.layers.push_back(l);
  }
  return p;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Physical blocks a table holds (>= 0 entries).
std::vector<int32_t> held(const std::vector<int32_t> &t) {
  std::vector<int32_t> out;
  for (int32_t b : t)
    if (b >= 0)
      out.push_back(b);
  return out;
}

TEST(BlockAllocator, HandsOutEveryBlockOnceThenRunsOut) {
  BlockAllocator a(5);
  EXPECT_EQ(a.capacity(), 5);
  EXPECT_EQ(a.freeCount(), 5);
  std::set<int32_t> seen;
  for (int i = 0; i < 5; ++i) {
    int32_t b = a.allocate();
    ASSERT_GE(b, 0);
    ASSERT_LT(b, 5);
    EXPECT_TRUE(seen.insert(b).second) << "block " << b << " handed out twice";
    EXPECT_EQ(a.freeCount(), 4 - i);
  }
  EXPECT_EQ(a.allocate(), -1);
  EXPECT_EQ(a.allocate(), -1);
  EXPECT_EQ(a.freeCount(), 0);
}

TEST(BlockAllocator, ReleasedBlocksAreReused) {
  BlockAllocator a(3);
  int32_t b0 = a.allocate(), b1 = a.allocate(), b2 = a.allocate();
  ASSERT_EQ(a.allocate(), -1);
  a.release(b1);
  EXPECT_EQ(a.freeCount(), 1);
  EXPECT_EQ(a.allocate(), b1);
  EXPECT_EQ(a.allocate(), -1);
  a.release(b0);
  a.release(b2);
  std::set<int32_t> again{a.allocate(), a.allocate()};
  EXPECT_EQ(again, (std::set<int32_t>{b0, b2}));
  EXPECT_EQ(a.capacity(), 3);
}

TEST(BlockAllocator, EmptyPool) {
  BlockAllocator a(0);
  EXPECT_EQ(a.capacity(), 0);
  EXPECT_EQ(a.allocate(), -1);
}

TEST(CacheManager, ReserveAllocatesCeilBlocksPerGroup) {
  CacheManager cm(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::All)}), 10, 0);
  EXPECT_EQ(cm.blockSize(), 4);
  EXPECT_EQ(cm.numGroups(), 2);
  EXPECT_EQ(cm.blocksPerGroup(), 10);
  EXPECT_FALSE(cm.hasStates());
  for (int64_t upTo : {1, 3, 4, 5, 8, 9, 13, 16}) {
    RequestId id = 100 + upTo;
    EXPECT_EQ(cm.blocksNeeded(id, upTo), 2 * ceilDiv(upTo, 4)) << upTo;
    ASSERT_TRUE(cm.reserve(id, upTo)) << upTo;
    EXPECT_TRUE(cm.holds(id));
    for (int g = 0; g < 2; ++g) {
      EXPECT_EQ((int64_t)cm.table(id, g).size(), ceilDiv(upTo, 4)) << upTo;
      EXPECT_EQ((int64_t)held(cm.table(id, g)).size(), ceilDiv(upTo, 4)) << upTo;
      EXPECT_EQ(cm.freeBlocks(g), 10 - ceilDiv(upTo, 4));
    }
    EXPECT_EQ(cm.blocksNeeded(id, upTo), 0);
    EXPECT_EQ(cm.usedBlocks(), 2 * ceilDiv(upTo, 4));
    cm.free(id);
    EXPECT_FALSE(cm.holds(id));
    EXPECT_EQ(cm.usedBlocks(), 0);
  }
}

TEST(CacheManager, ReserveGrowsIncrementallyAndKeepsExistingBlocks) {
  CacheManager cm(plan(4, {group(0, CacheGroup::All)}), 10, 0);
  ASSERT_TRUE(cm.reserve(7, 3));
  std::vector<int32_t> first = cm.table(7, 0);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(cm.reserve(7, 4)); // still one block
  EXPECT_EQ(cm.table(7, 0), first);
  EXPECT_EQ(cm.blocksNeeded(7, 9), 2);
  ASSERT_TRUE(cm.reserve(7, 9));
  const auto &t = cm.table(7, 0);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], first[0]);
  EXPECT_EQ(std::set<int32_t>(t.begin(), t.end()).size(), 3u);
  EXPECT_EQ(cm.freeBlocks(0), 7);
}

TEST(CacheManager, DistinctRequestsGetDistinctBlocks) {
  CacheManager cm(plan(2, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 3)}), 12, 0);
  std::mt19937 rng(7);
  std::set<std::pair<int, int32_t>> seen;
  for (RequestId id = 0; id < 4; ++id) {
    ASSERT_TRUE(cm.reserve(id, 1 + rng() % 6));
    for (int g = 0; g < 2; ++g)
      for (int32_t b : held(cm.table(id, g)))
        EXPECT_TRUE(seen.insert({g, b}).second) << "group " << g << " block " << b << " shared";
  }
}

TEST(CacheManager, ReserveIsAllOrNothingForANewRequest) {
  // Group 0 slides, so after a release it has more free blocks than group 1: a reservation
  // that fits group 0 but not group 1 must leave group 0 untouched.
  CacheManager cm(plan(4, {group(0, CacheGroup::Window, 4), group(1, CacheGroup::All)}), 6, 2);
  ASSERT_TRUE(cm.reserve(1, 16));
  cm.releaseOutOfWindow(1, 16); // group 0 keeps only the last block
  ASSERT_EQ(cm.freeBlocks(0), 5);
  ASSERT_EQ(cm.freeBlocks(1), 2);
  ASSERT_EQ(cm.freeStateSlots(), 1);
  int64_t used = cm.usedBlocks();

  EXPECT_FALSE(cm.reserve(2, 12)); // 3 blocks: fits group 0, not group 1
  EXPECT_FALSE(cm.holds(2));
  EXPECT_EQ(cm.freeBlocks(0), 5);
  EXPECT_EQ(cm.freeBlocks(1), 2);
  EXPECT_EQ(cm.usedBlocks(), used);
  EXPECT_EQ(cm.freeStateSlots(), 1) << "a failed first reserve must give its state slot back";
  EXPECT_EQ(cm.stateSlot(2), -1);

  EXPECT_TRUE(cm.reserve(2, 8)); // 2 blocks fit both
  EXPECT_EQ(cm.freeBlocks(0), 3);
  EXPECT_EQ(cm.freeBlocks(1), 0);
}

TEST(CacheManager, ReserveIsAllOrNothingForARunningRequest) {
  CacheManager cm(plan(4, {group(0, CacheGroup::Window, 4), group(1, CacheGroup::All)}), 6, 0);
  ASSERT_TRUE(cm.reserve(1, 16));
  cm.releaseOutOfWindow(1, 16);
  ASSERT_TRUE(cm.reserve(2, 4));
  std::vector<int32_t> t0 = held(cm.table(2, 0)), t1 = held(cm.table(2, 1));
  ASSERT_EQ(cm.freeBlocks(0), 4);
  ASSERT_EQ(cm.freeBlocks(1), 1);

  EXPECT_FALSE(cm.reserve(2, 12)); // two more blocks per group; group 1 has one
  EXPECT_TRUE(cm.holds(2)) << "a running request keeps what it had";
  EXPECT_EQ(held(cm.table(2, 0)), t0);
  EXPECT_EQ(held(cm.table(2, 1)), t1);
  EXPECT_EQ(cm.freeBlocks(0), 4);
  EXPECT_EQ(cm.freeBlocks(1), 1);

  EXPECT_TRUE(cm.reserve(2, 8));
  EXPECT_EQ(cm.freeBlocks(1), 0);
}

TEST(CacheManager, FreeReturnsEveryBlock) {
  CacheManager cm(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 5)}), 8, 0);
  ASSERT_TRUE(cm.reserve(1, 20));
  ASSERT_TRUE(cm.reserve(2, 7));
  cm.releaseOutOfWindow(1, 20);
  cm.free(1);
  EXPECT_FALSE(cm.holds(1));
  EXPECT_EQ(cm.freeBlocks(0), 8 - 2);
  EXPECT_EQ(cm.freeBlocks(1), 8 - 2);
  cm.free(2);
  EXPECT_EQ(cm.freeBlocks(0), 8);
  EXPECT_EQ(cm.freeBlocks(1), 8);
  EXPECT_EQ(cm.usedBlocks(), 0);
  cm.free(2); // freeing twice, or an unknown request, is harmless
  cm.free(99);
  EXPECT_EQ(cm.freeBlocks(0), 8);
}

// Sliding windows: after `computed` positions, block b is released exactly when it ends at
// or before computed - W + 1, the first position the next query can see.
TEST(CacheManager, ReleaseOutOfWindowFreesExactlyTheDeadBlocks) {
  const int B = 4;
  for (int64_t W : {1, 3, 4, 6, 9}) {
    for (int64_t computed = 0; computed <= 40; ++computed) {
      CacheManager cm(plan(B, {group(0, CacheGroup::Window, W), group(1, CacheGroup::All)}), 16, 0);
      ASSERT_TRUE(cm.reserve(1, computed + 1)); // what the next step writes too
      std::vector<int32_t> before = cm.table(1, 0);
      std::vector<int32_t> fullBefore = cm.table(1, 1);
      cm.releaseOutOfWindow(1, computed);
      const auto &t = cm.table(1, 0);
      ASSERT_EQ(t.size(), before.size());
      int64_t first = std::max<int64_t>(0, computed - W + 1);
      int released = 0;
      for (size_t b = 0; b < t.size(); ++b) {
        bool dead = (int64_t)(b + 1) * B <= first;
        if (dead) {
          EXPECT_LT(t[b], 0) << "W " << W << " computed " << computed << " block " << b;
          ++released;
        } else {
          EXPECT_EQ(t[b], before[b]) << "W " << W << " computed " << computed << " block " << b;
        }
      }
      EXPECT_EQ(cm.freeBlocks(0), 16 - (int)before.size() + released);
      EXPECT_EQ(cm.table(1, 1), fullBefore) << "a full-attention group keeps everything";
      EXPECT_EQ(cm.freeBlocks(1), 16 - (int)fullBefore.size());

      // Released blocks are never reallocated for the same request.
      EXPECT_EQ(cm.blocksNeeded(1, computed + 1), 0);
      ASSERT_TRUE(cm.reserve(1, computed + 1));
      for (size_t b = 0; b < t.size(); ++b)
        if ((int64_t)(b + 1) * B <= first)
          EXPECT_LT(cm.table(1, 0)[b], 0);
      EXPECT_EQ(cm.freeBlocks(0), 16 - (int)before.size() + released);

      // Releasing again at the same point changes nothing.
      cm.releaseOutOfWindow(1, computed);
      EXPECT_EQ(cm.freeBlocks(0), 16 - (int)before.size() + released);
    }
  }
}

TEST(CacheManager, ReleaseOutOfWindowForChunkedGroups) {
  const int B = 4, C = 8;
  for (int64_t computed = 0; computed <= 33; ++computed) {
    CacheManager cm(plan(B, {group(0, CacheGroup::Chunk, C)}), 16, 0);
    ASSERT_TRUE(cm.reserve(1, computed + 1));
    std::vector<int32_t> before = cm.table(1, 0);
    cm.releaseOutOfWindow(1, computed);
    int64_t first = computed / C * C; // the next query sees only its own chunk
    for (size_t b = 0; b < before.size(); ++b) {
      if ((int64_t)(b + 1) * B <= first)
        EXPECT_LT(cm.table(1, 0)[b], 0) << computed << " " << b;
      else
        EXPECT_EQ(cm.table(1, 0)[b], before[b]) << computed << " " << b;
    }
  }
}

TEST(CacheManager, ReleaseForUnknownRequestIsHarmless) {
  CacheManager cm(plan(4, {group(0, CacheGroup::Window, 4)}), 4, 0);
  cm.releaseOutOfWindow(42, 100);
  EXPECT_EQ(cm.freeBlocks(0), 4);
  EXPECT_FALSE(cm.holds(42));
}

// maxBlocksFor must bound what a request really holds at any point when it grows to `length`
// in chunks of at most `maxChunk`, releasing out-of-window blocks after each chunk. For a
// full-attention group the bound is exact.
TEST(CacheManager, MaxBlocksForBoundsWhatARequestHolds) {
  const int B = 4;
  std::mt19937 rng(1234);
  for (int64_t W : {2, 4, 5, 11, 16}) {
    CacheManager cm(plan(B, {group(0, CacheGroup::Window, W), group(1, CacheGroup::All)}), 1000, 0);
    for (int trial = 0; trial < 40; ++trial) {
      int64_t length = 1 + rng() % 80, maxChunk = 1 + rng() % 20;
      RequestId id = trial;
      int64_t computed = 0, peak0 = 0, peak1 = 0;
      while (computed < length) {
        int64_t chunk = std::min<int64_t>(length - computed, 1 + rng() % maxChunk);
        ASSERT_TRUE(cm.reserve(id, computed + chunk));
        peak0 = std::max<int64_t>(peak0, (int64_t)held(cm.table(id, 0)).size());
        peak1 = std::max<int64_t>(peak1, (int64_t)held(cm.table(id, 1)).size());
        computed += chunk;
        cm.releaseOutOfWindow(id, computed);
      }
      EXPECT_LE(peak0, cm.maxBlocksFor(0, length, maxChunk))
          << "W " << W << " length " << length << " chunk " << maxChunk;
      EXPECT_LE(cm.maxBlocksFor(0, length, maxChunk), ceilDiv(length, B));
      EXPECT_EQ(peak1, ceilDiv(length, B));
      EXPECT_EQ(cm.maxBlocksFor(1, length, maxChunk), ceilDiv(length, B));
      cm.free(id);
    }
    EXPECT_EQ(cm.usedBlocks(), 0);
    // A long request in a small window needs far fewer blocks than its length.
    EXPECT_LT(cm.maxBlocksFor(0, 400, 4), ceilDiv(400, B));
  }
}

TEST(CacheManager, StateSlotsAllocatedAtFirstReserveAndFreedAtFree) {
  CacheManager cm(plan(4, {group(0, CacheGroup::All)}), 10, 2);
  EXPECT_TRUE(cm.hasStates());
  EXPECT_EQ(cm.freeStateSlots(), 2);
  EXPECT_EQ(cm.stateSlot(1), -1);

  ASSERT_TRUE(cm.reserve(1, 4));
  int32_t s1 = cm.stateSlot(1);
  EXPECT_GE(s1, 0);
  EXPECT_LT(s1, 2);
  EXPECT_EQ(cm.freeStateSlots(), 1);
  ASSERT_TRUE(cm.reserve(1, 9)); // growing keeps the slot
  EXPECT_EQ(cm.stateSlot(1), s1);
  EXPECT_EQ(cm.freeStateSlots(), 1);

  ASSERT_TRUE(cm.reserve(2, 1));
  int32_t s2 = cm.stateSlot(2);
  EXPECT_GE(s2, 0);
  EXPECT_LT(s2, 2);
  EXPECT_NE(s1, s2);
  EXPECT_EQ(cm.freeStateSlots(), 0);

  int32_t freeBefore = cm.freeBlocks(0);
  EXPECT_FALSE(cm.reserve(3, 1)) << "no state slot left";
  EXPECT_FALSE(cm.holds(3));
  EXPECT_EQ(cm.freeBlocks(0), freeBefore) << "a request without a slot holds no blocks";

  cm.free(1);
  EXPECT_EQ(cm.freeStateSlots(), 1);
  EXPECT_EQ(cm.stateSlot(1), -1);
  ASSERT_TRUE(cm.reserve(3, 1));
  EXPECT_EQ(cm.stateSlot(3), s1);
  cm.free(2);
  cm.free(3);
  EXPECT_EQ(cm.freeStateSlots(), 2);
  EXPECT_EQ(cm.usedBlocks(), 0);
}

TEST(CacheManager, NoStateSlotsWithoutStates) {
  CacheManager cm(plan(4, {group(0, CacheGroup::All)}), 10, 0);
  ASSERT_TRUE(cm.reserve(1, 4));
  EXPECT_EQ(cm.stateSlot(1), -1);
  EXPECT_EQ(cm.freeStateSlots(), 0);
}

} // namespace
} // namespace cbc::rt
