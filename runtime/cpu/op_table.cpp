// The CPU backend's dispatch: the compile function of every opcode, expanded from the op table.
#include "runtime/cpu/op_context.h"
#include "runtime/schema/opcodes.h"

#include <array>

namespace cbc::rt::cpu {

namespace {

constexpr std::array<CompileFn, kNumOpcodes> kCompileFunctions = {
#define CBC_OP(NAME, ...) compile##NAME,
#include "runtime/schema/ops.inc"
};

} // namespace

CompileFn compileFunction(fb::Opcode opcode) {
  return isValidOpcode((int)opcode) ? kCompileFunctions[(int)opcode] : nullptr;
}

} // namespace cbc::rt::cpu
