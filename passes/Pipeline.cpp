// The pass pipeline `cbc compile` runs, registered so that `cbc-opt --cbc-pipeline` runs
// exactly the same passes.
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace cbc {

void buildCbcPipeline(mlir::OpPassManager &pm, const CbcPipelineOptions &options) {
  pm.addPass(createCbcSelectWeightFormats());
  if (options.tp > 1) {
    // Before the cache is planned: the plan is one rank's.
    pm.addPass(createCbcShardAttention({options.tp}));
    pm.addPass(createCbcShardMlp({options.tp}));
    pm.addPass(createCbcShardExperts({options.tp, options.expertParallel}));
    pm.addPass(createCbcShardRecurrent({options.tp}));
    pm.addPass(createCbcShardVocab({options.tp}));
  }
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
      "cbc-pipeline", "The passes cbc compile runs: select weight formats, shard (tp > 1), plan the cache, fuse, assign device types, "
      "schedule",
      buildCbcPipeline);
}

} // namespace cbc
