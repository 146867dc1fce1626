// cbc-fuse-add-norm: residual add + RMS norm -> cbc.math.add_rms_norm.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace cbc {
#define GEN_PASS_DEF_CBCFUSEADDNORM
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

class FuseAddNorm : public impl::CbcFuseAddNormBase<FuseAddNorm> {
public:
  void runOnOperation() override {
    SmallVector<std::pair<AddOp, RmsNormOp>> pairs;
    getOperation().walk([&](RmsNormOp norm) {
      auto add = norm.getX().getDefiningOp<AddOp>();
      int64_t width = llvm::cast<RankedTensorType>(norm.getX().getType()).getDimSize(1);
      bool wholeRow = !norm.getGroupAttr() || norm.getGroupAttr().getInt() == width;
      // The first norm reading the sum takes the fusion; the sum stays available to others.
      // A weight addend (one row for every row) has no fused form.
      if (!add || !wholeRow || !llvm::isa<RankedTensorType>(add.getRhs().getType()) ||
          llvm::cast<RankedTensorType>(add.getRhs().getType()).getRank() != 2 || add->getBlock() != norm->getBlock() ||
          llvm::any_of(pairs, [&](auto &p) { return p.first == add; }))
        return;
      // The fused op replaces the add at the norm's place, so no reader of the sum may come
      // before the norm.
      for (Operation *user : add->getUsers())
        if (user != norm && user->isBeforeInBlock(norm))
          return;
      pairs.push_back({add, norm});
    });
    for (auto [add, norm] : pairs) {
      // The fused op sits where the norm was: both of the add's operands and the norm's weight
      // are defined before it.
      OpBuilder b(norm);
      auto fused = AddRmsNormOp::create(b, norm.getLoc(), add.getType(), norm.getType(), add.getLhs(),
                                        add.getRhs(), norm.getWeight(), norm.getEpsAttr(),
                                        norm.getOffsetAttr());
      norm.getResult().replaceAllUsesWith(fused.getNormed());
      add.getResult().replaceAllUsesWith(fused.getSum());
      norm.erase();
      add.erase();
    }
  }
};

} // namespace
} // namespace cbc
