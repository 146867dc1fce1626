// The compiler driver, above the front end, the passes and codegen: config.json text -> the
// cbc dialect -> the registered pass pipeline -> CUDA kernels (NVRTC) -> artefact bytes.
#ifndef CBC_DRIVER_COMPILE_H
#define CBC_DRIVER_COMPILE_H

#include "runtime/build_config.h"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cbc::hf {
struct ModelSpec;
}

namespace cbc::driver {

// What the artefact says compiled it.
inline constexpr const char *kCompilerName = "cbc 0.1";

struct CompileOptions {
  std::string dtype = "bf16";            // program weight and cache dtype: bf16, f16, f32
  std::vector<std::string> targets = {"sm_80", "sm_90"};
  int64_t block_size = 16;
  // Generate and NVRTC-compile the CUDA kernels: by default wherever cbc is built with CUDA
  // (whether or not this machine has a GPU: the artefact is the same everywhere). A build
  // without CUDA refuses true.
  bool emit_cuda = kBuiltWithCuda;
  bool fuse = true;                      // run the fusion passes
  // Tensor parallelism: the step program of one rank of `tp` (the cbc-shard-* passes); `ep`
  // 1 divides MoE layers by features, `ep == tp` by experts. Collectives become gather launches
  // (run by the backend's communicator) and kernels that combine the gathered rows.
  int64_t tp = 1, ep = 1;
  std::string kernel_cache_dir;          // empty: no kernel cache
  std::function<void(const std::string &)> progress; // optional progress messages
};

struct CompileResult {
  std::vector<uint8_t> artefact;
  std::string ir;            // the final MLIR, as kept in the artefact
  std::vector<std::pair<std::string, double>> timings; // phase -> seconds
};

// A compile option that cannot work (a target NVRTC does not know, a block size beyond
// runtime/schema/limits.h): bad usage, found before any work.
class OptionError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

// Throws OptionError naming the first bad option (as its command-line flag).
void validateOptions(const CompileOptions &options);

// Throws OptionError for bad options, hf::ConfigError for a bad config and std::runtime_error
// for a compiler failure.
CompileResult compileConfig(const std::string &configJson, const CompileOptions &options);
// The same from an already parsed spec (`configJson` is only kept in the artefact): lets a test
// compile a spec that no family's config produces.
CompileResult compileSpec(const hf::ModelSpec &spec, const std::string &configJson, const CompileOptions &options);

} // namespace cbc::driver

#endif
