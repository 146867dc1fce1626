#include "passes/ShardSupport.h"

#include "llvm/ADT/STLExtras.h"

namespace cbc::shard {

using namespace mlir;

int64_t cols(Value v) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  return t.getDimSize(t.getRank() - 1);
}

void setCols(Value v, int64_t n) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.back() = n;
  v.setType(RankedTensorType::get(shape, t.getElementType(), t.getEncoding()));
}

Value cutWeight(Value w, Operation *user, ShardAttr shard, llvm::StringRef suffix) {
  auto ref = w.getDefiningOp<WeightRefOp>();
  if (!ref)
    return w;
  if (!w.hasOneUse()) {
    OpBuilder b(ref);
    auto copy = llvm::cast<WeightRefOp>(b.clone(*ref));
    copy.setName((ref.getName() + "." + suffix).str());
    user->replaceUsesOfWith(w, copy.getResult());
    ref = copy;
  }
  auto t = llvm::cast<RankedTensorType>(ref.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape[shard.getDim()] = shard.rankExtent();
  ref.setShardAttr(shard);
  ref.getResult().setType(RankedTensorType::get(shape, t.getElementType(), t.getEncoding()));
  return ref.getResult();
}

void sumAfter(Operation *after, Value partial, Value bias, int64_t ranks) {
  OpBuilder b(after->getContext());
  b.setInsertionPointAfter(after);
  auto sum = AllReduceOp::create(b, after->getLoc(), partial.getType(), partial, bias, b.getI64IntegerAttr(ranks));
  partial.replaceAllUsesExcept(sum.getResult(), sum);
}

void rowParallel(LinearOp out, int64_t extent, int64_t ranks) {
  cutWeight(out.getWeight(), out, ShardAttr::get(out.getContext(), ranks, 1, {extent}, {ranks}), "tp");
  Value bias = out.getBias();
  if (bias)
    out.getBiasMutable().clear();
  sumAfter(out, out.getResult(), bias, ranks);
}

void markRanks(ModuleOp module, int64_t ranks) {
  module->setAttr(kRanksAttr, IntegerAttr::get(IntegerType::get(module.getContext(), 64), ranks));
}

std::vector<Rule> allRules(ModuleOp module, bool expertParallel) {
  std::vector<Rule> rules;
  attentionRules(module, rules);
  mlpRules(module, rules);
  expertRules(module, expertParallel, rules);
  recurrentRules(module, rules);
  return rules;
}

std::string brokenRule(const std::vector<Rule> &rules, int64_t ranks) {
  auto broken = llvm::find_if(rules, [&](const Rule &r) { return !r.allows(ranks); });
  if (broken == rules.end())
    return "";
  std::string sizes;
  for (int64_t n = 1; n <= 64; ++n)
    if (llvm::all_of(rules, [&](const Rule &r) { return r.allows(n); }))
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
  return "--tp " + std::to_string(ranks) + " does not divide " + broken->what +
         (broken->replicable ? " (nor do they divide it)" : "") + "; tensor-parallel sizes this model can take: " +
         sizes;
}

LogicalResult checkRules(ModuleOp module, int64_t ranks, const std::vector<Rule> &rules) {
  std::string why = brokenRule(rules, ranks);
  if (why.empty())
    return success();
  return module.emitError(why);
}

} // namespace cbc::shard
