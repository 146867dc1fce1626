// What the cbc-shard-* passes share: cutting a weight for the ranks, retyping the rows between a
// column-parallel and a row-parallel linear, the collectives, and the sizes a model can take.
#ifndef CBC_PASSES_SHARDSUPPORT_H
#define CBC_PASSES_SHARDSUPPORT_H

#include "dialects/cbc/CbcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace cbc::shard {

// One rule a sharded region puts on the rank count N: N divides `extent`, or with `replicable`
// also the other way round (KV heads copied to several ranks).
struct Rule {
  std::string what; // "the 32 attention heads of layer 3"
  int64_t extent = 0;
  bool replicable = false;
  bool allows(int64_t n) const { return extent % n == 0 || (replicable && n % extent == 0); }
};

// The rules of every region the shard passes would cut; each pass adds its own.
void attentionRules(mlir::ModuleOp module, std::vector<Rule> &rules);
void mlpRules(mlir::ModuleOp module, std::vector<Rule> &rules);
void expertRules(mlir::ModuleOp module, bool expertParallel, std::vector<Rule> &rules);
void recurrentRules(mlir::ModuleOp module, std::vector<Rule> &rules);

// Every shard pass's rules.
std::vector<Rule> allRules(mlir::ModuleOp module, bool expertParallel);

// The first rule `ranks` breaks, as one line naming it and the sizes (up to 64) every rule takes;
// empty when it breaks none.
std::string brokenRule(const std::vector<Rule> &rules, int64_t ranks);

// brokenRule as an error on the module.
mlir::LogicalResult checkRules(mlir::ModuleOp module, int64_t ranks, const std::vector<Rule> &rules);

// Gives `w` the rank's slice `shard` along its dimension, retyping it. A weight read elsewhere
// too is cloned first under `name.suffix` (the manifest keys weights by name).
mlir::Value cutWeight(mlir::Value w, mlir::Operation *user, ShardAttr shard, llvm::StringRef suffix);

// `v` with `cols` columns instead of its own.
void setCols(mlir::Value v, int64_t cols);

// Replaces every use of `partial` (after `after`) with its sum over the ranks, plus `bias`.
void sumAfter(mlir::Operation *after, mlir::Value partial, mlir::Value bias, int64_t ranks);

// Makes `out` row-parallel: the rank's block of its weight's `extent` input columns, its
// partial product summed over the ranks after it, its bias added once after the sum.
void rowParallel(LinearOp out, int64_t extent, int64_t ranks);

// Records the group size on the module (kRanksAttr).
void markRanks(mlir::ModuleOp module, int64_t ranks);

int64_t cols(mlir::Value v);

} // namespace cbc::shard

#endif
