#ifndef CBC_PASSES_PASSES_H
#define CBC_PASSES_PASSES_H

#include "dialects/cbc/CbcDialect.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <memory>

namespace cbc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

// What `cbc compile` runs after the front end, as one registered pipeline (`cbc-pipeline`).
struct CbcPipelineOptions : public mlir::PassPipelineOptions<CbcPipelineOptions> {
  Option<StorageType> dtype{*this, "dtype",
                            llvm::cl::desc("Element type of weights, cache and activations"),
                            llvm::cl::init(StorageType::bf16),
                            llvm::cl::values(clEnumValN(StorageType::bf16, "bf16", "bfloat16"),
                                             clEnumValN(StorageType::f16, "f16", "float16"),
                                             clEnumValN(StorageType::f32, "f32", "float32"))};
  Option<int64_t> blockSize{*this, "block-size", llvm::cl::desc("Tokens per cache block"),
                            llvm::cl::init(16)};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("Run the fusion passes"), llvm::cl::init(true)};
  Option<int64_t> tp{*this, "tp", llvm::cl::desc("Ranks of the tensor-parallel group (the cbc-shard-* passes)"),
                     llvm::cl::init(1)};
  Option<bool> expertParallel{*this, "expert-parallel",
                              llvm::cl::desc("Divide MoE layers by experts rather than by features"),
                              llvm::cl::init(false)};
};

// select-weight-formats, with `tp > 1` the shard passes (attention, mlp, experts, vocab), plan-cache, fuse-attention-inputs, fuse-add-norm (with `fuse`),
// assign-device-types, schedule-step.
void buildCbcPipeline(mlir::OpPassManager &pm, const CbcPipelineOptions &options);
void registerCbcPipeline();

} // namespace cbc

#endif
