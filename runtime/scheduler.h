// The continuous-batching scheduler: a token budget per step, decode first, then chunked
// prefill, admission by cache capacity, preemption by recompute, FIFO. It knows nothing about
// model families: every layer's needs arrive through the CacheCoordinator, whose verbs it uses
// (allocate, commit, free).
#ifndef CBC_RUNTIME_SCHEDULER_H
#define CBC_RUNTIME_SCHEDULER_H

#include "runtime/cache/coordinator.h"
#include "runtime/request.h"

#include <deque>
#include <vector>

namespace cbc::rt {

struct SchedulerOptions {
  int64_t max_batch_tokens = 512; // token budget per step
  int64_t max_requests = 256;     // rows per step
};

struct ScheduledChunk {
  Request *request;
  int64_t start;  // first position processed this step
  int64_t count;  // tokens processed this step
  bool sample;    // the chunk reaches the end of the known tokens: sample the next one
};

struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  int64_t tokens = 0;
  std::vector<Request *> preempted; // requests sent back to the queue in this step
};

class Scheduler {
public:
  Scheduler(const SchedulerOptions &options, CacheCoordinator &cache);

  void enqueue(Request *r);            // a new request joins the FIFO queue
  StepPlan schedule();
  // The same, filling a plan whose buffers are reused from step to step.
  void schedule(StepPlan &plan);
  // After the backend ran the plan: advances `computed` and commits it in the cache (the step's
  // states become current; blocks out of every window are released).
  void commit(const StepPlan &plan);
  void finish(Request *r);             // frees the request's cache and forgets it
  bool remove(Request *r);             // cancel: forget a waiting or running request

  size_t numWaiting() const { return waiting_.size(); }
  size_t numRunning() const { return running_.size(); }
  bool idle() const { return waiting_.empty() && running_.empty(); }
  int64_t preemptions() const { return preemptions_; }

private:
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
};

} // namespace cbc::rt

#endif
