// Every cbc op that the program carries has an opcode in the artefact schema, a CPU compile
// function and a CUDA emitter, so that a new op cannot be half added: the dialect, the schema,
// the CPU backend and codegen are checked against each other here rather than at a model's
// first step.
#include "codegen/cuda/emit.h"
#include "dialects/cbc/CbcDialect.h"
#include "runtime/cpu/op_context.h"
#include "runtime/schema/opcodes.h"

#include <mlir/IR/MLIRContext.h>
#include <mlir/IR/OperationSupport.h>

#include <gtest/gtest.h>

#include <set>

namespace cbc {
namespace {

// cbc.weight.ref names a checkpoint tensor: the weight manifest carries it, not the program.
constexpr llvm::StringLiteral kNotAnInstruction = "cbc.weight.ref";

std::vector<std::string> instructionOps() {
  static mlir::MLIRContext ctx;
  ctx.loadDialect<CbcDialect>();
  std::vector<std::string> out;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    llvm::StringRef name = op.getStringRef();
    if (name.starts_with("cbc.") && name != kNotAnInstruction)
      out.push_back(name.str());
  }
  return out;
}

TEST(OpCoverage, TheDialectHasInstructions) { EXPECT_GT(instructionOps().size(), 20u); }

TEST(OpCoverage, EveryOpHasAnOpcodeACpuFunctionAndACudaEmitter) {
  for (const std::string &name : instructionOps()) {
    std::optional<fb::Opcode> opcode = opcodeNamed(name);
    ASSERT_TRUE(opcode.has_value()) << name << " has no opcode in runtime/schema/opcodes.cpp";
    EXPECT_NE(rt::cpu::compileFunction(*opcode), nullptr)
        << name << " has no CPU compile function in runtime/cpu/op_table.cpp";
    EXPECT_TRUE(codegen::hasCudaEmitter(name)) << name << " has no CUDA emitter";
  }
}

TEST(OpCoverage, EveryOpcodeNamesARegisteredOp) {
  std::vector<std::string> ops = instructionOps();
  std::set<std::string> registered(ops.begin(), ops.end());
  for (int i = 0; i < kNumOpcodes; ++i) {
    const OpcodeInfo &info = opcodeInfo((fb::Opcode)i);
    EXPECT_TRUE(registered.count(std::string(info.op_name)))
        << "opcode " << i << " names " << info.op_name << ", which the dialect does not register";
    EXPECT_EQ(opcodeNamed(info.op_name), info.opcode) << info.op_name;
  }
}

} // namespace
} // namespace cbc
