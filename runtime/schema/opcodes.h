// What each opcode is: the cbc op it encodes and the parameter table it carries. The artefact
// writer finds an op's opcode here by the op's name, the reader checks every instruction's table
// against it, and `cbc dump` prints instructions by these names.
#ifndef CBC_RUNTIME_SCHEMA_OPCODES_H
#define CBC_RUNTIME_SCHEMA_OPCODES_H

#include "runtime/schema/model_generated.h"

#include <optional>
#include <string_view>

namespace cbc {

struct OpcodeInfo {
  fb::Opcode opcode;
  std::string_view op_name; // the cbc op, e.g. "cbc.kv.attention"
  fb::OpParams params;      // its parameter table; NONE for ops without attributes
};

constexpr int kNumOpcodes = (int)fb::Opcode::MAX + 1;

// Indexed by opcode.
const OpcodeInfo &opcodeInfo(fb::Opcode opcode);
std::optional<fb::Opcode> opcodeNamed(std::string_view opName);
bool isValidOpcode(int value);

} // namespace cbc

#endif
