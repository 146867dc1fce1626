#include "driver/compile.h"

#include "codegen/artefact_writer.h"
#include "codegen/cuda/emit.h"
#include "codegen/cuda/nvrtc.h"
#include "dialects/cbc/CbcOps.h"
#include "frontends/hf_config/lower_to_cbc.h"
#include "passes/Passes.h"
#include "passes/ShardSupport.h"
#include "runtime/schema/limits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>

namespace cbc::driver {

using namespace codegen;

using namespace mlir;

namespace {

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return os.str();
}

// Collects MLIR diagnostics so that a compiler failure becomes one exception message.
struct DiagnosticCollector {
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &d) {
          messages += d.str() + "\n";
          return success();
        }) {}
  std::string messages;
  ScopedDiagnosticHandler handler;
};

class Timer {
public:
  explicit Timer(CompileResult &r) : result_(r), start_(std::chrono::steady_clock::now()) {}
  void lap(const std::string &phase) {
    auto now = std::chrono::steady_clock::now();
    result_.timings.emplace_back(phase, std::chrono::duration<double>(now - start_).count());
    start_ = now;
  }

private:
  CompileResult &result_;
  std::chrono::steady_clock::time_point start_;
};

std::string archList(const std::vector<int> &archs) {
  std::string out;
  for (int a : archs)
    out += (out.empty() ? "sm_" : ", sm_") + std::to_string(a);
  return out;
}

// One --target entry: sm_NN for an architecture this NVRTC compiles for. A virtual
// architecture (compute_NN) yields no cubin, and suffixed ones (sm_90a) would never match the
// device name the runtime looks for, so both are refused rather than packed as kernels that
// no GPU loads; the first target's PTX already serves newer GPUs.
void validateTarget(const std::string &target, const std::vector<int> &archs) {
  std::string known = archs.empty() ? "" : " (this NVRTC supports " + archList(archs) + ")";
  if (target.rfind("compute_", 0) == 0)
    throw OptionError("--target '" + target + "': cbc compiles real architectures (sm_NN), not virtual ones; "
                      "the first target's PTX is kept for newer GPUs" + known);
  std::string digits = target.rfind("sm_", 0) == 0 ? target.substr(3) : "";
  bool numeric = !digits.empty() && digits.size() <= 4 &&
                 std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!numeric)
    throw OptionError("--target '" + target + "' is not a CUDA architecture of the form sm_NN" + known);
  if (!archs.empty() && std::find(archs.begin(), archs.end(), std::stoi(digits)) == archs.end())
    throw OptionError("--target '" + target + "' is not supported by this NVRTC" + known);
}

// Every size within runtime/schema/limits.h can still multiply into a weight or a per-request
// state beyond kMaxTensorElems, which the loader refuses: refused here instead, as a bad config
// (status 2), naming the tensor, so that nothing that compiles is rejected by `dump` or `run`.
bool tooManyElements(llvm::ArrayRef<int64_t> shape, int64_t &elems) {
  elems = 1;
  for (int64_t d : shape) {
    if (d > 0 && elems > limits::kMaxTensorElems / d)
      return true;
    elems *= std::max<int64_t>(d, 1);
  }
  return elems > limits::kMaxTensorElems;
}

std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string out;
  for (int64_t d : shape)
    out += (out.empty() ? "" : " x ") + std::to_string(d);
  return "[" + out + "]";
}

void checkWeightSizes(ModuleOp module) {
  module.walk([&](cbc::WeightRefOp op) {
    auto type = llvm::dyn_cast<RankedTensorType>(op.getType());
    int64_t elems;
    if (type && tooManyElements(type.getShape(), elems))
      throw hf::ConfigError("<sizes>", "the weight '" + op.getName().str() + "' would be " +
                                           shapeText(type.getShape()) + ", above the " +
                                           std::to_string(limits::kMaxTensorElems) + " elements cbc supports");
  });
}

void checkStateSizes(ModuleOp module) {
  auto plan = module->getAttrOfType<cbc::CachePlanAttr>("cbc.cache_plan");
  if (!plan)
    return;
  for (cbc::StateDeclAttr st : plan.getStates()) {
    int64_t elems;
    if (tooManyElements(st.getShape(), elems))
      throw hf::ConfigError("<sizes>", "layer " + std::to_string(st.getLayer()) + "'s '" + st.getName().str() +
                                           "' state would be " + shapeText(st.getShape()) + ", above the " +
                                           std::to_string(limits::kMaxTensorElems) + " elements cbc supports");
  }
}

} // namespace

void validateOptions(const CompileOptions &options) {
  if (options.dtype != "bf16" && options.dtype != "f16" && options.dtype != "f32")
    throw OptionError("--dtype must be bf16, f16 or f32, got '" + options.dtype + "'");
  if (options.block_size <= 0 || options.block_size > limits::kMaxBlockSize)
    throw OptionError("--block-size must be between 1 and " + std::to_string(limits::kMaxBlockSize) + ", got " +
                      std::to_string(options.block_size));
  if (options.tp < 1 || options.tp > limits::kMaxRanks)
    throw OptionError("--tp must be between 1 and " + std::to_string(limits::kMaxRanks) + ", got " +
                      std::to_string(options.tp));
  if (options.ep != 1 && options.ep != options.tp)
    throw OptionError("--ep must be 1 (experts divided by features) or equal to --tp (" + std::to_string(options.tp) +
                      ", experts divided among the ranks), got " + std::to_string(options.ep));
  if (!options.emit_cuda || options.tp > 1)
    return;
  if constexpr (!kBuiltWithCuda)
    throw OptionError("this cbc was built without CUDA (CBC_CUDA=OFF) and generates no kernels, so --target "
                      "is unavailable; its artefacts run on the CPU backend");
  if (options.dtype == "f16")
    throw OptionError("--dtype f16 has no CUDA code generation (the kernels take bf16 or f32); "
                      "use --dtype bf16 or f32, or add --no-cuda");
  if (options.targets.empty())
    throw OptionError("--target names no architecture; use --no-cuda for a CPU-only artefact");
  if constexpr (kBuiltWithCuda) { // NVRTC is linked only then
    std::vector<int> archs = codegen::supportedArchs();
    std::set<std::string> seen;
    for (const std::string &t : options.targets) {
      validateTarget(t, archs);
      if (!seen.insert(t).second)
        throw OptionError("--target names '" + t + "' twice");
    }
  }
}

CompileResult compileConfig(const std::string &configJson, const CompileOptions &options) {
  // The options are checked once, by compileSpec (which test callers reach directly too); cbc
  // compile checks them before it even reads the config.
  // No progress line before the config is parsed: a bad config must print only its one error.
  auto start = std::chrono::steady_clock::now();
  hf::ModelSpec spec = hf::parseConfig(configJson);
  double parse = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CompileResult result = compileSpec(spec, configJson, options);
  result.timings.insert(result.timings.begin(), {"parse", parse});
  return result;
}

CompileResult compileSpec(const hf::ModelSpec &spec, const std::string &configJson, const CompileOptions &options) {
  CompileResult result;
  Timer timer(result);
  auto progress = [&](const std::string &m) {
    if (options.progress)
      options.progress(m);
  };
  validateOptions(options);

  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  // Lowering and planning are quick; their progress lines wait until the sizes they produce
  // are known to be within limits.h, so that a config refused there prints only its error.
  std::vector<std::string> early = {"lowering " + spec.model_type + " to the cbc dialect",
                                    "planning the cache and scheduling"};
  hf::LowerOptions lo;
  lo.weight_dtype = options.dtype;
  OwningOpRef<ModuleOp> module = hf::lowerToCbc(spec, ctx, lo);
  if (failed(verify(*module)))
    throw std::runtime_error("internal error: the front end produced invalid IR:\n" + diags.messages);
  checkWeightSizes(*module);
  timer.lap("lower");
  if (options.tp > 1) {
    std::string why = shard::brokenRule(shard::allRules(*module, options.ep > 1), options.tp);
    if (!why.empty())
      throw OptionError(why);
  }

  PassManager pm(&ctx);
  CbcPipelineOptions pipeline;
  pipeline.dtype = *symbolizeStorageType(options.dtype);
  pipeline.blockSize = options.block_size;
  pipeline.fuse = options.fuse;
  pipeline.tp = options.tp;
  pipeline.expertParallel = options.ep > 1;
  buildCbcPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    throw std::runtime_error("compilation failed:\n" + diags.messages);
  checkStateSizes(*module);
  for (const std::string &m : early)
    progress(m);
  timer.lap("passes");

  result.ir = printModule(*module);
  KernelBundleOut kernels;
  bool withKernels = options.emit_cuda;
  // validateOptions refused emit_cuda in a build without CUDA, where NVRTC is not linked.
  if constexpr (kBuiltWithCuda) {
    if (withKernels) {
      progress("generating CUDA kernels");
      auto program = emitCuda(*module);
      if (failed(program))
        throw std::runtime_error("CUDA code generation failed:\n" + diags.messages);
      kernels = std::move(*program);
      timer.lap("codegen");
      std::string targets;
      for (const std::string &t : options.targets)
        targets += (targets.empty() ? "" : ", ") + t;
      progress("compiling " + std::to_string(kernels.names.size()) + " kernels with NVRTC for " + targets);
      NvrtcOptions nv;
      nv.targets = options.targets;
      nv.cache_dir = options.kernel_cache_dir;
      bool cached = compileKernels(kernels.source, kernels.names, nv, kernels);
      if (cached)
        progress("kernels found in the cache");
      timer.lap("nvrtc");
    }
  }
  ArtefactInputs inputs;
  if (withKernels)
    inputs.kernels = &kernels;
  inputs.compiler = kCompilerName;
  inputs.config_json = configJson;
  inputs.config_keys = spec.config_keys;
  inputs.ir = result.ir;
  auto bytes = writeArtefact(*module, inputs);
  if (failed(bytes))
    throw std::runtime_error("writing the artefact failed:\n" + diags.messages);
  result.artefact = std::move(*bytes);
  timer.lap("write");
  return result;
}

} // namespace cbc::driver
