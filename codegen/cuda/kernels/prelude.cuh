// What every kernel template uses: element loads and stores in fp32, warp and block
// reductions, the activations, and the traits the templates specialise on. The generated
// source starts with this file; under CBC_SIMT the same text builds on the host against the
// SIMT shim (test/simt/cbc_simt.h).
#ifndef CBC_CODEGEN_CUDA_KERNELS_PRELUDE_CUH
#define CBC_CODEGEN_CUDA_KERNELS_PRELUDE_CUH

#ifdef CBC_SIMT
#include "cbc_simt.h"
#else
#include <cuda_bf16.h>
#endif
#include "codegen/cuda/kernels/slots.h"

typedef __nv_bfloat16 bf16;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// The extern "C" entry points take the arguments by value at global scope.
using cbc::kernels::CbcArgs;

namespace cbc {

using namespace kernels;

__device__ __forceinline__ float ld(const bf16 *p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float ld(const float *p, long long i) { return p[i]; }
__device__ __forceinline__ void st(bf16 *p, long long i, float v) { p[i] = __float2bfloat16(v); }
__device__ __forceinline__ void st(float *p, long long i, float v) { p[i] = v; }

// An optional operand is absent when its element type is void (its slot holds a null pointer).
template <class T> constexpr bool present = true;
template <> constexpr bool present<void> = false;
// Element i of an optional operand, 0 where it is absent.
template <class T> __device__ __forceinline__ float ld_or_zero(const T *p, long long i) {
  if constexpr (present<T>)
    return ld(p, i);
  else
    return 0.0f;
}
template <class A, class B> constexpr bool same = false;
template <class A> constexpr bool same<A, A> = true;

// v as an element of type T would read back.
template <class T> __device__ __forceinline__ float round_to(float v) {
  if constexpr (same<T, bf16>)
    return __bfloat162float(__float2bfloat16(v));
  else
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide reduction by the associative `op`, the same value in every thread: each warp reduces
// by shuffles, then the per-warp partials combine in warp order, so the result does not depend
// on scheduling. `scratch` holds 32 floats.
template <class Op> __device__ float block_reduce(float v, float *scratch, Op op) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < warps; ++w)
    total = op(total, scratch[w]);
  return total;
}
__device__ float block_sum(float v, float *scratch) {
  return block_reduce(v, scratch, [](float a, float b) { return a + b; });
}
__device__ float block_max(float v, float *scratch) {
  return block_reduce(v, scratch, [](float a, float b) { return fmaxf(a, b); });
}

__device__ __forceinline__ float act_none(float x) { return x; }
__device__ __forceinline__ float act_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float act_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }
__device__ __forceinline__ float act_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float act_relu(float x) { return x > 0.0f ? x : 0.0f; }
__device__ __forceinline__ float act_relu2(float x) { return x > 0.0f ? x * x : 0.0f; }
__device__ __forceinline__ float act_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float act_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float act_signed_sqrt(float x) {
  return x > 0.0f ? sqrtf(fmaxf(x, 1e-6f)) : x < 0.0f ? -sqrtf(fmaxf(-x, 1e-6f)) : 0.0f;
}

template <Act A> __device__ __forceinline__ float act(float x) {
  if constexpr (A == Act::none)
    return act_none(x);
  else if constexpr (A == Act::silu)
    return act_silu(x);
  else if constexpr (A == Act::gelu)
    return act_gelu(x);
  else if constexpr (A == Act::gelu_tanh)
    return act_gelu_tanh(x);
  else if constexpr (A == Act::relu)
    return act_relu(x);
  else if constexpr (A == Act::relu2)
    return act_relu2(x);
  else if constexpr (A == Act::softplus)
    return act_softplus(x);
  else if constexpr (A == Act::exp)
    return expf(x);
  else if constexpr (A == Act::signed_sqrt)
    return act_signed_sqrt(x);
  else
    return act_sigmoid(x);
}

// The clamped SwiGLU: g = min(gate, limit), (clamp(up, -limit, limit) + offset) * g * sigmoid(alpha g).
__device__ __forceinline__ float act_clamped_swiglu(float g, float u, float limit, float alpha, float offset) {
  return (fminf(fmaxf(u, -limit), limit) + offset) * (fminf(g, limit) / (1.0f + expf(-alpha * fminf(g, limit))));
}

// The soft-capped SwiGLU: gate_cap tanh(g / gate_cap) * sigmoid(g) * up_cap tanh(u / up_cap).
__device__ __forceinline__ float act_softcapped_swiglu(float g, float u, float gate_cap, float up_cap) {
  return gate_cap * tanhf(g / gate_cap) / (1.0f + expf(-g)) * (up_cap * tanhf(u / up_cap));
}

// A gated unit over gate g and up u; limit, alpha and offset only matter to the clamped SwiGLU,
// limit and alpha are the soft-capped one's gate and up caps.
template <Unit U, Act A>
__device__ __forceinline__ float glu_unit(float g, float u, float limit, float alpha, float offset = 1.0f) {
  if constexpr (U == Unit::clamped_swiglu)
    return act_clamped_swiglu(g, u, limit, alpha, offset);
  else if constexpr (U == Unit::softcapped_swiglu)
    return act_softcapped_swiglu(g, u, limit, alpha);
  else if constexpr (U == Unit::ungated)
    return act<A>(u);
  else
    return act<A>(g) * u;
}

} // namespace cbc

#endif
