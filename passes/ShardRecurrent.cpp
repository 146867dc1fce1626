// cbc-shard-recurrent: the heads of gated-delta mixers divided among the ranks, with their
// per-request states.
#include "passes/Passes.h"
#include "passes/ShardSupport.h"

namespace cbc {
#define GEN_PASS_DEF_CBCSHARDRECURRENT
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// A gated-delta mixer in the plain form: input linears
// split into the conv's q|k|v, the output norm's gate z, a and b (one linear or several, every
// part of each going to the mixer); a depthwise causal conv1d and a split into q, k, v; the
// gated delta rule; the gated RMS norm per value head; the output linear. Each read only by the
// next. The unit of division is the key head with the value heads attached to it, as in vLLM;
// when the ranks outnumber the key heads, each key head is copied to N / Hk ranks.
struct Region {
  SmallVector<SplitOp, 2> feeds; // the splits of the input linears
  LinearOp out;
  SplitOp qkv;
  StateConv1dOp conv;
  GatedDeltaOp delta;
  RmsNormGatedOp norm;
  int64_t keyHeads = 0, valueHeads = 0, keyDim = 0, valueDim = 0;
};

bool onlyUse(Value v, Operation *user) { return v.hasOneUse() && *v.getUsers().begin() == user; }

bool weightRef(Value w) { return w && w.getDefiningOp<WeightRefOp>() && !w.getDefiningOp<WeightRefOp>().getShardAttr(); }

// The split feeding `part` (its only reader being `user`), recorded once in r.feeds.
bool fedBySplit(Region &r, Value part, Operation *user) {
  auto split = part.getDefiningOp<SplitOp>();
  if (!split || !onlyUse(part, user))
    return false;
  if (!llvm::is_contained(r.feeds, split))
    r.feeds.push_back(split);
  return true;
}

bool matches(Region &r) {
  GatedDeltaOp d = r.delta;
  r.qkv = d.getQ().getDefiningOp<SplitOp>();
  if (!r.qkv || r.qkv.getNumResults() != 3 || d.getQ() != r.qkv.getResult(0) || d.getK() != r.qkv.getResult(1) ||
      d.getV() != r.qkv.getResult(2) || !llvm::all_of(r.qkv.getResults(), [&](Value v) { return onlyUse(v, d); }))
    return false;
  r.conv = r.qkv.getX().getDefiningOp<StateConv1dOp>();
  if (!r.conv || !onlyUse(r.conv.getResult(), r.qkv) || !weightRef(r.conv.getWeight()) ||
      llvm::cast<RankedTensorType>(r.conv.getWeight().getType()).getDimSize(1) != 1 || !d.getResult().hasOneUse())
    return false;
  r.norm = dyn_cast<RmsNormGatedOp>(*d.getResult().getUsers().begin());
  if (!r.norm || r.norm.getX() != d.getResult() || !r.norm.getResult().hasOneUse() ||
      !r.norm.getGroupAttr() || r.norm.getGroupAttr().getInt() != r.valueDim)
    return false;
  if (!fedBySplit(r, r.conv.getX(), r.conv) || !fedBySplit(r, d.getA(), d) || !fedBySplit(r, d.getB(), d) ||
      !fedBySplit(r, r.norm.getZ(), r.norm))
    return false;
  // Every part of each feeding split goes to the mixer, and each split reads a linear of its own.
  for (SplitOp split : r.feeds) {
    for (Value part : split.getResults())
      if (part != r.conv.getX() && part != d.getA() && part != d.getB() && part != r.norm.getZ())
        return false;
    auto in = split.getX().getDefiningOp<LinearOp>();
    if (!in || !onlyUse(in.getResult(), split) || !weightRef(in.getWeight()))
      return false;
  }
  r.out = dyn_cast<LinearOp>(*r.norm.getResult().getUsers().begin());
  return r.out && r.out.getX() == r.norm.getResult() && weightRef(r.out.getWeight()) && weightRef(d.getALog()) &&
         weightRef(d.getDtBias());
}

std::vector<Region> findRegions(ModuleOp module) {
  std::vector<Region> regions;
  module.walk([&](GatedDeltaOp d) {
    Region r;
    r.delta = d;
    r.keyHeads = d.getNumKHeads();
    r.valueHeads = d.getNumVHeads();
    r.keyDim = d.getKDim();
    r.valueDim = d.getVDim();
    if (matches(r))
      regions.push_back(r);
  });
  return regions;
}

class ShardRecurrent : public impl::CbcShardRecurrentBase<ShardRecurrent> {
public:
  using CbcShardRecurrentBase::CbcShardRecurrentBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks <= 1)
      return;
    std::vector<shard::Rule> rules;
    shard::recurrentRules(module, rules);
    if (failed(shard::checkRules(module, ranks, rules)))
      return signalPassFailure();
    for (Region &r : findRegions(module))
      cut(r);
    shard::markRanks(module, ranks);
  }

private:
  void cut(Region &r) {
    MLIRContext *ctx = &getContext();
    int64_t n = ranks, keyPieces = r.keyHeads % n == 0 ? n : r.keyHeads;
    int64_t keyWidth = r.keyHeads * r.keyDim / keyPieces, valueWidth = r.valueHeads * r.valueDim / n;
    // The conv's channels, and that part of an input linear: q, k and v cut each on its own.
    SmallVector<int64_t> qkv = {r.keyHeads * r.keyDim, r.keyHeads * r.keyDim, r.valueHeads * r.valueDim};
    SmallVector<int64_t> qkvPieces = {keyPieces, keyPieces, n};
    int64_t qkvWidth = 2 * keyWidth + valueWidth;
    for (SplitOp split : r.feeds) {
      SmallVector<int64_t> segments, pieces;
      for (Value part : split.getResults()) {
        bool conv = part == r.conv.getX();
        segments.append(conv ? qkv : SmallVector<int64_t>{shard::cols(part)});
        pieces.append(conv ? qkvPieces : SmallVector<int64_t>{n});
        shard::setCols(part, conv ? qkvWidth : shard::cols(part) / n);
      }
      auto in = split.getX().getDefiningOp<LinearOp>();
      auto cut = ShardAttr::get(ctx, n, 0, segments, pieces);
      shard::cutWeight(in.getWeight(), in, cut, "tp");
      if (in.getBias())
        shard::cutWeight(in.getBias(), in, cut, "tp");
      int64_t width = 0;
      for (Value part : split.getResults())
        width += shard::cols(part);
      shard::setCols(in.getResult(), width);
    }
    auto channels = ShardAttr::get(ctx, n, 0, qkv, qkvPieces);
    for (Value w : {r.conv.getWeight(), r.conv.getBias(), r.conv.getInitial()})
      if (w)
        shard::cutWeight(w, r.conv, channels, "tp");
    shard::setCols(r.conv.getResult(), qkvWidth);
    shard::setCols(r.qkv.getResult(0), keyWidth);
    shard::setCols(r.qkv.getResult(1), keyWidth);
    shard::setCols(r.qkv.getResult(2), valueWidth);
    auto heads = ShardAttr::get(ctx, n, 0, {r.valueHeads}, {n});
    shard::cutWeight(r.delta.getALog(), r.delta, heads, "tp");
    shard::cutWeight(r.delta.getDtBias(), r.delta, heads, "tp");
    r.delta.setNumKHeads(r.keyHeads / keyPieces);
    r.delta.setNumVHeads(r.valueHeads / n);
    shard::setCols(r.delta.getResult(), valueWidth);
    shard::setCols(r.norm.getResult(), valueWidth);
    shard::rowParallel(r.out, r.valueHeads * r.valueDim, n);
  }
};

} // namespace

namespace shard {
void recurrentRules(ModuleOp module, std::vector<Rule> &rules) {
  for (Region &r : findRegions(module)) {
    std::string layer = " of layer " + std::to_string(r.delta.getLayer());
    rules.push_back({"the " + std::to_string(r.valueHeads) + " gated-delta value heads" + layer, r.valueHeads, false});
    rules.push_back({"the " + std::to_string(r.keyHeads) + " gated-delta key heads" + layer, r.keyHeads, true});
  }
}
} // namespace shard

} // namespace cbc
