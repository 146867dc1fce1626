// The continuous-batching scheduler: a token budget per step, decode first, then chunked
// prefill, admission by cache capacity, preemption by recompute, FIFO. It knows nothing about
// model families: every layer's needs arrive through the CacheCoordinator, whose verbs it uses
// (allocate, commit, free, fork, and prefix caching's findPrefix, takePrefix, publish, snapshot).
// A request admitted with a cached prefix starts past it; a request with forks stops its prefill
// before the prompt's last token, where its forks take a share of its cache.
#ifndef CBC_RUNTIME_SCHEDULER_H
#define CBC_RUNTIME_SCHEDULER_H

#include "runtime/cache/coordinator.h"
#include "runtime/request.h"

#include <deque>
#include <unordered_map>
#include <vector>

namespace cbc::rt {

struct SchedulerOptions {
  int64_t max_batch_tokens = 512; // token budget per step
  int64_t max_requests = 256;     // rows per step
  bool prefix_caching = true;
  // Besides the prompt's end, marks and junctions: keep a state snapshot every this many prompt
  // tokens (a multiple of the snapshot grid; 0: none).
  int64_t snapshot_interval = 0;
  // The cache plan's length_dependent_above: longer prompts are neither looked up nor published,
  // and blocks past it are not published.
  int64_t length_dependent_above = 0;
  // Preemption by swapping: host memory for preempted requests' cache units (0: recompute
  // always), and the bytes of one unit of each cache group (the plan's group ids).
  int64_t swap_bytes = 0;
  std::vector<int64_t> unit_bytes;
  // A chunk never ends inside a request's embedding segment (their rows attend to each other:
  // the model reads key ends); a segment whose rest does not fit the step waits for one.
  bool whole_segments = false;
};

// Prefix caching and forks, as counted since the scheduler was made (tokens where it says so).
struct PrefixStats {
  int64_t queries = 0;          // prompt tokens looked up, over admissions
  int64_t hits = 0;             // of them, taken from the cache
  int64_t limited_by_state = 0; // tokens the full-attention groups had but no state snapshot
  int64_t forks = 0;            // forks that took a share of their parent's cache
  int64_t fork_fallbacks = 0;   // forks that found no slot or block and compute their prompt
  int64_t swaps_out = 0, swaps_in = 0; // preempted requests saved to host memory, and restored
  int64_t swap_fallbacks = 0;   // preempted with swapping on but recomputed: no room left
  int64_t swap_bytes_used = 0;  // host memory holding swapped requests now
  int64_t rollbacks = 0;        // steps of a request with states undone for a rejected draft
};

// Cache units to copy between the backend and host memory for a request, in its layout's order.
struct SwapJob {
  Request *request;
  std::vector<UnitRef> units;
};

struct ScheduledChunk {
  Request *request;
  int64_t start;  // first position processed this step
  int64_t count;  // tokens processed this step
  bool sample;    // the chunk reaches the end of the known tokens: sample the next one
  // Rows before the sample row whose logits the request wants (its prompt logprobs): positions
  // [start + count - prompt_rows - (sample ? 1 : 0), ...) of the chunk, see promptRows.
  int64_t prompt_rows = 0;
  // Speculative decoding: the chunk's last `drafts` positions are the request's draft, each
  // with its logit row after the sample row; the engine sets how many of them the step accepted
  // before the commit.
  int64_t drafts = 0;
  int64_t accepted = 0;
};

// The prompt rows a chunk of `r` covering [start, start + count) reads logits from: those before
// the prompt's last row whose prompt log-probability is not recorded yet.
int64_t promptRowsFrom(const Request &r, int64_t start);
int64_t promptRows(const Request &r, int64_t start, int64_t count);
// The logit rows a chunk takes beyond one (prompt rows and drafts).
int64_t extraRows(const ScheduledChunk &c);

struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  int64_t tokens = 0;
  int64_t extra_logit_rows = 0; // logit rows beyond one per chunk (chunks with prompt_rows)
  std::vector<Request *> preempted; // requests sent back to the queue in this step
  // Before the step runs: save these (preempted in this step) to host memory, then load these
  // (resumed in this step) back.
  std::vector<SwapJob> swap_out, swap_in;
};

class Scheduler {
public:
  Scheduler(const SchedulerOptions &options, CacheCoordinator &cache);

  void enqueue(Request *r);            // a new request joins the FIFO queue
  StepPlan schedule();
  // The same, filling a plan whose buffers are reused from step to step.
  void schedule(StepPlan &plan);
  // After the backend ran the plan: advances `computed` and commits it in the cache (the step's
  // states become current; blocks out of every window are released). A chunk's rejected drafts
  // are truncated away; where the model has states, the whole step of that request is undone
  // (its state input was kept) and its accepted tokens are computed again by the next step.
  void commit(const StepPlan &plan);
  void finish(Request *r);             // frees the request's cache and forgets it
  bool remove(Request *r);             // cancel: forget a waiting or running request

  size_t numWaiting() const { return waiting_.size(); }
  const std::vector<Request *> &running() const { return running_; }
  size_t numRunning() const { return running_.size(); }
  bool idle() const { return waiting_.empty() && running_.empty(); }
  int64_t preemptions() const { return preemptions_; }
  const PrefixStats &prefixStats() const { return prefix_; }

private:
  // The running requests' chunks, preempting where the cache runs out.
  void scheduleRunning(StepPlan &plan, int64_t &budget);
  // One waiting request: admitted with its first chunk, deferred a step (it waits for blocks
  // another computes now), or not (it does not fit: the ones behind it wait too).
  enum class Admission { Admitted, Deferred, Stop };
  Admission admit(Request *r, StepPlan &plan, int64_t &budget);
  // The tokens the request's next chunk may take: its remaining ones within the budget, ending
  // at its next snapshot position or fork point, and with prompt logprobs where the step's
  // logit rows run out.
  int64_t chunkFor(const Request *r, int64_t budget, const StepPlan &plan) const;
  // The step holds as many chunks, or logit rows, as the backend takes.
  bool full(const StepPlan &plan) const;
  void addChunk(StepPlan &plan, Request *r, int64_t count, int64_t &budget);
  // A request just given a slot starts from the longest cached prefix of its tokens.
  void admitFromCache(Request *r);
  bool cacheable(const Request *r) const;
  // After a committed chunk: publish its full blocks, keep a snapshot where one is due, fork.
  void afterCommit(Request *r);
  void forkChildren(Request *parent);
  // Forks still waiting for a parent that will not compute their prompt now join the queue.
  void releaseForks(Request *parent);
  // Prefix sharing within a batch: the blocks a planned chunk publishes at the commit, and
  // whether a request just admitted should rather wait for one of them.
  void markInFlight(const ScheduledChunk &c);
  bool waitsForInFlight(Request *r);
  std::unordered_map<uint64_t, Request *> inFlight_;
  // Swapping: the bytes a request's units take, and forgetting a swapped request's record.
  int64_t swapBytes(const std::vector<UnitRef> &units) const;
  void dropSwap(Request *r);
  struct Swapped {
    SwapLayout layout;
    int64_t bytes = 0;
  };
  std::unordered_map<const Request *, Swapped> swapped_;
  void preempt(Request *r, StepPlan &plan, int64_t &budget);
  void requeue(Request *r);
  bool tryReserve(Request *r, int64_t count, StepPlan &plan, int64_t &budget);
  void releaseCache(Request *r);

  SchedulerOptions options_;
  CacheCoordinator &cache_;
  std::deque<Request *> waiting_;
  std::vector<Request *> running_; // in arrival order
  std::vector<Request *> order_;   // scratch for schedule()
  int64_t preemptions_ = 0;
  PrefixStats prefix_;
};

} // namespace cbc::rt

#endif
