// cbc-translate: the layers of `cbc compile` one at a time, so that each lit suite tests one
// layer from its own input.
//   --import-hf-config  config.json -> cbc IR, as the front end lowers it, before any pass
//   --cbc-to-cuda       scheduled cbc IR -> the generated CUDA source
//   --cbc-to-artefact   scheduled cbc IR -> the artefact (kernels too with --targets)
#include "codegen/artefact_writer.h"
#include "codegen/cuda/emit.h"
#include "codegen/cuda/nvrtc.h"
#include "dialects/cbc/CbcOps.h"
#include "driver/compile.h"
#include "frontends/hf_config/lower_to_cbc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace {

llvm::cl::opt<std::string> weightDtype("weight-dtype", llvm::cl::desc("--import-hf-config: bf16, f16 or f32"),
                                       llvm::cl::init("bf16"));
llvm::cl::list<std::string> targets("targets", llvm::cl::desc("--cbc-to-artefact: CUDA targets to compile kernels for"),
                                    llvm::cl::CommaSeparated);

void registerDialects(DialectRegistry &registry) { registry.insert<cbc::CbcDialect, func::FuncDialect>(); }

OwningOpRef<Operation *> importHfConfig(llvm::SourceMgr &sources, MLIRContext *ctx) {
  const llvm::MemoryBuffer *buffer = sources.getMemoryBuffer(sources.getMainFileID());
  Location loc = FileLineColLoc::get(ctx, buffer->getBufferIdentifier(), 1, 1);
  if (weightDtype != "bf16" && weightDtype != "f16" && weightDtype != "f32") {
    emitError(loc) << "--weight-dtype must be bf16, f16 or f32";
    return nullptr;
  }
  try {
    cbc::hf::ModelSpec spec = cbc::hf::parseConfig(buffer->getBuffer().str());
    cbc::hf::LowerOptions options;
    options.weight_dtype = weightDtype;
    return OwningOpRef<Operation *>(cbc::hf::lowerToCbc(spec, *ctx, options).release());
  } catch (const cbc::hf::ConfigError &e) {
    emitError(loc) << e.what();
    return nullptr;
  }
}

LogicalResult exportCuda(Operation *op, llvm::raw_ostream &os) {
  auto module = llvm::dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("expected a module");
  FailureOr<cbc::codegen::KernelBundleOut> program = cbc::codegen::emitCuda(module);
  if (failed(program))
    return failure();
  os << program->source;
  return success();
}

LogicalResult exportArtefact(Operation *op, llvm::raw_ostream &os) {
  auto module = llvm::dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("expected a module");
  cbc::codegen::ArtefactInputs inputs;
  inputs.compiler = cbc::driver::kCompilerName;
  std::string ir;
  llvm::raw_string_ostream irStream(ir);
  module.print(irStream);
  inputs.ir = ir;
  cbc::codegen::KernelBundleOut kernels;
  if (!targets.empty()) {
    if constexpr (!cbc::kBuiltWithCuda) { // NVRTC is linked only with CUDA
      return module.emitError("--targets: this cbc was built without CUDA (CBC_CUDA=OFF) and compiles no kernels");
    } else {
      FailureOr<cbc::codegen::KernelBundleOut> program = cbc::codegen::emitCuda(module);
      if (failed(program))
        return failure();
      kernels = std::move(*program);
      cbc::codegen::NvrtcOptions nv;
      nv.targets.assign(targets.begin(), targets.end());
      try {
        cbc::codegen::compileKernels(kernels.source, kernels.names, nv, kernels);
      } catch (const std::exception &e) {
        return module.emitError(e.what());
      }
      inputs.kernels = &kernels;
    }
  }
  FailureOr<std::vector<uint8_t>> bytes = cbc::codegen::writeArtefact(module, inputs);
  if (failed(bytes))
    return failure();
  os.write(reinterpret_cast<const char *>(bytes->data()), bytes->size());
  return success();
}

} // namespace

int main(int argc, char **argv) {
  TranslateToMLIRRegistration importHf("import-hf-config",
                                       "Lowers a Hugging Face config.json to the cbc dialect (no passes)",
                                       importHfConfig, registerDialects);
  TranslateFromMLIRRegistration toCuda("cbc-to-cuda", "Emits the CUDA source of a scheduled cbc module",
                                       exportCuda, registerDialects);
  TranslateFromMLIRRegistration toArtefact("cbc-to-artefact", "Writes the artefact of a scheduled cbc module",
                                           exportArtefact, registerDialects);
  return failed(mlirTranslateMain(argc, argv, "cbc translation driver"));
}
