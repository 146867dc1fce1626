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
// The warp intrinsics of codegen/cuda/kernels/warp.cuh. Gather: every lane of the warp deposits
// `bytes` (at most 64) from `mine`; each receives all 32 deposits, lane by lane, in `all`.
extern "C" void cbc_simt_warp_gather(const void *mine, void *all, int bytes);
// cp.async: the copy is queued in this thread's open group and performed by the wait that
// covers it; commit closes the open group; wait leaves at most `pending` newest groups queued.
extern "C" void cbc_simt_cp_async(void *dst, const void *src, int bytes);
extern "C" void cbc_simt_cp_async_commit();
extern "C" void cbc_simt_cp_async_wait(int pending);
// What a GPU would report as a sticky fault (a misaligned address): the message, then abort.
extern "C" [[noreturn]] void cbc_simt_fault(const char *what);

#endif
