#include "runtime/cache.h"

#include <algorithm>
#include <stdexcept>

namespace cbc::rt {

BlockAllocator::BlockAllocator(int32_t numBlocks) : capacity_(numBlocks) {
  // Hand out low block ids first, so runs are reproducible.
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

CacheManager::CacheManager(const CachePlan &plan, int32_t blocksPerGroup, int32_t stateSlots)
    : blockSize_(plan.block_size), blocksPerGroup_(blocksPerGroup), groups_(plan.groups),
      stateSlots_(stateSlots) {
  for (size_t g = 0; g < groups_.size(); ++g)
    allocators_.emplace_back(blocksPerGroup);
  for (int32_t s = stateSlots - 1; s >= 0; --s)
    freeSlots_.push_back(s);
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

int64_t CacheManager::blocksNeeded(RequestId id, int64_t upTo) const {
  int64_t needed = 0;
  auto it = tables_.find(id);
  for (size_t g = 0; g < groups_.size(); ++g) {
    int64_t blocks = (upTo + blockSize_ - 1) / blockSize_;
    for (int64_t b = 0; b < blocks; ++b) {
      bool have = it != tables_.end() && b < (int64_t)it->second[g].size() && it->second[g][b] >= 0;
      // Blocks below a released block stay released.
      bool released = it != tables_.end() && b < (int64_t)it->second[g].size() && it->second[g][b] == -2;
      if (!have && !released)
        ++needed;
    }
  }
  return needed;
}

bool CacheManager::reserve(RequestId id, int64_t upTo) {
  auto [it, inserted] = tables_.try_emplace(id);
  auto &tables = it->second;
  if (inserted) {
    tables.assign(groups_.size(), {});
    if (stateSlots_ > 0) {
      if (freeSlots_.empty()) {
        tables_.erase(it);
        return false;
      }
      slotOf_[id] = freeSlots_.back();
      freeSlots_.pop_back();
    }
  }
  int64_t blocks = (upTo + blockSize_ - 1) / blockSize_;
  std::vector<std::pair<int, int64_t>> added;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto &t = tables[g];
    if ((int64_t)t.size() < blocks)
      t.resize(blocks, -1);
    for (int64_t b = 0; b < blocks; ++b) {
      if (t[b] != -1)
        continue; // allocated (>= 0) or released (-2)
      int32_t phys = allocators_[g].allocate();
      if (phys < 0) {
        for (auto [gg, bb] : added) {
          allocators_[gg].release(tables[gg][bb]);
          tables[gg][bb] = -1;
        }
        if (inserted)
          free(id);
        return false;
      }
      t[b] = phys;
      added.emplace_back((int)g, b);
    }
  }
  return true;
}

void CacheManager::releaseOutOfWindow(RequestId id, int64_t computed) {
  auto it = tables_.find(id);
  if (it == tables_.end())
    return;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].retention == CacheGroup::All)
      continue;
    int64_t first = firstVisible((int)g, computed);
    auto &t = it->second[g];
    // Block b covers [b*B, (b+1)*B); it is dead once it ends at or before `first`.
    for (int64_t b = 0; (b + 1) * blockSize_ <= first && b < (int64_t)t.size(); ++b)
      if (t[b] >= 0) {
        allocators_[g].release(t[b]);
        t[b] = -2;
      }
  }
}

void CacheManager::free(RequestId id) {
  auto it = tables_.find(id);
  if (it != tables_.end()) {
    for (size_t g = 0; g < groups_.size(); ++g)
      for (int32_t b : it->second[g])
        if (b >= 0)
          allocators_[g].release(b);
    tables_.erase(it);
  }
  auto s = slotOf_.find(id);
  if (s != slotOf_.end()) {
    freeSlots_.push_back(s->second);
    slotOf_.erase(s);
  }
}

int32_t CacheManager::stateSlot(RequestId id) const {
  auto it = slotOf_.find(id);
  return it == slotOf_.end() ? -1 : it->second;
}

const std::vector<int32_t> &CacheManager::table(RequestId id, int group) const {
  return tables_.at(id).at(group);
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
