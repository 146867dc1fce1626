#include "dialects/cbc/CbcDialect.h"
#include "dialects/cbc/CbcOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace cbc;

#include "dialects/cbc/CbcOpsDialect.cpp.inc"

void CbcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/cbc/CbcOps.cpp.inc"
      >();
  registerAttributes();
}
