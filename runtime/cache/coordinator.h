// The cache's one memory model. The cache plan's groups are of three kinds (paged rows, per-request
// states, static rows); the coordinator keeps one manager per group (managers.h), each over its own
// pool of reference-counted units, and offers the five verbs every use of the cache is made of:
//
//   allocate(seq, upTo)   room for positions [0, upTo) in every group, all or nothing
//   commit(seq, pos)      the steps up to `pos` are accepted: positions [0, pos) are final
//   truncate(seq, pos)    positions from `pos` on are dropped, back to the committed position at most
//   fork(seq, child)      the child continues the sequence's committed positions, sharing its units
//   free(seq)             everything the sequence holds is given back
//
// Preemption, forked requests (`n`), speculative rollback and encoder caches are uses of these
// verbs. Prefix caching adds three more: findPrefix/takePrefix (a new sequence starts from the
// longest cached prefix every group can serve), publish (a sequence's full blocks become
// findable by their content hashes, runtime/cache/prefix_hash.h) and snapshot (a copy of its
// state, kept in the state pool's spare units under the hash of the block it ends). A sequence is a live
// request's slot, a row of the persistent block tables the backends read; the coordinator holds
// no tensors and knows nothing about model families.
#ifndef CBC_RUNTIME_CACHE_COORDINATOR_H
#define CBC_RUNTIME_CACHE_COORDINATOR_H

#include "runtime/artefact.h"
#include "runtime/cache/managers.h"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace cbc::rt {

// What a sequence held when it was swapped out: the units, in the order their bytes were saved
// (each paged group's blocks [first, end) that it still held, then its state unit), and its
// committed position. restore() takes fresh units of the same shape.
struct SwapLayout {
  std::vector<std::pair<int64_t, int64_t>> blocks; // per paged group: [first, end)
  bool state = false;
  int64_t committed = 0;
};
struct UnitRef {
  int group = 0;
  int32_t unit = -1;
};

// A prefix lookup: the hit, and how far the groups with every row (full attention, latent rows,
// indexer keys) alone would have matched; the difference is what windows and states cost.
struct PrefixMatch {
  int64_t tokens = 0, attention = 0;
};

// Prefix caching's counters since the coordinator was made.
struct PrefixCounters {
  int64_t snapshots = 0;         // state snapshots published
  int64_t snapshot_drops = 0;    // snapshots dropped because a block before them was evicted
  int64_t block_evictions = 0;   // cached blocks handed out again (over the paged groups)
  int64_t snapshot_evictions = 0; // cached snapshots handed out again
};

class CacheCoordinator {
public:
  // `blocksPerGroup` blocks in each paged and static group and `stateUnits` snapshots in each state
  // group come from the memory budget; `maxSeqs` bounds the live requests; `tableWidth` the blocks
  // one request can hold per group.
  CacheCoordinator(const CachePlan &plan, int32_t blocksPerGroup, int32_t stateUnits, int32_t maxSeqs,
                   int32_t tableWidth);

  int blockSize() const { return blockSize_; }
  int32_t blocksPerGroup() const { return blocksPerGroup_; }
  int32_t stateUnits() const { return stateUnits_; }
  int32_t maxSlots() const { return maxSeqs_; }
  int32_t tableWidth() const { return width_; }

  // A slot for a new sequence; -1 when all are taken.
  int32_t acquireSlot();
  int32_t freeSlots() const { return (int32_t)freeSeqs_.size(); }

  // Room for positions [0, upTo) in every paged group, and a fresh state in every state group for
  // a sequence that has none. All or nothing.
  bool allocate(int32_t seq, int64_t upTo);
  // Blocks the sequence would still need to reach `upTo`, summed over the paged groups.
  int64_t blocksNeeded(int32_t seq, int64_t upTo) const;
  // The steps up to `pos` are accepted: their state outputs become current, and blocks of windowed
  // and chunked groups that no query at `pos` or later sees are given back.
  void commit(int32_t seq, int64_t pos);
  // Positions from `pos` on are dropped and the step not yet committed is undone. `pos` may not be
  // below the committed position, and a sequence with states can only go back to it exactly (its
  // state at a later position was never kept) and only when the step kept its input
  // (stateUnits(seq, true)). False, changing nothing, when that is not so.
  bool truncate(int32_t seq, int64_t pos);
  // `child`, a slot just acquired, continues the committed positions of `seq`, sharing its blocks
  // and states; `copies` receives the units the backend must copy before either appends (the
  // partial last blocks). False, changing nothing, when a partial block finds no free block.
  bool fork(int32_t seq, int32_t child, std::vector<UnitCopy> &copies);
  // fork() whose copies join pendingCopies(), their units held until copiesDone().
  bool forkPending(int32_t seq, int32_t child);
  // Swapping. Whether a sequence's cache can be saved and restored (no static rows), what it holds
  // now (`units` receives them in the layout's order), and a just-acquired sequence taking fresh
  // units for a saved layout, committed at its position (`units` receives them, to be loaded);
  // false, changing nothing, when the pools lack them.
  bool canSwap() const { return static_.empty(); }
  SwapLayout swapLayout(int32_t seq, std::vector<UnitRef> &units) const;
  bool restore(int32_t seq, const SwapLayout &layout, std::vector<UnitRef> &units);
  // Gives back everything the sequence holds, and its slot.
  void free(int32_t seq);

  // The state units the sequence's next step reads and writes: a new output unit when its state
  // is shared after a fork, or when `keepInput` keeps the input for a rollback. {-1, -1} for a
  // model without states, or when no unit is free.
  StateUnits stateUnits(int32_t seq, bool keepInput = false);
  bool hasStates() const { return state_ != nullptr; }
  // Speculative decoding: the sequence's next step keeps its state input, so that truncate()
  // can undo it, as long as `spare` state units stay free besides the one it takes. True for a
  // model without states; false, reserving nothing, when the pool is that short.
  bool keepStateInput(int32_t seq, int32_t spare);

  // The persistent tables of the paged and static groups: [tableGroups, maxSeqs, tableWidth];
  // -1 marks a block not held.
  const int32_t *tables() const { return tables_.data(); }
  int numTableGroups() const { return (int)(paged_.size() + static_.size()); }
  int numPagedGroups() const { return (int)paged_.size(); }
  int32_t tableAt(int32_t seq, int group, int64_t block) const {
    return tables_[((int64_t)group * maxSeqs_ + seq) * width_ + block];
  }
  int64_t committed(int32_t seq) const { return committed_[seq]; }
  // Blocks in use over the paged and static groups, and state units in use.
  int64_t usedBlocks() const;
  int64_t usedStateUnits() const;
  int32_t freeBlocks(int group) const;
  // The holders of a unit of a group with block tables, or of the state group.
  int32_t refCount(int group, int32_t unit) const;
  int64_t heldBlocks(int32_t seq, int group) const;
  // The most blocks one request holds at once in paged group `group` on its way to `length`
  // positions, when each step adds at most `maxChunk` of them.
  int64_t maxBlocksFor(int group, int64_t length, int64_t maxChunk) const;

  // Static rows: blocks for `rows` rows of every static group, all or nothing (an encoder's
  // output, written once).
  bool allocateStatic(int32_t seq, int64_t rows);

  // ---- prefix caching (hashes: a sequence's block hashes, runtime/cache/prefix_hash.h) ----
  // Whether cached prefixes can be shared at all: not with static groups, whose rows come from
  // another input than the tokens.
  bool cachesPrefixes() const { return static_.empty(); }
  // The grid state snapshots are taken on, in tokens (a multiple of the block size).
  int64_t snapshotGrid() const { return grid_; }
  // The longest prefix of at most `maxTokens` tokens whose rows every group has cached: whole
  // blocks of the groups keeping every row, the blocks a query after it still sees of windowed
  // and chunked groups, and a state snapshot at its end.
  PrefixMatch findPrefix(const std::vector<uint64_t> &hashes, int64_t maxTokens) const;
  // A sequence that holds nothing takes a findPrefix() hit of `tokens`: the blocks, shared, and a
  // copy of the snapshot in a unit of its own. False, changing nothing, when no state unit is free.
  bool takePrefix(int32_t seq, const std::vector<uint64_t> &hashes, int64_t tokens);
  // The sequence's blocks that are full below `pos` become findable. Call before commit(seq, pos),
  // which may release windowed blocks.
  void publish(int32_t seq, const std::vector<uint64_t> &hashes, int64_t pos);
  // Keeps a copy of the sequence's current state, at its committed position (a multiple of the
  // grid), under that position's block hash. False when no unit could be spared.
  bool snapshot(int32_t seq, const std::vector<uint64_t> &hashes);
  // The unit copies the backend must make before the next step (snapshots in and out, forks'
  // partial blocks), in order; copiesDone() after it made them lets go of the units they pinned.
  std::vector<UnitCopy> &pendingCopies() { return pending_; }
  void copiesDone();
  PrefixCounters prefixCounters() const;
  // Units findable by their hashes now: blocks over the paged groups, and state snapshots.
  int64_t cachedBlocks() const;
  int64_t cachedSnapshots() const;

private:
  BlockPool &poolOf(int group); // a plan group id's pool
  void pin(int group, int32_t unit);
  void onBlockEvicted(uint64_t hash);
  const TableRows &tableGroup(int group) const;

  int blockSize_;
  int32_t blocksPerGroup_, stateUnits_, maxSeqs_, width_;
  std::vector<int32_t> tables_;
  // In the plan's order: paged groups, then static groups (the block tables' groups), then the
  // state group, which holds every layer's states (a unit is a snapshot of all of them).
  std::vector<std::unique_ptr<PagedManager>> paged_;
  std::vector<std::unique_ptr<StaticManager>> static_;
  std::unique_ptr<StateManager> state_;
  int stateGroup_ = -1;
  std::vector<int64_t> committed_;
  std::vector<int64_t> published_; // per sequence: blocks [0, published) named
  std::vector<bool> live_;
  int64_t grid_ = 64;
  std::vector<UnitCopy> pending_;
  std::vector<std::pair<int, int32_t>> pinned_; // (group, unit) held until the copies are made
  // The snapshots that depend on a block: its hash -> (snapshot unit, snapshot hash).
  std::unordered_map<uint64_t, std::vector<std::pair<int32_t, uint64_t>>> dependents_;
  PrefixCounters counters_; // evictions are the pools', read when asked
  std::vector<int32_t> freeSeqs_;
};

} // namespace cbc::rt

#endif
