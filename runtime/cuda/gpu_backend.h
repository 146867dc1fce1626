// The GPU backend: runs the artefact's launch table (generated kernels and cuBLASLt GEMMs) on
// a Device. Weights live on the device in bf16, the paged cache in bf16, activations in one
// arena per row class. Decode steps are replayed as CUDA Graphs where the device has them.
#ifndef CBC_RUNTIME_CUDA_GPU_BACKEND_H
#define CBC_RUNTIME_CUDA_GPU_BACKEND_H

#include "runtime/backend.h"
#include "runtime/cuda/device.h"
#include "runtime/engine.h"
#include "runtime/weights.h"

namespace cbc::rt {

// Weights are read (or generated) one at a time, converted and uploaded: this rank's slices
// (weights.rank) of an artefact compiled with --tp, whose collectives run on `comm`'s group
// (null: a group of one).
std::unique_ptr<Backend> makeGpuBackend(const Artefact &a, const WeightSource &weights,
                                        std::unique_ptr<Device> device, const BackendLimits &limits,
                                        std::shared_ptr<Communicator> comm = nullptr);

// The CUDA backend's factory, on the driver's device with a cache of options.cache_memory_bytes:
// null, with `why`, when the artefact has no kernels or no driver or GPU is usable (on any rank
// of `comm`'s group: its ranks take one backend alike). A cache budget or token budget of 0 is
// chosen from the device's free memory (runtime/engine_sizing.h), rank 0's choice for every rank,
// and written back to `options` when the backend opens. A weight error, or a model and cache
// that do not fit the GPU, throw. Only in a build with CUDA (CBC_CUDA).
std::unique_ptr<Backend> openCudaBackend(const Artefact &a, const WeightSource &weights, EngineOptions &options,
                                         std::string &why, std::shared_ptr<Communicator> comm = nullptr);

} // namespace cbc::rt

#endif
