// cbc-shard-experts: the experts of each MoE layer divided among the ranks (expert parallelism),
// or each expert's intermediate features divided (tensor parallelism of the experts).
#include "passes/Passes.h"
#include "passes/ShardSupport.h"

namespace cbc {
#define GEN_PASS_DEF_CBCSHARDEXPERTS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

int64_t dim(Value w, int d) { return llvm::cast<RankedTensorType>(w.getType()).getDimSize(d); }

// Dividing one expert's features would add its down bias and the identity experts on every
// rank: such layers divide by experts only.
bool featureCuttable(MoeExpertsOp op) { return !op.getDownBias() && op.getIdentityExperts() == 0; }

SmallVector<MoeExpertsOp> findLayers(ModuleOp module, bool expertParallel) {
  SmallVector<MoeExpertsOp> layers;
  module.walk([&](MoeExpertsOp op) {
    if (op.getGateUp().getDefiningOp<WeightRefOp>() && op.getDown().getDefiningOp<WeightRefOp>() &&
        (expertParallel || featureCuttable(op)))
      layers.push_back(op);
  });
  return layers;
}

class ShardExperts : public impl::CbcShardExpertsBase<ShardExperts> {
public:
  using CbcShardExpertsBase::CbcShardExpertsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks <= 1)
      return;
    std::vector<shard::Rule> rules;
    shard::expertRules(module, expertParallel, rules);
    if (failed(shard::checkRules(module, ranks, rules)))
      return signalPassFailure();
    for (MoeExpertsOp op : findLayers(module, expertParallel))
      expertParallel ? byExperts(op) : byFeatures(op);
    shard::markRanks(module, ranks);
  }

private:
  // Rank r holds experts r*E/N ..; the op skips the others' ids.
  void byExperts(MoeExpertsOp op) {
    int64_t n = ranks, E = dim(op.getGateUp(), 0);
    auto cut = ShardAttr::get(&getContext(), n, 0, {E}, {n});
    for (Value w : {op.getGateUp(), op.getDown(), op.getGateUpBias(), op.getDownBias()})
      if (w)
        shard::cutWeight(w, op, cut, "ep");
    op.setExpertRanks(n);
    shard::sumAfter(op, op.getResult(), Value(), n);
  }
  // Every expert's gate|up rows and down columns cut as a dense MLP's.
  void byFeatures(MoeExpertsOp op) {
    MLIRContext *ctx = &getContext();
    int64_t n = ranks, rows = dim(op.getGateUp(), 1), I = dim(op.getDown(), 2);
    bool halves = !op.getUngated() && op.getLayout() == GluLayout::halves;
    ShardAttr up = halves ? ShardAttr::get(ctx, n, 1, {I, I}, {n, n}) : ShardAttr::get(ctx, n, 1, {rows}, {n});
    shard::cutWeight(op.getGateUp(), op, up, "tp");
    if (Value b = op.getGateUpBias())
      shard::cutWeight(b, op, up, "tp");
    shard::cutWeight(op.getDown(), op, ShardAttr::get(ctx, n, 2, {I}, {n}), "tp");
    shard::sumAfter(op, op.getResult(), Value(), n);
  }
};

} // namespace

namespace shard {
void expertRules(ModuleOp module, bool expertParallel, std::vector<Rule> &rules) {
  for (MoeExpertsOp op : findLayers(module, expertParallel)) {
    std::string name = op.getDown().getDefiningOp<WeightRefOp>().getName().str();
    if (expertParallel)
      rules.push_back({"the " + std::to_string(dim(op.getGateUp(), 0)) + " experts of '" + name + "'",
                       dim(op.getGateUp(), 0), false});
    else
      rules.push_back({"the " + std::to_string(dim(op.getDown(), 2)) + " intermediate features of the experts '" +
                           name + "'",
                       dim(op.getDown(), 2), false});
  }
}
} // namespace shard

} // namespace cbc
