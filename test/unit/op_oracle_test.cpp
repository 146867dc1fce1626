// Ops that no family lowers to yet, against what transformers' own modules compute for them
// (tools/oracle/make_op_fixtures.py writes test/unit/oracle/<op>.json): each op in a hand-written
// step, through the pipeline, the artefact writer and the CPU backend inside the engine.
#include "codegen/artefact_writer.h"
#include "driver/compile.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/safetensors.h"
#include "runtime/schema/integrity.h"
#include "runtime/schema/model_generated.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <functional>
#include <unistd.h>

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

// The hyper-connection ops in fp32 against torch's fp32, absolute under 1 and relative above:
// measured at most 9.5e-7 (the layer's streams; pre 6e-8, comb 1.8e-7, the head 4.8e-7). The
// nearest wrong variants move an output by far more: Sinkhorn starting on the rows 3.7e-3 (comb),
// hc_eps left out of the softmax 7e-5 (comb) or out of pre 8.5e-2 (collapsed, the hc_eps 1e-2
// case), comb not transposed 4.5 (layer), one Sinkhorn round short 2.7e-4 (comb).
constexpr double kHcTol = 1e-5;

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

// A checkpoint directory of the test's own, removed after it.
class TempDir {
public:
  TempDir() {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("cbc-unit-" + std::string(info->test_suite_name()) + "-" +
                                                      info->name() + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string &name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

private:
  std::filesystem::path path_;
};

// A JSON array, nested or not, flattened row-major to float32 (each value read as a double and
// narrowed, as the oracle's torch.tensor(..., dtype=float32) narrows it).
std::vector<float> floats(const nlohmann::json &j) {
  std::vector<float> out;
  std::function<void(const nlohmann::json &)> walk = [&](const nlohmann::json &v) {
    if (v.is_array())
      for (const nlohmann::json &e : v)
        walk(e);
    else
      out.push_back((float)v.get<double>());
  };
  walk(j);
  return out;
}

// DeepSeek-V4's hyper-connections against transformers' own modules: an mHC
// (DeepseekV4HyperConnection: pre, post, the Sinkhorn-normalised comb and the collapsed block
// input), the decoder layer's post (x) block + comb^T . streams, and the final head
// (DeepseekV4HyperHead). The step reads the fixture's token rows by position from tables in a
// checkpoint the test writes: prompt of one token, five steps, positions 0..4.
TEST(OpOracle, HyperConnectionMatchesTransformers) {
  nlohmann::json table = oracleTable("hyper_connection");
  const int64_t N = table.at("streams"), H = table.at("hidden"), T = table.at("tokens");
  ASSERT_EQ(N, 4);
  ASSERT_EQ(H, 16);
  const int64_t NH = N * H, W = (2 + N) * N, kPositions = 1024; // stepReturning's max_positions
  std::vector<float> x = floats(table.at("x")), y = floats(table.at("y"));
  ASSERT_EQ((int64_t)x.size(), T * NH);
  ASSERT_EQ((int64_t)y.size(), T * H);
  // Position tables: the fixture's rows at positions 0..T-1, zeros after.
  x.resize(kPositions * NH, 0.0f);
  y.resize(kPositions * H, 0.0f);
  std::vector<std::vector<float>> storage = {x,
                                             y,
                                             floats(table.at("fn")),
                                             floats(table.at("base")),
                                             floats(table.at("scale")),
                                             floats(table.at("head_fn")),
                                             floats(table.at("head_base")),
                                             floats(table.at("head_scale"))};
  const std::vector<std::pair<std::string, std::vector<int64_t>>> names = {
      {"x.weight", {kPositions, NH}}, {"y.weight", {kPositions, H}}, {"fn.weight", {W, NH}},
      {"base.weight", {W}},           {"scale.weight", {3}},         {"hfn.weight", {N, NH}},
      {"hbase.weight", {N}},          {"hscale.weight", {1}}};
  std::vector<std::pair<std::string, rt::TensorView>> tensors;
  for (size_t i = 0; i < names.size(); ++i) {
    rt::TensorView t;
    t.dtype_name = "F32";
    t.shape = names[i].second;
    int64_t numel = 1;
    for (int64_t d : t.shape)
      numel *= d;
    ASSERT_EQ((int64_t)storage[i].size(), numel) << names[i].first;
    t.data = reinterpret_cast<const uint8_t *>(storage[i].data());
    t.bytes = storage[i].size() * sizeof(float);
    tensors.emplace_back(names[i].first, t);
  }
  TempDir dir;
  rt::writeSafetensors(dir / "model.safetensors", tensors);

  auto f64 = [](const nlohmann::json &v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17e", v.get<double>()); // MLIR wants a float literal
    return std::string(buf);
  };
  // The output row: the mHC's coefficients [pre N | post N | comb N x N], the collapsed block
  // input [H], the layer's streams [N * H], the head's pre [N] and its row [H].
  const int64_t width = W + H + NH + N + H;
  std::string ir = stepReturning(width, R"mlir(
    %xt = cbc.weight.ref "x" {sources = [["x.weight"]]} : tensor<1024x64xf32>
    %yt = cbc.weight.ref "y" {sources = [["y.weight"]]} : tensor<1024x16xf32>
    %x = cbc.math.embed %arg1, %xt : tensor<?xi32>, tensor<1024x64xf32> -> tensor<?x64xf32>
    %y = cbc.math.embed %arg1, %yt : tensor<?xi32>, tensor<1024x16xf32> -> tensor<?x16xf32>
    %n = cbc.math.rms_norm %x {eps = @RMS_EPS@ : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %fn = cbc.weight.ref "fn" {sources = [["fn.weight"]]} : tensor<24x64xf32>
    %base = cbc.weight.ref "base" {sources = [["base.weight"]]} : tensor<24xf32>
    %scale = cbc.weight.ref "scale" {sources = [["scale.weight"]]} : tensor<3xf32>
    %mixes = cbc.math.linear %n, %fn : tensor<?x64xf32>, tensor<24x64xf32> -> tensor<?x24xf32>
    %w = cbc.stream.hc_weights %mixes, %base, %scale {kind = #cbc.hc_kind<manifold>, streams = 4 : i64, magnitude = @MAGNITUDE@ : f64, eps = @HC_EPS@ : f64, post_eps = 0.0 : f64, sinkhorn_iters = @ITERS@ : i64} : tensor<?x24xf32>, tensor<24xf32>, tensor<3xf32> -> tensor<?x24xf32>
    %c = cbc.stream.collapse %x, %w {count = 4 : i64, offset = 0 : i64} : tensor<?x64xf32>, tensor<?x24xf32> -> tensor<?x16xf32>
    %l = cbc.stream.expand %y, %x, %w {count = 4 : i64, offset = 4 : i64, comb} : tensor<?x16xf32>, tensor<?x64xf32>, tensor<?x24xf32> -> tensor<?x64xf32>
    %hn = cbc.math.rms_norm %x {eps = @RMS_EPS@ : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %hfn = cbc.weight.ref "hfn" {sources = [["hfn.weight"]]} : tensor<4x64xf32>
    %hbase = cbc.weight.ref "hbase" {sources = [["hbase.weight"]]} : tensor<4xf32>
    %hscale = cbc.weight.ref "hscale" {sources = [["hscale.weight"]]} : tensor<1xf32>
    %hmixes = cbc.math.linear %hn, %hfn : tensor<?x64xf32>, tensor<4x64xf32> -> tensor<?x4xf32>
    %hw = cbc.stream.hc_weights %hmixes, %hbase, %hscale {kind = #cbc.hc_kind<collapse>, streams = 4 : i64, magnitude = 1.0 : f64, eps = @HC_EPS@ : f64, post_eps = 0.0 : f64} : tensor<?x4xf32>, tensor<4xf32>, tensor<1xf32> -> tensor<?x4xf32>
    %h = cbc.stream.collapse %x, %hw {count = 4 : i64} : tensor<?x64xf32>, tensor<?x4xf32> -> tensor<?x16xf32>
    %out = cbc.math.concat %w, %c, %l, %hw, %h : tensor<?x24xf32>, tensor<?x16xf32>, tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x16xf32> -> tensor<?x124xf32>
)mlir");
  ASSERT_EQ(width, 124);
  ASSERT_EQ(table.at("cases").size(), 2u);
  for (const nlohmann::json &c : table.at("cases")) {
    const double hcEps = c.at("hc_eps");
    std::string caseIr = ir;
    for (auto [key, value] : {std::pair<std::string, std::string>{"@RMS_EPS@", f64(table.at("rms_norm_eps"))},
                              {"@HC_EPS@", f64(c.at("hc_eps"))},
                              {"@MAGNITUDE@", f64(table.at("magnitude"))},
                              {"@ITERS@", std::to_string(table.at("hc_sinkhorn_iters").get<int64_t>())}})
      for (size_t at; (at = caseIr.find(key)) != std::string::npos;)
        caseIr.replace(at, key.size(), value);
    rt::Artefact a = compileIr(caseIr);

    test::Run run; // testing::Test::Run hides it here
    run.prompt = {3};
    run.params.max_new_tokens = T;
    run.params.ignore_eos = true;
    run.params.keep_logits = true;
    rt::EngineOptions o;
    o.threads = 1;
    std::vector<std::vector<float>> rows = serve(a, rt::WeightSource{dir.str(), 0}, o, {run}).outputs.at(0).logits;
    ASSERT_EQ((int64_t)rows.size(), T);

    // Each output of the fixture, [T, cols], and where its columns start in the row.
    struct Part {
      const char *name;
      int64_t at, cols;
    };
    const Part parts[] = {{"pre", 0, N},       {"post", N, N},       {"comb", 2 * N, N * N},
                          {"collapsed", W, H}, {"layer", W + H, NH}, {"head", W + H + NH + N, H}};
    for (const Part &p : parts) {
      std::vector<float> want = floats(c.at(p.name));
      ASSERT_EQ((int64_t)want.size(), T * p.cols) << p.name;
      double worst = 0, worstRel = 0;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < p.cols; ++i) {
          double w = want[t * p.cols + i], got = rows[t][p.at + i], err = std::abs(got - w);
          worst = std::max(worst, err);
          worstRel = std::max(worstRel, err / std::max(std::abs(w), 1e-3));
          // 1e-5 relative, or absolute for values under 1 in magnitude.
          ASSERT_LE(err, kHcTol * std::max(1.0, std::abs(w)))
              << "hc_eps " << hcEps << ", " << p.name << " token " << t << " column " << i << ": cbc " << got
              << ", transformers " << w;
        }
      std::printf("hyper_connection hc_eps %g %-9s max |cbc - transformers| = %.3g (relative %.3g)\n", hcEps,
                  p.name, worst, worstRel);
    }

    if (hcEps > 1e-6)
      continue; // columns sum to sum / (sum + hc_eps)
    // The CPU's comb is doubly stochastic: Sinkhorn ends on the columns, which sum to 1; the rows,
    // from coefficients this far from uniform, to within a few thousandths after 20 rounds
    // (transformers' own: 4.4e-3). A softmax alone would leave rows at 1 and columns far from it
    // (the oracle asserts more than 0.5 off), and a transposed comb the reverse.
    double rowsOff = 0, colsOff = 0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < N; ++j) {
        double row = 0, col = 0;
        for (int64_t k = 0; k < N; ++k) {
          row += rows[t][2 * N + j * N + k];
          col += rows[t][2 * N + k * N + j];
        }
        rowsOff = std::max(rowsOff, std::abs(row - 1));
        colsOff = std::max(colsOff, std::abs(col - 1));
      }
    std::printf("hyper_connection comb: max |row sum - 1| = %.3g, max |column sum - 1| = %.3g\n", rowsOff, colsOff);
    EXPECT_LT(colsOff, 1e-5);
    EXPECT_LT(rowsOff, 1e-2);
  }
}

} // namespace
} // namespace cbc::test
