// The paged cache's bookkeeping: one block pool per cache group, a block table per request
// and group, and fixed-size per-request state slots. It holds no tensors: the backend owns
// the memory, and reads it through the tables this class builds.
#ifndef CBC_RUNTIME_CACHE_H
#define CBC_RUNTIME_CACHE_H

#include "runtime/artefact.h"

#include <cstdint>
#include <unordered_map>
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

using RequestId = int64_t;

class CacheManager {
public:
  // `blocksPerGroup` and `stateSlots` come from the memory budget (see planCapacity).
  CacheManager(const CachePlan &plan, int32_t blocksPerGroup, int32_t stateSlots);

  int blockSize() const { return blockSize_; }
  int numGroups() const { return (int)groups_.size(); }
  int32_t blocksPerGroup() const { return blocksPerGroup_; }

  // Makes positions [0, upTo) of the request writable in every group, allocating blocks as
  // needed (a sliding group only for positions not yet released). All or nothing.
  bool reserve(RequestId id, int64_t upTo);
  // Blocks a request would still need to reach `upTo` (for admission decisions).
  int64_t blocksNeeded(RequestId id, int64_t upTo) const;
  // Gives back the blocks of windowed groups that no future query of the request can see,
  // once positions [0, computed) are in the cache.
  void releaseOutOfWindow(RequestId id, int64_t computed);
  // Frees everything the request holds.
  void free(RequestId id);
  bool holds(RequestId id) const { return tables_.count(id) != 0; }

  // State slots: one per live request that declares states.
  bool hasStates() const { return stateSlots_ > 0; }
  int32_t stateSlot(RequestId id) const;
  int32_t freeStateSlots() const { return (int32_t)freeSlots_.size(); }

  // The request's logical-to-physical table in a group (-1: released or never allocated).
  const std::vector<int32_t> &table(RequestId id, int group) const;
  int32_t freeBlocks(int group) const { return allocators_[group].freeCount(); }
  int64_t usedBlocks() const;

  // The most blocks one request can hold at once in a group on its way to `length`
  // positions, when each step adds at most `maxChunk` of them.
  int64_t maxBlocksFor(int group, int64_t length, int64_t maxChunk) const;

private:
  int64_t firstVisible(int group, int64_t computed) const;

  int blockSize_;
  int32_t blocksPerGroup_;
  std::vector<CacheGroup> groups_;
  std::vector<BlockAllocator> allocators_;
  std::unordered_map<RequestId, std::vector<std::vector<int32_t>>> tables_;
  int32_t stateSlots_;
  std::vector<int32_t> freeSlots_;
  std::unordered_map<RequestId, int32_t> slotOf_;
};

} // namespace cbc::rt

#endif
