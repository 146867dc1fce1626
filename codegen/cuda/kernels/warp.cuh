// Warp-level intrinsics for tensor-core kernels, the second part of the kernel prelude: the
// bf16 tensor-core product mma.sync m16n8k16 (fp32 accumulators), ldmatrix (x1/x2/x4, plain
// and transposed), cp.async of 16 bytes with its commit and wait, and 128-bit global loads and
// stores. Kept out of prelude.cuh so that only the kernels that use them include it (the other
// kernels' sources, and so every committed artefact, stay byte for byte as they were).
//
// Under NVRTC each wrapper is one inline PTX instruction (sm_80 or later). Under CBC_SIMT each
// is an exact emulation: the 32 fibers of a warp deposit their fragment registers or row
// addresses in shared state (cbc_simt_warp_gather, a warp barrier on each side, as the
// shuffles do), and each lane computes its own output registers from the gathered ones, using
// the per-lane layouts of the PTX ISA ("Matrix fragments for mma.m16n8k16 with floating point
// type" and "ldmatrix"). With groupID g = lane >> 2 and t = lane & 3:
//   A (16x16, row-major), 4 registers of 2 bf16: a[0] = A[g][2t, 2t+1], a[1] = A[g+8][2t, 2t+1],
//     a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9];
//   B (16x8, K x N, "col"), 2 registers: b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g];
//   C and D (16x8 fp32): c[0], c[1] = C[g][2t, 2t+1], c[2], c[3] = C[g+8][2t, 2t+1].
// In every register the element of lower index sits in the low 16 bits.
//
// Accumulation: a product of two bf16 is exact in fp32; the emulation adds C and the 16 exact
// products in double and rounds once to fp32. The hardware's order and intermediate rounding
// of the sum are not specified by the PTX ISA, so tests compare with a tolerance of a few ulp
// of the sum of magnitudes, never bit for bit.
#ifndef CBC_CODEGEN_CUDA_KERNELS_WARP_CUH
#define CBC_CODEGEN_CUDA_KERNELS_WARP_CUH

#include "codegen/cuda/kernels/prelude.cuh"

#if !defined(CBC_SIMT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "cbc's warp intrinsics (bf16 mma.sync, cp.async) need sm_80 or later"
#endif

namespace cbc {

// The raw bits of a bf16, and the two bf16 of a register as floats.
__device__ __forceinline__ unsigned bf16_bits(bf16 h) {
#ifdef CBC_SIMT
  return h.bits;
#else
  return __bfloat16_as_ushort(h);
#endif
}
__device__ __forceinline__ float bf16x2_lo(unsigned v) { return __int_as_float((int)(v << 16)); }
__device__ __forceinline__ float bf16x2_hi(unsigned v) { return __int_as_float((int)(v & 0xffff0000u)); }
// Two floats rounded to bf16 in one register, lo in the low half.
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  return bf16_bits(__float2bfloat16(lo)) | (bf16_bits(__float2bfloat16(hi)) << 16);
}

// D = A B + C over the warp (all 32 lanes call it); d may be c.
__device__ __forceinline__ void mma_m16n8k16_bf16(float d[4], const unsigned a[4], const unsigned b[2],
                                                  const float c[4]) {
#ifdef CBC_SIMT
  struct Frag {
    unsigned a[4], b[2];
  };
  Frag mine = {{a[0], a[1], a[2], a[3]}, {b[0], b[1]}}, all[32];
  cbc_simt_warp_gather(&mine, all, (int)sizeof(Frag));
  int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {
    int row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
    double sum = c[i];
    for (int k = 0; k < 16; ++k) {
      // A[row][k] sits in lane 4 (row % 8) + (k % 8) / 2, register (row / 8) + 2 (k / 8);
      // B[k][col] in lane 4 col + (k % 8) / 2, register k / 8; odd k in the high half.
      unsigned ra = all[4 * (row & 7) + ((k & 7) >> 1)].a[(row >> 3) + 2 * (k >> 3)];
      unsigned rb = all[4 * col + ((k & 7) >> 1)].b[k >> 3];
      float x = (k & 1) ? bf16x2_hi(ra) : bf16x2_lo(ra), y = (k & 1) ? bf16x2_hi(rb) : bf16x2_lo(rb);
      sum += (double)(x * y);
    }
    d[i] = (float)sum;
  }
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
                 "f"(c[2]), "f"(c[3]));
#endif
}

#ifndef CBC_SIMT
// State-space addresses of generic pointers, as the ld/st/cp.async/ldmatrix forms take them.
__device__ __forceinline__ unsigned shared_address(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ unsigned long long global_address(const void *p) {
  return (unsigned long long)__cvta_generic_to_global(p);
}
#endif

// ldmatrix .m8n8 .b16 over the warp: N (1, 2, 4) 8x8 matrices of bf16 in shared memory, each row
// 16 contiguous bytes aligned to 16. Lane 8i + j gives the address of row j of matrix i (lanes
// from 8N on give none). Register i of lane (g, t) receives matrix i's row g, columns 2t and
// 2t+1; transposed, its column g, rows 2t and 2t+1.
template <int N, bool Trans> __device__ __forceinline__ void ldmatrix(unsigned r[N], const void *row) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
#ifdef CBC_SIMT
  int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  if (lane < 8 * N && ((uintptr_t)row & 15) != 0)
    cbc_simt_fault("ldmatrix: a row address is not 16-byte aligned");
  const unsigned char *mine = static_cast<const unsigned char *>(row), *all[32];
  cbc_simt_warp_gather(&mine, all, (int)sizeof mine);
  for (int i = 0; i < N; ++i) {
    if constexpr (!Trans) {
      std::memcpy(&r[i], all[8 * i + g] + 4 * t, 4);
    } else {
      uint16_t lo, hi;
      std::memcpy(&lo, all[8 * i + 2 * t] + 2 * g, 2);
      std::memcpy(&hi, all[8 * i + 2 * t + 1] + 2 * g, 2);
      r[i] = (unsigned)lo | ((unsigned)hi << 16);
    }
  }
#else
  unsigned s = shared_address(row);
  if constexpr (N == 1 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s));
  else if constexpr (N == 1)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s));
  else if constexpr (N == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
  else if constexpr (N == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(s));
  else if constexpr (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
#endif
}
__device__ __forceinline__ void ldmatrix_x1(unsigned r[1], const void *row) { ldmatrix<1, false>(r, row); }
__device__ __forceinline__ void ldmatrix_x2(unsigned r[2], const void *row) { ldmatrix<2, false>(r, row); }
__device__ __forceinline__ void ldmatrix_x4(unsigned r[4], const void *row) { ldmatrix<4, false>(r, row); }
__device__ __forceinline__ void ldmatrix_x1_trans(unsigned r[1], const void *row) { ldmatrix<1, true>(r, row); }
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned r[2], const void *row) { ldmatrix<2, true>(r, row); }
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned r[4], const void *row) { ldmatrix<4, true>(r, row); }

// cp.async of 16 bytes from global to shared memory, both 16-byte aligned, by this thread: the
// destination is defined only after a cp_async_wait that covers the copy's group (and, for
// other threads, a __syncthreads after that). cg bypasses L1 (tiles streamed once), ca
// caches in L1 (tiles read again). The emulation performs the copy at the wait, so a kernel
// that reads the destination too early reads stale data under SIMT too.
template <bool CacheL1> __device__ __forceinline__ void cp_async16_impl(void *smem, const void *gmem) {
#ifdef CBC_SIMT
  cbc_simt_cp_async(smem, gmem, 16);
#else
  if constexpr (CacheL1)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(smem)), "l"(global_address(gmem))
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(smem)), "l"(global_address(gmem))
                 : "memory");
#endif
}
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) { cp_async16_impl<false>(smem, gmem); }
__device__ __forceinline__ void cp_async16_ca(void *smem, const void *gmem) { cp_async16_impl<true>(smem, gmem); }
// Closes this thread's current group of copies.
__device__ __forceinline__ void cp_async_commit() {
#ifdef CBC_SIMT
  cbc_simt_cp_async_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most `Pending` of this thread's committed groups are still in flight (the
// newest ones); copies not yet committed are not waited for.
template <int Pending> __device__ __forceinline__ void cp_async_wait() {
  static_assert(Pending >= 0 && Pending < 8, "cp.async.wait_group takes a small constant");
#ifdef CBC_SIMT
  cbc_simt_cp_async_wait(Pending);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

// 128-bit global loads and stores at 16-byte aligned addresses. ld128 is a non-coherent
// (read-only path) load: the data must not be written during the kernel, as weights and the
// KV cache read by attention are not.
__device__ __forceinline__ uint4 ld128(const void *p) {
#ifdef CBC_SIMT
  if (((uintptr_t)p & 15) != 0)
    cbc_simt_fault("ld128: the address is not 16-byte aligned");
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
#else
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(global_address(p)));
  return v;
#endif
}
__device__ __forceinline__ void st128(void *p, uint4 v) {
#ifdef CBC_SIMT
  if (((uintptr_t)p & 15) != 0)
    cbc_simt_fault("st128: the address is not 16-byte aligned");
  std::memcpy(p, &v, 16);
#else
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(global_address(p)), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
#endif
}

} // namespace cbc

#endif
