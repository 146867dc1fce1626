// The CPU backend: interprets the step program with the reference kernels, in fp32, with
// BLAS for the GEMMs. It is the executable definition of every instruction. Weight matrices
// the checkpoint stores in bf16 stay bf16 in memory and are widened as they are read.
#ifndef CBC_RUNTIME_CPU_CPU_BACKEND_H
#define CBC_RUNTIME_CPU_CPU_BACKEND_H

#include "runtime/backend.h"
#include "runtime/weights.h"

namespace cbc::rt {

// Weights the CPU backend can hold as bf16: every use of them is a matrix operand of an
// embedding, a linear or the experts of a MoE. Norm scales, biases, convolution and scan
// parameters stay float32 (they are small and their kernels read float32).
std::vector<bool> cpuBf16Weights(const Artefact &a);

std::unique_ptr<Backend> makeCpuBackend(const Artefact &a, WeightStore weights,
                                        const BackendLimits &limits, int threads);

} // namespace cbc::rt

#endif
