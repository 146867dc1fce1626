#include "driver/compile.h"
#include "frontends/hf_config/model_spec.h"
#include "tools/cbc/cli.h"
#include "tools/cbc/commands.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace cbc::cli {

namespace {

std::vector<std::string> splitList(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty())
      out.push_back(item);
  return out;
}

// Writes to a temporary file beside `path` and renames it, so a failure leaves no artefact.
void writeAtomically(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out)
      throw std::runtime_error("cannot write '" + path + "'");
    out.write(reinterpret_cast<const char *>(bytes.data()), (std::streamsize)bytes.size());
    if (!out)
      throw std::runtime_error("cannot write '" + path + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw std::runtime_error("cannot write '" + path + "': " + ec.message());
  }
}

} // namespace

int compileMain(int argc, char **argv) {
  Args args("compile",
            "Compiles a Hugging Face config.json into a cbc artefact. A bad config exits with\n"
            "status 2 and one line naming the key; no output file is written then.",
            {{"-o", "OUT", "artefact to write (default: model.fb)"},
             {"--dtype", "bf16|f16|f32", "weight, activation and cache dtype on the GPU (default bf16)"},
             {"--target", "sm_80,sm_90", "CUDA targets to compile kernels for (default sm_80,sm_90)"},
             {"--block-size", "N", "tokens per cache block (default 16)"},
             {"--no-cuda", "", "skip CUDA code generation (CPU-only artefact)"},
             {"--no-fuse", "", "skip the fusion passes (for debugging)"},
             {"--kernel-cache", "DIR", "kernel cache directory (default $CBC_KERNEL_CACHE or ~/.cache/cbc)"},
             {"--emit-ir", "", "print the final IR to stdout as well"},
             {"--quiet", "", "no progress messages"}},
            "CONFIG");
  try {
    if (!args.parse(argc, argv))
      return 0;
    if (args.positionals().size() != 1)
      throw UsageError("expected exactly one CONFIG argument");
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc compile: error: %s\n", e.what());
    return 2;
  }
  const std::string configPath = args.positionals()[0];
  const std::string outPath = args.get("-o", "model.fb");
  bool quiet = args.has("--quiet");

  std::ifstream in(configPath);
  if (!in) {
    std::fprintf(stderr, "cbc compile: error: cannot read config '%s'\n", configPath.c_str());
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();

  driver::CompileOptions options;
  options.dtype = args.get("--dtype", "bf16");
  if (args.has("--target"))
    options.targets = splitList(args.get("--target"));
  options.emit_cuda = !args.has("--no-cuda");
  options.fuse = !args.has("--no-fuse");
  options.kernel_cache_dir = args.get("--kernel-cache", "");
  if (!quiet)
    options.progress = [](const std::string &m) { std::fprintf(stderr, "cbc compile: %s\n", m.c_str()); };
  try {
    options.block_size = args.getInt("--block-size", 16);
    if (options.block_size <= 0)
      throw UsageError("--block-size must be positive");
    if (options.dtype != "bf16" && options.dtype != "f16" && options.dtype != "f32")
      throw UsageError("--dtype must be bf16, f16 or f32, got '" + options.dtype + "'");
    if (options.dtype == "f16" && options.emit_cuda)
      throw UsageError("--dtype f16 has no CUDA code generation (the kernels take bf16 or f32); "
                       "use --dtype bf16 or f32, or add --no-cuda");
    driver::CompileResult result = driver::compileConfig(text.str(), options);
    writeAtomically(outPath, result.artefact);
    if (args.has("--emit-ir"))
      std::printf("%s\n", result.ir.c_str()); // as cbc-opt prints a module
    if (!quiet) {
      double total = 0;
      for (auto &[phase, s] : result.timings)
        total += s;
      std::fprintf(stderr, "cbc compile: wrote %s (%zu bytes) in %.3f s\n", outPath.c_str(),
                   result.artefact.size(), total);
    }
    return 0;
  } catch (const hf::ConfigError &e) {
    std::fprintf(stderr, "cbc compile: error: %s: %s\n", configPath.c_str(), e.what());
    return 2;
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc compile: error: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc compile: error: %s\n", e.what());
    return 1;
  }
}

} // namespace cbc::cli
