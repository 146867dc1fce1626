// cbc-tblgen: mlir-tblgen's driver with cbc's own TableGen backends (OpTableGen.cpp).
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
