#ifndef CBC_PASSES_PASSES_H
#define CBC_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace cbc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace cbc

#endif
