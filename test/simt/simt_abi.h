// The interface between shim-compiled kernels and the fiber runtime.
#ifndef CBC_TEST_SIMT_SIMT_ABI_H
#define CBC_TEST_SIMT_SIMT_ABI_H

#include <cstdint>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct CbcSimtThread {
  dim3 threadIdx, blockIdx, blockDim, gridDim;
};

extern "C" CbcSimtThread *cbc_simt_thread();
extern "C" void cbc_simt_syncthreads();
// Exchanges one 32-bit value within the warp: mode 0 xor, 1 down, 2 up, 3 index.
extern "C" uint32_t cbc_simt_shuffle(uint32_t value, int mode, int arg, int width);

#endif
