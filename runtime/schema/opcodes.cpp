#include "runtime/schema/opcodes.h"

#include <array>

namespace cbc {

namespace {

using fb::Opcode;
using fb::OpParams;

constexpr std::array<OpcodeInfo, kNumOpcodes> kOpcodes = {{
    {Opcode::Embed, "cbc.math.embed", OpParams::EmbedParams},
    {Opcode::Linear, "cbc.math.linear", OpParams::NONE},
    {Opcode::RmsNorm, "cbc.math.rms_norm", OpParams::NormParams},
    {Opcode::Add, "cbc.math.add", OpParams::NONE},
    {Opcode::Mul, "cbc.math.mul", OpParams::NONE},
    {Opcode::Gate, "cbc.math.gate", OpParams::NONE},
    {Opcode::Glu, "cbc.math.glu", OpParams::GluParams},
    {Opcode::Split, "cbc.math.split", OpParams::NONE},
    {Opcode::Concat, "cbc.math.concat", OpParams::NONE},
    {Opcode::Rope, "cbc.math.rope", OpParams::RopeParams},
    {Opcode::Act, "cbc.math.act", OpParams::ActParams},
    {Opcode::Softcap, "cbc.math.softcap", OpParams::SoftcapParams},
    {Opcode::AddRmsNorm, "cbc.math.add_rms_norm", OpParams::NormParams},
    {Opcode::RmsNormGated, "cbc.math.rms_norm_gated", OpParams::GatedNormParams},
    {Opcode::KvAppend, "cbc.kv.append", OpParams::KvAppendParams},
    {Opcode::KvAttention, "cbc.kv.attention", OpParams::KvAttentionParams},
    {Opcode::KvRopeAppend, "cbc.kv.rope_append", OpParams::KvRopeAppendParams},
    {Opcode::StateConv1d, "cbc.state.conv1d", OpParams::Conv1dParams},
    {Opcode::GatedDelta, "cbc.state.gated_delta", OpParams::GatedDeltaParams},
    {Opcode::Ssd, "cbc.state.ssd", OpParams::SsdParams},
    {Opcode::SelectiveScan, "cbc.state.selective_scan", OpParams::SelectiveScanParams},
    {Opcode::RowsGather, "cbc.rows.gather", OpParams::NONE},
    {Opcode::MoeRoute, "cbc.moe.route", OpParams::MoeRouteParams},
    {Opcode::MoeExperts, "cbc.moe.experts", OpParams::MoeExpertsParams},
    {Opcode::KvLatentAttention, "cbc.kv.latent_attention", OpParams::KvLatentAttentionParams},
    {Opcode::HeadLinear, "cbc.math.head_linear", OpParams::HeadLinearParams},
    {Opcode::PositionScale, "cbc.math.position_scale", OpParams::PositionScaleParams},
    {Opcode::Lightning, "cbc.state.lightning", OpParams::LightningParams},
    {Opcode::Kda, "cbc.state.kda", OpParams::KdaParams},
    {Opcode::KvIndexAppend, "cbc.kv.index_append", OpParams::KvIndexAppendParams},
    {Opcode::KvIndexSelect, "cbc.kv.index_select", OpParams::KvIndexSelectParams},
    {Opcode::LayerNorm, "cbc.math.layer_norm", OpParams::NormParams},
}};

// The table is indexed by opcode: a reordering is a compile error, not a silent mismatch.
constexpr bool indexedByOpcode() {
  for (int i = 0; i < kNumOpcodes; ++i)
    if ((int)kOpcodes[i].opcode != i)
      return false;
  return true;
}
static_assert(indexedByOpcode(), "kOpcodes must list the opcodes in order");

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
