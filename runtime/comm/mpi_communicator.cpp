#include "runtime/comm/mpi_communicator.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace cbc::rt {

namespace {

// A thread that aborts the job when a collective outlasts the timeout: MPI has no timeout of
// its own, and a peer that hangs (rather than dies, which mpiexec notices) would block forever.
class Watchdog {
public:
  Watchdog(int rank, double seconds) : rank_(rank), seconds_(seconds), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enter(const char *what) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = what;
    since_ = std::chrono::steady_clock::now();
    armed_ = true;
    cv_.notify_all();
  }
  void leave() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }

private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      if (!armed_)
        continue;
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
      if (waited > seconds_) {
        std::fprintf(stderr,
                     "cbc: error: rank %d: no answer from the other ranks for %.0f s in %s (a rank died or hangs); "
                     "aborting every rank\n",
                     rank_, waited, what_);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 4);
      }
    }
  }
  int rank_;
  double seconds_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false, armed_ = false;
  const char *what_ = "";
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

class Mpi : public Communicator {
public:
  explicit Mpi(double timeout) {
    // Serialized: one thread at a time, not always the one that started MPI (the Python
    // server creates its engine on the main thread and steps it on the engine thread).
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    watchdog_ = std::make_unique<Watchdog>(rank_, timeout);
  }
  ~Mpi() override {
    watchdog_.reset();
    MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allGatherBytes(const void *in, size_t bytes, void *out) override {
    if (bytes > INT32_MAX)
      abort("a collective of " + std::to_string(bytes) + " bytes exceeds MPI's int counts");
    watchdog_->enter("an all-gather of the step");
    MPI_Request request;
    MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, &request);
    wait(request, false);
    watchdog_->leave();
  }
  void broadcast(std::vector<uint8_t> &bytes, bool idle) override {
    if (!idle)
      watchdog_->enter("the broadcast of a step plan");
    int64_t n = (int64_t)bytes.size();
    MPI_Request request;
    MPI_Ibcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &request);
    wait(request, idle);
    // The rest of a message follows its length at once: timed even when the wait was idle.
    watchdog_->enter("the broadcast of a step plan");
    bytes.resize((size_t)n);
    MPI_Ibcast(bytes.data(), (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
    wait(request, false);
    watchdog_->leave();
  }
  [[noreturn]] void abort(const std::string &why) override {
    std::fprintf(stderr, "cbc: error: %s; aborting every rank\n", why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);
  }

private:
  // Polls rather than blocks: a blocking MPI call spins on its core, and ranks that outnumber
  // the cores (tests, one host) would then wait for each other's time slices. Within a step
  // the poll yields the core between tests; an idle wait (a worker between steps) sleeps up to
  // a millisecond, so idle ranks cost no CPU.
  static void wait(MPI_Request &request, bool idle) {
    int done = 0;
    for (int polls = 0;; ++polls) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done)
        return;
      if (idle && polls > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(polls > 100000 ? 1000 : 50));
      else
        std::this_thread::yield();
    }
  }
  int rank_ = 0, size_ = 1;
  std::unique_ptr<Watchdog> watchdog_;
};

} // namespace

bool launchedByMpi() {
  for (const char *v : {"PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK"})
    if (std::getenv(v))
      return true;
  return false;
}

std::shared_ptr<Communicator> openMpi(double timeoutSeconds) { return std::make_shared<Mpi>(timeoutSeconds); }

} // namespace cbc::rt
