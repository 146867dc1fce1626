// cbc-shard-attention: attention heads divided among the ranks of a tensor-parallel group.
#include "passes/Passes.h"
#include "passes/ShardSupport.h"

namespace cbc {
#define GEN_PASS_DEF_CBCSHARDATTENTION
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// Ops that act on each head (or each element) alone, so a rank can run them on its heads: what
// may sit between the fused projection and the cache or the attention. A grouped norm is
// per head only when its group is one head (`width`).
bool perHead(Operation *op, int64_t width) {
  if (isa<RopeOp, ClampOp, ActOp, SoftcapOp>(op))
    return true;
  if (auto norm = dyn_cast<RmsNormOp>(op))
    return norm.getGroupAttr() && norm.getGroupAttr().getInt() == width &&
           (!norm.getWeight() || llvm::cast<RankedTensorType>(norm.getWeight().getType()).getNumElements() == width);
  return false;
}

// The one-use per-head ops from `v` back to the op producing their input, which is returned.
Operation *walkBack(Value v, int64_t width, SmallVectorImpl<Operation *> &chain) {
  for (;;) {
    Operation *def = v.getDefiningOp();
    if (!def || !v.hasOneUse() || !perHead(def, width))
      return def;
    chain.push_back(def);
    v = def->getOperand(0);
  }
}

struct Region {
  LinearOp qkv, out;
  SplitOp split;
  KvAppendOp append;
  KvAttentionOp attn;
  SmallVector<Operation *> fusedChain, chains[3]; // before the split; after it, per q, k, v
  int64_t heads = 0, kvHeads = 0, width[4] = {}; // per-head widths of q, k, v, the output
};

// The attention layers in the plain form: a fused q|k|v linear, a split, per-head ops, a cache
// append and an attention of the same layer that nothing else reads, and a linear of its
// output. Other forms stay whole on every rank.
std::vector<Region> findRegions(ModuleOp module) {
  std::map<int64_t, int> cacheOps;
  module.walk([&](Operation *op) {
    if (op->getName().getStringRef().starts_with("cbc.kv."))
      if (auto layer = op->getAttrOfType<IntegerAttr>("layer"))
        ++cacheOps[layer.getInt()];
  });
  std::map<int64_t, KvAppendOp> appends;
  module.walk([&](KvAppendOp a) { appends[a.getLayer()] = a; });
  std::vector<Region> regions;
  module.walk([&](KvAttentionOp attn) {
    Region r;
    r.attn = attn;
    r.heads = attn.getNumHeads();
    r.kvHeads = attn.getNumKvHeads();
    auto it = appends.find(attn.getLayer());
    if (it == appends.end() || cacheOps[attn.getLayer()] != 2 || it->second.getLatent() || attn.getDistanceBias() ||
        attn.getBlockSelection() || attn.getAlibiSlopesAttr() || !attn.getResult().hasOneUse())
      return;
    r.append = it->second;
    r.width[0] = shard::cols(attn.getQ()) / r.heads;
    r.width[1] = shard::cols(r.append.getK()) / r.kvHeads;
    r.width[2] = shard::cols(r.append.getV()) / r.kvHeads;
    r.width[3] = shard::cols(attn.getResult()) / r.heads;
    Value ends[3] = {attn.getQ(), r.append.getK(), r.append.getV()};
    for (int i = 0; i < 3; ++i) {
      auto split = dyn_cast_or_null<SplitOp>(walkBack(ends[i], r.width[i], r.chains[i]));
      if (!split || split.getNumResults() != 3 || (r.split && split != r.split))
        return;
      r.split = split;
      Value from = r.chains[i].empty() ? ends[i] : r.chains[i].back()->getOperand(0);
      if (from != split.getResult(i))
        return;
    }
    // Elementwise ops on the fused row (a clamp) keep the rows' layout.
    r.qkv = dyn_cast_or_null<LinearOp>(walkBack(r.split.getX(), 1, r.fusedChain));
    r.out = dyn_cast<LinearOp>(*attn.getResult().getUsers().begin());
    if (!r.qkv || !r.out || !r.qkv.getResult().hasOneUse() || r.out.getX() != attn.getResult())
      return;
    regions.push_back(r);
  });
  return regions;
}

// Latent attention (MLA) in the plain form: the query projection (q_b, or q without a low
// rank) split into the heads' no-RoPE and RoPE parts, the no-RoPE part absorbed through kv_b
// (a cbc.math.head_linear), the latent attention, the values read back through kv_b, then the
// output linear. The latent cache holds one row a token for all heads: it stays whole on every
// rank (as in vLLM and SGLang), while the heads, q_b, kv_b and the output are divided.
struct LatentRegion {
  LinearOp q, out;
  SplitOp split;
  HeadLinearOp absorb, values;
  KvLatentAttentionOp attn;
  SmallVector<Operation *> fusedChain, chains[2];
  int64_t heads = 0, width[2] = {}; // per-head widths of the no-RoPE and RoPE query parts
};

std::vector<LatentRegion> findLatentRegions(ModuleOp module) {
  std::vector<LatentRegion> regions;
  module.walk([&](KvLatentAttentionOp attn) {
    LatentRegion r;
    r.attn = attn;
    r.heads = attn.getNumHeads();
    // Sinks would need their heads divided too: such a layer stays whole on every rank.
    if (attn.getSelection() || attn.getSinks() || !attn.getResult().hasOneUse())
      return;
    r.absorb = attn.getQLatent().getDefiningOp<HeadLinearOp>();
    r.values = dyn_cast<HeadLinearOp>(*attn.getResult().getUsers().begin());
    if (!r.absorb || !r.values || !r.absorb.getResult().hasOneUse() || r.absorb.getWeight() != r.values.getWeight() ||
        r.absorb.getHeads() != r.heads || r.values.getHeads() != r.heads || !r.values.getResult().hasOneUse() ||
        !r.absorb.getWeight().getDefiningOp<WeightRefOp>() ||
        llvm::range_size(r.absorb.getWeight().getUsers()) != 2)
      return;
    r.out = dyn_cast<LinearOp>(*r.values.getResult().getUsers().begin());
    if (!r.out || r.out.getX() != r.values.getResult())
      return;
    Value ends[2] = {r.absorb.getX(), attn.getQRope()};
    for (int i = 0; i < 2; ++i) {
      r.width[i] = shard::cols(ends[i]) / r.heads;
      auto split = dyn_cast_or_null<SplitOp>(walkBack(ends[i], r.width[i], r.chains[i]));
      if (!split || split.getNumResults() != 2 || (r.split && split != r.split))
        return;
      r.split = split;
      Value from = r.chains[i].empty() ? ends[i] : r.chains[i].back()->getOperand(0);
      if (from != split.getResult(i))
        return;
    }
    r.q = dyn_cast_or_null<LinearOp>(walkBack(r.split.getX(), 1, r.fusedChain));
    if (!r.q || !r.q.getResult().hasOneUse() || !r.q.getWeight().getDefiningOp<WeightRefOp>())
      return;
    regions.push_back(r);
  });
  return regions;
}

class ShardAttention : public impl::CbcShardAttentionBase<ShardAttention> {
public:
  using CbcShardAttentionBase::CbcShardAttentionBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks <= 1)
      return;
    std::vector<shard::Rule> rules;
    shard::attentionRules(module, rules);
    if (failed(shard::checkRules(module, ranks, rules)))
      return signalPassFailure();
    for (Region &r : findRegions(module))
      cut(r);
    for (LatentRegion &r : findLatentRegions(module))
      cut(r);
    shard::markRanks(module, ranks);
  }

private:
  void cut(LatentRegion &r) {
    MLIRContext *ctx = &getContext();
    int64_t n = ranks, heads = r.heads / n;
    auto query = ShardAttr::get(ctx, n, 0, {r.heads * r.width[0], r.heads * r.width[1]}, {n, n});
    shard::cutWeight(r.q.getWeight(), r.q, query, "tp");
    if (r.q.getBias())
      shard::cutWeight(r.q.getBias(), r.q, query, "tp");
    int64_t perRank[2] = {heads * r.width[0], heads * r.width[1]};
    shard::setCols(r.q.getResult(), perRank[0] + perRank[1]);
    for (Operation *op : r.fusedChain)
      shard::setCols(op->getResult(0), perRank[0] + perRank[1]);
    for (int i = 0; i < 2; ++i) {
      shard::setCols(r.split.getResult(i), perRank[i]);
      for (Operation *op : r.chains[i])
        shard::setCols(op->getResult(0), perRank[i]);
    }
    // kv_b holds each head's rows together: the rank's heads are one block of rows.
    int64_t kvRows = llvm::cast<RankedTensorType>(r.absorb.getWeight().getType()).getDimSize(0);
    auto whole = r.absorb.getWeight().getDefiningOp<WeightRefOp>();
    Value kvb = shard::cutWeight(whole.getResult(), r.absorb, ShardAttr::get(ctx, n, 0, {kvRows}, {n}), "tp");
    r.values->replaceUsesOfWith(whole.getResult(), kvb);
    if (whole->use_empty()) // both readers took the cut copy
      whole.erase();
    for (HeadLinearOp op : {r.absorb, r.values}) {
      op.setHeads(heads);
      shard::setCols(op.getResult(), shard::cols(op.getResult()) / n);
    }
    r.attn.setNumHeads(heads);
    shard::setCols(r.attn.getResult(), shard::cols(r.attn.getResult()) / n);
    shard::rowParallel(r.out, shard::cols(r.out.getX()) * n, n);
  }

  void cut(Region &r) {
    MLIRContext *ctx = &getContext();
    int64_t n = ranks, kvPieces = r.kvHeads % n == 0 ? n : r.kvHeads;
    int64_t heads = r.heads / n, kvHeads = r.kvHeads / kvPieces;
    SmallVector<int64_t> segments = {r.heads * r.width[0], r.kvHeads * r.width[1], r.kvHeads * r.width[2]};
    auto fused = ShardAttr::get(ctx, n, 0, segments, {n, kvPieces, kvPieces});
    shard::cutWeight(r.qkv.getWeight(), r.qkv, fused, "tp");
    if (r.qkv.getBias())
      shard::cutWeight(r.qkv.getBias(), r.qkv, fused, "tp");
    int64_t perRank[3] = {heads * r.width[0], kvHeads * r.width[1], kvHeads * r.width[2]};
    shard::setCols(r.qkv.getResult(), perRank[0] + perRank[1] + perRank[2]);
    for (Operation *op : r.fusedChain)
      shard::setCols(op->getResult(0), perRank[0] + perRank[1] + perRank[2]);
    for (int i = 0; i < 3; ++i) {
      shard::setCols(r.split.getResult(i), perRank[i]);
      for (Operation *op : r.chains[i])
        shard::setCols(op->getResult(0), perRank[i]);
    }
    OpBuilder b(ctx);
    r.append.setNumKvHeads(kvHeads);
    r.attn.setNumHeads(heads);
    r.attn.setNumKvHeads(kvHeads);
    if (Value sinks = r.attn.getSinks())
      shard::cutWeight(sinks, r.attn, ShardAttr::get(ctx, n, 0, {r.heads}, {n}), "tp");
    shard::setCols(r.attn.getResult(), heads * r.width[3]);
    // The output projection takes the rank's heads' columns; the sum over ranks follows it,
    // and its bias is added once, after the sum.
    shard::rowParallel(r.out, r.heads * r.width[3], n);
  }
};

} // namespace

namespace shard {
void attentionRules(ModuleOp module, std::vector<Rule> &rules) {
  for (Region &r : findRegions(module)) {
    std::string layer = " of layer " + std::to_string(r.attn.getLayer());
    rules.push_back({"the " + std::to_string(r.heads) + " attention heads" + layer, r.heads, false});
    rules.push_back({"the " + std::to_string(r.kvHeads) + " key-value heads" + layer, r.kvHeads, true});
  }
  for (LatentRegion &r : findLatentRegions(module))
    rules.push_back({"the " + std::to_string(r.heads) + " latent-attention heads of layer " +
                         std::to_string(r.attn.getLayer()),
                     r.heads, false});
}
} // namespace shard

} // namespace cbc
