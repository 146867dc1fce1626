// Collectives (cbc.comm.*) have no CUDA lowering yet: `cbc compile --tp N` generates no CUDA
// kernels (driver/compile.cpp), so these are reached only by a pipeline that bypasses it.
#include "codegen/cuda/Emitter.h"

#include "llvm/Support/ErrorHandling.h"

namespace cbc::codegen::cuda {

void emitAllReduce(Emitter &, AllReduceOp op) {
  llvm::report_fatal_error("cbc codegen: cbc.comm.all_reduce has no CUDA lowering; compile with --no-cuda");
}

void emitAllGather(Emitter &, AllGatherOp op) {
  llvm::report_fatal_error("cbc codegen: cbc.comm.all_gather has no CUDA lowering; compile with --no-cuda");
}

} // namespace cbc::codegen::cuda
