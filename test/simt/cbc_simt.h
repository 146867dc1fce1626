// The SIMT shim: lets the host compiler build the exact CUDA C++ that cbc generates, so the
// tests can run every kernel on the CPU. Each thread of a block is a fiber; __syncthreads and
// warp collectives are barriers (simt_runtime.cpp). Test infrastructure only: never linked
// into the runtime.
#ifndef CBC_TEST_SIMT_CBC_SIMT_H
#define CBC_TEST_SIMT_CBC_SIMT_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>

#include "simt_abi.h"

#define __global__
#define __device__ static
#define __forceinline__ inline
#define __shared__ static thread_local
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define threadIdx (cbc_simt_thread()->threadIdx)
#define blockIdx (cbc_simt_thread()->blockIdx)
#define blockDim (cbc_simt_thread()->blockDim)
#define gridDim (cbc_simt_thread()->gridDim)

inline void __syncthreads() { cbc_simt_syncthreads(); }

struct alignas(16) uint4 { // as CUDA aligns it
  unsigned x, y, z, w;
};

struct __nv_bfloat16 {
  uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 h) {
  uint32_t b = (uint32_t)h.bits << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  __nv_bfloat16 h;
  if ((b & 0x7fffffffu) > 0x7f800000u) {
    h.bits = (uint16_t)((b >> 16) | 0x40);
    return h;
  }
  b += 0x7fffu + ((b >> 16) & 1u); // round to nearest even, as the hardware does
  h.bits = (uint16_t)(b >> 16);
  return h;
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
// Fibers switch only at barriers, so a read-modify-write is atomic among a block's threads.
inline unsigned atomicAdd(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = old + v;
  return old;
}

template <typename T> inline T cbc_simt_shfl(T v, int mode, int arg, int width) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits = cbc_simt_shuffle(bits, mode, arg, width);
  T out;
  std::memcpy(&out, &bits, 4);
  return out;
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int laneMask, int width = 32) {
  return cbc_simt_shfl(v, 0, laneMask, width);
}
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  return cbc_simt_shfl(v, 1, (int)delta, width);
}
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  return cbc_simt_shfl(v, 2, (int)delta, width);
}
template <typename T> inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
  return cbc_simt_shfl(v, 3, src, width);
}

#endif
