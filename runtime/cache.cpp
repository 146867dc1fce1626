#include "runtime/cache.h"

#include <algorithm>
#include <stdexcept>

namespace cbc::rt {

BlockAllocator::BlockAllocator(int32_t numBlocks) : capacity_(numBlocks) {
  // Hand out low block ids first, so runs are reproducible.
  free_.reserve(numBlocks);
  for (int32_t b = numBlocks - 1; b >= 0; --b)
    free_.push_back(b);
}

int32_t BlockAllocator::allocate() {
  if (free_.empty())
    return -1;
  int32_t b = free_.back();
  free_.pop_back();
  return b;
}

void BlockAllocator::release(int32_t block) { free_.push_back(block); }

CacheManager::CacheManager(const CachePlan &plan, int32_t blocksPerGroup, int32_t maxSlots,
                           int32_t tableWidth)
    : blockSize_(plan.block_size), blocksPerGroup_(blocksPerGroup), maxSlots_(maxSlots),
      width_(std::max(1, tableWidth)), groups_(plan.groups) {
  for (size_t g = 0; g < groups_.size(); ++g)
    allocators_.emplace_back(blocksPerGroup);
  tables_.assign(groups_.size() * (size_t)maxSlots_ * width_, -1);
  slots_.resize(maxSlots_);
  for (int32_t s = maxSlots_ - 1; s >= 0; --s)
    freeSlots_.push_back(s);
}

int32_t CacheManager::acquireSlot() {
  if (freeSlots_.empty())
    return -1;
  int32_t s = freeSlots_.back();
  freeSlots_.pop_back();
  slots_[s].live = true;
  slots_[s].blocks = 0;
  slots_[s].released.assign(groups_.size(), 0);
  return s;
}

int64_t CacheManager::firstVisible(int group, int64_t computed) const {
  const CacheGroup &g = groups_[group];
  // The next query sits at position `computed`; what it (and later ones) can still see.
  if (g.retention == CacheGroup::Window)
    return std::max<int64_t>(0, computed - g.tokens + 1);
  if (g.retention == CacheGroup::Chunk)
    return computed / g.tokens * g.tokens;
  return 0;
}

int64_t CacheManager::blocksNeeded(int32_t slot, int64_t upTo) const {
  int64_t need = (upTo + blockSize_ - 1) / blockSize_;
  return std::max<int64_t>(0, need - slots_[slot].blocks) * (int64_t)groups_.size();
}

bool CacheManager::reserve(int32_t slot, int64_t upTo) {
  SlotState &s = slots_[slot];
  int64_t need = (upTo + blockSize_ - 1) / blockSize_;
  if (need <= s.blocks)
    return true; // the common decode step: nothing to allocate
  if (need > width_)
    return false;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (allocators_[g].freeCount() < need - s.blocks)
      return false;
  for (size_t g = 0; g < groups_.size(); ++g) {
    int32_t *r = row(slot, (int)g);
    for (int64_t b = s.blocks; b < need; ++b)
      r[b] = allocators_[g].allocate();
  }
  s.blocks = need;
  return true;
}

void CacheManager::releaseOutOfWindow(int32_t slot, int64_t computed) {
  SlotState &s = slots_[slot];
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].retention == CacheGroup::All)
      continue;
    // Block b covers [b*B, (b+1)*B); it is dead once it ends at or before the first visible.
    int64_t dead = std::min(s.blocks, firstVisible((int)g, computed) / blockSize_);
    int32_t *r = row(slot, (int)g);
    for (int64_t b = s.released[g]; b < dead; ++b) {
      allocators_[g].release(r[b]);
      r[b] = -1;
    }
    s.released[g] = std::max(s.released[g], dead);
  }
}

void CacheManager::free(int32_t slot) {
  if (slot < 0 || slot >= maxSlots_ || !slots_[slot].live)
    return;
  SlotState &s = slots_[slot];
  for (size_t g = 0; g < groups_.size(); ++g) {
    int32_t *r = row(slot, (int)g);
    for (int64_t b = 0; b < s.blocks; ++b)
      if (r[b] >= 0) {
        allocators_[g].release(r[b]);
        r[b] = -1;
      }
  }
  s = SlotState{};
  freeSlots_.push_back(slot);
}

int64_t CacheManager::usedBlocks() const {
  int64_t used = 0;
  for (const auto &a : allocators_)
    used += a.capacity() - a.freeCount();
  return used;
}

int64_t CacheManager::maxBlocksFor(int group, int64_t length, int64_t maxChunk) const {
  int64_t all = (length + blockSize_ - 1) / blockSize_;
  const CacheGroup &g = groups_[group];
  if (g.retention == CacheGroup::All)
    return all;
  // A windowed (or chunked) group holds what the next query can see plus the chunk being
  // written, plus a partial block at each end.
  return std::min(all, (g.tokens + maxChunk) / blockSize_ + 2);
}

} // namespace cbc::rt
