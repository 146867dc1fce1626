// CUDA code generation: one kernel per distinct non-GEMM instruction of the scheduled step,
// each an instantiation of a template in codegen/cuda/kernels (sizes, element types and
// variants as template arguments), plus the launch table that binds kernel arguments to
// program values, caches, workspaces, per-step integers and constants. GEMMs become cuBLASLt
// launches. The same source runs on a GPU (via NVRTC) and, in the tests, on the CPU under the
// SIMT shim.
#ifndef CBC_CODEGEN_CUDA_EMIT_H
#define CBC_CODEGEN_CUDA_EMIT_H

#include "codegen/artefact_writer.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace cbc::codegen {

using CudaProgram = KernelBundleOut;

// Value ids follow the artefact writer's numbering (step arguments, then op results in order).
// Reads the element types cbc-assign-device-types gave the values; f16 values have no kernels.
mlir::FailureOr<CudaProgram> emitCuda(mlir::ModuleOp module);

// Whether emitCuda handles ops named `opName` (e.g. "cbc.math.rms_norm"). cbc.weight.ref has no
// launch of its own: weights are bound where they are used.
bool hasCudaEmitter(llvm::StringRef opName);

} // namespace cbc::codegen

#endif
