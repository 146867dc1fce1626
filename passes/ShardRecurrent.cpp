// cbc-shard-recurrent: the heads of gated-delta, KDA and SSD mixers and of mLSTM cells, and the
// channels of RWKV's WKV, divided among the ranks, with their per-request states.
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

// The output linear reading `v` (its one use) with a weight of its own, or none.
LinearOp outputOf(Value v) {
  auto out = v.hasOneUse() ? dyn_cast<LinearOp>(*v.getUsers().begin()) : LinearOp();
  return out && out.getX() == v && weightRef(out.getWeight()) ? out : LinearOp();
}

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
  r.out = outputOf(r.norm.getResult());
  return r.out && weightRef(d.getALog()) && weightRef(d.getDtBias());
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

// An mLSTM layer in the plain form: one linear split into q | k | v | o, another (with a bias)
// soft-capped and split into the input and forget gates; the cell; a LayerNorm per head; the
// sigmoid of o times it; the output linear. Each read only by the next. Heads are contiguous
// column blocks of every part, so the unit of division is the head.
struct MlstmRegion {
  MlstmOp cell;
  SplitOp qkvo, gates;
  LinearOp qkvoIn, gatesIn, out;
  SoftcapOp cap;
  LayerNormOp norm;
  ActOp gate;
  MulOp mul;
  int64_t heads = 0;
};

bool matches(MlstmRegion &r) {
  MlstmOp c = r.cell;
  r.qkvo = c.getQ().getDefiningOp<SplitOp>();
  if (!r.qkvo || r.qkvo.getNumResults() != 4 || c.getK() != r.qkvo.getResult(1) || c.getV() != r.qkvo.getResult(2) ||
      c.getQ() != r.qkvo.getResult(0) || !onlyUse(c.getQ(), c) || !onlyUse(c.getK(), c) || !onlyUse(c.getV(), c))
    return false;
  Value o = r.qkvo.getResult(3);
  r.gate = o.hasOneUse() ? dyn_cast<ActOp>(*o.getUsers().begin()) : ActOp();
  if (!r.gate || r.gate.getAct() != Activation::sigmoid || !r.gate.getResult().hasOneUse())
    return false;
  r.gates = c.getInputGate().getDefiningOp<SplitOp>();
  if (!r.gates || r.gates.getNumResults() != 2 || c.getInputGate() != r.gates.getResult(0) ||
      c.getForgetGate() != r.gates.getResult(1) || !onlyUse(c.getInputGate(), c) || !onlyUse(c.getForgetGate(), c))
    return false;
  r.cap = r.gates.getX().getDefiningOp<SoftcapOp>();
  if (!r.cap || !onlyUse(r.cap.getResult(), r.gates))
    return false;
  r.qkvoIn = r.qkvo.getX().getDefiningOp<LinearOp>();
  r.gatesIn = r.cap.getX().getDefiningOp<LinearOp>();
  if (!r.qkvoIn || !onlyUse(r.qkvoIn.getResult(), r.qkvo) || !weightRef(r.qkvoIn.getWeight()) || r.qkvoIn.getBias() ||
      !r.gatesIn || !onlyUse(r.gatesIn.getResult(), r.cap) || !weightRef(r.gatesIn.getWeight()) ||
      (r.gatesIn.getBias() && !weightRef(r.gatesIn.getBias())))
    return false;
  r.norm = c.getResult().hasOneUse() ? dyn_cast<LayerNormOp>(*c.getResult().getUsers().begin()) : LayerNormOp();
  if (!r.norm || r.norm.getX() != c.getResult() || !r.norm.getGroupAttr() ||
      r.norm.getGroupAttr().getInt() != (int64_t)c.getVDim() || r.norm.getBias() || !weightRef(r.norm.getWeight()) ||
      !r.norm.getResult().hasOneUse())
    return false;
  r.mul = dyn_cast<MulOp>(*r.norm.getResult().getUsers().begin());
  if (!r.mul || *r.gate.getResult().getUsers().begin() != r.mul.getOperation() || !r.mul.getResult().hasOneUse())
    return false;
  r.out = outputOf(r.mul.getResult());
  return bool(r.out);
}

std::vector<MlstmRegion> findMlstmRegions(ModuleOp module) {
  std::vector<MlstmRegion> regions;
  module.walk([&](MlstmOp c) {
    MlstmRegion r;
    r.cell = c;
    r.heads = c.getNumHeads();
    if (matches(r))
      regions.push_back(r);
  });
  return regions;
}

// RWKV's time mix in the plain form: k and v each straight from a linear, r a sigmoid of
// another, the WKV over k and v, r times it, the output linear. Channels are independent, so the
// unit of division is the channel.
struct WkvRegion {
  WkvOp wkv;
  LinearOp k, v, r, out;
  ActOp gate;
  MulOp mul;
  int64_t channels = 0;
};

LinearOp ownLinear(Value x, Operation *user) {
  auto linear = x.getDefiningOp<LinearOp>();
  return linear && onlyUse(x, user) && weightRef(linear.getWeight()) && !linear.getBias() ? linear : LinearOp();
}

bool matches(WkvRegion &r) {
  WkvOp w = r.wkv;
  r.k = ownLinear(w.getK(), w);
  r.v = ownLinear(w.getV(), w);
  if (!r.k || !r.v || r.k == r.v || !weightRef(w.getTimeDecay()) || !weightRef(w.getTimeFirst()) ||
      !w.getResult().hasOneUse())
    return false;
  r.mul = dyn_cast<MulOp>(*w.getResult().getUsers().begin());
  if (!r.mul || !r.mul.getResult().hasOneUse() || r.mul->getOperand(1) != w.getResult())
    return false;
  r.gate = r.mul->getOperand(0).getDefiningOp<ActOp>();
  if (!r.gate || r.gate.getAct() != Activation::sigmoid || !onlyUse(r.gate.getResult(), r.mul))
    return false;
  r.r = ownLinear(r.gate.getX(), r.gate);
  r.out = outputOf(r.mul.getResult());
  return r.r && r.out;
}

std::vector<WkvRegion> findWkvRegions(ModuleOp module) {
  std::vector<WkvRegion> regions;
  module.walk([&](WkvOp w) {
    WkvRegion r;
    r.wkv = w;
    r.channels = shard::cols(w.getResult());
    if (matches(r))
      regions.push_back(r);
  });
  return regions;
}

// A KDA mixer in the plain form: one linear split into q|k|v (through a depthwise conv and a
// split), f, b and g (f and g through a low-rank second linear each, or straight); the scan; the
// gated RMS norm per head; the output linear. Each read only by the next. The unit of division is
// the head; a low-rank gate's first projection stays whole on every rank.
struct KdaRegion {
  KdaOp kda;
  LinearOp in, out, fUp, gUp; // fUp, gUp: the low-rank second projections, if any
  SplitOp feed, qkv;
  StateConv1dOp conv;
  RmsNormGatedOp norm;
  int64_t heads = 0, dim = 0;
};

// The low-rank second projection `x` comes from (reading `part` of the feed), or none.
LinearOp lowRank(Value x, Value part, Operation *user) {
  auto up = x.getDefiningOp<LinearOp>();
  return up && onlyUse(x, user) && up.getX() == part && onlyUse(part, up) && weightRef(up.getWeight()) &&
                 !up.getBias()
             ? up
             : LinearOp();
}

bool matches(KdaRegion &r) {
  KdaOp d = r.kda;
  r.qkv = d.getQ().getDefiningOp<SplitOp>();
  if (!r.qkv || r.qkv.getNumResults() != 3 || d.getK() != r.qkv.getResult(1) || d.getV() != r.qkv.getResult(2) ||
      !llvm::all_of(r.qkv.getResults(), [&](Value v) { return onlyUse(v, d); }))
    return false;
  r.conv = r.qkv.getX().getDefiningOp<StateConv1dOp>();
  if (!r.conv || !onlyUse(r.conv.getResult(), r.qkv) || !weightRef(r.conv.getWeight()) || r.conv.getBias() ||
      r.conv.getInitial() || llvm::cast<RankedTensorType>(r.conv.getWeight().getType()).getDimSize(1) != 1)
    return false;
  r.feed = r.conv.getX().getDefiningOp<SplitOp>();
  if (!r.feed || r.feed.getNumResults() != 4 || r.feed.getResult(0) != r.conv.getX() || !onlyUse(r.conv.getX(), r.conv) ||
      d.getB() != r.feed.getResult(2) || !onlyUse(d.getB(), d) || !d.getResult().hasOneUse())
    return false;
  r.norm = dyn_cast<RmsNormGatedOp>(*d.getResult().getUsers().begin());
  if (!r.norm || r.norm.getX() != d.getResult() || !r.norm.getResult().hasOneUse() || !r.norm.getGroupAttr() ||
      r.norm.getGroupAttr().getInt() != r.dim)
    return false;
  Value f = r.feed.getResult(1), g = r.feed.getResult(3);
  r.fUp = lowRank(d.getF(), f, d);
  r.gUp = lowRank(r.norm.getZ(), g, r.norm);
  if (!(r.fUp ? true : d.getF() == f && onlyUse(f, d)) || !(r.gUp ? true : r.norm.getZ() == g && onlyUse(g, r.norm)))
    return false;
  r.in = r.feed.getX().getDefiningOp<LinearOp>();
  if (!r.in || !onlyUse(r.in.getResult(), r.feed) || !weightRef(r.in.getWeight()) || r.in.getBias())
    return false;
  r.out = outputOf(r.norm.getResult());
  return r.out && weightRef(d.getALog()) && weightRef(d.getDtBias());
}

std::vector<KdaRegion> findKdaRegions(ModuleOp module) {
  std::vector<KdaRegion> regions;
  module.walk([&](KdaOp d) {
    KdaRegion r;
    r.kda = d;
    r.heads = d.getNumHeads();
    r.dim = d.getVDim();
    if (d.getKDim() == d.getVDim() && matches(r))
      regions.push_back(r);
  });
  return regions;
}

// A Mamba2 (SSD) mixer in the plain form: one linear split into the norm's gate z, the conv's
// x|B|C and dt; a depthwise causal conv1d and a split into x, B and C; the scan; the gated RMS
// norm per group of heads; the output linear. Each read only by the next. The unit of division
// is the head, with its group: where the ranks divide the groups, each rank keeps G/N whole
// groups and the output is row-parallel. Where they outnumber the groups (Mamba2-2.7B has one),
// each group is copied to N/G ranks, and since its norm spans heads of several ranks, the scan's
// rows and the gate are gathered before the norm, which with the output linear stays whole.
// Heads the ranks do not divide leave the mixer whole (correct, only not divided), so SSD puts
// no rule on the sizes a model can take.
struct SsdRegion {
  LinearOp in, out;
  SplitOp feed, xbc;
  StateConv1dOp conv;
  SsdOp ssd;
  RmsNormGatedOp norm;
};

bool matches(SsdRegion &r) {
  SsdOp d = r.ssd;
  int64_t inner = d.getNumHeads() * d.getHeadDim();
  r.xbc = d.getX().getDefiningOp<SplitOp>();
  if (!r.xbc || r.xbc.getNumResults() != 3 || d.getB() != r.xbc.getResult(1) || d.getC() != r.xbc.getResult(2) ||
      d.getX() != r.xbc.getResult(0) || !llvm::all_of(r.xbc.getResults(), [&](Value v) { return onlyUse(v, d); }))
    return false;
  r.conv = r.xbc.getX().getDefiningOp<StateConv1dOp>();
  if (!r.conv || !onlyUse(r.conv.getResult(), r.xbc) || !weightRef(r.conv.getWeight()) ||
      llvm::cast<RankedTensorType>(r.conv.getWeight().getType()).getDimSize(1) != 1 || !d.getResult().hasOneUse())
    return false;
  r.norm = dyn_cast<RmsNormGatedOp>(*d.getResult().getUsers().begin());
  if (!r.norm || r.norm.getX() != d.getResult() || !r.norm.getResult().hasOneUse() || !r.norm.getGroupAttr() ||
      r.norm.getGroupAttr().getInt() * d.getNGroups() != inner || (r.norm.getWeight() && !weightRef(r.norm.getWeight())))
    return false;
  // z | xBC | dt from one split of one linear, every part going to the mixer.
  r.feed = r.conv.getX().getDefiningOp<SplitOp>();
  if (!r.feed || r.feed.getNumResults() != 3 || r.feed.getResult(0) != r.norm.getZ() ||
      r.feed.getResult(1) != r.conv.getX() || r.feed.getResult(2) != d.getDt() ||
      !onlyUse(r.norm.getZ(), r.norm) || !onlyUse(r.conv.getX(), r.conv) || !onlyUse(d.getDt(), d))
    return false;
  r.in = r.feed.getX().getDefiningOp<LinearOp>();
  if (!r.in || !onlyUse(r.in.getResult(), r.feed) || !weightRef(r.in.getWeight()))
    return false;
  r.out = outputOf(r.norm.getResult());
  return r.out && weightRef(d.getALog()) && weightRef(d.getDtBias()) && weightRef(d.getD());
}

// The SSD mixers `ranks` divides.
std::vector<SsdRegion> findSsdRegions(ModuleOp module, int64_t ranks) {
  std::vector<SsdRegion> regions;
  module.walk([&](SsdOp d) {
    SsdRegion r;
    r.ssd = d;
    int64_t g = d.getNGroups();
    if (d.getNumHeads() % ranks == 0 && (g % ranks == 0 || ranks % g == 0) && matches(r))
      regions.push_back(r);
  });
  return regions;
}

// A lightning mixer's scan in the plain form: one linear (an activation after it or not) split
// into q, k and v, each read only by the scan. The unit of division is the head; what reads the
// scan's rows (MiniMax's norm spans every head) gets them gathered and stays whole, so only the
// input linear and the states are divided. Heads the ranks do not divide leave it whole.
struct LightningRegion {
  LinearOp in;
  ActOp act; // or none
  SplitOp qkv;
  LightningOp scan;
};

bool matches(LightningRegion &r) {
  LightningOp d = r.scan;
  r.qkv = d.getQ().getDefiningOp<SplitOp>();
  if (!r.qkv || r.qkv.getNumResults() != 3 || d.getK() != r.qkv.getResult(1) || d.getV() != r.qkv.getResult(2) ||
      !llvm::all_of(r.qkv.getResults(), [&](Value v) { return onlyUse(v, d); }))
    return false;
  Value x = r.qkv.getX();
  r.act = x.getDefiningOp<ActOp>();
  if (r.act) {
    if (!onlyUse(x, r.qkv))
      return false;
    x = r.act.getX();
  }
  r.in = x.getDefiningOp<LinearOp>();
  return r.in && onlyUse(x, r.act ? r.act.getOperation() : r.qkv.getOperation()) && weightRef(r.in.getWeight()) &&
         d.getRanks() == 1;
}

std::vector<LightningRegion> findLightningRegions(ModuleOp module, int64_t ranks) {
  std::vector<LightningRegion> regions;
  module.walk([&](LightningOp d) {
    LightningRegion r;
    r.scan = d;
    if (d.getNumHeads() % ranks == 0 && matches(r))
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
    for (KdaRegion &r : findKdaRegions(module))
    rules.push_back({"the " + std::to_string(r.heads) + " KDA heads of layer " + std::to_string(r.kda.getLayer()),
                     r.heads, false});
  for (WkvRegion &r : findWkvRegions(module))
    rules.push_back({"the " + std::to_string(r.channels) + " WKV channels of layer " + std::to_string(r.wkv.getLayer()),
                     r.channels, false});
  for (MlstmRegion &r : findMlstmRegions(module))
      cut(r);
    for (WkvRegion &r : findWkvRegions(module))
      cut(r);
    for (KdaRegion &r : findKdaRegions(module))
      cut(r);
    for (SsdRegion &r : findSsdRegions(module, ranks))
      cut(r);
    for (LightningRegion &r : findLightningRegions(module, ranks))
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

  // Every part of both linears, the norm's weight and the output's columns cut by heads.
  void cut(MlstmRegion &r) {
    MLIRContext *ctx = &getContext();
    int64_t n = ranks, H = r.heads, qk = r.cell.getNumHeads() * r.cell.getKDim();
    int64_t v = r.cell.getNumHeads() * r.cell.getVDim();
    shard::cutWeight(r.qkvoIn.getWeight(), r.qkvoIn, ShardAttr::get(ctx, n, 0, {qk, qk, v, v}, {n, n, n, n}), "tp");
    shard::setCols(r.qkvoIn.getResult(), 2 * (qk + v) / n);
    auto gates = ShardAttr::get(ctx, n, 0, {H, H}, {n, n});
    shard::cutWeight(r.gatesIn.getWeight(), r.gatesIn, gates, "tp");
    if (r.gatesIn.getBias())
      shard::cutWeight(r.gatesIn.getBias(), r.gatesIn, gates, "tp");
    for (Value x : {r.gatesIn.getResult(), r.cap.getResult()})
      shard::setCols(x, 2 * H / n);
    for (Value x : r.gates.getResults())
      shard::setCols(x, H / n);
    for (Value x : r.qkvo.getResults())
      shard::setCols(x, shard::cols(x) / n);
    shard::cutWeight(r.norm.getWeight(), r.norm, ShardAttr::get(ctx, n, 0, {v}, {n}), "tp");
    r.cell.setNumHeads(H / n);
    for (Value x : {r.cell.getResult(), r.norm.getResult(), r.gate.getResult(), r.mul.getResult()})
      shard::setCols(x, v / n);
    shard::rowParallel(r.out, v, n);
  }

  // The heads' rows of every part of the input linear (a low-rank gate's first projection whole),
  // of the conv, the low-rank second projections, A_log and dt_bias; the output row-parallel.
  void cut(KdaRegion &r) {
    MLIRContext *ctx = &getContext();
    int64_t n = ranks, H = r.heads, W = r.heads * r.dim;
    int64_t fw = shard::cols(r.feed.getResult(1)), gw = shard::cols(r.feed.getResult(3));
    int64_t fPieces = r.fUp ? 1 : n, gPieces = r.gUp ? 1 : n;
    shard::cutWeight(r.in.getWeight(), r.in, ShardAttr::get(ctx, n, 0, {W, W, W, fw, H, gw}, {n, n, n, fPieces, n, gPieces}),
                     "tp");
    shard::setCols(r.feed.getResult(0), 3 * W / n);
    shard::setCols(r.feed.getResult(1), fw / fPieces);
    shard::setCols(r.feed.getResult(2), H / n);
    shard::setCols(r.feed.getResult(3), gw / gPieces);
    shard::setCols(r.in.getResult(), 3 * W / n + fw / fPieces + H / n + gw / gPieces);
    shard::cutWeight(r.conv.getWeight(), r.conv, ShardAttr::get(ctx, n, 0, {W, W, W}, {n, n, n}), "tp");
    shard::setCols(r.conv.getResult(), 3 * W / n);
    auto width = ShardAttr::get(ctx, n, 0, {W}, {n});
    for (LinearOp up : {r.fUp, r.gUp})
      if (up) {
        shard::cutWeight(up.getWeight(), up, width, "tp");
        shard::setCols(up.getResult(), W / n);
      }
    for (Value x : r.qkv.getResults())
      shard::setCols(x, W / n);
    auto aLog = llvm::cast<RankedTensorType>(r.kda.getALog().getType());
    int64_t headDim = aLog.getRank() == 4 ? 2 : 0; // [H] or [1, 1, H, 1]
    shard::cutWeight(r.kda.getALog(), r.kda, ShardAttr::get(ctx, n, headDim, {H}, {n}), "tp");
    shard::cutWeight(r.kda.getDtBias(), r.kda, width, "tp");
    r.kda.setNumHeads(H / n);
    shard::setCols(r.kda.getResult(), W / n);
    shard::setCols(r.norm.getResult(), W / n);
    shard::rowParallel(r.out, W, n);
  }

  // The heads' rows of z, x and dt and their groups' of B and C in the input linear and the conv,
  // their A_log, dt_bias and D; then the norm's weight and the output row-parallel, or, where a
  // group spans ranks, the scan's rows and the gate gathered for the whole norm and output.
  void cut(SsdRegion &r) {
    MLIRContext *ctx = &getContext();
    SsdOp d = r.ssd;
    int64_t n = ranks, H = d.getNumHeads(), G = d.getNGroups(), inner = H * d.getHeadDim(), bc = G * d.getStateSize();
    bool spans = G % n != 0; // each group copied to n / G ranks
    int64_t gp = spans ? G : n;
    Type wholeRows = d.getResult().getType(), wholeGate = r.norm.getZ().getType();
    SmallVector<int64_t> xbc = {inner, bc, bc}, xbcPieces = {n, gp, gp};
    auto in = ShardAttr::get(ctx, n, 0, {inner, inner, bc, bc, H}, {n, n, gp, gp, n});
    shard::cutWeight(r.in.getWeight(), r.in, in, "tp");
    if (r.in.getBias())
      shard::cutWeight(r.in.getBias(), r.in, in, "tp");
    int64_t xbcWidth = inner / n + 2 * bc / gp;
    shard::setCols(r.feed.getResult(0), inner / n);
    shard::setCols(r.feed.getResult(1), xbcWidth);
    shard::setCols(r.feed.getResult(2), H / n);
    shard::setCols(r.in.getResult(), inner / n + xbcWidth + H / n);
    auto channels = ShardAttr::get(ctx, n, 0, xbc, xbcPieces);
    for (Value w : {r.conv.getWeight(), r.conv.getBias(), r.conv.getInitial()})
      if (w)
        shard::cutWeight(w, r.conv, channels, "tp");
    shard::setCols(r.conv.getResult(), xbcWidth);
    shard::setCols(r.xbc.getResult(0), inner / n);
    shard::setCols(r.xbc.getResult(1), bc / gp);
    shard::setCols(r.xbc.getResult(2), bc / gp);
    auto heads = ShardAttr::get(ctx, n, 0, {H}, {n});
    for (Value w : {d.getALog(), d.getDtBias(), d.getD()})
      shard::cutWeight(w, d, heads, "tp");
    d.setNumHeads(H / n);
    d.setNGroups(G / gp);
    shard::setCols(d.getResult(), inner / n);
    if (spans) {
      OpBuilder b(r.norm);
      auto ranksAttr = b.getI64IntegerAttr(n);
      r.norm.getXMutable().assign(AllGatherOp::create(b, d.getLoc(), wholeRows, d.getResult(), ranksAttr));
      r.norm.getZMutable().assign(AllGatherOp::create(b, d.getLoc(), wholeGate, r.norm.getZ(), ranksAttr));
      return;
    }
    if (r.norm.getWeight())
      shard::cutWeight(r.norm.getWeight(), r.norm, ShardAttr::get(ctx, n, 0, {inner}, {n}), "tp");
    shard::setCols(r.norm.getResult(), inner / n);
    shard::rowParallel(r.out, inner, n);
  }

  // The heads' rows of q, k and v in the input linear; the scan runs them with their decay rates
  // (`ranks`), and its rows are gathered for what reads them.
  void cut(LightningRegion &r) {
    LightningOp d = r.scan;
    int64_t n = ranks, H = d.getNumHeads(), W = H * d.getHeadDim();
    auto qkv = ShardAttr::get(&getContext(), n, 0, {W, W, W}, {n, n, n});
    shard::cutWeight(r.in.getWeight(), r.in, qkv, "tp");
    if (r.in.getBias())
      shard::cutWeight(r.in.getBias(), r.in, qkv, "tp");
    shard::setCols(r.in.getResult(), 3 * W / n);
    if (r.act)
      shard::setCols(r.act.getResult(), 3 * W / n);
    for (Value x : r.qkv.getResults())
      shard::setCols(x, W / n);
    Type whole = d.getResult().getType();
    d.setNumHeads(H / n);
    d.setRanks(n);
    shard::setCols(d.getResult(), W / n);
    OpBuilder b(d->getContext());
    b.setInsertionPointAfter(d);
    auto gathered = AllGatherOp::create(b, d.getLoc(), whole, d.getResult(), b.getI64IntegerAttr(n));
    d.getResult().replaceAllUsesExcept(gathered, gathered);
  }

  // k, v and r column-parallel, time_decay and time_first by channel, the output row-parallel.
  void cut(WkvRegion &r) {
    int64_t n = ranks, C = r.channels;
    auto channels = ShardAttr::get(&getContext(), n, 0, {C}, {n});
    for (LinearOp in : {r.k, r.v, r.r}) {
      shard::cutWeight(in.getWeight(), in, channels, "tp");
      shard::setCols(in.getResult(), C / n);
    }
    shard::cutWeight(r.wkv.getTimeDecay(), r.wkv, channels, "tp");
    shard::cutWeight(r.wkv.getTimeFirst(), r.wkv, channels, "tp");
    for (Value x : {r.gate.getResult(), r.wkv.getResult(), r.mul.getResult()})
      shard::setCols(x, C / n);
    shard::rowParallel(r.out, C, n);
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
  for (KdaRegion &r : findKdaRegions(module))
    rules.push_back({"the " + std::to_string(r.heads) + " KDA heads of layer " + std::to_string(r.kda.getLayer()),
                     r.heads, false});
  for (WkvRegion &r : findWkvRegions(module))
    rules.push_back({"the " + std::to_string(r.channels) + " WKV channels of layer " + std::to_string(r.wkv.getLayer()),
                     r.channels, false});
  for (MlstmRegion &r : findMlstmRegions(module))
    rules.push_back({"the " + std::to_string(r.heads) + " mLSTM heads of layer " + std::to_string(r.cell.getLayer()),
                     r.heads, false});
}
} // namespace shard

} // namespace cbc
