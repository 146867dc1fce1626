// The CPU backend: interprets the step program with the reference kernels, in fp32, with
// BLAS for the GEMMs. It is the executable definition of every instruction.
#ifndef CBC_RUNTIME_CPU_CPU_BACKEND_H
#define CBC_RUNTIME_CPU_CPU_BACKEND_H

#include "runtime/backend.h"
#include "runtime/weights.h"

namespace cbc::rt {

std::unique_ptr<Backend> makeCpuBackend(const Artefact &a, WeightStore weights,
                                        const BackendLimits &limits, int threads);

} // namespace cbc::rt

#endif
