// The cache's bookkeeping on cache plans built by hand: the block pool (reference counts, the free
// queue, content hashes), and the coordinator's block tables, all-or-nothing allocation, window
// and chunk release on commit, and its fork, truncate and commit on paged, state and static
// groups, with reference counts checked and nothing leaked.
#include "runtime/cache/coordinator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
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
std::vector<int32_t> table(const CacheCoordinator &cm, int32_t slot, int g) {
  std::vector<int32_t> out;
  for (int64_t b = 0; b < cm.heldBlocks(slot, g); ++b)
    out.push_back(cm.tableAt(slot, g, b));
  return out;
}

CacheCoordinator manager(const CachePlan &p, int32_t blocks, int32_t slots = 8, int32_t width = 64) {
  return CacheCoordinator(p, blocks, slots, slots, width);
}

// Physical blocks a table holds (>= 0 entries).
std::vector<int32_t> held(const std::vector<int32_t> &t) {
  std::vector<int32_t> out;
  for (int32_t b : t)
    if (b >= 0)
      out.push_back(b);
  return out;
}

TEST(BlockPool, HandsOutEveryBlockOnceThenRunsOut) {
  BlockPool a(5);
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

TEST(BlockPool, ReleasedBlocksAreReused) {
  BlockPool a(3);
  int32_t b0 = a.allocate(), b1 = a.allocate(), b2 = a.allocate();
  ASSERT_EQ(a.allocate(), -1);
  a.unref(b1);
  EXPECT_EQ(a.freeCount(), 1);
  EXPECT_EQ(a.allocate(), b1);
  EXPECT_EQ(a.allocate(), -1);
  a.unref(b0);
  a.unref(b2);
  std::set<int32_t> again{a.allocate(), a.allocate()};
  EXPECT_EQ(again, (std::set<int32_t>{b0, b2}));
  EXPECT_EQ(a.capacity(), 3);
}

TEST(BlockPool, EmptyPool) {
  BlockPool a(0);
  EXPECT_EQ(a.capacity(), 0);
  EXPECT_EQ(a.allocate(), -1);
}

TEST(CacheCoordinator, AllocateTakesCeilBlocksPerGroup) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::All)}), 10);
  EXPECT_EQ(cm.blockSize(), 4);
  EXPECT_EQ(cm.numTableGroups(), 2);
  EXPECT_EQ(cm.blocksPerGroup(), 10);
  for (int64_t upTo : {1, 3, 4, 5, 8, 9, 13, 16}) {
    int32_t s = cm.acquireSlot();
    ASSERT_GE(s, 0);
    EXPECT_EQ(cm.blocksNeeded(s, upTo), 2 * ceilDiv(upTo, 4)) << upTo;
    ASSERT_TRUE(cm.allocate(s, upTo)) << upTo;
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

TEST(CacheCoordinator, TablesAreThePersistentRowsOfTheSlots) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::All)}), 10, 3, 5);
  int32_t a = cm.acquireSlot(), b = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(a, 6));
  ASSERT_TRUE(cm.allocate(b, 3));
  for (int g = 0; g < 2; ++g) {
    for (int32_t s : {a, b})
      for (int64_t i = 0; i < 5; ++i)
        EXPECT_EQ(cm.tables()[((int64_t)g * 3 + s) * 5 + i], cm.tableAt(s, g, i));
    EXPECT_GE(cm.tableAt(a, g, 1), 0);
    EXPECT_EQ(cm.tableAt(a, g, 2), -1) << "positions never reserved hold no block";
    EXPECT_EQ(cm.tableAt(b, g, 1), -1);
  }
  EXPECT_FALSE(cm.allocate(a, 4 * 5 + 1)) << "a request cannot outgrow its table row";
}

TEST(CacheCoordinator, AllocateGrowsIncrementallyAndKeepsExistingBlocks) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All)}), 10);
  int32_t s = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(s, 3));
  std::vector<int32_t> first = table(cm, s, 0);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(cm.allocate(s, 4)); // still one block
  EXPECT_EQ(table(cm, s, 0), first);
  EXPECT_EQ(cm.blocksNeeded(s, 9), 2);
  ASSERT_TRUE(cm.allocate(s, 9));
  auto t = table(cm, s, 0);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], first[0]);
  EXPECT_EQ(std::set<int32_t>(t.begin(), t.end()).size(), 3u);
  EXPECT_EQ(cm.freeBlocks(0), 7);
}

TEST(CacheCoordinator, DistinctRequestsGetDistinctBlocks) {
  CacheCoordinator cm = manager(plan(2, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 3)}), 12);
  std::mt19937 rng(7);
  std::set<std::pair<int, int32_t>> seen;
  for (int i = 0; i < 4; ++i) {
    int32_t s = cm.acquireSlot();
    ASSERT_TRUE(cm.allocate(s, 1 + rng() % 6));
    for (int g = 0; g < 2; ++g)
      for (int32_t b : held(table(cm, s, g)))
        EXPECT_TRUE(seen.insert({g, b}).second) << "group " << g << " block " << b << " shared";
  }
}

TEST(CacheCoordinator, AllocateIsAllOrNothing) {
  // Group 0 slides, so after a release it has more free blocks than group 1: a reservation
  // that fits group 0 but not group 1 must leave group 0 untouched.
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::Window, 4), group(1, CacheGroup::All)}), 6);
  int32_t one = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(one, 16));
  cm.commit(one, 16); // group 0 keeps only the last block
  ASSERT_EQ(cm.freeBlocks(0), 5);
  ASSERT_EQ(cm.freeBlocks(1), 2);
  int64_t used = cm.usedBlocks();

  int32_t two = cm.acquireSlot();
  EXPECT_FALSE(cm.allocate(two, 12)); // 3 blocks: fits group 0, not group 1
  EXPECT_EQ(cm.heldBlocks(two, 0), 0);
  EXPECT_EQ(cm.heldBlocks(two, 1), 0);
  EXPECT_EQ(cm.freeBlocks(0), 5);
  EXPECT_EQ(cm.freeBlocks(1), 2);
  EXPECT_EQ(cm.usedBlocks(), used);

  ASSERT_TRUE(cm.allocate(two, 4));
  std::vector<int32_t> t0 = held(table(cm, two, 0)), t1 = held(table(cm, two, 1));
  EXPECT_FALSE(cm.allocate(two, 12)); // two more blocks per group; group 1 has one
  EXPECT_EQ(held(table(cm, two, 0)), t0) << "a running request keeps what it had";
  EXPECT_EQ(held(table(cm, two, 1)), t1);
  EXPECT_EQ(cm.freeBlocks(0), 4);
  EXPECT_EQ(cm.freeBlocks(1), 1);
  EXPECT_TRUE(cm.allocate(two, 8));
  EXPECT_EQ(cm.freeBlocks(1), 0);
}

TEST(CacheCoordinator, FreeReturnsEveryBlockAndTheSlot) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 5)}), 8);
  int32_t one = cm.acquireSlot(), two = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(one, 20));
  ASSERT_TRUE(cm.allocate(two, 7));
  cm.commit(one, 20);
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
TEST(CacheCoordinator, CommitFreesExactlyTheBlocksOutOfTheWindow) {
  const int B = 4;
  for (int64_t W : {1, 3, 4, 6, 9}) {
    for (int64_t computed = 0; computed <= 40; ++computed) {
      CacheCoordinator cm = manager(plan(B, {group(0, CacheGroup::Window, W), group(1, CacheGroup::All)}), 16);
      int32_t s = cm.acquireSlot();
      ASSERT_TRUE(cm.allocate(s, computed + 1)); // what the next step writes too
      std::vector<int32_t> before = table(cm, s, 0);
      std::vector<int32_t> fullBefore = table(cm, s, 1);
      cm.commit(s, computed);
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
      ASSERT_TRUE(cm.allocate(s, computed + 1));
      for (size_t b = 0; b < t.size(); ++b)
        if ((int64_t)(b + 1) * B <= first)
          EXPECT_LT(cm.tableAt(s, 0, b), 0);
      EXPECT_EQ(cm.freeBlocks(0), 16 - (int)before.size() + released);

      // Releasing again at the same point changes nothing.
      cm.commit(s, computed);
      EXPECT_EQ(cm.freeBlocks(0), 16 - (int)before.size() + released);
    }
  }
}

TEST(CacheCoordinator, CommitFreesThePassedChunksOfChunkedGroups) {
  const int B = 4, C = 8;
  for (int64_t computed = 0; computed <= 33; ++computed) {
    CacheCoordinator cm = manager(plan(B, {group(0, CacheGroup::Chunk, C)}), 16);
    int32_t s = cm.acquireSlot();
    ASSERT_TRUE(cm.allocate(s, computed + 1));
    std::vector<int32_t> before = table(cm, s, 0);
    cm.commit(s, computed);
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
TEST(CacheCoordinator, MaxBlocksForBoundsWhatARequestHolds) {
  const int B = 4;
  std::mt19937 rng(1234);
  for (int64_t W : {2, 4, 5, 11, 16}) {
    CacheCoordinator cm = manager(plan(B, {group(0, CacheGroup::Window, W), group(1, CacheGroup::All)}), 1000);
    for (int trial = 0; trial < 40; ++trial) {
      int64_t length = 1 + rng() % 80, maxChunk = 1 + rng() % 20;
      int32_t s = cm.acquireSlot();
      int64_t computed = 0, peak0 = 0, peak1 = 0;
      while (computed < length) {
        int64_t chunk = std::min<int64_t>(length - computed, 1 + rng() % maxChunk);
        ASSERT_TRUE(cm.allocate(s, computed + chunk));
        peak0 = std::max<int64_t>(peak0, (int64_t)held(table(cm, s, 0)).size());
        peak1 = std::max<int64_t>(peak1, (int64_t)held(table(cm, s, 1)).size());
        computed += chunk;
        cm.commit(s, computed);
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

TEST(CacheCoordinator, SlotsRunOutAndAreReused) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All)}), 10, 2);
  EXPECT_EQ(cm.freeSlots(), 2);
  int32_t a = cm.acquireSlot(), b = cm.acquireSlot();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(cm.acquireSlot(), -1) << "no slot left";
  ASSERT_TRUE(cm.allocate(a, 9));
  cm.free(a);
  EXPECT_EQ(cm.freeSlots(), 1);
  int32_t c = cm.acquireSlot();
  EXPECT_EQ(c, a);
  EXPECT_EQ(cm.heldBlocks(c, 0), 0) << "a reused slot starts empty";
  EXPECT_EQ(cm.blocksNeeded(c, 4), 1);
}

// ---- the block pool's reference counts, free queue and hashes ---------------------------------

TEST(BlockPool, SharedUnitsReturnWithTheirLastHolder) {
  BlockPool a(2);
  int32_t u = a.allocate();
  EXPECT_EQ(a.refCount(u), 1);
  a.ref(u);
  a.ref(u);
  EXPECT_EQ(a.refCount(u), 3);
  a.unref(u);
  a.unref(u);
  EXPECT_EQ(a.freeCount(), 1) << "still held once";
  a.unref(u);
  EXPECT_EQ(a.refCount(u), 0);
  EXPECT_EQ(a.freeCount(), 2);
  EXPECT_THROW(a.unref(u), std::logic_error) << "a free unit has no holder to drop";
  EXPECT_THROW(a.ref(u), std::logic_error) << "a free unit cannot gain a holder but through lookup";
}

// The free queue is the eviction order. Units with a hash are handed out least recently freed
// first, so that content freed just now is the last to be forgotten; units without one (nothing
// can look them up) are handed out before any of them, most recently freed first.
TEST(BlockPool, TheFreeQueueForgetsTheLeastRecentlyFreedContentLast) {
  BlockPool a(6);
  std::vector<int32_t> u;
  for (int i = 0; i < 6; ++i)
    u.push_back(a.allocate());
  EXPECT_EQ(u, (std::vector<int32_t>{0, 1, 2, 3, 4, 5})) << "low ids first";
  for (int i : {0, 1, 2, 3})
    a.setHash(u[i], 100 + i);
  for (int i : {2, 4, 0, 3, 5, 1})
    a.unref(u[i]);
  EXPECT_EQ(a.hashedCount(), 4);
  for (int i : {5, 4, 2, 0, 3, 1})
    EXPECT_EQ(a.allocate(), u[i]);
  EXPECT_EQ(a.allocate(), -1);
  EXPECT_EQ(a.evictions(), 4) << "four units with content were handed out again";
  EXPECT_EQ(a.hashedCount(), 0);
}

TEST(BlockPool, AHashFindsItsUnitWhetherHeldOrFreeUntilItIsReused) {
  BlockPool a(3);
  int32_t u = a.allocate(), v = a.allocate();
  a.setHash(u, 0xabc);
  EXPECT_EQ(a.lookup(0xabc), u) << "a held unit, held once more";
  EXPECT_EQ(a.refCount(u), 2);
  EXPECT_EQ(a.lookup(0xdef), -1);
  a.unref(u);
  a.unref(u);
  ASSERT_EQ(a.freeCount(), 2);
  EXPECT_EQ(a.find(0xabc), u) << "find changes nothing";
  EXPECT_EQ(a.refCount(u), 0);
  EXPECT_EQ(a.lookup(0xabc), u) << "a free unit keeps its content until reused";
  EXPECT_EQ(a.refCount(u), 1);
  EXPECT_EQ(a.freeCount(), 1) << "taken out of the middle of the free queue";
  a.unref(u);
  a.unref(v);
  // The queue is now [v, 2, u]: v has no content, and reusing u forgets its hash.
  std::vector<uint64_t> evicted;
  a.setEvictHook([&](uint64_t h) { evicted.push_back(h); });
  EXPECT_EQ(a.allocate(), v);
  EXPECT_EQ(a.allocate(), 2);
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(a.allocate(), u);
  EXPECT_EQ(evicted, std::vector<uint64_t>{0xabc});
  EXPECT_EQ(a.lookup(0xabc), -1);
  a.unref(v);
  EXPECT_THROW(a.setHash(v, 1), std::logic_error) << "a free unit has no content to name";
}

TEST(BlockPool, ADroppedHashIsNotFoundAndItsUnitIsReusedFirst) {
  BlockPool a(3);
  int32_t u = a.allocate(), v = a.allocate(), w = a.allocate();
  a.setHash(u, 1);
  a.setHash(v, 2);
  a.unref(u);
  a.unref(v);
  a.unref(w);
  a.dropHash(v);
  EXPECT_EQ(a.find(2), -1);
  EXPECT_EQ(a.allocate(), v) << "no content left: the head of the queue";
  EXPECT_EQ(a.allocate(), w);
  EXPECT_EQ(a.allocate(), u);
}

// ---- fork, truncate and commit -----------------------------------------------------------------

CacheGroup stateGroup(int id, std::vector<int> layers) {
  CacheGroup g;
  g.id = id;
  g.kind = CacheGroup::State;
  g.layers = std::move(layers);
  return g;
}

CacheGroup staticGroup(int id) {
  CacheGroup g = group(id, CacheGroup::All);
  g.kind = CacheGroup::Static;
  return g;
}

// The reference count of every unit of a pool, as the sequences' tables and states hold them:
// compared with the pool's own counts, it finds leaks and double holds.
void expectRefCountsAreTheHolders(const CacheCoordinator &cm, const std::vector<int32_t> &slots) {
  for (int g = 0; g < cm.numTableGroups(); ++g) {
    std::map<int32_t, int> holders;
    for (int32_t s : slots)
      for (int32_t b : held(table(cm, s, g)))
        ++holders[b];
    for (int32_t b = 0; b < cm.blocksPerGroup(); ++b)
      ASSERT_EQ(cm.refCount(g, b), holders.count(b) ? holders[b] : 0) << "group " << g << " block " << b;
    EXPECT_EQ(cm.blocksPerGroup() - cm.freeBlocks(g), (int64_t)holders.size()) << "group " << g;
  }
}

// A full, a windowed and a chunked group side by side, and a state group: a fork shares every
// whole block and the state, copies the partial last block, and both sequences then go on
// independently; freeing both gives everything back.
TEST(CacheCoordinator, ForkSharesWholeBlocksAndStatesAndCopiesThePartialBlock) {
  CachePlan p = plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 6), group(2, CacheGroup::Chunk, 8)});
  p.groups.push_back(stateGroup(3, {0, 1, 2}));
  CacheCoordinator cm(p, 32, 4, 4, 16);
  ASSERT_TRUE(cm.hasStates());
  int32_t a = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(a, 10));
  StateUnits first = cm.stateUnits(a);
  EXPECT_EQ(first.in, first.out) << "an unshared state is written in place";
  cm.commit(a, 10);
  EXPECT_EQ(cm.usedStateUnits(), 1);

  int32_t b = cm.acquireSlot();
  std::vector<UnitCopy> copies;
  ASSERT_TRUE(cm.fork(a, b, copies));
  EXPECT_EQ(cm.committed(b), 10);
  // Positions 8 and 9 sit in block 2 of each paged group: copied. Blocks 0 and 1 are shared, but
  // where the window or the chunk released them.
  ASSERT_EQ(copies.size(), 3u);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(copies[g].group, g);
    EXPECT_EQ(copies[g].src, cm.tableAt(a, g, 2));
    EXPECT_EQ(copies[g].dst, cm.tableAt(b, g, 2));
    EXPECT_NE(copies[g].src, copies[g].dst);
    for (int64_t blk = 0; blk < 2; ++blk)
      EXPECT_EQ(cm.tableAt(b, g, blk), cm.tableAt(a, g, blk)) << "group " << g << " block " << blk;
  }
  EXPECT_GE(cm.tableAt(a, 0, 0), 0);
  EXPECT_EQ(cm.tableAt(a, 1, 0), -1) << "the window at 10 sees 5.., so block 0 was released";
  EXPECT_EQ(cm.tableAt(a, 2, 1), -1) << "the chunk at 10 starts at 8";
  EXPECT_EQ(cm.usedStateUnits(), 1) << "the state is shared, not copied";
  expectRefCountsAreTheHolders(cm, {a, b});

  // Copy on write: the first to step writes a new unit and leaves the shared one to the other.
  ASSERT_TRUE(cm.allocate(b, 11));
  StateUnits bs = cm.stateUnits(b);
  EXPECT_EQ(bs.in, first.out);
  EXPECT_NE(bs.out, bs.in);
  EXPECT_EQ(cm.stateUnits(b).out, bs.out) << "asking again in the same step gives the same units";
  EXPECT_EQ(cm.usedStateUnits(), 2);
  cm.commit(b, 11);
  ASSERT_TRUE(cm.allocate(a, 11));
  StateUnits as = cm.stateUnits(a);
  EXPECT_EQ(as.in, as.out) << "no longer shared: written in place";
  cm.commit(a, 11);
  EXPECT_EQ(cm.usedStateUnits(), 2);

  cm.free(a);
  expectRefCountsAreTheHolders(cm, {b});
  cm.free(b);
  EXPECT_EQ(cm.usedBlocks(), 0);
  EXPECT_EQ(cm.usedStateUnits(), 0);
  EXPECT_EQ(cm.freeSlots(), 4);
}

// A fork at a block boundary copies nothing; a fork that needs a block where none is free
// changes nothing.
TEST(CacheCoordinator, ForkAtABoundaryCopiesNothingAndAFailedForkChangesNothing) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::All)}), 3, 4, 8);
  int32_t a = cm.acquireSlot(), b = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(a, 8));
  cm.commit(a, 8);
  std::vector<UnitCopy> copies;
  ASSERT_TRUE(cm.fork(a, b, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(cm.usedBlocks(), 4) << "two shared blocks per group";
  ASSERT_TRUE(cm.allocate(a, 9));
  cm.commit(a, 9);
  int32_t c = cm.acquireSlot();
  ASSERT_EQ(cm.freeBlocks(0), 0);
  EXPECT_FALSE(cm.fork(a, c, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(cm.heldBlocks(c, 0), 0);
  EXPECT_EQ(cm.usedBlocks(), 6);
  cm.free(a);
  cm.free(b);
  cm.free(c);
  EXPECT_EQ(cm.usedBlocks(), 0);
}

// Truncate drops positions from the committed one on: the blocks beyond go back (shared ones
// only lose a holder), and a state can return to its committed value only if the step kept it.
TEST(CacheCoordinator, TruncateGoesBackToTheCommittedPositionAtMost) {
  CachePlan p = plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 4)});
  CacheCoordinator paged(p, 16, 4, 4, 16);
  int32_t a = paged.acquireSlot();
  ASSERT_TRUE(paged.allocate(a, 6));
  paged.commit(a, 6);
  ASSERT_TRUE(paged.allocate(a, 15)); // a speculative step writes 9 more positions
  EXPECT_EQ(paged.heldBlocks(a, 0), 4);
  EXPECT_FALSE(paged.truncate(a, 5)) << "below the committed position";
  EXPECT_TRUE(paged.truncate(a, 7)) << "the drafts after position 7 are rejected";
  EXPECT_EQ(paged.heldBlocks(a, 0), 2);
  EXPECT_EQ(paged.heldBlocks(a, 1), 2);
  EXPECT_EQ(paged.usedBlocks(), 4);
  paged.commit(a, 7);
  EXPECT_EQ(paged.tableAt(a, 1, 0), -1) << "the window at 7 sees 4..";
  // A forked child truncates its own row only: the shared blocks keep their other holder.
  int32_t b = paged.acquireSlot();
  std::vector<UnitCopy> copies;
  ASSERT_TRUE(paged.fork(a, b, copies));
  ASSERT_TRUE(paged.truncate(b, 7));
  EXPECT_EQ(paged.tableAt(b, 0, 0), paged.tableAt(a, 0, 0));
  paged.free(b);
  EXPECT_GE(paged.tableAt(a, 0, 0), 0);
  paged.free(a);
  EXPECT_EQ(paged.usedBlocks(), 0);

  p.groups.push_back(stateGroup(2, {0}));
  CacheCoordinator states(p, 16, 4, 4, 16);
  int32_t s = states.acquireSlot();
  ASSERT_TRUE(states.allocate(s, 6));
  states.stateUnits(s);
  states.commit(s, 6);
  ASSERT_TRUE(states.allocate(s, 9));
  StateUnits kept = states.stateUnits(s, /*keepInput=*/true);
  EXPECT_NE(kept.in, kept.out);
  EXPECT_EQ(states.usedStateUnits(), 2);
  EXPECT_FALSE(states.truncate(s, 8)) << "the state at 8 was never kept";
  EXPECT_TRUE(states.truncate(s, 6)) << "back to the kept input";
  EXPECT_EQ(states.usedStateUnits(), 1);
  EXPECT_EQ(states.heldBlocks(s, 0), 2);
  EXPECT_EQ(states.stateUnits(s).in, kept.in) << "the step is retried from the kept state";
  states.commit(s, 9);
  ASSERT_TRUE(states.allocate(s, 10));
  states.stateUnits(s); // written in place
  EXPECT_FALSE(states.truncate(s, 9)) << "an in-place step cannot be undone";
  states.commit(s, 10);
  states.free(s);
  EXPECT_EQ(states.usedBlocks(), 0);
  EXPECT_EQ(states.usedStateUnits(), 0);
}

// Committing a step whose output went to a new unit makes that unit current and releases the
// input; a commit with nothing stepped changes no state.
TEST(CacheCoordinator, CommitMakesTheStepsOutputCurrent) {
  CachePlan p = plan(4, {group(0, CacheGroup::All)});
  p.groups.push_back(stateGroup(1, {0}));
  CacheCoordinator cm(p, 8, 3, 3, 8);
  int32_t a = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(a, 4));
  StateUnits u = cm.stateUnits(a, true);
  cm.commit(a, 4);
  EXPECT_EQ(cm.usedStateUnits(), 1);
  EXPECT_EQ(cm.stateUnits(a).in, u.out);
  cm.commit(a, 5);
  cm.commit(a, 5);
  EXPECT_EQ(cm.usedStateUnits(), 1);
  cm.free(a);
  EXPECT_EQ(cm.usedStateUnits(), 0);
}

// States are all or nothing with blocks: a sequence is admitted only with a state unit.
TEST(CacheCoordinator, AllocateNeedsAStateUnitForANewSequence) {
  CachePlan p = plan(4, {group(0, CacheGroup::All)});
  p.groups.push_back(stateGroup(1, {0}));
  CacheCoordinator cm(p, 8, 1, 2, 8);
  int32_t a = cm.acquireSlot(), b = cm.acquireSlot();
  ASSERT_TRUE(cm.allocate(a, 4));
  EXPECT_FALSE(cm.allocate(b, 4)) << "the only state unit is taken";
  EXPECT_EQ(cm.heldBlocks(b, 0), 0) << "and no block was taken either";
  EXPECT_EQ(cm.stateUnits(b).out, -1);
  cm.free(a);
  EXPECT_TRUE(cm.allocate(b, 4));
  cm.free(b);
}

// Static rows are allocated once, shared whole by a fork, and untouched by commit and truncate.
TEST(CacheCoordinator, StaticRowsAreWrittenOnceAndSharedWhole) {
  CachePlan p = plan(4, {group(0, CacheGroup::All)});
  p.groups.push_back(staticGroup(1));
  CacheCoordinator cm(p, 8, 2, 2, 8);
  EXPECT_EQ(cm.numTableGroups(), 2);
  EXPECT_EQ(cm.numPagedGroups(), 1);
  int32_t a = cm.acquireSlot(), b = cm.acquireSlot();
  ASSERT_TRUE(cm.allocateStatic(a, 10));
  EXPECT_EQ(cm.heldBlocks(a, 1), 3);
  EXPECT_FALSE(cm.allocateStatic(a, 40)) << "beyond the table row";
  ASSERT_TRUE(cm.allocate(a, 5));
  cm.commit(a, 5);
  EXPECT_TRUE(cm.truncate(a, 5));
  EXPECT_EQ(cm.heldBlocks(a, 1), 3);
  std::vector<UnitCopy> copies;
  ASSERT_TRUE(cm.fork(a, b, copies));
  ASSERT_EQ(copies.size(), 1u) << "only the paged group's partial block";
  EXPECT_EQ(copies[0].group, 0);
  for (int64_t blk = 0; blk < 3; ++blk)
    EXPECT_EQ(cm.tableAt(b, 1, blk), cm.tableAt(a, 1, blk));
  EXPECT_EQ(cm.freeBlocks(1), 5);
  cm.free(a);
  EXPECT_EQ(cm.freeBlocks(1), 5) << "still held by the fork";
  cm.free(b);
  EXPECT_EQ(cm.usedBlocks(), 0);
}

// Random interleavings of the five verbs over full, windowed and chunked groups and states:
// every unit's reference count always equals its holders, and freeing everything leaks nothing.
TEST(CacheCoordinator, RandomForksTruncatesAndCommitsLeakNothing) {
  CachePlan p = plan(4, {group(0, CacheGroup::All), group(1, CacheGroup::Window, 5), group(2, CacheGroup::Chunk, 8)});
  p.groups.push_back(stateGroup(3, {0, 1, 2}));
  CacheCoordinator cm(p, 64, 12, 6, 16);
  std::mt19937 rng(99);
  std::vector<int32_t> live;
  for (int op = 0; op < 3000; ++op) {
    int kind = rng() % 5;
    if (kind == 0 && (int)live.size() < 6) {
      int32_t s = cm.acquireSlot();
      if (cm.allocate(s, 1 + rng() % 12)) {
        cm.stateUnits(s);
        live.push_back(s);
      } else {
        cm.free(s);
      }
    } else if (kind == 1 && !live.empty() && (int)live.size() < 6) {
      int32_t parent = live[rng() % live.size()], child = cm.acquireSlot();
      std::vector<UnitCopy> copies;
      cm.commit(parent, cm.committed(parent) ? cm.committed(parent) : 1);
      if (cm.fork(parent, child, copies))
        live.push_back(child);
      else
        cm.free(child);
    } else if (kind == 2 && !live.empty()) {
      int32_t s = live[rng() % live.size()];
      int64_t at = cm.committed(s);
      cm.commit(s, at);
      if (cm.allocate(s, at + 1 + rng() % 6)) {
        StateUnits u = cm.stateUnits(s, rng() % 2);
        if (u.out < 0 || rng() % 3 == 0)
          cm.truncate(s, at);
        else
          cm.commit(s, at + 1);
      }
    } else if (kind == 3 && !live.empty()) {
      size_t i = rng() % live.size();
      cm.free(live[i]);
      live.erase(live.begin() + i);
    }
    if (op % 50 == 0)
      expectRefCountsAreTheHolders(cm, live);
  }
  for (int32_t s : live)
    cm.free(s);
  EXPECT_EQ(cm.usedBlocks(), 0);
  EXPECT_EQ(cm.usedStateUnits(), 0);
  EXPECT_EQ(cm.freeSlots(), 6);
}

// ---- prefix caching: findPrefix, takePrefix, publish, snapshot ---------------------------------

namespace prefix {

// Hashes for `blocks` blocks: the content names the tests give blocks.
std::vector<uint64_t> hashes(int64_t blocks, uint64_t salt = 0) {
  std::vector<uint64_t> h;
  for (int64_t b = 0; b < blocks; ++b)
    h.push_back(1000 * (salt + 1) + (uint64_t)b);
  return h;
}

// A sequence computes `length` positions and publishes them, as the scheduler does.
int32_t computed(CacheCoordinator &cm, const std::vector<uint64_t> &h, int64_t length) {
  int32_t s = cm.acquireSlot();
  EXPECT_TRUE(cm.allocate(s, length));
  cm.publish(s, h, length);
  cm.commit(s, length);
  return s;
}

} // namespace prefix

// Full attention: the longest run of cached blocks from the start, capped by maxTokens, whether
// the blocks are still held or already freed; a taken prefix shares them.
TEST(PrefixCaching, FullAttentionHitsTheLongestCachedRun) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All)}), 16);
  std::vector<uint64_t> h = prefix::hashes(5);
  int32_t a = prefix::computed(cm, h, 18); // 4 full blocks and a partial one
  EXPECT_EQ(cm.cachedBlocks(), 4);
  EXPECT_EQ(cm.findPrefix(h, 100).tokens, 16);
  EXPECT_EQ(cm.findPrefix(h, 15).tokens, 12) << "at most maxTokens, in whole blocks";
  std::vector<uint64_t> other = h;
  other[2] = 77;
  EXPECT_EQ(cm.findPrefix(other, 100).tokens, 8) << "the chain stops at the first miss";
  cm.free(a);
  EXPECT_EQ(cm.findPrefix(h, 100).tokens, 16) << "freed blocks stay findable";
  int32_t b = cm.acquireSlot();
  ASSERT_TRUE(cm.takePrefix(b, h, 16));
  EXPECT_EQ(cm.committed(b), 16);
  EXPECT_EQ(cm.heldBlocks(b, 0), 4);
  ASSERT_TRUE(cm.allocate(b, 20));
  EXPECT_EQ(cm.heldBlocks(b, 0), 5);
  cm.free(b);
  EXPECT_EQ(cm.usedBlocks(), 0);
}

// Evicted blocks are forgotten: a later lookup stops before them.
TEST(PrefixCaching, EvictedBlocksAreNotHit) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All)}), 4);
  std::vector<uint64_t> h = prefix::hashes(4);
  cm.free(prefix::computed(cm, h, 16));
  EXPECT_EQ(cm.findPrefix(h, 100).tokens, 16);
  // Another sequence takes three blocks. The four were freed together, tail first, so the head
  // of the chain survives longest.
  int32_t s = prefix::computed(cm, prefix::hashes(3, 9), 12);
  EXPECT_EQ(cm.findPrefix(h, 100).tokens, 4) << "only the first block is left";
  EXPECT_EQ(cm.prefixCounters().block_evictions, 3);
  cm.free(s);
}

// A sliding window needs only the blocks a query after the hit still sees: the released ones
// before them may be gone.
TEST(PrefixCaching, AWindowNeedsOnlyTheVisibleBlocks) {
  // Window of 6 tokens, blocks of 4: a query at 16 sees 11..16, blocks 2 and 3.
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::Window, 6)}), 16);
  std::vector<uint64_t> h = prefix::hashes(5);
  int32_t a = prefix::computed(cm, h, 20);
  EXPECT_LT(cm.tableAt(a, 0, 0), 0) << "released by the window, but still cached";
  EXPECT_EQ(cm.findPrefix(h, 17).tokens, 16);
  int32_t b = cm.acquireSlot();
  ASSERT_TRUE(cm.takePrefix(b, h, 16));
  EXPECT_LT(cm.tableAt(b, 0, 0), 0);
  EXPECT_LT(cm.tableAt(b, 0, 1), 0);
  EXPECT_GE(cm.tableAt(b, 0, 2), 0) << "the visible blocks: one a released, still cached";
  EXPECT_EQ(cm.tableAt(b, 0, 3), cm.tableAt(a, 0, 3)) << "and one a still holds, shared";
  cm.free(a);
  cm.free(b);
  EXPECT_EQ(cm.usedBlocks(), 0);
}

// A state group hits only at a snapshot on the grid; the full-attention rows may match further
// (the difference is counted as limited by state); a snapshot goes when a block before it is
// evicted.
TEST(PrefixCaching, StatesHitAtASnapshotOnTheGrid) {
  CacheCoordinator cm(plan(16, {group(0, CacheGroup::All), stateGroup(1, {1})}), 16, 6, 4, 32);
  ASSERT_EQ(cm.snapshotGrid(), 64);
  std::vector<uint64_t> h = prefix::hashes(8);
  int32_t a = prefix::computed(cm, h, 64);
  EXPECT_EQ(cm.findPrefix(h, 200).tokens, 0) << "no snapshot yet";
  EXPECT_EQ(cm.findPrefix(h, 200).attention, 64);
  ASSERT_TRUE(cm.snapshot(a, h));
  ASSERT_EQ(cm.pendingCopies().size(), 1u) << "copied out of the live unit, never aliased";
  EXPECT_NE(cm.pendingCopies()[0].src, cm.pendingCopies()[0].dst);
  cm.copiesDone();
  EXPECT_EQ(cm.cachedSnapshots(), 1);
  ASSERT_TRUE(cm.allocate(a, 128));
  cm.publish(a, h, 128);
  cm.commit(a, 128);
  PrefixMatch m = cm.findPrefix(h, 200);
  EXPECT_EQ(m.tokens, 64);
  EXPECT_EQ(m.attention, 128);
  int32_t b = cm.acquireSlot();
  ASSERT_TRUE(cm.takePrefix(b, h, 64));
  ASSERT_EQ(cm.pendingCopies().size(), 1u) << "the snapshot is copied into the sequence's own unit";
  EXPECT_EQ(cm.pendingCopies()[0].dst, cm.stateUnits(b).in);
  cm.copiesDone();
  cm.free(a);
  cm.free(b);
  // Evicting the first block drops the snapshot that depends on it.
  int32_t c = prefix::computed(cm, prefix::hashes(16, 5), 256);
  EXPECT_EQ(cm.prefixCounters().snapshot_drops, 1);
  EXPECT_EQ(cm.cachedSnapshots(), 0);
  cm.free(c);
  EXPECT_EQ(cm.usedBlocks(), 0);
  EXPECT_EQ(cm.usedStateUnits(), 0);
}

TEST(PrefixCaching, PlansWithStaticRowsDoNotCache) {
  CacheCoordinator cm = manager(plan(4, {group(0, CacheGroup::All), staticGroup(1)}), 8);
  EXPECT_FALSE(cm.cachesPrefixes());
}

} // namespace
} // namespace cbc::rt
