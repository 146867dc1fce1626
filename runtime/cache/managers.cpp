#include "runtime/cache/managers.h"

#include <algorithm>
#include <stdexcept>

namespace cbc::rt {

TableRows::TableRows(int32_t blocks, int32_t *rows, int32_t seqs, int32_t width)
    : pool_(blocks), rows_(rows), width_(width), length_(seqs, 0) {}

void TableRows::grow(int32_t seq, int64_t blocks) {
  int32_t *r = row(seq);
  for (int64_t b = length_[seq]; b < blocks; ++b)
    if ((r[b] = pool_.allocate()) < 0)
      throw std::logic_error("cache blocks allocated beyond what the pool holds");
  length_[seq] = std::max(length_[seq], blocks);
}

void TableRows::shrink(int32_t seq, int64_t from) {
  int32_t *r = row(seq);
  // Last block first: in the free queue a prefix's tail is then evicted before its head, which
  // more requests share.
  for (int64_t b = length_[seq] - 1; b >= from; --b)
    if (r[b] >= 0) {
      pool_.unref(r[b]);
      r[b] = -1;
    }
  length_[seq] = std::min(length_[seq], from);
}

void TableRows::release(int32_t seq, int64_t b) {
  int32_t *r = row(seq);
  if (r[b] >= 0) {
    pool_.unref(r[b]);
    r[b] = -1;
  }
}

void TableRows::share(int32_t seq, int32_t child, int64_t blocks) {
  const int32_t *from = row(seq);
  int32_t *to = row(child);
  for (int64_t b = 0; b < blocks; ++b)
    if ((to[b] = from[b]) >= 0)
      pool_.ref(to[b]);
  length_[child] = blocks;
}

PagedManager::PagedManager(const CacheGroup &group, int blockSize, int32_t blocks, int32_t *rows, int32_t seqs,
                           int32_t width)
    : TableRows(blocks, rows, seqs, width), group_(group), blockSize_(blockSize), released_(seqs, 0) {}

int64_t PagedManager::blocksNeeded(int32_t seq, int64_t upTo) const {
  return std::max<int64_t>(0, blocksFor(upTo) - held(seq));
}

int64_t PagedManager::firstVisible(int64_t pos) const {
  // The next query sits at position `pos`; what it (and later ones) can still see.
  if (group_.retention == CacheGroup::Window)
    return std::max<int64_t>(0, pos - group_.tokens + 1);
  if (group_.retention == CacheGroup::Chunk)
    return pos / group_.tokens * group_.tokens;
  return 0;
}

void PagedManager::commit(int32_t seq, int64_t pos) {
  if (keepsAll())
    return;
  // Block b covers [b*B, (b+1)*B); it is dead once it ends at or before the first visible.
  int64_t dead = std::min(held(seq), firstVisible(pos) / blockSize_);
  for (int64_t b = released_[seq]; b < dead; ++b)
    release(seq, b);
  released_[seq] = std::max(released_[seq], dead);
}

bool PagedManager::fork(int32_t seq, int32_t child, int64_t length, int group, std::vector<UnitCopy> &copies) {
  int64_t whole = rowsFor(length) / blockSize_, blocks = blocksFor(length);
  bool partial = blocks > whole;
  if (partial && (pool_.freeCount() < 1 || at(seq, whole) < 0))
    return false;
  share(seq, child, whole);
  released_[child] = released_[seq];
  if (partial) {
    int32_t copy = pool_.allocate();
    row(child)[whole] = copy;
    length_[child] = blocks;
    copies.push_back({group, at(seq, whole), copy});
  }
  return true;
}

int64_t PagedManager::maxBlocksFor(int64_t length, int64_t maxChunk) const {
  int64_t all = blocksFor(length);
  if (keepsAll())
    return all;
  // A windowed (or chunked) group holds what the next query can see plus the chunk being
  // written, plus a partial block at each end.
  return std::min(all, (group_.tokens + maxChunk) / blockSize_ + 2);
}

void PagedManager::adopt(int32_t seq, const std::vector<uint64_t> &hashes, int64_t tokenBlocks) {
  int64_t blocks = tokenBlocks / rate(); // the caller took whole blocks of this group
  int64_t first = std::min(blocks, firstNeededBlock(blocks * blockSize_));
  int32_t *r = row(seq);
  std::fill(r, r + first, -1);
  for (int64_t b = first; b < blocks; ++b)
    if ((r[b] = pool_.lookup(hashes[hashIndex(b)])) < 0)
      throw std::logic_error("a cached block vanished while a prefix was taken");
  length_[seq] = blocks;
  released_[seq] = first;
}

void PagedManager::restore(int32_t seq, int64_t first, int64_t end) {
  int32_t *r = row(seq);
  std::fill(r, r + first, -1);
  for (int64_t b = first; b < end; ++b)
    if ((r[b] = pool_.allocate()) < 0)
      throw std::logic_error("cache blocks restored beyond what the pool holds");
  length_[seq] = end;
  released_[seq] = first;
}

void PagedManager::publish(int32_t seq, const std::vector<uint64_t> &hashes, int64_t from, int64_t to) {
  // Token blocks [from, to) are complete: so are this group's blocks that end among them.
  for (int64_t b = from / rate(); b < std::min(to / rate(), held(seq)); ++b)
    if (int32_t u = at(seq, b); u >= 0 && !pool_.hasHash(u))
      pool_.setHash(u, hashes[hashIndex(b)]);
}

StaticManager::StaticManager(int blockSize, int32_t blocks, int32_t *rows, int32_t seqs, int32_t width)
    : TableRows(blocks, rows, seqs, width), blockSize_(blockSize) {}

bool StaticManager::allocate(int32_t seq, int64_t rows) {
  int64_t blocks = (rows + blockSize_ - 1) / blockSize_;
  if (blocks > width_ || blocks - held(seq) > pool_.freeCount())
    return false;
  grow(seq, blocks);
  return true;
}

StateManager::StateManager(int32_t units, int32_t seqs) : pool_(units), seqs_(seqs) {}

bool StateManager::allocate(int32_t seq) {
  if (seqs_[seq].current >= 0)
    return true;
  seqs_[seq].current = pool_.allocate();
  return seqs_[seq].current >= 0;
}

bool StateManager::needsUnit(int32_t seq) const {
  const Seq &s = seqs_[seq];
  return s.current < 0 || (!s.stepped() && pool_.refCount(s.current) > 1);
}

bool StateManager::reserve(int32_t seq) {
  Seq &s = seqs_[seq];
  if (s.current < 0)
    return allocate(seq);
  if (s.stepped() || pool_.refCount(s.current) == 1)
    return true;
  s.pending = pool_.allocate();
  return s.pending >= 0;
}

StateUnits StateManager::step(int32_t seq, bool keepInput) {
  Seq &s = seqs_[seq];
  if (s.stepped())
    return {s.current, s.overwritten ? s.current : s.pending};
  if (!keepInput && pool_.refCount(s.current) == 1) {
    s.overwritten = true;
    return {s.current, s.current};
  }
  s.pending = pool_.allocate();
  return s.pending < 0 ? StateUnits{} : StateUnits{s.current, s.pending};
}

bool StateManager::keepInput(int32_t seq, int32_t spare) {
  Seq &s = seqs_[seq];
  if (s.overwritten || s.current < 0)
    return false;
  if (s.pending >= 0)
    return true;
  if (pool_.freeCount() <= spare)
    return false;
  s.pending = pool_.allocate();
  return s.pending >= 0;
}

void StateManager::commit(int32_t seq) {
  Seq &s = seqs_[seq];
  if (s.pending >= 0) {
    pool_.unref(s.current);
    s.current = s.pending;
    s.pending = -1;
  }
  s.overwritten = false;
}

void StateManager::rollback(int32_t seq) {
  Seq &s = seqs_[seq];
  if (s.overwritten)
    throw std::logic_error("a sequence's state rolled back past a step that wrote it in place");
  if (s.pending >= 0) {
    pool_.unref(s.pending);
    s.pending = -1;
  }
}

void StateManager::fork(int32_t seq, int32_t child) {
  if (seqs_[seq].stepped())
    throw std::logic_error("a sequence forked while a step of it is not committed");
  seqs_[child].current = seqs_[seq].current;
  pool_.ref(seqs_[child].current);
}

void StateManager::free(int32_t seq) {
  Seq &s = seqs_[seq];
  for (int32_t u : {s.current, s.pending})
    if (u >= 0)
      pool_.unref(u);
  s = Seq{};
}

} // namespace cbc::rt
