#include "runtime/thread_pool.h"

#include <algorithm>

namespace cbc::rt {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto &w : workers_)
    w.join();
}

void ThreadPool::loop() {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_)
      return;
    seen = generation_;
    ++active_;
    lock.unlock();
    work(seen);
    lock.lock();
    if (--active_ == 0)
      done_.notify_all();
  }
}

void ThreadPool::work(uint64_t) {
  for (;;) {
    int64_t begin, end;
    const std::function<void(int64_t)> *fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!fn_ || next_ >= n_)
        return;
      // Chunks of work amortise the lock; a few chunks per thread balance the load.
      int64_t grain = std::max<int64_t>(1, n_ / (4 * ((int64_t)workers_.size() + 1)));
      begin = next_;
      end = std::min(n_, begin + grain);
      next_ = end;
      fn = fn_;
      ++inFlight_;
    }
    std::exception_ptr error;
    try {
      for (int64_t i = begin; i < end; ++i)
        (*fn)(i);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error && !error_)
      error_ = error;
    if (--inFlight_ == 0 && next_ >= n_)
      done_.notify_all();
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    ++generation_;
  }
  start_.notify_all();
  work(generation_);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return inFlight_ == 0 && next_ >= n_; });
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

} // namespace cbc::rt
