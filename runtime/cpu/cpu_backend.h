// The CPU backend: interprets the step program with the reference kernels, in fp32, with
// BLAS for the GEMMs. It is the executable definition of every instruction. Weight matrices
// the checkpoint stores in bf16 stay bf16 in memory and are widened as they are read.
#ifndef CBC_RUNTIME_CPU_CPU_BACKEND_H
#define CBC_RUNTIME_CPU_CPU_BACKEND_H

#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "runtime/weights.h"

namespace cbc::rt {

// Weights the CPU backend can hold as bf16: every use of them is a matrix operand of an
// embedding, a linear or the experts of a MoE. Norm scales, biases, convolution and scan
// parameters stay float32 (they are small and their kernels read float32).
std::vector<bool> cpuBf16Weights(const Artefact &a);

// `comm`: this process's rank of the group the artefact was compiled for (null: a group of one);
// a group of another size is an std::invalid_argument.
std::unique_ptr<Backend> makeCpuBackend(const Artefact &a, WeightStore weights,
                                        const BackendLimits &limits, int threads,
                                        std::shared_ptr<Communicator> comm = nullptr);

} // namespace cbc::rt

#endif
