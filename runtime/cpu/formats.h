// What the CPU backend's product kernels do with each storage format (runtime/tensor.h): one
// table row per format, which runtime/cpu/matrix.cpp dispatches on. The runtime's own table
// already lets every kernel read any format (toFloatRow widens a row), so a format without a
// row here beyond nulls still runs, on the portable matrix-vector kernel and the BLAS GEMM; the
// fields below are the fast paths a format may add.
#ifndef CBC_RUNTIME_CPU_FORMATS_H
#define CBC_RUNTIME_CPU_FORMATS_H

#include "runtime/tensor.h"

namespace cbc::rt::cpu {

// Output columns [n0, n1) of y[M, N] = x[M, K] . w[N, K]^T over w in one format's layout.
using GemvFn = void (*)(const float *x, int64_t M, int64_t K, const uint8_t *w, int64_t n0, int64_t n1, int64_t N,
                        float *y);
// Rearranges `count` stacked [N, K] matrices in place into another format of the same size.
using PackFn = void (*)(uint8_t *w, int64_t count, int64_t N, int64_t K);

struct FormatKernels {
  GemvFn gemvAvx512; // the AVX-512 matrix-vector kernel; null: the portable one
  bool amxTiles;     // the AMX GEMM reads the weight as stored
  bool sgemmReads;   // BLAS's sgemm reads it as stored (float32 rows); else rows are widened first
  int64_t rowBlock;  // the BLAS GEMM's tasks start on multiples of this many rows (whole panels)
  PackFn pack;       // rearranges a product's weight after loading; null: it stays as loaded
  Format packsTo;    // what `pack` makes
};
const FormatKernels &formatKernels(Format f);

// A weight only matrix products read, rearranged in place into the format its products read
// fastest when its format packs and its shape ([..., N, K]) fits the packed one; else unchanged.
void packForProducts(HostTensor &t);

// Packs `count` stacked bf16 [N, K] matrices in place into BF16Panels (panelsFit(N, K) must hold).
void packBf16(uint16_t *w, int64_t count, int64_t N, int64_t K);

} // namespace cbc::rt::cpu

#endif
