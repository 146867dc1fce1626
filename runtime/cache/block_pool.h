// A pool of cache units, each with a reference count: the blocks of one paged group, or the
// state snapshots of one state group. A unit is shared by every sequence that holds it (a fork
// shares its parent's blocks) and returns to the free queue when its last holder lets it go.
// Freed units keep their content hash until they are handed out again, so that a later request
// with the same content can take one back (prefix caching uses this; nothing else reads hashes).
// The free queue is least recently freed first, so that a unit that was just freed, and may be
// looked up again soon, is the last to be reused. The pool holds no tensors: backends own the
// memory, indexed by unit.
#ifndef CBC_RUNTIME_CACHE_BLOCK_POOL_H
#define CBC_RUNTIME_CACHE_BLOCK_POOL_H

#include <cstdint>
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

  // The unit at the head of the free queue, now held once; -1 when every unit is held. Its old
  // content hash, if any, is forgotten.
  int32_t allocate();
  // One more holder of a held unit.
  void ref(int32_t unit);
  // One holder fewer; the last one puts the unit at the tail of the free queue.
  void unref(int32_t unit);

  // The content hash of a held unit, by which lookup() finds it while it is held or free.
  void setHash(int32_t unit, uint64_t hash);
  // The unit with this content, held once more (taken out of the free queue when free); -1 when
  // no unit has it.
  int32_t lookup(uint64_t hash);

private:
  void pushFree(int32_t unit);
  void takeFree(int32_t unit);

  std::vector<int32_t> refs_;
  // The free queue as a doubly linked list over unit ids, so that lookup() can take a unit out of
  // its middle: -1 ends it.
  std::vector<int32_t> prev_, next_;
  int32_t head_ = -1, tail_ = -1, free_ = 0;
  std::vector<std::optional<uint64_t>> hashOf_;
  std::unordered_map<uint64_t, int32_t> byHash_;
};

} // namespace cbc::rt

#endif
