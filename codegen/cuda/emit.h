// CUDA code generation: one specialised kernel (constants baked in) per non-GEMM instruction
// of the scheduled step, deduplicated by source, plus the launch table that binds kernel
// arguments to program values, caches, workspaces and per-step integers. GEMMs become
// cuBLASLt launches. The same source runs on a GPU (via NVRTC) and, in the tests, on the CPU
// under the SIMT shim.
#ifndef CBC_CODEGEN_CUDA_EMIT_H
#define CBC_CODEGEN_CUDA_EMIT_H

#include "codegen/artefact_writer.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace cbc::codegen {

using CudaProgram = KernelBundleOut;

// Value ids follow the artefact writer's numbering (step arguments, then op results in order).
// Reads the device types cbc-assign-device-types chose (`cbc.device_types`); f16 values have no
// kernels.
mlir::FailureOr<CudaProgram> emitCuda(mlir::ModuleOp module);

} // namespace cbc::codegen

#endif
