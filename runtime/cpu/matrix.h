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

// At most this many rows of x take the bf16 matrix-vector path, which reads each weight row
// once and converts it on the fly; more rows convert blocks of weight rows to float32 and hand
// them to BLAS, whose blocked GEMM then wins (measured: bench in the commit message).
constexpr int64_t kBf16GemvRows = 8;

// y[M, N] = x[M, K] . w[N, K]^T for bf16 w, float32 accumulation; the GEMV path splits N over
// `pfor`.
void matmulBf16(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t N, float *y, const ParallelFor &pfor);

} // namespace cbc::rt::cpu

#endif
