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

// A slot's table row in a group, up to the blocks it has reached (-1: released).
std::vector<int32_t> table(const CacheManager &cm, int32_t slot, int g) {
  std::vector<int32_t> out;
  for (int64_t b = 0; b < cm.heldBlocks(slot); ++b)
    out.push_back(cm.tableAt(slot, g, b));
  return out;
}

CacheManager manager(const CachePlan &p, int32_t blocks, int32_t slots = 8, int32_t width = 64) {
  return CacheManager(p, blocks, slots, width);
}

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
  CacheManager cm = manager(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::All)}), 10);
  EXPECT_EQ(cm.blockSize(), 4);
  EXPECT_EQ(cm.numGroups(), 2);
  EXPECT_EQ(cm.blocksPerGroup(), 10);
  for (int64_t upTo : {1, 3, 4, 5, 8, 9, 13, 16}) {
    int32_t s = cm.acquireSlot();
    ASSERT_GE(s, 0);
    EXPECT_EQ(cm.blocksNeeded(s, upTo), 2 * ceilDiv(upTo, 4)) << upTo;
    ASSERT_TRUE(cm.reserve(s, upTo)) << upTo;
    for (int g = 0; g < 2; ++g) {
      EXPECT_EQ((int64_t)table(cm, s, g).size(), ceilDiv(upTo, 4)) << upTo;
      EXPECT_EQ((int64_t)held(table(cm, s, g)).size(), ceilDiv(upTo, 4)) << upTo;
      EXPECT_EQ(cm.freeBlocks(g), 10 - ceilDiv(upTo, 4));
    }
    EXPECT_EQ(cm.blocksNeeded(s, upTo), 0);
    EXPECT_EQ(cm.usedBlocks(), 2 * ceilDiv(upTo, 4));
    cm.free(s);
    EXPECT_EQ(cm.usedBlocks(), 0);
    EXPECT_EQ(cm.freeSlots(), 8);
  }
}

TEST(CacheManager, TablesAreThePersistentRowsOfTheSlots) {
  CacheManager cm = manager(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::All)}), 10, 3, 5);
  int32_t a = cm.acquireSlot(), b = cm.acquireSlot();
  ASSERT_TRUE(cm.reserve(a, 6));
  ASSERT_TRUE(cm.reserve(b, 3));
  for (int g = 0; g < 2; ++g) {
    for (int32_t s : {a, b})
      for (int64_t i = 0; i < 5; ++i)
        EXPECT_EQ(cm.tables()[((int64_t)g * 3 + s) * 5 + i], cm.tableAt(s, g, i));
    EXPECT_GE(cm.tableAt(a, g, 1), 0);
    EXPECT_EQ(cm.tableAt(a, g, 2), -1) << "positions never reserved hold no block";
    EXPECT_EQ(cm.tableAt(b, g, 1), -1);
  }
  EXPECT_FALSE(cm.reserve(a, 4 * 5 + 1)) << "a request cannot outgrow its table row";
}

TEST(CacheManager, ReserveGrowsIncrementallyAndKeepsExistingBlocks) {
  CacheManager cm = manager(plan(4, {group(0, CacheGroup::All)}), 10);
  int32_t s = cm.acquireSlot();
  ASSERT_TRUE(cm.reserve(s, 3));
  std::vector<int32_t> first = table(cm, s, 0);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(cm.reserve(s, 4)); // still one block
  EXPECT_EQ(table(cm, s, 0), first);
  EXPECT_EQ(cm.blocksNeeded(s, 9), 2);
  ASSERT_TRUE(cm.reserve(s, 9));
  auto t = table(cm, s, 0);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], first[0]);
  EXPECT_EQ(std::set<int32_t>(t.begin(), t.end()).size(), 3u);
  EXPECT_EQ(cm.freeBlocks(0), 7);
}

TEST(CacheManager, DistinctRequestsGetDistinctBlocks) {
  CacheManager cm = manager(plan(2, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 3)}), 12);
  std::mt19937 rng(7);
  std::set<std::pair<int, int32_t>> seen;
  for (int i = 0; i < 4; ++i) {
    int32_t s = cm.acquireSlot();
    ASSERT_TRUE(cm.reserve(s, 1 + rng() % 6));
    for (int g = 0; g < 2; ++g)
      for (int32_t b : held(table(cm, s, g)))
        EXPECT_TRUE(seen.insert({g, b}).second) << "group " << g << " block " << b << " shared";
  }
}

TEST(CacheManager, ReserveIsAllOrNothing) {
  // Group 0 slides, so after a release it has more free blocks than group 1: a reservation
  // that fits group 0 but not group 1 must leave group 0 untouched.
  CacheManager cm = manager(plan(4, {group(0, CacheGroup::Window, 4), group(1, CacheGroup::All)}), 6);
  int32_t one = cm.acquireSlot();
  ASSERT_TRUE(cm.reserve(one, 16));
  cm.releaseOutOfWindow(one, 16); // group 0 keeps only the last block
  ASSERT_EQ(cm.freeBlocks(0), 5);
  ASSERT_EQ(cm.freeBlocks(1), 2);
  int64_t used = cm.usedBlocks();

  int32_t two = cm.acquireSlot();
  EXPECT_FALSE(cm.reserve(two, 12)); // 3 blocks: fits group 0, not group 1
  EXPECT_EQ(cm.heldBlocks(two), 0);
  EXPECT_EQ(cm.freeBlocks(0), 5);
  EXPECT_EQ(cm.freeBlocks(1), 2);
  EXPECT_EQ(cm.usedBlocks(), used);

  ASSERT_TRUE(cm.reserve(two, 4));
  std::vector<int32_t> t0 = held(table(cm, two, 0)), t1 = held(table(cm, two, 1));
  EXPECT_FALSE(cm.reserve(two, 12)); // two more blocks per group; group 1 has one
  EXPECT_EQ(held(table(cm, two, 0)), t0) << "a running request keeps what it had";
  EXPECT_EQ(held(table(cm, two, 1)), t1);
  EXPECT_EQ(cm.freeBlocks(0), 4);
  EXPECT_EQ(cm.freeBlocks(1), 1);
  EXPECT_TRUE(cm.reserve(two, 8));
  EXPECT_EQ(cm.freeBlocks(1), 0);
}

TEST(CacheManager, FreeReturnsEveryBlockAndTheSlot) {
  CacheManager cm = manager(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 5)}), 8);
  int32_t one = cm.acquireSlot(), two = cm.acquireSlot();
  ASSERT_TRUE(cm.reserve(one, 20));
  ASSERT_TRUE(cm.reserve(two, 7));
  cm.releaseOutOfWindow(one, 20);
  cm.free(one);
  EXPECT_EQ(cm.freeBlocks(0), 8 - 2);
  EXPECT_EQ(cm.freeBlocks(1), 8 - 2);
  for (int64_t b = 0; b < 5; ++b)
    EXPECT_EQ(cm.tableAt(one, 0, b), -1) << "a freed slot's row is cleared";
  cm.free(two);
  EXPECT_EQ(cm.freeBlocks(0), 8);
  EXPECT_EQ(cm.freeBlocks(1), 8);
  EXPECT_EQ(cm.usedBlocks(), 0);
  EXPECT_EQ(cm.freeSlots(), 8);
  cm.free(two); // freeing twice, or an unknown slot, is harmless
  cm.free(99);
  cm.free(-1);
  EXPECT_EQ(cm.freeBlocks(0), 8);
  EXPECT_EQ(cm.freeSlots(), 8);
}

// Sliding windows: after `computed` positions, block b is released exactly when it ends at
// or before computed - W + 1, the first position the next query can see.
TEST(CacheManager, ReleaseOutOfWindowFreesExactlyTheDeadBlocks) {
  const int B = 4;
  for (int64_t W : {1, 3, 4, 6, 9}) {
    for (int64_t computed = 0; computed <= 40; ++computed) {
      CacheManager cm = manager(plan(B, {group(0, CacheGroup::Window, W), group(1, CacheGroup::All)}), 16);
      int32_t s = cm.acquireSlot();
      ASSERT_TRUE(cm.reserve(s, computed + 1)); // what the next step writes too
      std::vector<int32_t> before = table(cm, s, 0);
      std::vector<int32_t> fullBefore = table(cm, s, 1);
      cm.releaseOutOfWindow(s, computed);
      auto t = table(cm, s, 0);
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
      EXPECT_EQ(table(cm, s, 1), fullBefore) << "a full-attention group keeps everything";
      EXPECT_EQ(cm.freeBlocks(1), 16 - (int)fullBefore.size());

      // Released blocks are never reallocated for the same request.
      EXPECT_EQ(cm.blocksNeeded(s, computed + 1), 0);
      ASSERT_TRUE(cm.reserve(s, computed + 1));
      for (size_t b = 0; b < t.size(); ++b)
        if ((int64_t)(b + 1) * B <= first)
          EXPECT_LT(cm.tableAt(s, 0, b), 0);
      EXPECT_EQ(cm.freeBlocks(0), 16 - (int)before.size() + released);

      // Releasing again at the same point changes nothing.
      cm.releaseOutOfWindow(s, computed);
      EXPECT_EQ(cm.freeBlocks(0), 16 - (int)before.size() + released);
    }
  }
}

TEST(CacheManager, ReleaseOutOfWindowForChunkedGroups) {
  const int B = 4, C = 8;
  for (int64_t computed = 0; computed <= 33; ++computed) {
    CacheManager cm = manager(plan(B, {group(0, CacheGroup::Chunk, C)}), 16);
    int32_t s = cm.acquireSlot();
    ASSERT_TRUE(cm.reserve(s, computed + 1));
    std::vector<int32_t> before = table(cm, s, 0);
    cm.releaseOutOfWindow(s, computed);
    int64_t first = computed / C * C; // the next query sees only its own chunk
    for (size_t b = 0; b < before.size(); ++b) {
      if ((int64_t)(b + 1) * B <= first)
        EXPECT_LT(cm.tableAt(s, 0, b), 0) << computed << " " << b;
      else
        EXPECT_EQ(cm.tableAt(s, 0, b), before[b]) << computed << " " << b;
    }
  }
}

// maxBlocksFor must bound what a request really holds at any point when it grows to `length`
// in chunks of at most `maxChunk`, releasing out-of-window blocks after each chunk. For a
// full-attention group the bound is exact.
TEST(CacheManager, MaxBlocksForBoundsWhatARequestHolds) {
  const int B = 4;
  std::mt19937 rng(1234);
  for (int64_t W : {2, 4, 5, 11, 16}) {
    CacheManager cm = manager(plan(B, {group(0, CacheGroup::Window, W), group(1, CacheGroup::All)}), 1000);
    for (int trial = 0; trial < 40; ++trial) {
      int64_t length = 1 + rng() % 80, maxChunk = 1 + rng() % 20;
      int32_t s = cm.acquireSlot();
      int64_t computed = 0, peak0 = 0, peak1 = 0;
      while (computed < length) {
        int64_t chunk = std::min<int64_t>(length - computed, 1 + rng() % maxChunk);
        ASSERT_TRUE(cm.reserve(s, computed + chunk));
        peak0 = std::max<int64_t>(peak0, (int64_t)held(table(cm, s, 0)).size());
        peak1 = std::max<int64_t>(peak1, (int64_t)held(table(cm, s, 1)).size());
        computed += chunk;
        cm.releaseOutOfWindow(s, computed);
      }
      EXPECT_LE(peak0, cm.maxBlocksFor(0, length, maxChunk))
          << "W " << W << " length " << length << " chunk " << maxChunk;
      EXPECT_LE(cm.maxBlocksFor(0, length, maxChunk), ceilDiv(length, B));
      EXPECT_EQ(peak1, ceilDiv(length, B));
      EXPECT_EQ(cm.maxBlocksFor(1, length, maxChunk), ceilDiv(length, B));
      cm.free(s);
    }
    EXPECT_EQ(cm.usedBlocks(), 0);
    // A long request in a small window needs far fewer blocks than its length.
    EXPECT_LT(cm.maxBlocksFor(0, 400, 4), ceilDiv(400, B));
  }
}

TEST(CacheManager, SlotsRunOutAndAreReused) {
  CacheManager cm = manager(plan(4, {group(0, CacheGroup::All)}), 10, 2);
  EXPECT_EQ(cm.freeSlots(), 2);
  int32_t a = cm.acquireSlot(), b = cm.acquireSlot();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(cm.acquireSlot(), -1) << "no slot left";
  ASSERT_TRUE(cm.reserve(a, 9));
  cm.free(a);
  EXPECT_EQ(cm.freeSlots(), 1);
  int32_t c = cm.acquireSlot();
  EXPECT_EQ(c, a);
  EXPECT_EQ(cm.heldBlocks(c), 0) << "a reused slot starts empty";
  EXPECT_EQ(cm.blocksNeeded(c, 4), 1);
}

} // namespace
} // namespace cbc::rt
