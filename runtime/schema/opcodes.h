// What each opcode is: the cbc op it encodes, its parameter table, its operand counts and where it
// keeps data across steps, as the op table generated from the ops' ODS entries says
// (runtime/schema/ops.inc). The artefact writer finds an op's opcode here by the op's name, the
// reader checks every instruction against it, and `cbc dump` prints instructions by these names.
#ifndef CBC_RUNTIME_SCHEMA_OPCODES_H
#define CBC_RUNTIME_SCHEMA_OPCODES_H

#include "runtime/schema/model_generated.h"

#include <optional>
#include <string_view>

namespace cbc {

// Where an instruction keeps data across steps: nowhere, in its layer's paged cache (its table
// starts with `site: CacheSite`), or in a per-request state (`state: StateSite`).
enum class OpSite : uint8_t { None, Cache, State };

struct OpcodeInfo {
  fb::Opcode opcode;
  std::string_view op_name; // the cbc op, e.g. "cbc.kv.attention"
  fb::OpParams params;      // its parameter table; NONE for ops without attributes
  int min_inputs, max_inputs;   // max -1: any number (a variadic operand list)
  int min_outputs, max_outputs; // max -1: any number
  OpSite site;
};

constexpr int kNumOpcodes = (int)fb::Opcode::MAX + 1;

// Indexed by opcode.
const OpcodeInfo &opcodeInfo(fb::Opcode opcode);
std::optional<fb::Opcode> opcodeNamed(std::string_view opName);
bool isValidOpcode(int value);

} // namespace cbc

#endif
