// A Device that runs the generated kernels on the CPU: the artefact's CUDA source is compiled
// by the host compiler against the SIMT shim into a shared library, and GEMMs run as fp32 BLAS
// on bf16-rounded operands. Memory is host memory.
#ifndef CBC_TEST_SIMT_SIMT_DEVICE_H
#define CBC_TEST_SIMT_SIMT_DEVICE_H

#include "runtime/cuda/device.h"

#include <string>

namespace cbc::simt {

// Compiles (or reuses from `cacheDir`) the shim build of a kernel source; returns the .so path.
std::string buildKernelLibrary(const std::string &source, const std::string &cacheDir);

std::unique_ptr<rt::Device> makeSimtDevice(const std::string &cacheDir);

} // namespace cbc::simt

#endif
