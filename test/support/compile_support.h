// Helpers for the tests that need the compiler: in-process compiles, the fixture variants and
// what transformers produced for each fixture.
#ifndef CBC_TEST_SUPPORT_COMPILE_SUPPORT_H
#define CBC_TEST_SUPPORT_COMPILE_SUPPORT_H

#include "test/support/test_support.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <ostream>

namespace cbc::codegen {
struct KernelBundleOut;
}

namespace cbc::test {

// Compiles a config (text) to an artefact, CPU-only, in-process; `tp`, `ep` as cbc compile's.
rt::Artefact compileArtefact(const std::string &configJson, const std::string &dtype = "bf16",
                             bool fuse = true, int64_t tp = 1, int64_t ep = 1);

// Hand-written cbc IR (a module with one func @step) through the pass pipeline, as `cbc compile`
// runs it after lowering, in `ctx`; throws std::runtime_error naming the stage that rejects it.
mlir::OwningOpRef<mlir::ModuleOp> runPipeline(mlir::MLIRContext &ctx, const std::string &ir);
// The artefact of a module runPipeline returned, with `kernels` if given.
rt::Artefact writeTestArtefact(mlir::ModuleOp module, const codegen::KernelBundleOut *kernels = nullptr);
// A step without weights or cache whose logits (vocab_size = width) are the rows of %out at the
// sampled positions: `body` defines %out, a [tokens, width] f32 value, from the step's arguments
// (%arg0 the tokens, %arg1 the positions, ..., in runtime/schema/step_abi.h's order).
std::string stepReturning(int64_t width, const std::string &body);
// Hand-written IR as a CPU-only artefact: a test of an op that no family lowers to yet.
rt::Artefact compileIr(const std::string &ir);

// Test parameters: every fixture family, with and without the fusion passes.
struct FamilyVariant {
  std::string family;
  bool fuse;
};
std::vector<FamilyVariant> familyVariants();
inline void PrintTo(const FamilyVariant &v, std::ostream *os) {
  *os << v.family << (v.fuse ? " (fused)" : " (unfused)");
}
std::string variantName(const FamilyVariant &v);

// What transformers produced for a fixture: prompts, greedy tokens and every step's logits.
struct Expected {
  std::vector<std::vector<int32_t>> prompts, tokens;
  std::vector<std::vector<float>> logits; // [steps * vocab] per prompt
  double atol = 0;
};
Expected loadExpected(const std::string &family);

// The multimodal fixtures (test/parity/fixtures_mm/<family>, tools/oracle/make_mm_fixtures.py):
// each prompt with its placeholder ids, the rows transformers injected (by runs, with each
// image's grid where the fixture has grids), its greedy tokens and every step's logits.
std::string mmFixtureDir(const std::string &family);
std::vector<std::string> mmFamilies();
struct MultimodalPrompt {
  std::vector<int32_t> ids, tokens;
  std::vector<float> logits; // [steps * vocab]
  std::vector<rt::EmbeddingSegment> embeds;
};
// Throws std::runtime_error when the segments do not cover the fixture's rows.
std::vector<MultimodalPrompt> loadMultimodal(const std::string &dir);

} // namespace cbc::test

#endif
