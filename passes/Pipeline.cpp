// The pass pipeline `cbc compile` runs, registered so that `cbc-opt --cbc-pipeline` runs
// exactly the same passes.
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace cbc {

void buildCbcPipeline(mlir::OpPassManager &pm, const CbcPipelineOptions &options) {
  pm.addPass(createCbcSelectWeightFormats());
  CbcPlanCacheOptions plan;
  plan.kvDtype = options.dtype;
  plan.blockSize = options.blockSize;
  pm.addPass(createCbcPlanCache(plan));
  if (options.fuse) {
    pm.addPass(createCbcFuseAttentionInputs());
    pm.addPass(createCbcFuseAddNorm());
  }
  CbcAssignDeviceTypesOptions types;
  types.activationDtype = options.dtype;
  pm.addPass(createCbcAssignDeviceTypes(types));
  pm.addPass(createCbcScheduleStep());
}

void registerCbcPipeline() {
  mlir::PassPipelineRegistration<CbcPipelineOptions>(
      "cbc-pipeline", "The passes cbc compile runs: select weight formats, plan the cache, fuse, assign device types, "
      "schedule",
      buildCbcPipeline);
}

} // namespace cbc
