// Serialises a planned and scheduled cbc module into the artefact (model.fb).
#ifndef CBC_CODEGEN_ARTEFACT_WRITER_H
#define CBC_CODEGEN_ARTEFACT_WRITER_H

#include "runtime/schema/step_abi.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cbc::codegen {

struct KernelImageOut {
  std::string arch;
  std::vector<uint8_t> image;
  std::vector<int> registers, spills, shared_bytes;
};
// ceil(var * mul / div) + add, where var is a per-step integer (none: 0).
struct GridDimOut {
  std::optional<RuntimeVar> var;
  int64_t mul = 1, div = 1, add = 0;
};
struct KernelArgOut {
  enum Kind { Value, Cache, Workspace, Runtime, Int, Float } kind = Value;
  int index = 0; // Value: -1 is a null pointer; Runtime: a RuntimeVar
  std::string name; // Cache: the state's name (empty: the paged cache)
  int64_t i = 0;
  float f = 0;
};
struct LaunchOut {
  int instr = -1;
  int kernel = -1;
  GridDimOut grid[3];
  int block = 1, smem = 0;
  std::vector<KernelArgOut> args;
  bool gemm = false;
  int gemm_x = -1, gemm_w = -1, gemm_bias = -1, gemm_out = -1;
  int gather_x = -1, gather_workspace = -1; // a gather of the ranks' rows when gather_x >= 0
};
struct WorkspaceOut {
  std::string name;
  int64_t bytes_per_token = 0, bytes_fixed = 0;
};
struct KernelBundleOut {
  std::string source, ptx, ptx_arch, source_hash;
  std::vector<std::string> names;
  std::vector<KernelImageOut> cubins;
  std::vector<LaunchOut> launches;
  std::vector<WorkspaceOut> workspaces;
  std::vector<int> value_dtypes; // fb::DType per program value
  int argmax_kernel = -1;        // device greedy sampling over the output logits
};

struct ArtefactInputs {
  std::string compiler;     // e.g. "cbc 0.1"
  std::string config_json;  // the config the model was compiled from
  std::vector<std::string> config_keys; // its top-level keys that decide the computation
  std::string ir;           // the MLIR text kept for inspection
  const KernelBundleOut *kernels = nullptr;
};

// Fails with a diagnostic on the module if it is not planned and scheduled.
mlir::FailureOr<std::vector<uint8_t>> writeArtefact(mlir::ModuleOp module,
                                                    const ArtefactInputs &inputs);

} // namespace cbc::codegen

#endif
