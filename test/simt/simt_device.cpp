#include "test/simt/simt_device.h"

#include "codegen/cuda/nvrtc.h"
#include "runtime/safetensors.h"
#include "test/simt/simt_runtime.h"

#include <cblas.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace cbc::simt {

namespace fs = std::filesystem;

namespace {

float toFloat(const void *p, int64_t i, rt::DType t) {
  if (t == rt::DType::F32)
    return static_cast<const float *>(p)[i];
  return rt::bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
}

class SimtDevice : public rt::Device {
public:
  explicit SimtDevice(std::string cacheDir) : cacheDir_(std::move(cacheDir)) {}
  ~SimtDevice() override {
    if (lib_)
      dlclose(lib_);
  }
  std::string name() const override { return "SIMT emulation on the CPU"; }
  void *alloc(size_t bytes) override { return std::calloc(1, bytes); }
  void release(void *p) override { std::free(p); }
  void upload(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void *dst, const void *src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void synchronize() override {}
  // Device memory is host memory: the host group's collective is the device's (every rank a
  // process with its own emulated device).
  void joinGroup(std::shared_ptr<rt::Communicator> comm) override { comm_ = std::move(comm); }
  void allGather(const void *in, size_t bytes, void *out) override { comm_->allGatherBytes(in, bytes, out); }

  void loadKernels(const rt::KernelBundle &k) override {
    std::string so = buildKernelLibrary(k.source, cacheDir_);
    lib_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_)
      throw std::runtime_error(std::string("simt: cannot load kernels: ") + dlerror());
    for (const std::string &n : k.names) {
      void *sym = dlsym(lib_, n.c_str());
      if (!sym)
        throw std::runtime_error("simt: kernel " + n + " is missing from the library");
      kernels_.push_back(reinterpret_cast<KernelFn>(sym));
    }
  }

  void launch(int kernel, const uint32_t grid[3], int block, int, const CbcArgs &args) override {
    simt::launch(kernels_.at(kernel), grid, block, args);
  }

  // fp32 BLAS on the bf16 operands; the result is rounded to the output dtype like a bf16
  // GEMM with fp32 accumulation.
  void gemm(const rt::GemmCall &g) override {
    std::vector<float> x(g.M * g.K), w(g.N * g.K), out(g.M * g.N);
    for (int64_t i = 0; i < g.M * g.K; ++i)
      x[i] = toFloat(g.x, i, g.x_type);
    for (int64_t i = 0; i < g.N * g.K; ++i)
      w[i] = toFloat(g.w, i, g.w_type);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.M, (int)g.N, (int)g.K, 1.0f, x.data(),
                (int)g.K, w.data(), (int)g.K, 0.0f, out.data(), (int)g.N);
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t n = 0; n < g.N; ++n) {
        float v = out[m * g.N + n] + (g.bias ? toFloat(g.bias, n, g.bias_type) : 0.0f);
        if (g.out_type == rt::DType::F32)
          static_cast<float *>(g.out)[m * g.N + n] = v;
        else
          static_cast<uint16_t *>(g.out)[m * g.N + n] = rt::floatToBf16(v);
      }
  }

  // Launches run to completion before launch() returns, so host time stands in for events (the
  // figures mean nothing for a GPU; the profiling path is what the tests exercise).
  int recordTimestamp() override {
    stamps_.push_back(std::chrono::steady_clock::now());
    return (int)stamps_.size() - 1;
  }
  double elapsedMs(int from, int to) override {
    return std::chrono::duration<double, std::milli>(stamps_.at(to) - stamps_.at(from)).count();
  }
  void resetTimestamps() override { stamps_.clear(); }

private:
  std::vector<std::chrono::steady_clock::time_point> stamps_;
  std::string cacheDir_;
  void *lib_ = nullptr;
  std::vector<KernelFn> kernels_;
  std::shared_ptr<rt::Communicator> comm_ = rt::singleRank();
};

} // namespace

std::string buildKernelLibrary(const std::string &source, const std::string &cacheDir) {
  fs::create_directories(cacheDir);
  std::string hash = codegen::hashHex(source + CBC_SIMT_CXX + std::string(CBC_SIMT_FLAGS));
  fs::path so = fs::path(cacheDir) / ("kernels-" + hash + ".so");
  if (fs::exists(so))
    return so.string();
  // Tests run in parallel and programs share kernel sets: every file but the final library is
  // this process's own, so that two builds of one source never read each other's half-written
  // source or log; the library appears by an atomic rename.
  std::string own = "kernels-" + hash + "-" + std::to_string(::getpid());
  fs::path cu = fs::path(cacheDir) / (own + ".cu"), log = fs::path(cacheDir) / (own + ".log");
  fs::path tmp = fs::path(cacheDir) / (own + ".so.tmp");
  {
    std::ofstream out(cu);
    out << source;
  }
  std::string cmd = std::string(CBC_SIMT_CXX) + " " + CBC_SIMT_FLAGS + " -DCBC_SIMT -I" + CBC_SIMT_INCLUDE +
                    " -x c++ " + cu.string() + " -o " + tmp.string() + " 2> " + log.string();
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    throw std::runtime_error("simt: the host compiler rejected the generated kernels (" + cu.string() + "):\n" +
                             text.substr(0, 4000));
  }
  fs::rename(tmp, so);
  fs::remove(cu);
  fs::remove(log);
  return so.string();
}

std::unique_ptr<rt::Device> makeSimtDevice(const std::string &cacheDir) {
  return std::make_unique<SimtDevice>(cacheDir);
}

} // namespace cbc::simt
