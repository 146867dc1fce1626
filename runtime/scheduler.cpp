#include "runtime/scheduler.h"

#include "runtime/cache/prefix_hash.h"

#include <algorithm>
#include <stdexcept>

namespace cbc::rt {

const char *modalityName(Modality m) {
  switch (m) {
  case Modality::Image:
    return "image";
  case Modality::Video:
    return "video";
  case Modality::Audio:
    return "audio";
  }
  return "?";
}

bool modalityFromName(const std::string &name, Modality &out) {
  for (Modality m : {Modality::Image, Modality::Video, Modality::Audio})
    if (name == modalityName(m)) {
      out = m;
      return true;
    }
  return false;
}

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
    plan.extra_logit_rows -= extraRows(*it);
    plan.chunks.erase(it);
  }
  // Swap: save the units to host memory when there is room, and resume where it stopped.
  std::vector<UnitRef> units;
  bool swapped = false;
  if (options_.swap_bytes > 0 && victim->slot >= 0 && cache_.canSwap() && victim->computed > 0) {
    SwapLayout layout = cache_.swapLayout(victim->slot, units);
    int64_t bytes = swapBytes(units);
    if (prefix_.swap_bytes_used + bytes <= options_.swap_bytes) {
      swapped_[victim] = {layout, bytes};
      prefix_.swap_bytes_used += bytes;
      prefix_.swaps_out++;
      plan.swap_out.push_back({victim, std::move(units)});
      swapped = true;
    } else {
      prefix_.swap_fallbacks++;
    }
  }
  releaseCache(victim);
  if (!swapped)
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
  plan.swap_out.clear();
  plan.swap_in.clear();
  plan.tokens = 0;
  plan.extra_logit_rows = 0;
  int64_t budget = options_.max_batch_tokens;
  scheduleRunning(plan, budget);
  // Blocks this step's chunks will publish: a waiting request whose next uncached block is one
  // of them waits a step and then finds it cached (prefix sharing within a batch).
  inFlight_.clear();
  for (const ScheduledChunk &c : plan.chunks)
    markInFlight(c);
  // Admission, FIFO: a request that does not fit blocks the ones behind it; one that waits for
  // a block another computes now lets them pass.
  for (size_t i = 0; i < waiting_.size() && budget > 0 && !full(plan);) {
    Admission a = admit(waiting_[i], plan, budget);
    if (a == Admission::Stop)
      break;
    if (a == Admission::Deferred)
      ++i;
    else
      waiting_.erase(waiting_.begin() + (std::ptrdiff_t)i);
  }
}

void Scheduler::scheduleRunning(StepPlan &plan, int64_t &budget) {
  // Decodes first, then prefill remainders, each oldest first.
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
    if (budget == 0 || full(plan))
      break;
    int64_t count = chunkFor(r, budget, plan);
    if (count == 0 || !tryReserve(r, count, plan, budget))
      continue;
    addChunk(plan, r, count, budget);
  }
}

bool Scheduler::full(const StepPlan &plan) const {
  return (int64_t)plan.chunks.size() + plan.extra_logit_rows >= options_.max_requests;
}

void Scheduler::addChunk(StepPlan &plan, Request *r, int64_t count, int64_t &budget) {
  int64_t rows = promptRows(*r, r->computed, count);
  int64_t drafts = std::max<int64_t>(0, r->computed + count - r->total());
  // A model with states undoes a step with a rejected draft: its state input must be kept, with
  // a unit to spare for each waiting request a free slot could admit (speculation never stops an
  // admission).
  int32_t spare = (int32_t)std::min<int64_t>((int64_t)waiting_.size(), cache_.freeSlots());
  if (drafts > 0 && !cache_.keepStateInput(r->slot, spare)) {
    count -= drafts;
    drafts = 0;
  }
  plan.chunks.push_back({r, r->computed, count, r->computed + count >= r->total(), rows, drafts});
  plan.tokens += count;
  plan.extra_logit_rows += extraRows(plan.chunks.back());
  budget -= count;
}

int64_t extraRows(const ScheduledChunk &c) {
  return (c.prompt_rows > 0 ? c.prompt_rows + (c.sample ? 1 : 0) - 1 : 0) + c.drafts;
}

int64_t promptRowsFrom(const Request &r, int64_t start) {
  return std::max<int64_t>(start, (int64_t)r.prompt_logprobs.size());
}

int64_t promptRows(const Request &r, int64_t start, int64_t count) {
  if (!r.params.wantsPromptLogprobs())
    return 0;
  int64_t end = std::min<int64_t>(start + count, (int64_t)r.prompt.size() - 1);
  return std::max<int64_t>(0, end - promptRowsFrom(r, start));
}

Scheduler::Admission Scheduler::admit(Request *r, StepPlan &plan, int64_t &budget) {
  if (std::find(plan.preempted.begin(), plan.preempted.end(), r) != plan.preempted.end())
    return Admission::Stop; // do not readmit in the step that preempted it
  bool newSlot = r->slot < 0;
  if (newSlot && (r->slot = cache_.acquireSlot()) < 0)
    return Admission::Stop;
  auto swap = newSlot ? swapped_.find(r) : swapped_.end();
  bool resumed = swap != swapped_.end();
  std::vector<UnitRef> units;
  if (resumed) {
    // Back from host memory: fresh units, loaded before the step.
    if (!cache_.restore(r->slot, swap->second.layout, units)) {
      releaseCache(r);
      return Admission::Stop;
    }
  } else if (newSlot && r->computed == 0) {
    admitFromCache(r);
    if (waitsForInFlight(r)) {
      releaseCache(r);
      r->computed = r->cached_tokens = 0;
      return Admission::Deferred;
    }
  }
  int64_t count = chunkFor(r, budget, plan);
  if (count == 0 || !cache_.allocate(r->slot, r->computed + count)) {
    if (newSlot) {
      releaseCache(r);
      if (!resumed)
        r->computed = 0;
    }
    return Admission::Stop;
  }
  if (resumed) {
    plan.swap_in.push_back({r, std::move(units)});
    prefix_.swaps_in++;
    dropSwap(r);
  } else if (newSlot && cacheable(r)) {
    prefix_.queries += (int64_t)r->prompt.size();
    prefix_.hits += r->computed;
  }
  r->status = RequestStatus::Running;
  running_.insert(std::upper_bound(running_.begin(), running_.end(), r,
                                   [](Request *a, Request *b) { return a->arrival < b->arrival; }),
                  r);
  addChunk(plan, r, count, budget);
  markInFlight(plan.chunks.back());
  return Admission::Admitted;
}

void Scheduler::markInFlight(const ScheduledChunk &c) {
  const Request *q = c.request;
  if (!cacheable(q))
    return;
  int64_t B = cache_.blockSize();
  int64_t end = std::min<int64_t>((c.start + c.count) / B, (int64_t)q->block_hashes.size());
  for (int64_t b = c.start / B; b < end; ++b)
    inFlight_[q->block_hashes[b]] = c.request;
}

bool Scheduler::waitsForInFlight(Request *r) {
  if (!cacheable(r))
    return false;
  int64_t B = cache_.blockSize(), next = r->computed / B;
  // Only blocks the hit may still reach: the prompt's last token is always computed.
  if ((next + 1) * B > (int64_t)r->prompt.size() - 1)
    return false;
  auto it = inFlight_.find(r->block_hashes[next]);
  if (it == inFlight_.end() || it->second == r)
    return false;
  // A recurrent state is cached only at snapshots: the request computing the shared blocks keeps
  // one where the two part (on the grid), so that this one can start there.
  if (cache_.hasStates()) {
    Request *q = it->second;
    size_t common = next;
    while (common < r->block_hashes.size() && common < q->block_hashes.size() &&
           r->block_hashes[common] == q->block_hashes[common])
      ++common;
    int64_t grid = cache_.snapshotGrid(), at = (int64_t)common * B / grid * grid;
    auto &points = q->snapshot_at;
    if (at > q->computed && !std::binary_search(points.begin(), points.end(), at))
      points.insert(std::upper_bound(points.begin(), points.end(), at), at);
  }
  return true;
}

void Scheduler::commit(const StepPlan &plan) {
  for (const ScheduledChunk &c : plan.chunks) {
    Request *r = c.request;
    int64_t rejected = c.drafts - c.accepted;
    r->computed = c.start + c.count - rejected;
    if (rejected > 0) {
      // Rows past the last accepted token are dropped; a state cannot be cut mid-step, so the
      // step is undone and the next one computes the accepted tokens again.
      if (cache_.hasStates()) {
        r->computed = c.start;
        prefix_.rollbacks++;
      }
      if (!cache_.truncate(r->slot, r->computed))
        throw std::logic_error("a rejected draft could not be truncated from the cache");
    }
    afterCommit(r);
  }
}

bool Scheduler::cacheable(const Request *r) const {
  // A request that wants its prompt's logprobs computes every prompt row.
  return options_.prefix_caching && cache_.cachesPrefixes() && !r->params.wantsPromptLogprobs() &&
         (options_.length_dependent_above == 0 || (int64_t)r->prompt.size() <= options_.length_dependent_above);
}

int64_t Scheduler::chunkFor(const Request *r, int64_t budget, const StepPlan &plan) const {
  int64_t count = std::min(r->remaining(), budget);
  int64_t end = r->computed + count;
  // Each prompt row wanting logits takes one of the step's logit rows, as a sample row does.
  int64_t allowed = options_.max_requests - (int64_t)plan.chunks.size() - plan.extra_logit_rows;
  if (promptRows(*r, r->computed, count) + (end == r->total() ? 1 : 0) > allowed)
    end = promptRowsFrom(*r, r->computed) + std::max<int64_t>(allowed, 0);
  if (!r->forks.empty() && r->computed < (int64_t)r->prompt.size() - 1)
    end = std::min<int64_t>(end, (int64_t)r->prompt.size() - 1);
  for (int64_t at : r->snapshot_at)
    if (at > r->computed) {
      end = std::min(end, at);
      break;
    }
  if (options_.whole_segments)
    for (const EmbeddingSegment &s : r->embeds)
      if (s.visual() && s.start < end && end < s.start + s.rows) // back to the segment's start, or nothing
        end = std::max(r->computed, s.start);
  // A chunk that reaches the known end verifies the draft behind it, a logit row per token.
  if (end == r->total() && end > r->computed && !r->draft.empty() && promptRows(*r, r->computed, end - r->computed) == 0)
    end += std::clamp<int64_t>(std::min(budget - (end - r->computed), allowed - 1), 0, (int64_t)r->draft.size());
  return end - r->computed;
}

void Scheduler::admitFromCache(Request *r) {
  r->cached_tokens = 0;
  r->snapshot_at.clear();
  if (!cacheable(r))
    return;
  int64_t prompt = (int64_t)r->prompt.size();
  extendBlockHashes(r->block_hashes, *r, r->hash_seed, cache_.blockSize(), prompt);
  // At least the prompt's last token is computed, for its logits; a request with forks stops
  // before it, where they fork, so its hit ends earlier still.
  PrefixMatch match = cache_.findPrefix(r->block_hashes, prompt - (r->forks.empty() ? 1 : 2));
  if (match.tokens > 0 && cache_.takePrefix(r->slot, r->block_hashes, match.tokens))
    r->computed = r->cached_tokens = match.tokens;
  else
    match.tokens = 0;
  if (!cache_.hasStates())
    return;
  prefix_.limited_by_state += match.attention - match.tokens;
  // Where the state is worth keeping: the last grid point of the prompt (a request sharing the
  // whole prompt resumes there), the marks, a junction (where the attention rows matched further
  // than a snapshot: the next request with this prefix finds one), and the interval's points.
  int64_t grid = cache_.snapshotGrid(), last = prompt - 1;
  auto down = [&](int64_t pos) { return pos / grid * grid; };
  std::vector<int64_t> &at = r->snapshot_at;
  at.push_back(down(last));
  at.push_back(down(std::min(match.attention, last)));
  for (int64_t m : r->params.cache_marks)
    if (m >= 0 && m <= last)
      at.push_back(down(m));
  int64_t every = options_.snapshot_interval > 0 ? (options_.snapshot_interval + grid - 1) / grid * grid : 0;
  for (int64_t p = every; every > 0 && p <= last; p += every)
    at.push_back(p);
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  at.erase(std::remove_if(at.begin(), at.end(), [&](int64_t p) { return p <= r->computed; }), at.end());
}

void Scheduler::afterCommit(Request *r) {
  if (cacheable(r)) {
    int64_t known = r->computed;
    if (options_.length_dependent_above > 0)
      known = std::min(known, options_.length_dependent_above);
    extendBlockHashes(r->block_hashes, *r, r->hash_seed, cache_.blockSize(), known);
    cache_.publish(r->slot, r->block_hashes, known);
  }
  cache_.commit(r->slot, r->computed);
  // Points passed inside a chunk (added after it was planned) are dropped.
  while (!r->snapshot_at.empty() && r->snapshot_at.front() < r->computed)
    r->snapshot_at.erase(r->snapshot_at.begin());
  bool due = !r->snapshot_at.empty() && r->snapshot_at.front() == r->computed;
  if (due)
    r->snapshot_at.erase(r->snapshot_at.begin());
  // From the prompt's end on, every grid point the request reaches is kept too: a chat's next
  // turn, which extends the answer, resumes from the last one.
  bool decoding = r->computed >= (int64_t)r->prompt.size() && r->computed % cache_.snapshotGrid() == 0;
  if (cache_.hasStates() && cacheable(r) && (due || decoding))
    cache_.snapshot(r->slot, r->block_hashes);
  if (!r->forks.empty() && r->computed == (int64_t)r->prompt.size() - 1)
    forkChildren(r);
}

void Scheduler::forkChildren(Request *parent) {
  for (Request *child : parent->forks) {
    child->fork_parent = nullptr;
    child->prompt_logprobs = parent->prompt_logprobs; // the same prompt: the parent's rows
    child->prompt_top_logprobs = parent->prompt_top_logprobs;
    int32_t slot = cache_.acquireSlot();
    if (slot < 0 || !cache_.forkPending(parent->slot, slot)) {
      if (slot >= 0)
        cache_.free(slot);
      prefix_.fork_fallbacks++;
      requeue(child);
      continue;
    }
    child->slot = slot;
    child->computed = parent->computed;
    child->block_hashes = parent->block_hashes;
    child->snapshot_at = parent->snapshot_at;
    child->status = RequestStatus::Running;
    running_.insert(std::upper_bound(running_.begin(), running_.end(), child,
                                     [](Request *a, Request *b) { return a->arrival < b->arrival; }),
                    child);
    prefix_.forks++;
  }
  parent->forks.clear();
}

int64_t Scheduler::swapBytes(const std::vector<UnitRef> &units) const {
  int64_t bytes = 0;
  for (const UnitRef &u : units)
    bytes += options_.unit_bytes.at(u.group);
  return bytes;
}

void Scheduler::dropSwap(Request *r) {
  auto it = swapped_.find(r);
  if (it == swapped_.end())
    return;
  prefix_.swap_bytes_used -= it->second.bytes;
  swapped_.erase(it);
}

void Scheduler::releaseForks(Request *parent) {
  for (Request *child : parent->forks) {
    child->fork_parent = nullptr;
    requeue(child);
  }
  parent->forks.clear();
}

void Scheduler::releaseCache(Request *r) {
  if (r->slot >= 0)
    cache_.free(r->slot);
  r->slot = -1;
}

void Scheduler::finish(Request *r) {
  releaseForks(r);
  dropSwap(r);
  releaseCache(r);
  auto it = std::find(running_.begin(), running_.end(), r);
  if (it != running_.end())
    running_.erase(it);
  r->status = RequestStatus::Finished;
}

bool Scheduler::remove(Request *r) {
  if (Request *parent = r->fork_parent) { // a fork still waiting for its parent's prompt
    parent->forks.erase(std::find(parent->forks.begin(), parent->forks.end(), r));
    r->fork_parent = nullptr;
    r->status = RequestStatus::Finished;
    return true;
  }
  releaseForks(r);
  dropSwap(r);
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
