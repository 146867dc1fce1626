// cbc._compiler: the compiler driver (driver/compile.h) for Python: config.json text in, the
// artefact's bytes out. cbc.compile (python/cbc/__init__.py) reads and writes the files. Built
// only with the compiler (CBC_BUILD_COMPILER); the runtime module needs no MLIR.
#include "driver/compile.h"
#include "frontends/hf_config/model_spec.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// Compiles with the GIL released (a compile takes seconds). A bad option or config is a
// ValueError with the compiler's one-line message; a compiler failure is a RuntimeError.
nb::bytes compileConfig(const std::string &configJson, const std::string &dtype, std::vector<std::string> targets,
                        int64_t blockSize, bool emitCuda, bool fuse, const std::string &kernelCacheDir,
                        int64_t tp, int64_t ep) {
  cbc::driver::CompileOptions options;
  options.dtype = dtype;
  options.targets = std::move(targets);
  options.block_size = blockSize;
  options.emit_cuda = emitCuda;
  options.fuse = fuse;
  options.kernel_cache_dir = kernelCacheDir;
  options.tp = tp;
  options.ep = ep;
  cbc::driver::CompileResult result;
  {
    nb::gil_scoped_release release;
    try {
      cbc::driver::validateOptions(options);
      result = cbc::driver::compileConfig(configJson, options);
    } catch (const cbc::driver::OptionError &e) {
      throw nb::value_error(e.what());
    } catch (const cbc::hf::ConfigError &e) {
      throw nb::value_error(e.what());
    }
  }
  return nb::bytes(reinterpret_cast<const char *>(result.artefact.data()), result.artefact.size());
}

} // namespace

NB_MODULE(_compiler, m) {
  m.doc() = "The cbc compiler driver (driver/compile.h); use cbc.compile, which wraps it.";
  m.def("compile_config", &compileConfig, "config_json"_a, "dtype"_a, "targets"_a, "block_size"_a,
        "emit_cuda"_a, "fuse"_a, "kernel_cache_dir"_a, "tp"_a = 1, "ep"_a = 1);
  m.attr("default_targets") = nb::cast(cbc::driver::CompileOptions().targets);
  // Whether kernels are generated when cbc.compile is not told (cuda=None), as cbc compile.
  m.attr("default_emit_cuda") = cbc::driver::CompileOptions().emit_cuda;
}
