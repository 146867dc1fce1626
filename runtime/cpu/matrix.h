// Weight matrices as the CPU backend holds them (float32, or bf16 where the checkpoint stored
// them so) and the product y = x . W^T over either, always with float32 activations and
// float32 accumulation: holding a weight in bf16 halves the bytes a decode step reads without
// changing what is computed.
#ifndef CBC_RUNTIME_CPU_MATRIX_H
#define CBC_RUNTIME_CPU_MATRIX_H

#include <cstdint>
#include <functional>

namespace cbc::rt::cpu {

using ParallelFor = std::function<void(int64_t n, const std::function<void(int64_t)> &fn)>;

// Exactly one of the two is set (both null: no matrix).
struct Matrix {
  const float *f32 = nullptr;
  const uint16_t *bf16 = nullptr;
  Matrix(const float *p = nullptr) : f32(p) {}
  Matrix(const uint16_t *p) : bf16(p) {}
  // The matrix starting `elems` elements further on (an expert's block of a stacked weight).
  Matrix at(int64_t elems) const { return bf16 ? Matrix(bf16 + elems) : Matrix(f32 + elems); }
  explicit operator bool() const { return f32 || bf16; }
};

// At most this many rows of x take the matrix-vector path, which streams each weight row once
// (widening bf16 in registers) and dots it with every x row; more rows go to BLAS's blocked
// GEMM, which wins once a weight row is reused enough (bench/cpu_roofline.py measures both).
constexpr int64_t kGemvRows = 8;

// y[M, N] = x[M, K] . w[N, K]^T in float32 accumulation, for a float32 or bf16 w. The output
// columns are split over `pfor` (the backend's threads; BLAS itself runs on one thread, so
// --threads is the only owner of the cores). Each output element is computed by one task in a
// fixed order, so results do not depend on the thread count.
void matmul(const float *x, int64_t M, int64_t K, Matrix w, int64_t N, float *y, const ParallelFor &pfor);

// Which matrix-vector kernel this CPU runs ("avx512" or "portable"), for tests and benchmarks;
// `forcePortable` makes every later call use the portable kernel (tests compare the two).
const char *gemvKernel();
void setGemvPortable(bool forcePortable);

} // namespace cbc::rt::cpu

#endif
