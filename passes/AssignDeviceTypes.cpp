// cbc-assign-device-types: rewrites every value of the step to the element type the device holds
// it in.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace cbc {
#define GEN_PASS_DEF_CBCASSIGNDEVICETYPES
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

Type storageType(MLIRContext *ctx, StorageType t) {
  Builder b(ctx);
  return t == StorageType::f32 ? b.getF32Type() : t == StorageType::f16 ? Type(b.getF16Type()) : b.getBF16Type();
}

class AssignDeviceTypes : public impl::CbcAssignDeviceTypesBase<AssignDeviceTypes> {
public:
  using CbcAssignDeviceTypesBase::CbcAssignDeviceTypesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("step");
    if (!func || !func.getBody().hasOneBlock()) {
      module.emitError("cbc-assign-device-types: the module has no single-block func.func @step");
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    Builder b(module.getContext());
    llvm::DenseMap<Value, Type> types;
    for (Operation &op : block)
      for (Value r : op.getResults())
        types[r] = defaultType(op, r);
    keepFp32(block, types, b.getF32Type());
    for (Operation &op : block)
      for (Value r : op.getResults())
        retype(r, types[r]);
  }

private:
  // The manifest still records the type the front end declared for a weight held wider.
  static void retype(Value v, Type element) {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    if (type.getElementType() == element)
      return;
    if (auto w = v.getDefiningOp<WeightRefOp>(); w && !w.getDeclaredAttr())
      w.setDeclaredAttr(TypeAttr::get(type.getElementType()));
    v.setType(type.clone(element));
  }

  Type defaultType(Operation &op, Value r) {
    Type element = llvm::cast<RankedTensorType>(r.getType()).getElementType();
    if (isa<WeightRefOp>(op) || element.isInteger(32))
      return element;
    if (isa<MoeRouteOp>(op)) // the mixing weights
      return Float32Type::get(op.getContext());
    return storageType(op.getContext(), activationDtype);
  }

  // The values that stay fp32 whatever the activation type (see the pass description).
  void keepFp32(Block &block, llvm::DenseMap<Value, Type> &types, Type f32) {
    for (Operation &op : block) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands()) {
          types[v] = f32;
          if (auto cap = v.getDefiningOp<SoftcapOp>())
            types[cap.getX()] = f32;
        }
      } else if (auto route = dyn_cast<MoeRouteOp>(op)) {
        // Through a soft cap on the logits too: the cap's input is the GEMM's result.
        Value logits = route.getLogits();
        types[logits] = f32;
        if (auto cap = logits.getDefiningOp<SoftcapOp>())
          types[logits = cap.getX()] = f32;
        if (auto linear = logits.getDefiningOp<LinearOp>(); linear && linear.getBias())
          types[linear.getBias()] = f32;
      } else if (auto select = dyn_cast<KvIndexSelectOp>(op)) {
        types[select.getQ()] = f32;
        types[select.getWeights()] = f32;
      } else if (auto hc = dyn_cast<StreamHcWeightsOp>(op)) {
        // The coefficients of hyper-connections, from their projection on, as transformers keeps them.
        for (Value v : {hc.getMixes(), hc.getBase(), hc.getScale(), hc.getResult()})
          types[v] = f32;
      } else if (auto cell = dyn_cast<MlstmOp>(op)) {
        // The cell divides by |q . n|, which cancels, and the gates enter exponentials: bf16
        // operands move its output by ~5% (measured on the fixture). Its operands stay fp32 from
        // their projections on (through the gates' cap and the splits), and so does its output,
        // which the per-head LayerNorm after it centres.
        types[cell.getResult()] = f32;
        for (Value v : {cell.getQ(), cell.getK(), cell.getV(), cell.getInputGate(), cell.getForgetGate()}) {
          types[v] = f32;
          while (isa_and_nonnull<SplitOp, SoftcapOp>(v.getDefiningOp()))
            types[v = v.getDefiningOp()->getOperand(0)] = f32;
          if (auto linear = v.getDefiningOp<LinearOp>(); linear && linear.getBias())
            types[linear.getBias()] = f32;
        }
      } else if (auto experts = dyn_cast<MoeExpertsOp>(op)) {
        types[experts.getWeights()] = f32;
      } else if (auto slots = dyn_cast<MoeSlotLinearOp>(op); slots && slots.getWeights()) {
        types[slots.getWeights()] = f32;
      } else if (auto append = dyn_cast<KvRopeAppendOp>(op)) {
        Operation *def = append.getQkv().getDefiningOp();
        if (def && !isa<LinearOp, WeightRefOp>(def))
          types[append.getQkv()] = f32;
      }
    }
  }
};

} // namespace
} // namespace cbc
