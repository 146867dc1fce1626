// NVRTC compilation of the generated source for each target, with a content-addressed kernel
// cache so that recompiling the same model is instant.
#ifndef CBC_CODEGEN_CUDA_NVRTC_H
#define CBC_CODEGEN_CUDA_NVRTC_H

#include "codegen/artefact_writer.h"

#include <string>
#include <vector>

namespace cbc::codegen {

struct NvrtcOptions {
  std::vector<std::string> targets;  // sm_80, sm_90, ...
  std::string cache_dir;             // empty: no cache
  std::string cuda_include;          // default: $CUDA_HOME/include or /usr/local/cuda/include
};

// Compiles `source` for every target and fills `bundle` (cubins with per-kernel registers,
// spills and shared memory, and the first target's PTX). Throws std::runtime_error with the
// NVRTC log on failure. Returns true when every target came from the cache.
bool compileKernels(const std::string &source, const std::vector<std::string> &names,
                    const NvrtcOptions &options, KernelBundleOut &bundle);

std::string hashHex(const std::string &data);

// The real architectures (sm_NN, as NN) this NVRTC compiles for, so that a bad --target is
// refused before any work rather than after the kernels are generated.
std::vector<int> supportedArchs();

} // namespace cbc::codegen

#endif
