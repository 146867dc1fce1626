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

struct EmitOptions {
  // Activations are this dtype (bf16 or f32) on the device; the kv pool follows the cache plan
  // and weights their weight_ref types. f32 gives a device program that tracks the CPU backend
  // to rounding, which the emulation tests use to tell precision from bugs.
  std::string dtype = "bf16";
};

// Value ids follow the artefact writer's numbering (step arguments, then op results in order).
mlir::FailureOr<CudaProgram> emitCuda(mlir::ModuleOp module, const EmitOptions &options = {});

} // namespace cbc::codegen

#endif
