// Weight matrices as the CPU backend holds them (any storage format of runtime/tensor.h:
// float32, bf16 where the checkpoint stored it so, bf16 in panels for the products that read
// them fastest so) and the product y = x . W^T over any of them, always with float32
// activations and float32 accumulation: holding a weight in bf16 halves the bytes a decode step
// reads without changing what is computed.
#ifndef CBC_RUNTIME_CPU_MATRIX_H
#define CBC_RUNTIME_CPU_MATRIX_H

#include "runtime/cpu/formats.h"

#include <cstdint>
#include <functional>

namespace cbc::rt::cpu {

using ParallelFor = std::function<void(int64_t n, const std::function<void(int64_t)> &fn)>;

// A matrix [N, K], or a stack of them, in some format; not owned. Null data: no matrix.
struct Matrix {
  const uint8_t *data = nullptr;
  Format format;
  Matrix(const float *p = nullptr) : data(reinterpret_cast<const uint8_t *>(p)) {}
  // Bit patterns in a 16-bit format: BF16, or BF16Panels.
  Matrix(const uint16_t *p, Format f = Storage::BF16) : data(reinterpret_cast<const uint8_t *>(p)), format(f) {}
  explicit Matrix(const HostTensor &t) : data(t.data()), format(t.format()) {}
  // The matrix starting `elems` elements further on (an expert's block of a stacked weight;
  // for panels, a whole number of panels).
  Matrix at(int64_t elems) const {
    Matrix m = *this;
    m.data += formatBytes(format, elems);
    return m;
  }
  explicit operator bool() const { return data; }
};

// At most this many rows of x take a matrix-vector kernel, which streams each weight once
// (widening bf16 in registers) against every x row; more rows take a GEMM (AMX over bf16 panels
// where the CPU has it, else BLAS).
constexpr int64_t kGemvRows = 8;

// y[M, N] = x[M, K] . w[N, K]^T in float32 accumulation, for w in any format. The output
// columns are split over `pfor` (the backend's threads; BLAS itself runs on one thread, so
// --threads is the only owner of the cores). Each output element is computed by one task in a
// fixed order, so results do not depend on the thread count.
//
// With AMX each x row is split exactly into three bf16 parts (hi + mid + lo = x: 24 bits of
// significand in three 8-bit pieces), so every product with a bf16 weight is exact and the
// tiles accumulate in float32: the float32 product, summed in another order.
void matmul(const float *x, int64_t M, int64_t K, Matrix w, int64_t N, float *y, const ParallelFor &pfor);

// Attention's two products over cached rows (paged, so given as row pointers):
// scores[g * n + j] = q[g] . keys[j] for G query rows q (stride D), and
// out[g] = sum_j scores[g * n + j] * values[j] for G output rows (stride Dv).
void scoreKeys(const float *q, int64_t G, int64_t D, const float *const *keys, int64_t n, float *scores);
void sumValues(const float *scores, int64_t G, int64_t n, const float *const *values, int64_t Dv, float *out);

// The kernels this CPU runs, for tests and benchmarks: "avx512" or "portable" matrix-vector
// kernels, "amx" or "blas" for GEMMs over bf16 panels. The setters restrict every later call to the
// portable kernels or to BLAS (tests compare every path; the CPU's own choice otherwise).
const char *gemvKernel();
const char *gemmKernel();
void setGemvPortable(bool portable);
void setGemmBlas(bool blas);

} // namespace cbc::rt::cpu

#endif
