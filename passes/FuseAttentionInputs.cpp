// cbc-fuse-attention-inputs: split + q/k norms + rope + kv.append -> cbc.kv.rope_append.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace cbc {
#define GEN_PASS_DEF_CBCFUSEATTENTIONINPUTS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

int64_t cols(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getDimSize(1); }

struct Chain {
  KvAppendOp append;
  SplitOp split;
  RopeOp ropeQ, ropeK;
  RmsNormOp normQ, normK; // both or neither
};

// One schedule over the same positions and lengths.
bool sameRope(RopeOp a, RopeOp b) {
  return a.getRope() == b.getRope() && a.getPositions() == b.getPositions() &&
         a.getSeqIds() == b.getSeqIds() && a.getPromptLens() == b.getPromptLens() &&
         a.getFreqLogScale() == b.getFreqLogScale();
}

// The per-head norm feeding `v`, if any, and the value before it.
Value throughNorm(Value v, RmsNormOp &norm, int64_t headDim) {
  norm = v.getDefiningOp<RmsNormOp>();
  if (!norm)
    return v;
  if (!norm.getGroupAttr() || norm.getGroupAttr().getInt() != headDim || !norm.getWeight() ||
      !norm->hasOneUse()) {
    norm = {};
    return {};
  }
  return norm.getX();
}

std::optional<Chain> match(KvAppendOp append) {
  Chain c;
  c.append = append;
  int64_t headDim = append.getHeadDim();
  c.ropeK = append.getK().getDefiningOp<RopeOp>();
  // The fused op rotates heads of the cache's head_dim by one position per token and keeps v
  // rows as wide as k rows.
  if (!c.ropeK || !c.ropeK->hasOneUse() || c.ropeK.getRope().getHeadDim() != headDim ||
      c.ropeK.getSectionPositions() || c.ropeK.getFreqLogScale() || c.ropeK.getRope().getRotaryOffset() != 0 ||
      cols(append.getV()) != cols(append.getK()))
    return std::nullopt;
  Value kIn = throughNorm(c.ropeK.getX(), c.normK, headDim);
  if (!kIn)
    return std::nullopt;
  c.split = kIn.getDefiningOp<SplitOp>();
  if (!c.split || c.split.getNumResults() != 3 || kIn != c.split.getResult(1) ||
      append.getV() != c.split.getResult(2) || !c.split.getResult(1).hasOneUse() ||
      !c.split.getResult(2).hasOneUse() || !c.split.getResult(0).hasOneUse())
    return std::nullopt;
  Operation *qUser = *c.split.getResult(0).getUsers().begin();
  c.normQ = dyn_cast<RmsNormOp>(qUser);
  Operation *ropeUser = c.normQ ? (c.normQ->hasOneUse() ? *c.normQ->getUsers().begin() : nullptr) : qUser;
  c.ropeQ = dyn_cast_or_null<RopeOp>(ropeUser);
  if (!c.ropeQ || !sameRope(c.ropeQ, c.ropeK) || (bool)c.normQ != (bool)c.normK)
    return std::nullopt;
  if (c.normQ && (!c.normQ.getWeight() || c.normQ.getGroupAttr() != c.normK.getGroupAttr() ||
                  c.normQ.getEpsAttr() != c.normK.getEpsAttr() ||
                  c.normQ.getOffsetAttr() != c.normK.getOffsetAttr()))
    return std::nullopt;
  if (c.ropeQ.getPositions() != append.getPositions() || c.ropeQ.getSeqIds() != append.getSeqIds())
    return std::nullopt;
  // Whole GQA groups: q holds a multiple of the kv heads.
  if (cols(c.ropeQ.getResult()) % cols(append.getK()) != 0)
    return std::nullopt;
  // The q norm's weight becomes an operand of the fused op at the append: it must be defined
  // before it.
  if (c.normQ)
    if (Operation *def = c.normQ.getWeight().getDefiningOp();
        def && (def->getBlock() != append->getBlock() || !def->isBeforeInBlock(append)))
      return std::nullopt;
  // The fused op sits at the append: the rotated q must not be read before it.
  for (Operation *user : c.ropeQ->getUsers())
    if (user->isBeforeInBlock(append))
      return std::nullopt;
  return c;
}

class FuseAttentionInputs : public impl::CbcFuseAttentionInputsBase<FuseAttentionInputs> {
public:
  void runOnOperation() override {
    // A layer that also keeps an index_key row has pool rows wider than the fused op's k | v.
    llvm::DenseSet<int64_t> indexed;
    getOperation().walk([&](KvIndexAppendOp op) { indexed.insert(op.getLayer()); });
    SmallVector<Chain> chains;
    getOperation().walk([&](KvAppendOp append) {
      if (indexed.contains(append.getLayer()))
        return;
      if (auto c = match(append))
        chains.push_back(*c);
    });
    for (Chain &c : chains) {
      OpBuilder b(c.append);
      RopeOp r = c.ropeQ;
      int64_t qWidth = llvm::cast<RankedTensorType>(r.getType()).getDimSize(1);
      int64_t heads = qWidth / (int64_t)c.append.getHeadDim();
      auto fused = KvRopeAppendOp::create(
          b, c.append.getLoc(), r.getType(), c.split.getX(), c.append.getPositions(),
          c.append.getSeqIds(), r.getPromptLens(), c.append.getSlots(), c.append.getBlockTables(),
          c.normQ ? c.normQ.getWeight() : Value(), c.normK ? c.normK.getWeight() : Value(),
          c.append.getLayerAttr(), b.getI64IntegerAttr(heads), c.append.getNumKvHeadsAttr(),
          c.append.getHeadDimAttr(), c.append.getRetentionAttr(), c.append.getGroupAttr(),
          c.normQ ? c.normQ.getEpsAttr() : FloatAttr(),
          c.normQ ? c.normQ.getOffsetAttr() : b.getF64FloatAttr(0.0), r.getRopeAttr());
      r.getResult().replaceAllUsesWith(fused.getQ());
      c.append.erase();
      c.ropeK.erase();
      r.erase();
      if (c.normQ) {
        c.normK.erase();
        c.normQ.erase();
      }
      c.split.erase();
    }
  }
};

} // namespace
} // namespace cbc
