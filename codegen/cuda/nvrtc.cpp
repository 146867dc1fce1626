#include "codegen/cuda/nvrtc.h"

#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <unistd.h>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace cbc::codegen {

namespace fs = std::filesystem;

std::string hashHex(const std::string &data) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

namespace {

struct TargetResult {
  std::vector<uint8_t> cubin;
  std::string ptx, log;
};

void check(nvrtcResult r, const char *what) {
  if (r != NVRTC_SUCCESS)
    throw std::runtime_error(std::string("NVRTC ") + what + ": " + nvrtcGetErrorString(r));
}

std::string includeDir(const NvrtcOptions &o) {
  if (!o.cuda_include.empty())
    return o.cuda_include;
  if (const char *home = std::getenv("CUDA_HOME"))
    return std::string(home) + "/include";
  return "/usr/local/cuda/include";
}

TargetResult compileTarget(const std::string &source, const std::string &arch, const std::string &inc) {
  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, source.c_str(), "cbc_kernels.cu", 0, nullptr, nullptr), "create");
  std::string archOpt = "--gpu-architecture=" + arch, incOpt = "--include-path=" + inc;
  const char *opts[] = {archOpt.c_str(), "-std=c++17", incOpt.c_str(), "--ptxas-options=-v",
                        "-lineinfo"};
  nvrtcResult r = nvrtcCompileProgram(prog, 5, opts);
  TargetResult out;
  size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  out.log.resize(logSize);
  if (logSize)
    nvrtcGetProgramLog(prog, out.log.data());
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    throw std::runtime_error("NVRTC failed to compile the generated kernels for " + arch + " (" +
                             nvrtcGetErrorString(r) + "):\n" + out.log);
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(prog, &size), "cubin size");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(prog, reinterpret_cast<char *>(out.cubin.data())), "cubin");
  check(nvrtcGetPTXSize(prog, &size), "ptx size");
  out.ptx.resize(size);
  check(nvrtcGetPTX(prog, out.ptx.data()), "ptx");
  nvrtcDestroyProgram(&prog);
  return out;
}

// Per-kernel resources from ptxas' verbose log.
void parseLog(const std::string &log, const std::vector<std::string> &names, KernelImageOut &img) {
  img.registers.assign(names.size(), -1);
  img.spills.assign(names.size(), -1);
  img.shared_bytes.assign(names.size(), -1);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < names.size(); ++i)
    index[names[i]] = i;
  std::istringstream in(log);
  std::string line;
  long current = -1;
  std::regex fn("Compiling entry function '([A-Za-z0-9_]+)'|Function properties for ([A-Za-z0-9_]+)");
  std::regex spill("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads");
  std::regex used("Used ([0-9]+) registers");
  std::regex smem("([0-9]+) bytes smem");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, fn)) {
      std::string name = m[1].matched ? m[1].str() : m[2].str();
      auto it = index.find(name);
      current = it == index.end() ? -1 : (long)it->second;
      continue;
    }
    if (current < 0)
      continue;
    if (std::regex_search(line, m, spill))
      img.spills[current] = std::stoi(m[1]) + std::stoi(m[2]);
    if (std::regex_search(line, m, used))
      img.registers[current] = std::stoi(m[1]);
    if (std::regex_search(line, m, smem))
      img.shared_bytes[current] = std::stoi(m[1]);
    else if (std::regex_search(line, m, used) && img.shared_bytes[current] < 0)
      img.shared_bytes[current] = 0;
  }
}

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

bool readFile(const fs::path &p, std::string &out) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

void writeFile(const fs::path &p, const std::string &data) {
  fs::path tmp = p;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(data.data(), (std::streamsize)data.size());
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
}

} // namespace

std::vector<int> supportedArchs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
    return {};
  std::vector<int> archs(n);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return {};
  return archs;
}

bool compileKernels(const std::string &source, const std::vector<std::string> &names,
                    const NvrtcOptions &options, KernelBundleOut &bundle) {
  std::string inc = includeDir(options);
  bundle.source = source;
  bundle.names = names;
  bundle.source_hash = hashHex(source);
  std::vector<std::future<TargetResult>> jobs;
  std::vector<bool> cached(options.targets.size(), false);
  std::vector<TargetResult> results(options.targets.size());
  for (size_t t = 0; t < options.targets.size(); ++t) {
    const std::string &arch = options.targets[t];
    fs::path dir;
    if (!options.cache_dir.empty()) {
      dir = fs::path(options.cache_dir) / hashHex(source + "|" + arch + "|" + nvrtcVersionString());
      std::string cubin;
      if (readFile(dir / "kernels.cubin", cubin) && readFile(dir / "kernels.ptx", results[t].ptx) &&
          readFile(dir / "ptxas.log", results[t].log)) {
        results[t].cubin.assign(cubin.begin(), cubin.end());
        cached[t] = true;
        jobs.emplace_back();
        continue;
      }
    }
    jobs.push_back(std::async(std::launch::async, compileTarget, source, arch, inc));
  }
  bool allCached = true;
  for (size_t t = 0; t < options.targets.size(); ++t) {
    if (!cached[t]) {
      allCached = false;
      results[t] = jobs[t].get();
      if (!options.cache_dir.empty()) {
        std::error_code ec;
        fs::path dir = fs::path(options.cache_dir) /
                       hashHex(source + "|" + options.targets[t] + "|" + nvrtcVersionString());
        fs::create_directories(dir, ec);
        if (!ec) {
          writeFile(dir / "kernels.ptx", results[t].ptx);
          writeFile(dir / "ptxas.log", results[t].log);
          writeFile(dir / "kernels.cubin", std::string(results[t].cubin.begin(), results[t].cubin.end()));
        }
      }
    }
    KernelImageOut img;
    img.arch = options.targets[t];
    img.image = std::move(results[t].cubin);
    parseLog(results[t].log, names, img);
    bundle.cubins.push_back(std::move(img));
  }
  if (!results.empty()) {
    bundle.ptx = results[0].ptx;
    bundle.ptx_arch = options.targets[0];
  }
  return allCached;
}

} // namespace cbc::codegen
