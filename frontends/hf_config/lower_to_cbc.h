// ModelSpec -> the cbc dialect: one `func.func @step` over packed rows.
#ifndef CBC_FRONTENDS_HF_CONFIG_LOWER_TO_CBC_H
#define CBC_FRONTENDS_HF_CONFIG_LOWER_TO_CBC_H

#include "frontends/hf_config/model_spec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace cbc::hf {

struct LowerOptions {
  std::string weight_dtype = "bf16"; // bf16, f16 or f32: the element type of program weights
};

mlir::OwningOpRef<mlir::ModuleOp> lowerToCbc(const ModelSpec &spec, mlir::MLIRContext &ctx,
                                             const LowerOptions &options = {});

} // namespace cbc::hf

#endif
