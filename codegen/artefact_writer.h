// Serialises a planned and scheduled cbc module into the artefact (model.fb).
#ifndef CBC_CODEGEN_ARTEFACT_WRITER_H
#define CBC_CODEGEN_ARTEFACT_WRITER_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cbc::codegen {

struct KernelImageOut {
  std::string arch;
  std::vector<uint8_t> image;
  std::vector<int> registers, spills, shared_bytes;
};
struct KernelBundleOut {
  std::string source, ptx, source_hash;
  std::vector<std::string> names;
  std::vector<KernelImageOut> cubins;
};

struct ArtefactInputs {
  std::string compiler;     // e.g. "cbc 0.1"
  std::string config_json;  // the config the model was compiled from
  std::string ir;           // the MLIR text kept for inspection
  const KernelBundleOut *kernels = nullptr;
};

// Fails with a diagnostic on the module if it is not planned and scheduled.
mlir::FailureOr<std::vector<uint8_t>> writeArtefact(mlir::ModuleOp module,
                                                    const ArtefactInputs &inputs);

} // namespace cbc::codegen

#endif
