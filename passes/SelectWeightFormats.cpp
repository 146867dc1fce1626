// cbc-select-weight-formats: per quantised weight, dequantise at load or run quantised.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace cbc {
#define GEN_PASS_DEF_CBCSELECTWEIGHTFORMATS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

std::string blockText(llvm::ArrayRef<int64_t> block) {
  std::string s = "[";
  for (size_t i = 0; i < block.size(); ++i)
    s += (i ? ", " : "") + std::to_string(block[i]);
  return s + "]";
}

// The weight becomes plain, and the loader is told what it cannot see in the checkpoint.
LogicalResult dequantizeAtLoad(WeightRefOp w, QuantAttr format, ModelAttr model) {
  switch (format.getScheme()) {
  case QuantScheme::mxfp4:
    // An MXFP4 [blocks, scales] pair is two U8 tensors: only the manifest can say what they encode.
    w.setDequantAttr(DequantAttr::get(w.getContext(), Dequant::mxfp4));
    break;
  case QuantScheme::fp8_e4m3:
    // The loader dequantises every F8_E4M3 tensor of an fp8 model, in the model's block.
    if (!model || model.getQuantization() != "fp8" || model.getFp8Block() != format.getBlock())
      return w.emitOpError("is block-scaled FP8 in blocks of ")
             << blockText(format.getBlock())
             << ", but the module's #cbc.model does not say quantization \"fp8\" with that fp8_block, "
                "so the loader would not dequantise it";
    break;
  }
  auto type = llvm::cast<RankedTensorType>(w.getType());
  w.getResult().setType(RankedTensorType::get(type.getShape(), type.getElementType()));
  return success();
}

class SelectWeightFormats : public impl::CbcSelectWeightFormatsBase<SelectWeightFormats> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto model = module->getAttrOfType<ModelAttr>("cbc.model");
    // No backend has kernels for a quantised format yet: every quantised weight is dequantised
    // at load. Running one quantised is a choice made here, keeping its type and its format.
    WalkResult result = module.walk([&](WeightRefOp w) {
      auto format = llvm::dyn_cast_or_null<QuantAttr>(llvm::cast<RankedTensorType>(w.getType()).getEncoding());
      if (format && failed(dequantizeAtLoad(w, format, model)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
} // namespace cbc
