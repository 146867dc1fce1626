// Ops that no family lowers to yet, against what transformers' own modules compute for them
// (tools/oracle/make_op_fixtures.py writes test/unit/oracle/<op>.json): each op in a hand-written
// step, through the pipeline, the artefact writer and the CPU backend inside the engine.
#include "codegen/artefact_writer.h"
#include "driver/compile.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/schema/integrity.h"
#include "runtime/schema/model_generated.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace cbc::test {
namespace {

// The rows a request with a prompt of `promptLen` tokens samples over `steps` steps (positions
// promptLen - 1, promptLen, ...).
std::vector<std::vector<float>> sampledRows(const rt::Artefact &a, int64_t promptLen, int64_t steps) {
  Run run;
  run.prompt.assign(promptLen, 3);
  run.params.max_new_tokens = steps;
  run.params.ignore_eos = true;
  run.params.keep_logits = true;
  rt::EngineOptions o;
  o.threads = 1;
  RunResult r = serve(a, rt::WeightSource{}, o, {run});
  return r.outputs.at(0).logits;
}

nlohmann::json oracleTable(const std::string &op) {
  return nlohmann::json::parse(readFile(sourceDir() + "/test/unit/oracle/" + op + ".json"));
}

// fp32 sin and cos of the same fp32 argument differ by an ulp or two between libm and torch's
// vectorised ones; the arguments reach ~700 rad, and a frequency an ulp apart moves such an
// argument by ~5e-5, so the bound is a few of those.
constexpr double kSinusoidalAtol = 2e-4;

TEST(OpOracle, SinusoidalPositionMatchesTransformers) {
  nlohmann::json table = oracleTable("sinusoidal_position");
  ASSERT_EQ(table.at("cases").size(), 3u);
  for (const nlohmann::json &c : table.at("cases")) {
    int64_t width = c.at("width"), promptLen = c.at("prompt_len");
    std::string attrs = "offset = " + std::to_string(c.at("offset").get<int64_t>()) + " : i64";
    if (!c.at("padding_row").is_null())
      attrs += ", padding_row = " + std::to_string(c.at("padding_row").get<int64_t>()) + " : i64";
    std::string w = std::to_string(width);
    rt::Artefact a = compileIr(stepReturning(width, "    %out = cbc.math.sinusoidal_position %arg1 {" + attrs +
                                                        "} : tensor<?xi32> -> tensor<?x" + w + "xf32>\n"));
    const nlohmann::json &expected = c.at("rows");
    std::vector<std::vector<float>> rows = sampledRows(a, promptLen, (int64_t)expected.size());
    ASSERT_EQ(rows.size(), expected.size()) << "width " << width;
    double worst = 0;
    for (size_t t = 0; t < rows.size(); ++t) {
      ASSERT_EQ(rows[t].size(), (size_t)width);
      for (int64_t i = 0; i < width; ++i) {
        double want = expected[t][i].get<double>(), got = rows[t][i];
        worst = std::max(worst, std::abs(got - want));
        ASSERT_NEAR(got, want, kSinusoidalAtol) << "width " << width << ", position " << c.at("positions")[t]
                                                << ", column " << i;
        if (want == 0.0) // the padding row and an odd width's last column are exactly zero
          EXPECT_EQ(got, 0.0f) << "width " << width << ", position " << c.at("positions")[t] << ", column " << i;
      }
    }
    std::printf("sinusoidal_position width %lld from position %lld: max |cbc - transformers| = %.3g\n",
                (long long)width, (long long)c.at("positions")[0].get<int64_t>(), worst);
  }
}

// A base the verifier refuses, put into an artefact by hand: the CPU backend names it rather than
// computing constant or NaN rows.
TEST(OpOracle, SinusoidalPositionRefusesABadBase) {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = runPipeline(
      ctx, stepReturning(8, "    %out = cbc.math.sinusoidal_position %arg1 : tensor<?xi32> -> tensor<?x8xf32>\n"));
  codegen::ArtefactInputs inputs;
  inputs.compiler = driver::kCompilerName;
  mlir::FailureOr<std::vector<uint8_t>> bytes = codegen::writeArtefact(*module, inputs);
  ASSERT_TRUE(mlir::succeeded(bytes));
  auto *instrs = fb::GetMutableModel(bytes->data())->mutable_program()->mutable_instrs();
  bool found = false;
  for (flatbuffers::uoffset_t i = 0; i < instrs->size(); ++i)
    if (fb::Instr *in = instrs->GetMutableObject(i); in->opcode() == fb::Opcode::SinusoidalPosition)
      found = static_cast<fb::SinusoidalPositionParams *>(in->mutable_params())->mutate_base(1.0);
  ASSERT_TRUE(found) << "the base field is not in the artefact";
  resealArtefact(*bytes);
  rt::Artefact a = rt::Artefact::fromBytes(bytes->data(), bytes->size());
  try {
    rt::makeCpuBackend(a, rt::WeightStore::load(a, rt::WeightSource{}), {16, 8}, 1);
    ADD_FAILURE() << "a base of 1 was accepted";
  } catch (const rt::ArtefactError &e) {
    EXPECT_NE(std::string(e.what()).find("cbc.math.sinusoidal_position has a base that is not finite and above 1"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace cbc::test
