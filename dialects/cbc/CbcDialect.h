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

namespace cbc {
// The module attribute (an i64) naming the ranks of the tensor-parallel group the step program
// was sharded for by the cbc-shard-* passes; absent: one.
inline constexpr llvm::StringLiteral kRanksAttr = "cbc.ranks";
} // namespace cbc

#endif
