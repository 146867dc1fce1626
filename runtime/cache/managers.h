// One manager per cache group, by the group's kind, each over its own BlockPool. A sequence is a
// live request's slot: its row of the block tables and its state units. The managers know what
// a position means for their kind (which blocks a query can still see, which state a step reads
// and writes); the coordinator (coordinator.h) drives them together.
#ifndef CBC_RUNTIME_CACHE_MANAGERS_H
#define CBC_RUNTIME_CACHE_MANAGERS_H

#include "runtime/artefact.h"
#include "runtime/cache/block_pool.h"

#include <cstdint>
#include <vector>

namespace cbc::rt {

// A unit the backend must copy before the next step: a block of a paged or static group (in every
// layer of the group), or a state snapshot of a state group (every state of the group).
struct UnitCopy {
  int group = 0;
  int32_t src = -1, dst = -1;
};

// The block-table rows of a paged or static group: [seqs][width] block ids, -1 where a sequence
// holds no block (beyond its length, or released).
class TableRows {
public:
  TableRows(int32_t blocks, int32_t *rows, int32_t seqs, int32_t width);
  BlockPool &pool() { return pool_; }
  const BlockPool &pool() const { return pool_; }
  int64_t held(int32_t seq) const { return length_[seq]; } // blocks [0, held) in the row
  int32_t at(int32_t seq, int64_t block) const { return row(seq)[block]; }

protected:
  int32_t *row(int32_t seq) { return rows_ + (int64_t)seq * width_; }
  const int32_t *row(int32_t seq) const { return rows_ + (int64_t)seq * width_; }
  // Appends fresh blocks until the row has `blocks`; the caller checked the pool has them.
  void grow(int32_t seq, int64_t blocks);
  // Releases blocks [from, held) and shortens the row to `from`.
  void shrink(int32_t seq, int64_t from);
  // Releases block `b` but keeps the row's length (a window's passed blocks).
  void release(int32_t seq, int64_t b);
  // The child's row holds the first `blocks` of seq's, shared.
  void share(int32_t seq, int32_t child, int64_t blocks);

  BlockPool pool_;
  int32_t *rows_;
  int32_t width_;
  std::vector<int64_t> length_;
};

// Rows per token, appended as a request grows: a layer group that keeps every token, a window of
// them or the current chunk. Blocks that no later query can see are released as positions are
// committed. A compressed group keeps one row per window of `rate` positions: its block b holds
// the rows of positions [b * B * rate, (b + 1) * B * rate) and is named, for prefix caching, by
// the hash of the last token block it covers.
class PagedManager : public TableRows {
public:
  PagedManager(const CacheGroup &group, int blockSize, int32_t blocks, int32_t *rows, int32_t seqs, int32_t width);
  int64_t rate() const { return group_.retention == CacheGroup::Compressed ? group_.tokens : 1; }
  // The rows positions [0, upTo) hold, and the blocks those need.
  int64_t rowsFor(int64_t upTo) const { return upTo / rate(); }
  int64_t blocksFor(int64_t upTo) const { return (rowsFor(upTo) + blockSize_ - 1) / blockSize_; }
  int64_t blocksNeeded(int32_t seq, int64_t upTo) const;
  // Blocks for positions [0, upTo); the caller checked that the pool has blocksNeeded().
  void allocate(int32_t seq, int64_t upTo) { grow(seq, blocksFor(upTo)); }
  // Positions [0, pos) are final: blocks no query at pos or later sees are released.
  void commit(int32_t seq, int64_t pos);
  // Positions [pos, ...) are dropped. Always possible from a committed position on: commit kept
  // every block a query at or after it sees.
  void truncate(int32_t seq, int64_t pos) { shrink(seq, blocksFor(pos)); }
  // The child (an empty row) continues seq's first `length` positions: it shares every whole
  // block, and gets a copy of the partial last one, which both will append to.
  bool fork(int32_t seq, int32_t child, int64_t length, int group, std::vector<UnitCopy> &copies);
  void free(int32_t seq) {
    shrink(seq, 0);
    released_[seq] = 0;
  }
  // The most blocks one request holds at once on its way to `length` positions, when each step
  // adds at most `maxChunk` of them.
  int64_t maxBlocksFor(int64_t length, int64_t maxChunk) const;

  // Prefix caching. The first block a query at `pos` (and every later one) sees.
  int64_t firstNeededBlock(int64_t pos) const { return firstVisible(pos) / blockSize_; }
  bool keepsAll() const { return group_.retention == CacheGroup::All || group_.retention == CacheGroup::Compressed; }
  // The token block whose hash names block b (its last one).
  int64_t hashIndex(int64_t b) const { return (b + 1) * rate() - 1; }
  // The sequence (holding nothing) takes the cached blocks [first needed, ...) of positions
  // [0, tokenBlocks * B); the caller checked that the pool has them all (and, for a compressed
  // group, that they are whole blocks of it).
  void adopt(int32_t seq, const std::vector<uint64_t> &hashes, int64_t tokenBlocks);
  // Swapping: the first block the sequence still holds, and fresh blocks for [first, end) of an
  // empty row (the caller checked the pool has them).
  int64_t firstHeld(int32_t seq) const { return released_[seq]; }
  void restore(int32_t seq, int64_t first, int64_t end);
  // Names the sequence's blocks [from, to) by their hashes, where it still holds them.
  void publish(int32_t seq, const std::vector<uint64_t> &hashes, int64_t from, int64_t to);

private:
  int64_t firstVisible(int64_t pos) const;
  CacheGroup group_;
  int blockSize_;
  std::vector<int64_t> released_; // per sequence: blocks [0, released) given back
};

// Rows written once per request (an encoder's output, cross-attention keys and values): held
// whole until the request ends, shared whole by a fork.
class StaticManager : public TableRows {
public:
  StaticManager(int blockSize, int32_t blocks, int32_t *rows, int32_t seqs, int32_t width);
  // Blocks for `rows` rows, all or nothing; false when the pool or the row is short.
  bool allocate(int32_t seq, int64_t rows);
  void fork(int32_t seq, int32_t child) { share(seq, child, held(seq)); }
  void free(int32_t seq) { shrink(seq, 0); }

private:
  int blockSize_;
};

// The units a step reads a sequence's states from and writes them to: equal but for a step
// after a fork (the input is shared) or one that keeps its input for a rollback.
struct StateUnits {
  int32_t in = -1, out = -1;
};

// Per-request states, one unit being one snapshot of every state of the group's layers. A
// sequence holds its current snapshot and, while a step's result is not yet committed, the unit
// that step wrote when it could not write in place.
class StateManager {
public:
  StateManager(int32_t units, int32_t seqs);
  BlockPool &pool() { return pool_; }
  const BlockPool &pool() const { return pool_; }
  bool holds(int32_t seq) const { return seqs_[seq].current >= 0; }
  int32_t current(int32_t seq) const { return seqs_[seq].current; }
  // Whether the sequence's next step needs a unit from the pool: it holds none, or it shares its
  // current one (a fork) and has not reserved its output yet.
  bool needsUnit(int32_t seq) const;
  // Takes the unit needsUnit() asked for; false when none is free.
  bool reserve(int32_t seq);
  // A fresh (zero) state for a sequence that has none; false when no unit is free.
  bool allocate(int32_t seq);
  // The units of the sequence's next step. A new output unit is taken when the current one is
  // shared or `keepInput` asks to keep it; {-1, -1} when none is free. Until the step is
  // committed or rolled back, asking again gives the same units.
  StateUnits step(int32_t seq, bool keepInput);
  // The step's result is accepted: its output becomes the current state.
  void commit(int32_t seq);
  // Whether the state before the step not yet committed (or the current one, after none) still
  // exists: a step that wrote in place overwrote it.
  bool canRollback(int32_t seq) const { return !seqs_[seq].overwritten; }
  // The next step writes a new unit and keeps its input for a rollback, as long as `spare` units
  // stay free besides it; false (nothing reserved) otherwise.
  bool keepInput(int32_t seq, int32_t spare);
  // Back to the state before the step not yet committed; the caller checked canRollback().
  void rollback(int32_t seq);
  // The child (holding nothing) shares seq's current state until either writes (copy on write,
  // through step()).
  void fork(int32_t seq, int32_t child);
  void free(int32_t seq);

private:
  struct Seq {
    int32_t current = -1, pending = -1;
    bool overwritten = false; // a step wrote `current` in place and is not committed
    bool stepped() const { return pending >= 0 || overwritten; }
  };
  BlockPool pool_;
  std::vector<Seq> seqs_;
};

} // namespace cbc::rt

#endif
