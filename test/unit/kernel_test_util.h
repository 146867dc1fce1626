// Helpers the CPU kernel tests share: a serial ParallelFor and seeded uniform inputs.
#ifndef CBC_TEST_UNIT_KERNEL_TEST_UTIL_H
#define CBC_TEST_UNIT_KERNEL_TEST_UTIL_H

#include "runtime/cpu/kernels.h"

#include <functional>
#include <random>
#include <vector>

namespace cbc::rt::cpu {

// Runs the loop in order on the calling thread, so a test's result does not depend on threads.
inline const ParallelFor serial = [](int64_t n, const std::function<void(int64_t)> &fn) {
  for (int64_t i = 0; i < n; ++i)
    fn(i);
};

inline std::vector<float> randoms(size_t n, std::mt19937 &rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

// Runs `op(rows, begin, end)` over one request's tokens [0, n), whole or cut into pieces ending
// at `cuts`, in state unit `slot`; pieces after the first carry the state (has_initial = 1).
template <class Op> void runInPieces(int64_t n, const std::vector<int64_t> &cuts, int32_t slot, Op op) {
  int64_t begin = 0;
  std::vector<int64_t> ends = cuts;
  ends.push_back(n);
  for (int64_t end : ends) {
    if (end <= begin)
      continue;
    int32_t cu[2] = {0, (int32_t)(end - begin)}, slots[1] = {slot}, has[1] = {begin > 0};
    StateRows rows{cu, slots, slots, has, 1};
    op(rows, begin, end);
    begin = end;
  }
}

} // namespace cbc::rt::cpu

#endif
