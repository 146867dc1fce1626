// cbc-shard-vocab: the LM head's vocabulary divided among the ranks, the logits gathered; the
// embedding tables divided among them too (the token table by rows, hashed n-gram tables by
// columns).
#include "passes/Passes.h"
#include "passes/ShardSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace cbc {
#define GEN_PASS_DEF_CBCSHARDVOCAB
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

class ShardVocab : public impl::CbcShardVocabBase<ShardVocab> {
public:
  using CbcShardVocabBase::CbcShardVocabBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks <= 1)
      return;
    shard::markRanks(module, ranks);
    auto func = module.lookupSymbol<func::FuncOp>("step");
    if (!func)
      return;
    divideEmbeddings(func);
    divideNgramTables(func);
    divideHead(func);
  }

private:
  // A token embedding whose table the ranks divide: each rank looks up its rows (zeros for the
  // other ids) and an all-reduce adds the one non-zero row a token has: exact.
  void divideEmbeddings(func::FuncOp func) {
    func.walk([&](EmbedOp op) {
      auto table = llvm::cast<RankedTensorType>(op.getTable().getType());
      int64_t rows = table.getDimSize(0);
      auto arg = llvm::dyn_cast<BlockArgument>(op.getTokens());
      auto name = arg ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "cbc.name") : StringAttr();
      if (!name || name.getValue() != "tokens" || op.getOovRowAttr() || op.getOffset() != 0 || rows % ranks != 0 ||
          !op.getTable().getDefiningOp<WeightRefOp>() || op.getTable().getDefiningOp<WeightRefOp>().getShardAttr())
        return;
      shard::cutWeight(op.getTable(), op, ShardAttr::get(&getContext(), ranks, 0, {rows}, {ranks}), "vocab");
      op.setVocabRanks(ranks);
      shard::sumAfter(op, op.getResult(), Value(), ranks);
    });
  }

  // A hashed n-gram table (cbc.state.ngram_embed; ~40e9 parameters in Qwen4-Exp's release):
  // each rank holds `width / ranks` columns of every row (transformers' embedding_colwise plan),
  // looks its columns of every head up, and an all-gather joins them. The gathered row is
  // rank-major ([rank][head][column]); split and concatenated, it is head-major again.
  void divideNgramTables(func::FuncOp func) {
    func.walk([&](NgramEmbedOp op) {
      auto table = llvm::cast<RankedTensorType>(op.getTable().getType());
      int64_t width = table.getDimSize(1), heads = (int64_t)op.getPrimes().size(), piece = width / ranks;
      auto ref = op.getTable().getDefiningOp<WeightRefOp>();
      if (width % ranks != 0 || !ref || ref.getShardAttr())
        return;
      shard::cutWeight(op.getTable(), op, ShardAttr::get(&getContext(), ranks, 1, {width}, {ranks}), "ngram");
      Value v = op.getResult();
      Type whole = v.getType();
      shard::setCols(v, heads * piece);
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      Value gathered = AllGatherOp::create(b, op.getLoc(), whole, v, b.getI64IntegerAttr(ranks)).getResult();
      auto pieceType = RankedTensorType::get({ShapedType::kDynamic, piece}, llvm::cast<RankedTensorType>(whole).getElementType());
      auto parts = SplitOp::create(b, op.getLoc(), SmallVector<Type>(ranks * heads, pieceType), gathered).getResults();
      SmallVector<Value> headMajor;
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t r = 0; r < ranks; ++r)
          headMajor.push_back(parts[r * heads + h]);
      Value joined = ConcatOp::create(b, op.getLoc(), whole, headMajor).getResult();
      v.replaceAllUsesExcept(joined, gathered.getDefiningOp());
    });
  }

  void divideHead(func::FuncOp func) {
    // The LM head: the linear the logits come from, through elementwise ops (a softcap).
    Value v = func.getBody().front().getTerminator()->getOperand(0);
    while (v.getDefiningOp() && isa<SoftcapOp, ActOp>(v.getDefiningOp()) && v.hasOneUse())
      v = v.getDefiningOp()->getOperand(0);
    auto head = v.getDefiningOp<LinearOp>();
    int64_t vocab = shard::cols(v);
    // A vocabulary the ranks do not divide stays whole on every rank: nothing is wrong, only
    // the head's weight is not divided.
    if (!head || !v.hasOneUse() || vocab % ranks != 0 || !head.getWeight().getDefiningOp<WeightRefOp>())
      return;
    auto cut = ShardAttr::get(&getContext(), ranks, 0, {vocab}, {ranks});
    shard::cutWeight(head.getWeight(), head, cut, "vocab");
    if (head.getBias())
      shard::cutWeight(head.getBias(), head, cut, "vocab");
    Type whole = v.getType();
    shard::setCols(v, vocab / ranks);
    OpBuilder b(head->getContext());
    b.setInsertionPointAfter(head);
    auto gathered = AllGatherOp::create(b, head.getLoc(), whole, v, b.getI64IntegerAttr(ranks));
    v.replaceAllUsesExcept(gathered.getResult(), gathered);
  }
};

} // namespace
} // namespace cbc
