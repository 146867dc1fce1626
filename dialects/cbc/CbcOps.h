#ifndef CBC_DIALECTS_CBC_CBCOPS_H
#define CBC_DIALECTS_CBC_CBCOPS_H

#include "dialects/cbc/CbcDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

#include "dialects/cbc/CbcInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/cbc/CbcOps.h.inc"

#endif
