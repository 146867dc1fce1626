// A fixed pool of worker threads with a blocking parallel-for. Work items are independent,
// so results do not depend on the number of threads.
//
// A decode step makes about a hundred parallel-fors a few hundred microseconds apart, so
// waking sleeping workers through a condition variable each time (tens of microseconds) would
// cost a noticeable share of the step. Workers therefore spin on an atomic for a short while
// after each parallel-for (pause instructions, no sched_yield) and only then sleep. A worker
// that is asleep or not scheduled delays nothing: the caller takes every item no worker has
// claimed, and waits only for the items already being run.
#ifndef CBC_RUNTIME_THREAD_POOL_H
#define CBC_RUNTIME_THREAD_POOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cbc::rt {

class ThreadPool {
public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return (int)workers_.size() + 1; }
  void parallelFor(int64_t n, const std::function<void(int64_t)> &fn);

  // How long a thread spins for the next parallel-for (or for the others to finish one) before
  // it sleeps.
  static constexpr int kSpinMicros = 200;

private:
  // One parallel-for. Two alternate, so that a worker still leaving the previous one never
  // sees this one's fields being written (see parallelFor).
  struct Job {
    const std::function<void(int64_t)> *fn = nullptr;
    int64_t n = 0, grain = 1;
    std::atomic<int64_t> next{0};
    uint64_t generation = 0;
  };
  void loop();
  void runItems(Job &job);
  // Spins for up to kSpinMicros, then sleeps on `cv`, until done() holds.
  template <class Done> void await(std::condition_variable &cv, std::atomic<int> &sleepers, Done done);
  void wake(std::condition_variable &cv, std::atomic<int> &sleepers);

  std::vector<std::thread> workers_;
  Job jobs_[2];
  std::atomic<Job *> current_{nullptr};
  std::atomic<uint64_t> generation_{0}; // published after current_
  std::atomic<int> busy_{0};            // workers between noticing a generation and leaving its job
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable start_, done_;
  std::atomic<int> sleepingWorkers_{0}, sleepingCaller_{0};
  std::exception_ptr error_; // the first item's exception, under mu_
};

} // namespace cbc::rt

#endif
