// The GPU backend: runs the artefact's launch table (generated kernels and cuBLASLt GEMMs) on
// a Device. Weights live on the device in bf16, the paged cache in bf16, activations in one
// arena per row class. Decode steps are replayed as CUDA Graphs where the device has them.
#ifndef CBC_RUNTIME_CUDA_GPU_BACKEND_H
#define CBC_RUNTIME_CUDA_GPU_BACKEND_H

#include "runtime/backend.h"
#include "runtime/cuda/device.h"
#include "runtime/weights.h"

namespace cbc::rt {

// Weights are read (or generated) one at a time, converted and uploaded.
std::unique_ptr<Backend> makeGpuBackend(const Artefact &a, const WeightSource &weights,
                                        std::unique_ptr<Device> device, const BackendLimits &limits);

} // namespace cbc::rt

#endif
