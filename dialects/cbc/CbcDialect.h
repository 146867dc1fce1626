#ifndef CBC_DIALECTS_CBC_CBCDIALECT_H
#define CBC_DIALECTS_CBC_CBCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/cbc/CbcOpsDialect.h.inc"

#endif
