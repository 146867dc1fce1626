// A fixed pool of worker threads with a blocking parallel-for. Work items are independent,
// so results do not depend on the number of threads.
#ifndef CBC_RUNTIME_THREAD_POOL_H
#define CBC_RUNTIME_THREAD_POOL_H

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

private:
  void work(uint64_t generation);
  void loop();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int64_t)> *fn_ = nullptr;
  int64_t n_ = 0;
  int64_t next_ = 0;
  int active_ = 0;
  int64_t inFlight_ = 0; // chunks being run
  std::exception_ptr error_;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

} // namespace cbc::rt

#endif
