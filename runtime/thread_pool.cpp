#include "runtime/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace cbc::rt {

namespace {
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}
} // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    start_.notify_all();
  }
  for (auto &w : workers_)
    w.join();
}

// The sleeper counts and the state they wait on are sequentially consistent atomics: a thread
// about to sleep counts itself and then checks the state, the other side changes the state and
// then checks the count, so at least one of them sees the other (no lost wake-up).
template <class Done> void ThreadPool::await(std::condition_variable &cv, std::atomic<int> &sleepers, Done done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
  for (int i = 0; !done(); ++i) {
    cpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers.fetch_add(1);
      cv.wait(lock, done);
      sleepers.fetch_sub(1);
      return;
    }
  }
}

void ThreadPool::wake(std::condition_variable &cv, std::atomic<int> &sleepers) {
  if (sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    cv.notify_all();
  }
}

void ThreadPool::loop() {
  uint64_t seen = 0;
  for (;;) {
    await(start_, sleepingWorkers_, [&] { return stop_.load() || generation_.load() != seen; });
    if (stop_.load())
      return;
    // Counted busy before reading the job: the caller waits for busy workers before it
    // returns, and so before it rewrites this job for a later parallel-for.
    busy_.fetch_add(1);
    Job *job = current_.load();
    seen = job->generation;
    runItems(*job);
    if (busy_.fetch_sub(1) == 1)
      wake(done_, sleepingCaller_);
  }
}

void ThreadPool::runItems(Job &job) {
  for (;;) {
    int64_t begin = job.next.fetch_add(job.grain);
    if (begin >= job.n)
      return;
    int64_t end = std::min(job.n, begin + job.grain);
    try {
      for (int64_t i = begin; i < end; ++i)
        (*job.fn)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_)
        error_ = std::current_exception();
    }
  }
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t)> &fn) {
  if (n <= 0)
    return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  // The job two parallel-fors back: every worker that could still read it was counted busy
  // when the last parallel-for waited for busy workers, so none reads it now.
  uint64_t g = generation_.load() + 1;
  Job &job = jobs_[g % 2];
  job.fn = &fn;
  job.n = n;
  // Chunks of work amortise the shared counter; a few chunks per thread balance the load.
  job.grain = std::max<int64_t>(1, n / (4 * ((int64_t)workers_.size() + 1)));
  job.next.store(0);
  job.generation = g;
  current_.store(&job);
  generation_.store(g);
  wake(start_, sleepingWorkers_);
  runItems(job);
  // Every item is claimed; wait for the workers still running theirs.
  await(done_, sleepingCaller_, [&] { return busy_.load() == 0; });
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(e, error_);
  }
  if (e)
    std::rethrow_exception(e);
}

} // namespace cbc::rt
