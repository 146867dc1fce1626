// The compiler driver: config.json text -> planned, scheduled module -> artefact bytes.
#ifndef CBC_CODEGEN_PIPELINE_H
#define CBC_CODEGEN_PIPELINE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cbc::codegen {

struct CompileOptions {
  std::string dtype = "bf16";            // program weight and cache dtype: bf16, f16, f32
  std::vector<std::string> targets = {"sm_80", "sm_90"};
  int64_t block_size = 16;
  bool emit_cuda = true;                 // generate and NVRTC-compile the CUDA kernels
  bool fuse = true;                      // run the fusion passes
  std::string kernel_cache_dir;          // empty: no kernel cache
  std::function<void(const std::string &)> progress; // optional progress messages
};

struct CompileResult {
  std::vector<uint8_t> artefact;
  std::string ir;            // the final MLIR, as kept in the artefact
  std::vector<std::pair<std::string, double>> timings; // phase -> seconds
};

// Throws hf::ConfigError for a bad config and std::runtime_error for a compiler failure.
CompileResult compileConfig(const std::string &configJson, const CompileOptions &options);

// The IR the front end produces for a config, before any pass (for tests and `cbc dump`).
std::string lowerConfigToText(const std::string &configJson, const std::string &dtype = "bf16");

} // namespace cbc::codegen

#endif
