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

// A bf16 matrix [N, K] may be held packed: panels of kPanelRows rows, each panel k-pair major
// with the pair's two values of a row side by side — element (n, k) at
//   ((n / 16) * (K / 2) + k / 2) * 32 + (n % 16) * 2 + k % 2.
// That is the layout AMX's bf16 tiles read for the weight operand, and one 64-byte line gives
// a matrix-vector kernel 16 outputs' worth of two k, so no lane sums are needed. Packing keeps
// every panel where its rows were, so a stacked matrix's blocks (experts) stay at their offsets.
constexpr int64_t kPanelRows = 16;
constexpr int64_t kPanelDepth = 32; // K must be a multiple: one AMX tile's depth
inline bool packable(int64_t N, int64_t K) { return N > 0 && K > 0 && N % kPanelRows == 0 && K % kPanelDepth == 0; }
// Packs `count` stacked [N, K] matrices in place (packable(N, K) must hold).
void packBf16(uint16_t *w, int64_t count, int64_t N, int64_t K);

// Exactly one of the pointers is set (both null: no matrix).
struct Matrix {
  const float *f32 = nullptr;
  const uint16_t *bf16 = nullptr;
  bool packed = false; // bf16 in the packed layout above
  Matrix(const float *p = nullptr) : f32(p) {}
  Matrix(const uint16_t *p, bool isPacked = false) : bf16(p), packed(isPacked) {}
  // The matrix starting `elems` elements further on (an expert's block of a stacked weight;
  // for a packed one, a whole number of panels).
  Matrix at(int64_t elems) const { return bf16 ? Matrix(bf16 + elems, packed) : Matrix(f32 + elems); }
  explicit operator bool() const { return f32 || bf16; }
};

// At most this many rows of x take a matrix-vector kernel, which streams each weight once
// (widening bf16 in registers) against every x row; more rows take a GEMM (AMX over packed
// bf16 where the CPU has it, else BLAS).
constexpr int64_t kGemvRows = 8;

// y[M, N] = x[M, K] . w[N, K]^T in float32 accumulation, for a float32 or bf16 w. The output
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
// kernels, "amx" or "blas" for packed GEMMs. The setters restrict every later call to the
// portable kernels or to BLAS (tests compare every path; the CPU's own choice otherwise).
const char *gemvKernel();
const char *gemmKernel();
void setGemvPortable(bool portable);
void setGemmBlas(bool blas);

} // namespace cbc::rt::cpu

#endif
