// cbc-shard-mlp: the intermediate features of dense MLPs divided among the ranks.
#include "passes/Passes.h"
#include "passes/ShardSupport.h"

namespace cbc {
#define GEN_PASS_DEF_CBCSHARDMLP
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// up (column-parallel) -> a gated unit or an activation -> down (row-parallel), each step the
// only reader of the one before. Other MLP forms stay whole on every rank.
struct Region {
  LinearOp up, down;
  Operation *unit = nullptr; // cbc.math.glu or cbc.math.act
  int64_t inter = 0;         // the intermediate width I
};

// The linear's weight is a program weight no pass has cut yet.
bool cuttable(LinearOp op) {
  auto ref = op.getWeight().getDefiningOp<WeightRefOp>();
  return ref && !ref.getShardAttr();
}

std::vector<Region> findRegions(ModuleOp module) {
  std::vector<Region> regions;
  module.walk([&](LinearOp down) {
    Region r;
    r.down = down;
    r.unit = down.getX().getDefiningOp();
    if (!r.unit || !isa<GluOp, ActOp>(r.unit) || !down.getX().hasOneUse())
      return;
    r.up = r.unit->getOperand(0).getDefiningOp<LinearOp>();
    if (!r.up || !r.up.getResult().hasOneUse() || !cuttable(r.up) || !cuttable(down))
      return;
    r.inter = shard::cols(down.getX());
    regions.push_back(r);
  });
  return regions;
}

class ShardMlp : public impl::CbcShardMlpBase<ShardMlp> {
public:
  using CbcShardMlpBase::CbcShardMlpBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks <= 1)
      return;
    std::vector<shard::Rule> rules;
    shard::mlpRules(module, rules);
    if (failed(shard::checkRules(module, ranks, rules)))
      return signalPassFailure();
    // Stacked MLPs share a linear (one's down is the next one's up): the first region cut wins
    // and the next, no longer in its form, stays whole.
    for (Region &r : findRegions(module))
      if (cuttable(r.up) && cuttable(r.down) && r.unit->getOperand(0) == r.up.getResult() &&
          r.down.getX() == r.unit->getResult(0))
        cut(r);
    shard::markRanks(module, ranks);
  }

private:
  void cut(Region &r) {
    MLIRContext *ctx = &getContext();
    int64_t n = ranks, I = r.inter;
    // Halves: the rank's gate rows and its up rows. Interleaved gate/up pairs and an ungated
    // up projection: one block of consecutive rows.
    auto glu = dyn_cast<GluOp>(r.unit);
    bool halves = glu && glu.getLayout() == GluLayout::halves;
    int64_t upRows = glu ? 2 * I : I;
    ShardAttr up = halves ? ShardAttr::get(ctx, n, 0, {I, I}, {n, n}) : ShardAttr::get(ctx, n, 0, {upRows}, {n});
    shard::cutWeight(r.up.getWeight(), r.up, up, "tp");
    if (r.up.getBias())
      shard::cutWeight(r.up.getBias(), r.up, up, "tp");
    shard::setCols(r.up.getResult(), upRows / n);
    shard::setCols(r.unit->getResult(0), I / n);
    shard::rowParallel(r.down, I, n);
  }
};

} // namespace

namespace shard {
void mlpRules(ModuleOp module, std::vector<Rule> &rules) {
  for (Region &r : findRegions(module))
    rules.push_back({"the " + std::to_string(r.inter) + " intermediate features of the MLP '" +
                         r.down.getWeight().getDefiningOp<WeightRefOp>().getName().str() + "'",
                     r.inter, false});
}
} // namespace shard

} // namespace cbc
