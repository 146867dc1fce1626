// The paged cache's bookkeeping. Every live request holds a slot: a row of the persistent
// block tables (one table per cache group) and, for models with per-request states, a state
// slot. Blocks come from one pool per group. The class holds no tensors: backends own the
// memory and read it through the tables kept here, which change only where blocks are added
// or released, so per-step metadata stays O(tokens + requests).
#ifndef CBC_RUNTIME_CACHE_H
#define CBC_RUNTIME_CACHE_H

#include "runtime/artefact.h"

#include <cstdint>
#include <vector>

namespace cbc::rt {

class BlockAllocator {
public:
  explicit BlockAllocator(int32_t numBlocks = 0);
  int32_t capacity() const { return capacity_; }
  int32_t freeCount() const { return (int32_t)free_.size(); }
  int32_t allocate();          // -1 when empty
  void release(int32_t block); // returns a block to the pool

private:
  int32_t capacity_;
  std::vector<int32_t> free_;
};

class CacheManager {
public:
  // `blocksPerGroup` comes from the memory budget; `maxSlots` bounds the live requests;
  // `tableWidth` bounds the blocks one request can hold per group.
  CacheManager(const CachePlan &plan, int32_t blocksPerGroup, int32_t maxSlots, int32_t tableWidth);

  int blockSize() const { return blockSize_; }
  int numGroups() const { return (int)groups_.size(); }
  int32_t blocksPerGroup() const { return blocksPerGroup_; }
  int32_t maxSlots() const { return maxSlots_; }
  int32_t tableWidth() const { return width_; }

  // A slot for a new live request; -1 when all are taken.
  int32_t acquireSlot();
  int32_t freeSlots() const { return (int32_t)freeSlots_.size(); }

  // Makes positions [0, upTo) of the slot's request writable in every group, allocating the
  // missing blocks. All or nothing.
  bool reserve(int32_t slot, int64_t upTo);
  // Blocks the request would still need to reach `upTo`, summed over groups.
  int64_t blocksNeeded(int32_t slot, int64_t upTo) const;
  // Gives back the blocks of windowed (and chunked) groups that no later query of the request
  // can see, once positions [0, computed) are in the cache.
  void releaseOutOfWindow(int32_t slot, int64_t computed);
  // Frees the slot and every block it holds.
  void free(int32_t slot);

  // The persistent tables: [groups, maxSlots, tableWidth]; -1 marks a block not held.
  const int32_t *tables() const { return tables_.data(); }
  int32_t tableAt(int32_t slot, int group, int64_t block) const {
    return tables_[((int64_t)group * maxSlots_ + slot) * width_ + block];
  }
  int64_t heldBlocks(int32_t slot) const { return slots_[slot].blocks; }
  int32_t freeBlocks(int group) const { return allocators_[group].freeCount(); }
  int64_t usedBlocks() const;

  // The most blocks one request holds at once in a group on its way to `length` positions,
  // when each step adds at most `maxChunk` of them.
  int64_t maxBlocksFor(int group, int64_t length, int64_t maxChunk) const;

private:
  struct SlotState {
    bool live = false;
    int64_t blocks = 0;            // logical blocks [0, blocks) allocated (or released)
    std::vector<int64_t> released; // per group: blocks [0, released) given back
  };
  int32_t *row(int32_t slot, int group) {
    return tables_.data() + ((int64_t)group * maxSlots_ + slot) * width_;
  }
  int64_t firstVisible(int group, int64_t computed) const;

  int blockSize_;
  int32_t blocksPerGroup_, maxSlots_, width_;
  std::vector<CacheGroup> groups_;
  std::vector<BlockAllocator> allocators_;
  std::vector<int32_t> tables_;
  std::vector<SlotState> slots_;
  std::vector<int32_t> freeSlots_;
};

} // namespace cbc::rt

#endif
