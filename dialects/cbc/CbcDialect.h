#ifndef CBC_DIALECTS_CBC_CBCDIALECT_H
#define CBC_DIALECTS_CBC_CBCDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/TensorEncoding.h"

#include "dialects/cbc/CbcOpsDialect.h.inc"
#include "dialects/cbc/CbcEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/cbc/CbcAttrs.h.inc"

#endif
