#include "driver/compile.h"
#include "frontends/hf_config/model_spec.h"
#include "runtime/build_config.h"
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

// The flags as compile options; a bad number is a UsageError.
driver::CompileOptions compileOptions(const Args &args) {
  driver::CompileOptions options;
  options.dtype = args.get("--dtype", "bf16");
  // An empty --target stays empty (and is refused), rather than meaning the default.
  if (args.has("--target"))
    options.targets = splitList(args.get("--target"));
  // Kernels by default where cbc is built with CUDA (see kKernelsAbout); a CPU-only cbc makes
  // none, and refuses --target (validateOptions) rather than ignore it.
  options.emit_cuda = !args.has("--no-cuda") && (kBuiltWithCuda || args.has("--target"));
  options.fuse = !args.has("--no-fuse");
  options.kernel_cache_dir = args.get("--kernel-cache", "");
  options.block_size = args.getInt("--block-size", 16);
  options.tp = args.getInt("--tp", 1);
  options.ep = args.getInt("--ep", 1);
  return options;
}

// -o must name a file in an existing directory: found before compiling, not after.
std::string checkedOutPath(const std::string &out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (out.empty())
    throw UsageError("-o names no file");
  if (fs::is_directory(out, ec))
    throw UsageError("-o '" + out + "' is a directory; name the artefact file to write");
  fs::path dir = fs::path(out).parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec))
    throw UsageError("-o '" + out + "': directory '" + dir.string() + "' does not exist");
  return out;
}

// CONFIG is config.json itself or a model folder holding one (as Hugging Face ships them).
std::string configFile(const std::string &config) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(config, ec))
    return config;
  fs::path inside = fs::path(config) / "config.json";
  if (!fs::exists(inside, ec))
    throw UsageError("'" + config + "' is a directory without a config.json; pass the model's config.json "
                     "or the folder that holds it");
  return inside.string();
}

bool readText(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return false;
  text = ss.str();
  return true;
}

} // namespace

// What --help says about kernels: the default is fixed by how cbc was built, never by whether
// this machine has a GPU, so that an artefact is the same wherever it is compiled.
constexpr const char *kKernelsAbout =
    kBuiltWithCuda
        ? "CUDA kernels are generated for sm_80,sm_90 by default, on any machine: NVRTC needs\n"
          "no GPU. The first compile of a model takes a few seconds; the kernel cache makes the\n"
          "next ones about as quick as --no-cuda, which skips the kernels (CPU-only artefact)."
        : "This cbc was built without CUDA (CBC_CUDA=OFF): it generates no kernels, its artefacts\n"
          "run on the CPU backend, and --target is an error. A cbc built with CUDA generates\n"
          "kernels for sm_80,sm_90 by default.";

int compileMain(int argc, char **argv) {
  Args args("compile",
            "Compiles a Hugging Face config.json (or a model folder holding one) into a cbc\n"
            "artefact. A bad config exits with status 2 and one line naming the key; no output\n"
            "file is written then.\n\n" + std::string(kKernelsAbout),
            {{"-o", "OUT", "artefact to write (default: model.fb)"},
             {"--dtype", "bf16|f16|f32", "weight, activation and cache dtype on the GPU (default bf16)"},
             {"--target", "sm_80,sm_90",
              kBuiltWithCuda ? "CUDA architectures (sm_NN) to compile kernels for (default sm_80,sm_90)"
                             : "unavailable: this cbc was built without CUDA"},
             {"--block-size", "N", "tokens per cache block, 1 to 1024 (default 16)"},
             {"--no-cuda", "", kBuiltWithCuda ? "skip CUDA code generation (CPU-only artefact)"
                                              : "no CUDA code generation (always so in this cbc)"},
             {"--no-fuse", "", "skip the fusion passes (for debugging)"},
             {"--tp", "N", "tensor parallelism: one rank's program of N (run with mpiexec -n N)"},
             {"--ep", "M", "expert parallelism: M = N divides MoE experts among the ranks (default 1: their features)"},
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
  driver::CompileOptions options;
  std::string configPath, outPath, text;
  bool quiet = args.has("--quiet");
  try {
    options = compileOptions(args);
    driver::validateOptions(options);
    outPath = checkedOutPath(args.get("-o", "model.fb"));
    configPath = configFile(args.positionals()[0]);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc compile: error: %s\n", e.what());
    return 2;
  } catch (const driver::OptionError &e) {
    std::fprintf(stderr, "cbc compile: error: %s\n", e.what());
    return 2;
  }
  if (!readText(configPath, text)) {
    std::fprintf(stderr, "cbc compile: error: cannot read config '%s'\n", configPath.c_str());
    return 2;
  }
  if (!quiet)
    options.progress = [](const std::string &m) { std::fprintf(stderr, "cbc compile: %s\n", m.c_str()); };
  try {
    driver::CompileResult result = driver::compileConfig(text, options);
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
  } catch (const driver::OptionError &e) {
    std::fprintf(stderr, "cbc compile: error: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc compile: error: %s\n", e.what());
    return 1;
  }
}

} // namespace cbc::cli
