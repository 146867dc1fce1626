#include "runtime/cache/coordinator.h"

#include <algorithm>
#include <stdexcept>

namespace cbc::rt {

CacheCoordinator::CacheCoordinator(const CachePlan &plan, int32_t blocksPerGroup, int32_t stateUnits, int32_t maxSeqs,
                                   int32_t tableWidth)
    : blockSize_(plan.block_size), blocksPerGroup_(blocksPerGroup), stateUnits_(stateUnits), maxSeqs_(maxSeqs),
      width_(std::max(1, tableWidth)), committed_(maxSeqs, 0), live_(maxSeqs, false) {
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
}

int32_t CacheCoordinator::acquireSlot() {
  if (freeSeqs_.empty())
    return -1;
  int32_t s = freeSeqs_.back();
  freeSeqs_.pop_back();
  live_[s] = true;
  committed_[s] = 0;
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
  if (state_ && !state_->holds(seq) && state_->pool().freeCount() < 1)
    return false;
  for (const auto &m : paged_)
    m->allocate(seq, upTo);
  if (state_)
    state_->allocate(seq);
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
  // All or nothing: a partial last block needs a free block in every paged group.
  if (length % blockSize_ != 0)
    for (const auto &m : paged_)
      if (m->pool().freeCount() < 1)
        return false;
  for (size_t g = 0; g < paged_.size(); ++g)
    paged_[g]->fork(seq, child, length, (int)g, copies);
  for (const auto &m : static_)
    m->fork(seq, child);
  if (state_ && state_->holds(seq))
    state_->fork(seq, child);
  committed_[child] = length;
  return true;
}

void CacheCoordinator::free(int32_t seq) {
  if (seq < 0 || seq >= maxSeqs_ || !live_[seq])
    return;
  for (const auto &m : paged_)
    m->free(seq);
  for (const auto &m : static_)
    m->free(seq);
  if (state_)
    state_->free(seq);
  committed_[seq] = 0;
  live_[seq] = false;
  freeSeqs_.push_back(seq);
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

} // namespace cbc::rt
