#include "runtime/cache/block_pool.h"

#include <stdexcept>
#include <string>

namespace cbc::rt {

BlockPool::BlockPool(int32_t capacity)
    : refs_(capacity, 0), prev_(capacity, -1), next_(capacity, -1), hashOf_(capacity) {
  // Low ids first, so that runs are reproducible.
  for (int32_t u = 0; u < capacity; ++u)
    pushFree(u, false);
}

void BlockPool::pushFree(int32_t unit, bool front) {
  if (front) {
    next_[unit] = head_;
    prev_[unit] = -1;
    (head_ >= 0 ? prev_[head_] : tail_) = unit;
    head_ = unit;
  } else {
    prev_[unit] = tail_;
    next_[unit] = -1;
    (tail_ >= 0 ? next_[tail_] : head_) = unit;
    tail_ = unit;
  }
  ++free_;
}

void BlockPool::takeFree(int32_t unit) {
  (prev_[unit] >= 0 ? next_[prev_[unit]] : head_) = next_[unit];
  (next_[unit] >= 0 ? prev_[next_[unit]] : tail_) = prev_[unit];
  prev_[unit] = next_[unit] = -1;
  --free_;
}

int32_t BlockPool::allocate() {
  if (head_ < 0)
    return -1;
  int32_t unit = head_;
  takeFree(unit);
  if (std::optional<uint64_t> old = hashOf_[unit]) {
    byHash_.erase(*old);
    hashOf_[unit].reset();
    ++evictions_;
    if (onEvict_)
      onEvict_(*old);
  }
  refs_[unit] = 1;
  return unit;
}

void BlockPool::ref(int32_t unit) {
  if (refs_[unit] <= 0)
    throw std::logic_error("cache unit " + std::to_string(unit) + " is referenced while free");
  ++refs_[unit];
}

void BlockPool::unref(int32_t unit) {
  if (refs_[unit] <= 0)
    throw std::logic_error("cache unit " + std::to_string(unit) + " is released while free");
  if (--refs_[unit] == 0)
    pushFree(unit, !hashOf_[unit]);
}

void BlockPool::setHash(int32_t unit, uint64_t hash) {
  if (refs_[unit] <= 0)
    throw std::logic_error("a free cache unit cannot take a hash");
  if (hashOf_[unit])
    byHash_.erase(*hashOf_[unit]);
  // A second unit with the same content replaces the first as the one found.
  if (auto it = byHash_.find(hash); it != byHash_.end())
    hashOf_[it->second].reset();
  hashOf_[unit] = hash;
  byHash_[hash] = unit;
}

int32_t BlockPool::lookup(uint64_t hash) {
  int32_t unit = find(hash);
  if (unit < 0)
    return -1;
  if (refs_[unit] == 0)
    takeFree(unit);
  ++refs_[unit];
  return unit;
}

int32_t BlockPool::find(uint64_t hash) const {
  auto it = byHash_.find(hash);
  return it == byHash_.end() ? -1 : it->second;
}

void BlockPool::dropHash(int32_t unit) {
  if (!hashOf_[unit])
    return;
  byHash_.erase(*hashOf_[unit]);
  hashOf_[unit].reset();
  if (refs_[unit] == 0) {
    takeFree(unit);
    pushFree(unit, true);
  }
}

} // namespace cbc::rt
