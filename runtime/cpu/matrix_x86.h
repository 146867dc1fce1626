// The x86 kernels behind runtime/cpu/matrix.h: AVX-512 matrix-vector products and the AMX
// GEMM over packed bf16 weights. Each is compiled for its instruction set alone (function
// target attributes) and only called where the CPU, and for AMX the kernel, allows it.
#ifndef CBC_RUNTIME_CPU_MATRIX_X86_H
#define CBC_RUNTIME_CPU_MATRIX_X86_H

#include <cstdint>

namespace cbc::rt::cpu::x86 {

bool hasAvx512();
// AMX bf16 tiles, and the kernel's permission to use them (asked once for the process).
bool hasAmx();

// Output columns [n0, n1) of y[M, N] = x[M, K] . w[N, K]^T for row-major w.
void gemvRows(const float *x, int64_t M, int64_t K, const float *w, int64_t n0, int64_t n1, int64_t N, float *y);
void gemvRows(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t n0, int64_t n1, int64_t N,
              float *y);
// The same over a packed bf16 w (matrix.h), columns [n0, n1) in whole panels.
void gemvPacked(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t n0, int64_t n1, int64_t N,
                float *y);

// matrix.h's attention products for D and Dv multiples of 16 and 32.
void scoreKeys(const float *q, int64_t G, int64_t D, const float *const *keys, int64_t n, float *scores);
void sumValues(const float *scores, int64_t G, int64_t n, const float *const *values, int64_t Dv, float *out);

// x[M, K] as three bf16 planes, `plane` elements apart, with hi + mid + lo = x exactly.
void splitBf16x3(const float *x, int64_t M, int64_t K, int64_t plane, uint16_t *planes);
// Output columns [n0, n1) (whole panels) of y[M, N] from the planes (rows = M rounded up to
// 16) and a packed w, on AMX tiles.
void amxColumns(const uint16_t *planes, int64_t M, int64_t rows, int64_t K, const uint16_t *w, int64_t n0,
                int64_t n1, int64_t N, float *y);

} // namespace cbc::rt::cpu::x86

#endif
