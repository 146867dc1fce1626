#include "runtime/scheduler.h"

#include <algorithm>

namespace cbc::rt {

const char *finishReasonName(FinishReason r) {
  switch (r) {
  case FinishReason::None: return "none";
  case FinishReason::Eos: return "eos";
  case FinishReason::Stop: return "stop";
  case FinishReason::Length: return "length";
  case FinishReason::Cancelled: return "cancelled";
  case FinishReason::Rejected: return "rejected";
  }
  return "?";
}

Scheduler::Scheduler(const SchedulerOptions &options, CacheCoordinator &cache)
    : options_(options), cache_(cache) {}

void Scheduler::enqueue(Request *r) {
  r->status = RequestStatus::Waiting;
  requeue(r);
}

// Keeps the waiting queue in arrival order, so a preempted request resumes before younger ones.
void Scheduler::requeue(Request *r) {
  if (waiting_.empty() || waiting_.back()->arrival < r->arrival) {
    waiting_.push_back(r); // a new request: the common case
    return;
  }
  auto pos = std::find_if(waiting_.begin(), waiting_.end(),
                          [&](Request *w) { return w->arrival > r->arrival; });
  waiting_.insert(pos, r);
}

void Scheduler::preempt(Request *victim, StepPlan &plan, int64_t &budget) {
  // Recompute: drop everything cached; the prefix is replayed when it is scheduled again.
  auto it = std::find_if(plan.chunks.begin(), plan.chunks.end(),
                         [&](const ScheduledChunk &c) { return c.request == victim; });
  if (it != plan.chunks.end()) {
    budget += it->count;
    plan.tokens -= it->count;
    plan.chunks.erase(it);
  }
  releaseCache(victim);
  victim->computed = 0;
  victim->preemptions++;
  preemptions_++;
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  victim->status = RequestStatus::Waiting;
  requeue(victim);
  plan.preempted.push_back(victim);
}

// Reserves the cache for `count` more tokens of a running request, preempting younger running
// requests when blocks run out. Returns false if the request itself had to be preempted.
bool Scheduler::tryReserve(Request *r, int64_t count, StepPlan &plan, int64_t &budget) {
  while (!cache_.allocate(r->slot, r->computed + count)) {
    Request *victim = running_.back(); // the youngest
    preempt(victim, plan, budget);
    if (victim == r)
      return false;
  }
  return true;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  schedule(plan);
  return plan;
}

void Scheduler::schedule(StepPlan &plan) {
  plan.chunks.clear();
  plan.preempted.clear();
  plan.tokens = 0;
  int64_t budget = options_.max_batch_tokens;

  // Running requests: decodes first, then prefill remainders, each oldest first.
  std::vector<Request *> &order = order_;
  order.clear();
  size_t prefills = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    if (i + 8 < running_.size()) // requests are scattered on the heap: hide the misses
      __builtin_prefetch(running_[i + 8]);
    if (running_[i]->remaining() == 1)
      order.push_back(running_[i]);
    else
      ++prefills;
  }
  if (prefills)
    for (Request *r : running_)
      if (r->remaining() > 1)
        order.push_back(r);
  plan.chunks.reserve(std::min<size_t>(order.size() + waiting_.size(), (size_t)options_.max_requests));
  for (Request *r : order) {
    if (r->status != RequestStatus::Running)
      continue; // preempted earlier in this loop
    if (budget == 0 || (int64_t)plan.chunks.size() >= options_.max_requests)
      break;
    int64_t count = std::min(r->remaining(), budget);
    if (!tryReserve(r, count, plan, budget))
      continue;
    plan.chunks.push_back({r, r->computed, count, r->computed + count == r->total()});
    plan.tokens += count;
    budget -= count;
  }

  // Admission, strictly FIFO: a request that does not fit blocks the ones behind it.
  while (!waiting_.empty() && budget > 0 &&
         (int64_t)plan.chunks.size() < options_.max_requests) {
    Request *r = waiting_.front();
    if (std::find(plan.preempted.begin(), plan.preempted.end(), r) != plan.preempted.end())
      break; // do not readmit in the step that preempted it
    int64_t count = std::min(r->remaining(), budget);
    bool newSlot = r->slot < 0;
    if (newSlot && (r->slot = cache_.acquireSlot()) < 0)
      break;
    if (!cache_.allocate(r->slot, r->computed + count)) {
      if (newSlot)
        releaseCache(r);
      break;
    }
    waiting_.pop_front();
    r->status = RequestStatus::Running;
    running_.insert(std::upper_bound(running_.begin(), running_.end(), r,
                                     [](Request *a, Request *b) { return a->arrival < b->arrival; }),
                    r);
    plan.chunks.push_back({r, r->computed, count, r->computed + count == r->total()});
    plan.tokens += count;
    budget -= count;
  }
}

void Scheduler::commit(const StepPlan &plan) {
  for (const ScheduledChunk &c : plan.chunks) {
    c.request->computed = c.start + c.count;
    cache_.commit(c.request->slot, c.request->computed);
  }
}

void Scheduler::releaseCache(Request *r) {
  if (r->slot >= 0)
    cache_.free(r->slot);
  r->slot = -1;
}

void Scheduler::finish(Request *r) {
  releaseCache(r);
  auto it = std::find(running_.begin(), running_.end(), r);
  if (it != running_.end())
    running_.erase(it);
  r->status = RequestStatus::Finished;
}

bool Scheduler::remove(Request *r) {
  auto w = std::find(waiting_.begin(), waiting_.end(), r);
  if (w != waiting_.end()) {
    waiting_.erase(w);
    releaseCache(r);
    r->status = RequestStatus::Finished;
    return true;
  }
  if (std::find(running_.begin(), running_.end(), r) != running_.end()) {
    finish(r);
    return true;
  }
  return false;
}

} // namespace cbc::rt
