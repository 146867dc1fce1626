// A pool of cache units, each with a reference count: the blocks of one paged group, or the
// state snapshots of one state group. A unit is shared by every sequence that holds it (a fork
// shares its parent's blocks) and returns to the free queue when its last holder lets it go.
// Freed units keep their content hash until they are handed out again, so that a later request
// with the same content can take one back (prefix caching). The free queue is the eviction
// order: a freed unit with a hash joins its tail (evicted last, least recently freed first), one
// without a hash its head (nothing will look it up: reuse it first). The pool holds no tensors:
// backends own the memory, indexed by unit.
#ifndef CBC_RUNTIME_CACHE_BLOCK_POOL_H
#define CBC_RUNTIME_CACHE_BLOCK_POOL_H

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

namespace cbc::rt {

class BlockPool {
public:
  explicit BlockPool(int32_t capacity = 0);

  int32_t capacity() const { return (int32_t)refs_.size(); }
  // Units no sequence holds (cached ones among them).
  int32_t freeCount() const { return free_; }
  int32_t refCount(int32_t unit) const { return refs_[unit]; }
  // Units that keep a content hash, held or free.
  int32_t hashedCount() const { return (int32_t)byHash_.size(); }
  // Hashed units handed out again since the pool was made (their content forgotten).
  int64_t evictions() const { return evictions_; }

  // The unit at the head of the free queue, now held once; -1 when every unit is held. Its old
  // content hash, if any, is forgotten and reported to the eviction hook.
  int32_t allocate();
  // One more holder of a held unit.
  void ref(int32_t unit);
  // One holder fewer; the last one puts the unit in the free queue.
  void unref(int32_t unit);

  // The content hash of a held unit, by which lookup() finds it while it is held or free.
  void setHash(int32_t unit, uint64_t hash);
  bool hasHash(int32_t unit) const { return hashOf_[unit].has_value(); }
  // The unit with this content, held once more (taken out of the free queue when free); -1 when
  // no unit has it.
  int32_t lookup(uint64_t hash);
  // The unit with this content, changing nothing; -1 when none.
  int32_t find(uint64_t hash) const;
  // Forgets the unit's content (a snapshot whose prefix is gone); a free one moves to the head.
  void dropHash(int32_t unit);
  // Called with the hash of each unit that allocate() hands out again.
  void setEvictHook(std::function<void(uint64_t)> hook) { onEvict_ = std::move(hook); }

private:
  void pushFree(int32_t unit, bool front);
  void takeFree(int32_t unit);

  std::vector<int32_t> refs_;
  // The free queue as a doubly linked list over unit ids, so that lookup() can take a unit out of
  // its middle: -1 ends it.
  std::vector<int32_t> prev_, next_;
  int32_t head_ = -1, tail_ = -1, free_ = 0;
  std::vector<std::optional<uint64_t>> hashOf_;
  std::unordered_map<uint64_t, int32_t> byHash_;
  int64_t evictions_ = 0;
  std::function<void(uint64_t)> onEvict_;
};

} // namespace cbc::rt

#endif
