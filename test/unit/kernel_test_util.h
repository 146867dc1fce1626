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

} // namespace cbc::rt::cpu

#endif
