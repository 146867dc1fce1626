// The CPU backend's dispatch: one compile function per opcode. A missing entry fails the op
// coverage unit test, not a user's model at load time.
#include "runtime/cpu/op_context.h"
#include "runtime/schema/opcodes.h"

#include <array>

namespace cbc::rt::cpu {

namespace {

using fb::Opcode;

std::array<CompileFn, kNumOpcodes> buildTable() {
  std::array<CompileFn, kNumOpcodes> t{};
  auto set = [&](Opcode op, CompileFn fn) { t[(int)op] = fn; };
  set(Opcode::Embed, compileEmbed);
  set(Opcode::Linear, compileLinear);
  set(Opcode::RmsNorm, compileRmsNorm);
  set(Opcode::Add, compileAdd);
  set(Opcode::Mul, compileMul);
  set(Opcode::Gate, compileGate);
  set(Opcode::Glu, compileGlu);
  set(Opcode::Split, compileSplit);
  set(Opcode::Concat, compileConcat);
  set(Opcode::Rope, compileRope);
  set(Opcode::Act, compileAct);
  set(Opcode::Softcap, compileSoftcap);
  set(Opcode::AddRmsNorm, compileAddRmsNorm);
  set(Opcode::RmsNormGated, compileRmsNormGated);
  set(Opcode::KvAppend, compileKvAppend);
  set(Opcode::KvAttention, compileKvAttention);
  set(Opcode::KvRopeAppend, compileKvRopeAppend);
  set(Opcode::StateConv1d, compileConv1d);
  set(Opcode::GatedDelta, compileGatedDelta);
  set(Opcode::Kda, compileKda);
  set(Opcode::KvIndexAppend, compileKvIndexAppend);
  set(Opcode::KvIndexSelect, compileKvIndexSelect);
  set(Opcode::LayerNorm, compileLayerNorm);
  set(Opcode::Ssd, compileSsd);
  set(Opcode::SelectiveScan, compileSelectiveScan);
  set(Opcode::RowsGather, compileRowsGather);
  set(Opcode::MoeRoute, compileMoeRoute);
  set(Opcode::MoeExperts, compileMoeExperts);
  set(Opcode::KvLatentAttention, compileKvLatentAttention);
  set(Opcode::HeadLinear, compileHeadLinear);
  set(Opcode::PositionScale, compilePositionScale);
  set(Opcode::Lightning, compileLightning);
  return t;
}

} // namespace

CompileFn compileFunction(fb::Opcode opcode) {
  static const std::array<CompileFn, kNumOpcodes> table = buildTable();
  return isValidOpcode((int)opcode) ? table[(int)opcode] : nullptr;
}

} // namespace cbc::rt::cpu
