// The thread pool (runtime/thread_pool.h): every item runs exactly once in every parallel-for,
// back to back and across its spinning and sleeping states, also with more threads than cores;
// an item's exception reaches the caller and leaves the pool usable; idle workers sleep rather
// than spin.
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <thread>
#include <vector>

namespace cbc::test {
namespace {

double processCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

TEST(ThreadPool, EveryItemRunsOnceInEveryParallelFor) {
  for (int threads : {1, 2, 3, 8}) {
    rt::ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(1000);
    // Back to back (the workers still spinning), then after a pause (asleep), many sizes.
    for (int round = 0; round < (threads > 3 ? 300 : 1000); ++round) {
      if (round % 250 == 249)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      int64_t n = 1 + round % 997;
      for (int64_t i = 0; i < n; ++i)
        hits[i].store(0);
      pool.parallelFor(n, [&](int64_t i) { hits[i].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " threads, round " << round << ", item " << i;
    }
  }
}

TEST(ThreadPool, AnItemsExceptionReachesTheCallerAndThePoolGoesOn) {
  rt::ThreadPool pool(3);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallelFor(100,
                                [&](int64_t i) {
                                  ran.fetch_add(1);
                                  if (i == 37)
                                    throw std::runtime_error("item 37");
                                }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.parallelFor(100, [&](int64_t i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 4950);
}

// Workers spin only briefly after a parallel-for: an idle pool of 8 uses about no CPU. The
// quietest of three windows counts, so that a one-off (the process's start, a library's own
// threads) cannot fail it, while workers that kept spinning would show in every window.
TEST(ThreadPool, IdleWorkersSleep) {
  rt::ThreadPool pool(8);
  pool.parallelFor(64, [](int64_t) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(20)); // past the spin
  double quietest = 1e9;
  for (int window = 0; window < 3; ++window) {
    double before = processCpuSeconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    quietest = std::min(quietest, processCpuSeconds() - before);
  }
  // 7 spinning workers would burn up to 0.7 CPU seconds in each window.
  EXPECT_LT(quietest, 0.02);
}

} // namespace
} // namespace cbc::test
