// cbc-opt: the MlirOptMain driver with the cbc dialect and passes.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  cbc::registerCbcPasses();
  cbc::registerCbcPipeline();
  mlir::DialectRegistry registry;
  registry.insert<cbc::CbcDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "cbc optimizer driver\n", registry));
}
