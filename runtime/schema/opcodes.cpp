#include "runtime/schema/opcodes.h"

#include <array>

namespace cbc {

namespace {

using fb::Opcode;
using fb::OpParams;

#define CBC_MANY -1
constexpr std::array<OpcodeInfo, kNumOpcodes> kOpcodes = {{
#define CBC_OP(NAME, CODE, OP_NAME, PARAMS, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, SITE)                              \
  {Opcode::NAME, OP_NAME, OpParams::PARAMS, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, OpSite::SITE},
#include "runtime/schema/ops.inc"
}};
#undef CBC_MANY

// The generated table and the hand-written schema (model.fbs) agree, or this does not compile:
// every row's opcode is the schema enumerator of its name, every row names a member of OpParams
// (above), and the schema has no opcode without a row.
#define CBC_OP(NAME, CODE, ...) static_assert((int)Opcode::NAME == CODE, "model.fbs numbers opcode " #NAME " differently");
#include "runtime/schema/ops.inc"
constexpr int kTableRows = 0
#define CBC_OP(...) +1
#include "runtime/schema/ops.inc"
    ;
static_assert(kTableRows == kNumOpcodes, "model.fbs has an opcode that no cbc op defines");

constexpr bool indexedByOpcode() {
  for (int i = 0; i < kNumOpcodes; ++i)
    if ((int)kOpcodes[i].opcode != i)
      return false;
  return true;
}
static_assert(indexedByOpcode(), "runtime/schema/ops.inc must list the opcodes in order");

} // namespace

const OpcodeInfo &opcodeInfo(fb::Opcode opcode) { return kOpcodes[(int)opcode]; }

bool isValidOpcode(int value) { return value >= 0 && value < kNumOpcodes; }

std::optional<fb::Opcode> opcodeNamed(std::string_view opName) {
  for (const OpcodeInfo &info : kOpcodes)
    if (info.op_name == opName)
      return info.opcode;
  return std::nullopt;
}

} // namespace cbc
