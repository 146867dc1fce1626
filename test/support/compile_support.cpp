#include "test/support/compile_support.h"

#include "codegen/artefact_writer.h"
#include "dialects/cbc/CbcOps.h"
#include "driver/compile.h"
#include "frontends/hf_config/config_reader.h"
#include "runtime/safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "passes/Passes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace cbc::test {

std::vector<FamilyVariant> familyVariants() {
  std::vector<FamilyVariant> out;
  for (const std::string &f : fixtureFamilies())
    for (bool fuse : {true, false})
      out.push_back({f, fuse});
  return out;
}

std::string variantName(const FamilyVariant &v) { return v.family + (v.fuse ? "" : "_unfused"); }

rt::Artefact compileArtefact(const std::string &configJson, const std::string &dtype, bool fuse, int64_t tp,
                             int64_t ep) {
  driver::CompileOptions o;
  o.dtype = dtype;
  o.emit_cuda = false;
  o.fuse = fuse;
  o.tp = tp;
  o.ep = ep;
  auto result = driver::compileConfig(configJson, o);
  return rt::Artefact::fromBytes(result.artefact.data(), result.artefact.size());
}

mlir::OwningOpRef<mlir::ModuleOp> runPipeline(mlir::MLIRContext &ctx, const std::string &ir) {
  mlir::DialectRegistry registry;
  registry.insert<CbcDialect, mlir::func::FuncDialect>();
  ctx.appendDialectRegistry(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  if (!module)
    throw std::runtime_error("the test IR does not parse");
  mlir::PassManager pm(&ctx);
  buildCbcPipeline(pm, CbcPipelineOptions());
  if (mlir::failed(pm.run(*module)))
    throw std::runtime_error("the pipeline rejects the test IR");
  return module;
}

rt::Artefact writeTestArtefact(mlir::ModuleOp module, const codegen::KernelBundleOut *kernels) {
  codegen::ArtefactInputs inputs;
  inputs.compiler = driver::kCompilerName;
  inputs.kernels = kernels;
  auto bytes = codegen::writeArtefact(module, inputs);
  if (mlir::failed(bytes))
    throw std::runtime_error("the artefact writer rejects the test IR");
  return rt::Artefact::fromBytes(bytes->data(), bytes->size());
}

std::string stepReturning(int64_t width, const std::string &body) {
  std::string ir = R"mlir(module attributes {cbc.model = #cbc.model<model_type = "test", vocab_size = @W@, hidden_size = @W@, num_layers = 1, max_positions = 1024, eos_token_ids = [2], bos_token_id = 1, checkpoint_dtype = "float32">} {
  func.func @step(%arg0: tensor<?xi32> {cbc.name = "tokens"}, %arg1: tensor<?xi32> {cbc.name = "positions"}, %arg2: tensor<?xi32> {cbc.name = "seq_ids"}, %arg3: tensor<?xi32> {cbc.name = "cu_seqlens"}, %arg4: tensor<?xi32> {cbc.name = "kv_lens"}, %arg5: tensor<?x?x?xi32> {cbc.name = "block_tables"}, %arg6: tensor<?xi32> {cbc.name = "logit_rows"}, %arg7: tensor<?xi32> {cbc.name = "prompt_lens"}, %arg8: tensor<?xi32> {cbc.name = "slots"}, %arg9: tensor<?xi32> {cbc.name = "has_initial_state"}, %arg10: tensor<?xi32> {cbc.name = "state_in"}, %arg11: tensor<?xi32> {cbc.name = "state_out"}, %arg12: tensor<?xi32> {cbc.name = "inject_rows"}, %arg13: tensor<?x@W@xf32> {cbc.name = "inject_embeds"}, %arg14: tensor<?xi32> {cbc.name = "rope_positions"}) -> tensor<?x@W@xf32> {
@BODY@    %rows = cbc.rows.gather %out, %arg6 : tensor<?x@W@xf32>, tensor<?xi32> -> tensor<?x@W@xf32>
    return %rows : tensor<?x@W@xf32>
  }
}
)mlir";
  ir.replace(ir.find("@BODY@"), 6, body);
  for (size_t at; (at = ir.find("@W@")) != std::string::npos;)
    ir.replace(at, 3, std::to_string(width));
  return ir;
}

rt::Artefact compileIr(const std::string &ir) {
  mlir::MLIRContext ctx;
  return writeTestArtefact(*runPipeline(ctx, ir));
}

Expected loadExpected(const std::string &family) {
  Expected e;
  rt::Checkpoint ck(fixtureDir(family) + "/expected.safetensors");
  auto ints = [&](const std::string &name) {
    const rt::TensorView &t = ck.get(name);
    const int32_t *p = reinterpret_cast<const int32_t *>(t.data);
    return std::vector<int32_t>(p, p + t.numel());
  };
  for (int i = 0; ck.has("prompt_" + std::to_string(i)); ++i) {
    e.prompts.push_back(ints("prompt_" + std::to_string(i)));
    e.tokens.push_back(ints("tokens_" + std::to_string(i)));
    const rt::TensorView &l = ck.get("logits_" + std::to_string(i));
    const float *p = reinterpret_cast<const float *>(l.data);
    e.logits.emplace_back(p, p + l.numel());
  }
  // The oracle writes meta.json with Python's json module (bare Infinity in its range checks).
  auto meta = hf::parseConfigJson(readFile(fixtureDir(family) + "/meta.json"));
  e.atol = meta.at("atol").get<double>();
  return e;
}

std::string mmFixtureDir(const std::string &family) { return sourceDir() + "/test/parity/fixtures_mm/" + family; }

std::vector<std::string> mmFamilies() {
  std::vector<std::string> out;
  for (const auto &e : std::filesystem::directory_iterator(sourceDir() + "/test/parity/fixtures_mm"))
    if (e.is_directory())
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<MultimodalPrompt> loadMultimodal(const std::string &dir) {
  rt::Checkpoint ck(dir + "/expected.safetensors");
  auto ints = [&](const std::string &name) {
    const rt::TensorView &t = ck.get(name);
    const int32_t *p = reinterpret_cast<const int32_t *>(t.data);
    return std::vector<int32_t>(p, p + t.numel());
  };
  std::vector<MultimodalPrompt> out;
  for (int i = 0; ck.has("prompt_" + std::to_string(i)); ++i) {
    std::string n = std::to_string(i);
    MultimodalPrompt p;
    p.ids = ints("prompt_" + n);
    p.tokens = ints("tokens_" + n);
    const rt::TensorView &l = ck.get("logits_" + n);
    p.logits.assign((const float *)l.data, (const float *)l.data + l.numel());
    const rt::TensorView &e = ck.get("embeds_" + n);
    const float *rows = (const float *)e.data;
    int64_t width = e.shape.at(1);
    std::vector<int32_t> seg = ints("segments_" + n);
    // A model with multimodal RoPE places an image's rows by its (t, h, w) grid.
    std::vector<int32_t> grids = ck.has("grids_" + n) ? ints("grids_" + n) : std::vector<int32_t>();
    // Each segment's modality (0 image, 1 video, 2 audio); images where the fixture has none.
    std::vector<int32_t> modalities = ck.has("modalities_" + n) ? ints("modalities_" + n) : std::vector<int32_t>();
    for (size_t s = 0; s + 1 < seg.size(); s += 2) {
      auto data = std::make_shared<std::vector<float>>(rows, rows + seg[s + 1] * width);
      p.embeds.push_back({seg[s], seg[s + 1], data});
      if (!grids.empty())
        for (int c = 0; c < 3; ++c)
          p.embeds.back().grid[c] = grids.at(s / 2 * 3 + c);
      if (!modalities.empty()) {
        int32_t m = modalities.at(s / 2);
        if (m < (int32_t)rt::Modality::Image || m > (int32_t)rt::Modality::Audio)
          throw std::runtime_error(dir + ": modalities_" + n + " has " + std::to_string(m) + " (0 image, 1 video, 2 audio)");
        p.embeds.back().modality = (rt::Modality)m;
      }
      rows += seg[s + 1] * width;
    }
    if (rows != (const float *)e.data + e.numel())
      throw std::runtime_error(dir + ": segments_" + n + " do not cover embeds_" + n);
    out.push_back(std::move(p));
  }
  return out;
}

} // namespace cbc::test
