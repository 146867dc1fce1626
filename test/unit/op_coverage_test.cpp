// The op table generated from the ODS (runtime/schema/ops.inc) against everything it must agree
// with: the ops the dialect registers, the artefact schema's parameter tables (read through its
// reflection data), the CPU dispatch and the CUDA emitters. The schema's opcode numbering and
// union members are checked at compile time (runtime/schema/opcodes.cpp); a stale committed copy
// of the table fails the ctest op-table-is-current.
#include "codegen/cuda/emit.h"
#include "dialects/cbc/CbcDialect.h"
#include "dialects/cbc/CbcOps.h"
#include "runtime/cpu/op_context.h"
#include "runtime/schema/model_bfbs_generated.h"
#include "runtime/schema/opcodes.h"

#include <mlir/IR/MLIRContext.h>
#include <mlir/IR/OperationSupport.h>

#include <flatbuffers/reflection.h>
#include <gtest/gtest.h>

#include <map>

namespace cbc {
namespace {

// cbc.weight.ref names a checkpoint tensor: the weight manifest carries it, not the program.
constexpr llvm::StringLiteral kNotAnInstruction = "cbc.weight.ref";

std::map<std::string, mlir::RegisteredOperationName> instructionOps() {
  static mlir::MLIRContext ctx;
  ctx.loadDialect<CbcDialect>();
  std::map<std::string, mlir::RegisteredOperationName> out;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    llvm::StringRef name = op.getStringRef();
    if (name.starts_with("cbc.") && name != kNotAnInstruction)
      out.emplace(name.str(), op);
  }
  return out;
}

TEST(OpCoverage, TheDialectHasInstructions) { EXPECT_GT(instructionOps().size(), 20u); }

TEST(OpCoverage, EveryOpHasARowACpuFunctionAndACudaEmitter) {
  for (const auto &[name, op] : instructionOps()) {
    std::optional<fb::Opcode> opcode = opcodeNamed(name);
    ASSERT_TRUE(opcode.has_value()) << name << " has no row in the op table: give it an opcode in its ODS entry";
    EXPECT_NE(rt::cpu::compileFunction(*opcode), nullptr) << name;
    EXPECT_TRUE(codegen::hasCudaEmitter(name)) << name << " has no CUDA emitter";
  }
}

TEST(OpCoverage, EveryRowNamesARegisteredOpWithItsSite) {
  std::map<std::string, mlir::RegisteredOperationName> ops = instructionOps();
  for (int i = 0; i < kNumOpcodes; ++i) {
    const OpcodeInfo &info = opcodeInfo((fb::Opcode)i);
    auto it = ops.find(std::string(info.op_name));
    ASSERT_NE(it, ops.end()) << "opcode " << i << " names " << info.op_name << ", which the dialect does not register";
    EXPECT_EQ(opcodeNamed(info.op_name), info.opcode) << info.op_name;
    // The planner learns states through the interface; the loader checks them through the site.
    EXPECT_EQ(it->second.hasInterface<StatefulOpInterface>(), info.site == OpSite::State) << info.op_name;
  }
}

// A cache op's table starts with `site: CacheSite`, a state op's with `state: StateSite`, and no
// other op's table has either: the loader's and `cbc dump`'s site accessors read them.
TEST(OpCoverage, ParameterTablesStartWithTheirSite) {
  const reflection::Schema *schema = reflection::GetSchema(fb::ModelBinarySchema::data());
  int sited = 0;
  for (int i = 0; i < kNumOpcodes; ++i) {
    const OpcodeInfo &info = opcodeInfo((fb::Opcode)i);
    if (info.params == fb::OpParams::NONE) {
      EXPECT_EQ(info.site, OpSite::None) << info.op_name;
      continue;
    }
    std::string table = "cbc.fb." + std::string(fb::EnumNameOpParams(info.params));
    const reflection::Object *obj = schema->objects()->LookupByKey(table.c_str());
    ASSERT_NE(obj, nullptr) << table;
    const reflection::Field *first = nullptr;
    for (const reflection::Field *f : *obj->fields())
      if (f->id() == 0)
        first = f;
    ASSERT_NE(first, nullptr) << table;
    std::string firstType = first->type()->index() >= 0 && first->type()->base_type() == reflection::Obj
                                ? schema->objects()->Get(first->type()->index())->name()->str()
                                : "";
    const char *expected = info.site == OpSite::Cache ? "cbc.fb.CacheSite"
                           : info.site == OpSite::State ? "cbc.fb.StateSite"
                                                        : nullptr;
    if (expected) {
      EXPECT_EQ(firstType, expected) << info.op_name << ": " << table << " starts with " << first->name()->str();
      EXPECT_TRUE(first->required()) << table;
      ++sited;
    } else {
      for (const reflection::Field *f : *obj->fields())
        if (f->type()->base_type() == reflection::Obj) {
          std::string type = schema->objects()->Get(f->type()->index())->name()->str();
          EXPECT_TRUE(type != "cbc.fb.CacheSite" && type != "cbc.fb.StateSite")
              << info.op_name << " has no site in the op table but its table has " << f->name()->str();
        }
    }
  }
  EXPECT_GT(sited, 10);
}

} // namespace
} // namespace cbc
