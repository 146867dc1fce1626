#include "runtime/cache/coordinator.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace cbc::rt {

CacheCoordinator::CacheCoordinator(const CachePlan &plan, int32_t blocksPerGroup, int32_t stateUnits, int32_t maxSeqs,
                                   int32_t tableWidth)
    : blockSize_(plan.block_size), blocksPerGroup_(blocksPerGroup), stateUnits_(stateUnits), maxSeqs_(maxSeqs),
      width_(std::max(1, tableWidth)), committed_(maxSeqs, 0), published_(maxSeqs, 0), live_(maxSeqs, false) {
  int tableGroups = 0;
  for (const CacheGroup &g : plan.groups)
    tableGroups += g.kind != CacheGroup::State;
  tables_.assign((size_t)tableGroups * maxSeqs_ * width_, -1);
  // The loader checked the order: paged groups, static groups, then at most one state group.
  for (const CacheGroup &g : plan.groups) {
    int32_t *rows = g.kind == CacheGroup::State ? nullptr : tables_.data() + (int64_t)g.id * maxSeqs_ * width_;
    if (g.kind == CacheGroup::Paged)
      paged_.push_back(std::make_unique<PagedManager>(g, blockSize_, blocksPerGroup, rows, maxSeqs_, width_));
    else if (g.kind == CacheGroup::Static)
      static_.push_back(std::make_unique<StaticManager>(blockSize_, blocksPerGroup, rows, maxSeqs_, width_));
    else if (state_)
      throw std::logic_error("a cache plan has one state group");
    else {
      state_ = std::make_unique<StateManager>(stateUnits, maxSeqs_);
      stateGroup_ = g.id;
    }
  }
  for (int32_t s = maxSeqs_ - 1; s >= 0; --s)
    freeSeqs_.push_back(s);
  // Snapshots on the 64-token grid of the chunked scans (or every block, for larger blocks), so
  // that a run resumed from one makes the same scan chunks as a cold run.
  grid_ = blockSize_ >= 64 ? blockSize_ : (64 / blockSize_) * blockSize_;
  // A compressed group serves whole blocks of its rows, B * rate tokens: hits and snapshots
  // sit on a grid those divide too.
  for (const auto &m : paged_)
    grid_ = std::lcm(grid_, (int64_t)blockSize_ * m->rate());
  // A snapshot is useful only while every block before it is cached: the groups keeping every
  // row report their evictions.
  for (const auto &m : paged_)
    if (m->keepsAll())
      m->pool().setEvictHook([this](uint64_t h) { onBlockEvicted(h); });
}

int32_t CacheCoordinator::acquireSlot() {
  if (freeSeqs_.empty())
    return -1;
  int32_t s = freeSeqs_.back();
  freeSeqs_.pop_back();
  live_[s] = true;
  committed_[s] = 0;
  published_[s] = 0;
  return s;
}

int64_t CacheCoordinator::blocksNeeded(int32_t seq, int64_t upTo) const {
  int64_t need = 0;
  for (const auto &m : paged_)
    need += m->blocksNeeded(seq, upTo);
  return need;
}

bool CacheCoordinator::allocate(int32_t seq, int64_t upTo) {
  for (const auto &m : paged_) {
    int64_t need = m->blocksNeeded(seq, upTo);
    if (m->blocksFor(upTo) > width_ || need > m->pool().freeCount())
      return false;
  }
  // A fresh state, or the output of a state shared since a fork (reserved now, so that the step
  // never finds the pool empty).
  if (state_ && state_->needsUnit(seq) && state_->pool().freeCount() < 1)
    return false;
  for (const auto &m : paged_)
    m->allocate(seq, upTo);
  if (state_)
    state_->reserve(seq);
  return true;
}

void CacheCoordinator::commit(int32_t seq, int64_t pos) {
  committed_[seq] = pos;
  for (const auto &m : paged_)
    m->commit(seq, pos);
  if (state_)
    state_->commit(seq);
}

bool CacheCoordinator::truncate(int32_t seq, int64_t pos) {
  if (pos < committed_[seq] || (state_ && (pos != committed_[seq] || !state_->canRollback(seq))))
    return false;
  for (const auto &m : paged_)
    m->truncate(seq, pos);
  if (state_)
    state_->rollback(seq);
  return true;
}

bool CacheCoordinator::fork(int32_t seq, int32_t child, std::vector<UnitCopy> &copies) {
  int64_t length = committed_[seq];
  // All or nothing: a partial last block needs a free block in its group.
  for (const auto &m : paged_)
    if (m->rowsFor(length) % blockSize_ != 0 && m->pool().freeCount() < 1)
      return false;
  for (size_t g = 0; g < paged_.size(); ++g)
    paged_[g]->fork(seq, child, length, (int)g, copies);
  for (const auto &m : static_)
    m->fork(seq, child);
  if (state_ && state_->holds(seq))
    state_->fork(seq, child);
  committed_[child] = length;
  published_[child] = published_[seq];
  return true;
}

bool CacheCoordinator::forkPending(int32_t seq, int32_t child) {
  size_t before = pending_.size();
  if (!fork(seq, child, pending_))
    return false;
  for (size_t i = before; i < pending_.size(); ++i) {
    pin(pending_[i].group, pending_[i].src);
    pin(pending_[i].group, pending_[i].dst);
  }
  return true;
}

void CacheCoordinator::free(int32_t seq) {
  if (seq < 0 || seq >= maxSeqs_ || !live_[seq])
    return;
  for (const auto &m : paged_)
    m->free(seq);
  for (const auto &m : static_)
    m->free(seq);
  if (state_) {
    // A snapshot copied in for a sequence freed before the copy was made: the unit goes to
    // another sequence, which must not receive it.
    int32_t unit = state_->current(seq);
    std::erase_if(pending_, [&](const UnitCopy &c) { return c.group == stateGroup_ && c.dst == unit; });
    state_->free(seq);
  }
  committed_[seq] = 0;
  published_[seq] = 0;
  live_[seq] = false;
  freeSeqs_.push_back(seq);
}

bool CacheCoordinator::keepStateInput(int32_t seq, int32_t spare) {
  return !state_ || (state_->holds(seq) && state_->keepInput(seq, spare));
}

StateUnits CacheCoordinator::stateUnits(int32_t seq, bool keepInput) {
  return state_ && state_->holds(seq) ? state_->step(seq, keepInput) : StateUnits{};
}

bool CacheCoordinator::allocateStatic(int32_t seq, int64_t rows) {
  int64_t blocks = (rows + blockSize_ - 1) / blockSize_;
  for (const auto &m : static_)
    if (blocks > width_ || blocks - m->held(seq) > m->pool().freeCount())
      return false;
  for (const auto &m : static_)
    m->allocate(seq, rows);
  return true;
}

const TableRows &CacheCoordinator::tableGroup(int group) const {
  if (group < (int)paged_.size())
    return *paged_[group];
  return *static_.at(group - paged_.size());
}

int64_t CacheCoordinator::usedBlocks() const {
  int64_t used = 0;
  for (int g = 0; g < numTableGroups(); ++g)
    used += tableGroup(g).pool().capacity() - tableGroup(g).pool().freeCount();
  return used;
}

int64_t CacheCoordinator::usedStateUnits() const {
  return state_ ? state_->pool().capacity() - state_->pool().freeCount() : 0;
}

int32_t CacheCoordinator::freeBlocks(int group) const { return tableGroup(group).pool().freeCount(); }

int32_t CacheCoordinator::refCount(int group, int32_t unit) const {
  return group == stateGroup_ ? state_->pool().refCount(unit) : tableGroup(group).pool().refCount(unit);
}

int64_t CacheCoordinator::heldBlocks(int32_t seq, int group) const { return tableGroup(group).held(seq); }

int64_t CacheCoordinator::maxBlocksFor(int group, int64_t length, int64_t maxChunk) const {
  return paged_.at(group)->maxBlocksFor(length, maxChunk);
}

SwapLayout CacheCoordinator::swapLayout(int32_t seq, std::vector<UnitRef> &units) const {
  SwapLayout layout;
  layout.committed = committed_[seq];
  units.clear();
  for (size_t g = 0; g < paged_.size(); ++g) {
    const PagedManager &m = *paged_[g];
    int64_t first = std::min(m.firstHeld(seq), m.held(seq)), end = m.held(seq);
    layout.blocks.push_back({first, end});
    for (int64_t b = first; b < end; ++b)
      units.push_back({(int)g, m.at(seq, b)});
  }
  if (state_ && state_->holds(seq)) {
    layout.state = true;
    units.push_back({stateGroup_, state_->current(seq)});
  }
  return layout;
}

bool CacheCoordinator::restore(int32_t seq, const SwapLayout &layout, std::vector<UnitRef> &units) {
  if (layout.blocks.size() != paged_.size())
    throw std::logic_error("a swap layout of another cache plan");
  for (size_t g = 0; g < paged_.size(); ++g) {
    auto [first, end] = layout.blocks[g];
    if (end > width_ || end - first > paged_[g]->pool().freeCount())
      return false;
  }
  if (layout.state && state_->pool().freeCount() < 1)
    return false;
  units.clear();
  for (size_t g = 0; g < paged_.size(); ++g) {
    auto [first, end] = layout.blocks[g];
    paged_[g]->restore(seq, first, end);
    for (int64_t b = first; b < end; ++b)
      units.push_back({(int)g, paged_[g]->at(seq, b)});
  }
  if (layout.state) {
    state_->allocate(seq);
    units.push_back({stateGroup_, state_->current(seq)});
  }
  committed_[seq] = layout.committed;
  published_[seq] = 0;
  return true;
}

PrefixMatch CacheCoordinator::findPrefix(const std::vector<uint64_t> &hashes, int64_t maxTokens) const {
  int64_t most = std::min<int64_t>((int64_t)hashes.size(), std::max<int64_t>(0, maxTokens) / blockSize_);
  most = std::min<int64_t>(most, width_);
  // The groups keeping every row: the longest run from the start (the chain makes every block
  // after a miss a miss too).
  int64_t run = most;
  bool anyAll = false;
  // A compressed group serves its whole blocks (rate token blocks each): a run ending inside
  // its first missing block stops before that block.
  for (const auto &m : paged_)
    if (m->keepsAll()) {
      anyAll = true;
      int64_t b = 0;
      while (m->hashIndex(b) < run && m->pool().find(hashes[m->hashIndex(b)]) >= 0)
        ++b;
      run = std::min(run, b * m->rate() + m->rate() - 1);
    }
  // Windowed and chunked groups need only the blocks a query after the hit still sees: count
  // what each has cached, so that any candidate is checked at once.
  std::vector<std::vector<int64_t>> cachedBefore;
  std::vector<const PagedManager *> partial;
  for (const auto &m : paged_)
    if (!m->keepsAll()) {
      std::vector<int64_t> c(run + 1, 0);
      for (int64_t b = 0; b < run; ++b)
        c[b + 1] = c[b] + (m->pool().find(hashes[b]) >= 0);
      cachedBefore.push_back(std::move(c));
      partial.push_back(m.get());
    }
  PrefixMatch match;
  for (int64_t n = run; n > 0 && match.tokens == 0; --n) {
    if (state_ && ((n * blockSize_) % grid_ != 0 || state_->pool().find(hashes[n - 1]) < 0))
      continue;
    if (std::any_of(paged_.begin(), paged_.end(), [&](const auto &m) { return n % m->rate() != 0; }))
      continue;
    bool seen = true;
    for (size_t i = 0; i < partial.size() && seen; ++i) {
      int64_t first = std::min(n, partial[i]->firstNeededBlock(n * blockSize_));
      seen = cachedBefore[i][n] - cachedBefore[i][first] == n - first;
    }
    if (seen)
      match.tokens = n * blockSize_;
  }
  match.attention = anyAll ? run * blockSize_ : match.tokens;
  return match;
}

bool CacheCoordinator::takePrefix(int32_t seq, const std::vector<uint64_t> &hashes, int64_t tokens) {
  int64_t blocks = tokens / blockSize_;
  if (blocks <= 0)
    return true;
  if (state_) {
    int32_t snap = state_->pool().lookup(hashes[blocks - 1]);
    if (snap < 0)
      throw std::logic_error("a cached snapshot vanished while a prefix was taken");
    if (!state_->allocate(seq)) {
      state_->pool().unref(snap);
      return false;
    }
    pending_.push_back({stateGroup_, snap, state_->current(seq)});
    pinned_.push_back({stateGroup_, snap}); // the lookup's hold, until the copy is made
  }
  for (const auto &m : paged_)
    m->adopt(seq, hashes, blocks);
  committed_[seq] = tokens;
  published_[seq] = blocks;
  return true;
}

void CacheCoordinator::publish(int32_t seq, const std::vector<uint64_t> &hashes, int64_t pos) {
  int64_t upTo = std::min<int64_t>(pos / blockSize_, (int64_t)hashes.size());
  if (upTo <= published_[seq])
    return;
  for (const auto &m : paged_)
    m->publish(seq, hashes, published_[seq], upTo);
  published_[seq] = upTo;
}

bool CacheCoordinator::snapshot(int32_t seq, const std::vector<uint64_t> &hashes) {
  int64_t pos = committed_[seq], blocks = pos / blockSize_;
  if (!state_ || !state_->holds(seq) || pos <= 0 || pos % grid_ != 0 || blocks > (int64_t)hashes.size())
    return false;
  uint64_t hash = hashes[blocks - 1];
  BlockPool &pool = state_->pool();
  if (pool.find(hash) >= 0)
    return true; // already cached
  int32_t unit = pool.allocate();
  if (unit < 0)
    return false;
  int32_t from = state_->current(seq);
  pool.ref(from);
  pending_.push_back({stateGroup_, from, unit});
  pinned_.push_back({stateGroup_, from});
  pinned_.push_back({stateGroup_, unit}); // free (and findable) once the copy is made
  pool.setHash(unit, hash);
  for (int64_t b = 0; b < blocks; ++b)
    dependents_[hashes[b]].push_back({unit, hash});
  counters_.snapshots++;
  return true;
}

BlockPool &CacheCoordinator::poolOf(int group) {
  if (group == stateGroup_)
    return state_->pool();
  if (group < (int)paged_.size())
    return paged_[group]->pool();
  return static_.at(group - paged_.size())->pool();
}

void CacheCoordinator::pin(int group, int32_t unit) {
  poolOf(group).ref(unit);
  pinned_.push_back({group, unit});
}

void CacheCoordinator::copiesDone() {
  pending_.clear();
  for (auto [group, unit] : pinned_)
    poolOf(group).unref(unit);
  pinned_.clear();
}

void CacheCoordinator::onBlockEvicted(uint64_t hash) {
  auto it = dependents_.find(hash);
  if (it == dependents_.end())
    return;
  for (auto [unit, snapHash] : it->second)
    if (state_->pool().find(snapHash) == unit) {
      state_->pool().dropHash(unit);
      counters_.snapshot_drops++;
    }
  dependents_.erase(it);
}

PrefixCounters CacheCoordinator::prefixCounters() const {
  PrefixCounters c = counters_;
  for (const auto &m : paged_)
    c.block_evictions += m->pool().evictions();
  c.snapshot_evictions = state_ ? state_->pool().evictions() : 0;
  return c;
}

int64_t CacheCoordinator::cachedBlocks() const {
  int64_t n = 0;
  for (const auto &m : paged_)
    n += m->pool().hashedCount();
  return n;
}

int64_t CacheCoordinator::cachedSnapshots() const { return state_ ? state_->pool().hashedCount() : 0; }

} // namespace cbc::rt
