// The real device: the CUDA driver API and cuBLASLt (and NCCL for a tensor-parallel group), all
// loaded with dlopen so that the runtime has no link-time dependency on a driver. Unverified on hardware in CI (no GPU);
// tools/gpu_check.sh exercises it where one is lent.
#include "runtime/cuda/device.h"

#include <cublasLt.h>
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace cbc::rt {

namespace {

struct Driver {
  void *lib = nullptr;
#define CBC_CU(name) decltype(&::name) name = nullptr;
  CBC_CU(cuInit)
  CBC_CU(cuDeviceGetCount)
  CBC_CU(cuDeviceGet)
  CBC_CU(cuDeviceGetAttribute)
  CBC_CU(cuDeviceGetName)
  CBC_CU(cuDevicePrimaryCtxRetain)
  CBC_CU(cuCtxSetCurrent)
  CBC_CU(cuModuleLoadData)
  CBC_CU(cuModuleGetFunction)
  CBC_CU(cuFuncSetAttribute)
  CBC_CU(cuLaunchKernel)
  CBC_CU(cuMemAlloc)
  CBC_CU(cuMemFree)
  CBC_CU(cuMemGetInfo)
  CBC_CU(cuMemsetD8Async)
  CBC_CU(cuMemcpyHtoDAsync)
  CBC_CU(cuMemcpyDtoHAsync)
  CBC_CU(cuMemcpyDtoDAsync)
  CBC_CU(cuStreamCreate)
  CBC_CU(cuStreamSynchronize)
  CBC_CU(cuStreamBeginCapture)
  CBC_CU(cuStreamEndCapture)
  CBC_CU(cuGraphInstantiateWithFlags)
  CBC_CU(cuGraphLaunch)
  CBC_CU(cuGraphDestroy)
  CBC_CU(cuEventCreate)
  CBC_CU(cuEventRecord)
  CBC_CU(cuEventElapsedTime)
  CBC_CU(cuGetErrorString)
#undef CBC_CU
};

struct Blas {
  void *lib = nullptr;
#define CBC_LT(name) decltype(&::name) name = nullptr;
  CBC_LT(cublasLtCreate)
  CBC_LT(cublasLtMatmulDescCreate)
  CBC_LT(cublasLtMatmulDescSetAttribute)
  CBC_LT(cublasLtMatrixLayoutCreate)
  CBC_LT(cublasLtMatmulPreferenceCreate)
  CBC_LT(cublasLtMatmulPreferenceSetAttribute)
  CBC_LT(cublasLtMatmulAlgoGetHeuristic)
  CBC_LT(cublasLtMatmul)
#undef CBC_LT
};

struct Nccl {
  void *lib = nullptr;
#define CBC_NCCL(name) decltype(&::name) name = nullptr;
  CBC_NCCL(ncclGetUniqueId)
  CBC_NCCL(ncclCommInitRank)
  CBC_NCCL(ncclCommDestroy)
  CBC_NCCL(ncclAllGather)
  CBC_NCCL(ncclGetErrorString)
#undef CBC_NCCL
};

template <typename F> void bind(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn)
    throw std::runtime_error(std::string("the CUDA driver lacks ") + name);
}

Nccl loadNccl() {
  Nccl n;
  for (const char *name : {"libnccl.so.2", "libnccl.so"})
    if ((n.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!n.lib)
    throw std::runtime_error("NCCL cannot be opened (libnccl.so.2), and a --tp artefact needs it on GPUs: install "
                             "NCCL or put it on LD_LIBRARY_PATH");
  bind(n.lib, n.ncclGetUniqueId, "ncclGetUniqueId");
  bind(n.lib, n.ncclCommInitRank, "ncclCommInitRank");
  bind(n.lib, n.ncclCommDestroy, "ncclCommDestroy");
  bind(n.lib, n.ncclAllGather, "ncclAllGather");
  bind(n.lib, n.ncclGetErrorString, "ncclGetErrorString");
  return n;
}

Driver loadDriver() {
  Driver d;
  d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d.lib)
    throw std::runtime_error("no CUDA driver: libcuda.so.1 cannot be opened (" + std::string(dlerror()) + ")");
  bind(d.lib, d.cuInit, "cuInit");
  bind(d.lib, d.cuDeviceGetCount, "cuDeviceGetCount");
  bind(d.lib, d.cuDeviceGet, "cuDeviceGet");
  bind(d.lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  bind(d.lib, d.cuDeviceGetName, "cuDeviceGetName");
  bind(d.lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(d.lib, d.cuCtxSetCurrent, "cuCtxSetCurrent");
  bind(d.lib, d.cuModuleLoadData, "cuModuleLoadData");
  bind(d.lib, d.cuModuleGetFunction, "cuModuleGetFunction");
  bind(d.lib, d.cuFuncSetAttribute, "cuFuncSetAttribute");
  bind(d.lib, d.cuLaunchKernel, "cuLaunchKernel");
  bind(d.lib, d.cuMemAlloc, "cuMemAlloc_v2");
  bind(d.lib, d.cuMemFree, "cuMemFree_v2");
  bind(d.lib, d.cuMemGetInfo, "cuMemGetInfo_v2");
  bind(d.lib, d.cuMemsetD8Async, "cuMemsetD8Async");
  bind(d.lib, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  bind(d.lib, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  bind(d.lib, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  bind(d.lib, d.cuStreamCreate, "cuStreamCreate");
  bind(d.lib, d.cuStreamSynchronize, "cuStreamSynchronize");
  bind(d.lib, d.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  bind(d.lib, d.cuStreamEndCapture, "cuStreamEndCapture");
  bind(d.lib, d.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  bind(d.lib, d.cuGraphLaunch, "cuGraphLaunch");
  bind(d.lib, d.cuGraphDestroy, "cuGraphDestroy");
  bind(d.lib, d.cuGetErrorString, "cuGetErrorString");
  bind(d.lib, d.cuEventCreate, "cuEventCreate");
  bind(d.lib, d.cuEventRecord, "cuEventRecord");
  // CUDA 13's header names the _v2 entry point; older drivers export only the first one, with
  // the same signature.
  d.cuEventElapsedTime = reinterpret_cast<decltype(d.cuEventElapsedTime)>(dlsym(d.lib, "cuEventElapsedTime_v2"));
  if (!d.cuEventElapsedTime)
    bind(d.lib, d.cuEventElapsedTime, "cuEventElapsedTime");
  return d;
}

Blas loadBlas() {
  Blas b;
  for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
    if ((b.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!b.lib)
    throw std::runtime_error("cuBLASLt cannot be opened (libcublasLt.so.13)");
  bind(b.lib, b.cublasLtCreate, "cublasLtCreate");
  bind(b.lib, b.cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate");
  bind(b.lib, b.cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  bind(b.lib, b.cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  bind(b.lib, b.cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  bind(b.lib, b.cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  bind(b.lib, b.cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  bind(b.lib, b.cublasLtMatmul, "cublasLtMatmul");
  return b;
}

cudaDataType_t cudaType(DType d) {
  switch (d) {
  case DType::F32: return CUDA_R_32F;
  case DType::F16: return CUDA_R_16F;
  default: return CUDA_R_16BF;
  }
}

class DriverDevice : public Device {
public:
  explicit DriverDevice(int rank) : d_(loadDriver()) {
    check(d_.cuInit(0), "cuInit");
    int count = 0;
    check(d_.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count < 1)
      throw std::runtime_error("the CUDA driver reports no GPU");
    check(d_.cuDeviceGet(&dev_, rank % count), "cuDeviceGet");
    int major = 0, minor = 0;
    d_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_);
    d_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_);
    arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
    char name[256] = {0};
    d_.cuDeviceGetName(name, sizeof name, dev_);
    name_ = std::string(name) + " (" + arch_ + ")";
    check(d_.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    check(d_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    check(d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    b_ = loadBlas();
    if (b_.cublasLtCreate(&lt_) != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("cublasLtCreate failed");
    workspaceBytes_ = 64ull << 20;
    workspace_ = alloc(workspaceBytes_);
  }

  ~DriverDevice() override {
    if (group_)
      nccl_.ncclCommDestroy(group_);
  }

  std::string name() const override { return name_; }

  // NCCL's communicator, bootstrapped over the host group: rank 0's unique id to every rank.
  void joinGroup(std::shared_ptr<Communicator> comm) override {
    if (comm->size() == 1)
      return;
    nccl_ = loadNccl();
    ncclUniqueId id{};
    std::vector<uint8_t> bytes;
    if (comm->rank() == 0) {
      ncclCheck(nccl_.ncclGetUniqueId(&id), "ncclGetUniqueId");
      bytes.assign(id.internal, id.internal + sizeof id.internal);
    }
    comm->broadcast(bytes, false);
    if (bytes.size() != sizeof id.internal)
      throw std::runtime_error("a malformed NCCL id from rank 0");
    std::memcpy(id.internal, bytes.data(), bytes.size());
    ncclCheck(nccl_.ncclCommInitRank(&group_, comm->size(), id, comm->rank()), "ncclCommInitRank");
  }
  // On the device's stream, so that it is ordered with the launches and captured with them.
  void allGather(const void *in, size_t bytes, void *out) override {
    if (!group_)
      return Device::allGather(in, bytes, out);
    ncclCheck(nccl_.ncclAllGather(in, out, bytes, ncclUint8, group_, reinterpret_cast<cudaStream_t>(stream_)),
              "ncclAllGather");
  }

  void *alloc(size_t bytes) override {
    CUdeviceptr p = 0;
    check(d_.cuMemAlloc(&p, bytes), "cuMemAlloc");
    check(d_.cuMemsetD8Async(p, 0, bytes, stream_), "cuMemsetD8");
    return reinterpret_cast<void *>(p);
  }
  void release(void *p) override { d_.cuMemFree(reinterpret_cast<CUdeviceptr>(p)); }
  int64_t freeMemory() override {
    size_t free = 0, total = 0;
    return d_.cuMemGetInfo(&free, &total) == CUDA_SUCCESS ? (int64_t)free : -1;
  }
  void upload(void *dst, const void *src, size_t bytes) override {
    check(d_.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, stream_), "cuMemcpyHtoD");
  }
  void download(void *dst, const void *src, size_t bytes) override {
    check(d_.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, stream_), "cuMemcpyDtoH");
    synchronize();
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    check(d_.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes, stream_),
          "cuMemcpyDtoD");
  }
  void synchronize() override { check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

  void loadKernels(const KernelBundle &k) override {
    const void *image = nullptr;
    for (const KernelImage &c : k.cubins)
      if (c.arch == arch_)
        image = c.image.data();
    if (!image) {
      // PTX of an older target JIT-compiles for this one.
      if (k.ptx.empty() || k.ptx_arch.empty() || k.ptx_arch > arch_)
        throw std::runtime_error("the artefact has no kernels for " + arch_ +
                                 "; recompile with --target " + arch_);
      image = k.ptx.c_str();
    }
    check(d_.cuModuleLoadData(&module_, image), "cuModuleLoadData");
    for (const std::string &n : k.names) {
      CUfunction f;
      check(d_.cuModuleGetFunction(&f, module_, n.c_str()), ("cuModuleGetFunction " + n).c_str());
      functions_.push_back(f);
    }
  }

  void launch(int kernel, const uint32_t grid[3], int block, int smem, const CbcArgs &args) override {
    CbcArgs copy = args;
    void *params[] = {&copy};
    check(d_.cuLaunchKernel(functions_.at(kernel), grid[0], grid[1], grid[2], block, 1, 1, smem, stream_,
                            params, nullptr),
          "cuLaunchKernel");
  }

  void gemm(const GemmCall &g) override {
    // Row-major out[M,N] = x[M,K] w[N,K]^T is column-major out^T[N,M] = w^T' x^T: A = w
    // (K x N, transposed), B = x (K x M), D = out (N x M).
    auto key = std::make_tuple(g.M, g.N, g.K, (int)g.x_type, (int)g.w_type, (int)g.out_type,
                               g.bias != nullptr, (int)g.bias_type);
    Plan &plan = plans_[key];
    if (!plan.ready)
      makePlan(g, plan);
    if (g.bias)
      b_.cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias,
                                        sizeof(g.bias));
    float alpha = 1.0f, beta = 0.0f;
    if (b_.cublasLtMatmul(lt_, plan.desc, &alpha, g.w, plan.a, g.x, plan.b, &beta, g.out, plan.d, g.out,
                          plan.d, &plan.algo, workspace_, workspaceBytes_, stream_) != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("cublasLtMatmul failed (M " + std::to_string(g.M) + ", N " +
                               std::to_string(g.N) + ", K " + std::to_string(g.K) + ")");
  }

  bool beginCapture() override {
    return d_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS;
  }
  bool endCaptureAndReplay(uint64_t key) override {
    CUgraph graph = nullptr;
    if (d_.cuStreamEndCapture(stream_, &graph) != CUDA_SUCCESS || !graph)
      return false;
    CUgraphExec exec = nullptr;
    CUresult r = d_.cuGraphInstantiateWithFlags(&exec, graph, 0);
    d_.cuGraphDestroy(graph);
    if (r != CUDA_SUCCESS)
      return false;
    graphs_[key] = exec;
    return replay(key);
  }
  bool replay(uint64_t key) override {
    auto it = graphs_.find(key);
    if (it == graphs_.end())
      return false;
    check(d_.cuGraphLaunch(it->second, stream_), "cuGraphLaunch");
    return true;
  }

  // Events are created once and reused: a profiled step records one per launch.
  int recordTimestamp() override {
    if (eventsUsed_ == events_.size()) {
      CUevent e = nullptr;
      check(d_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
      events_.push_back(e);
    }
    check(d_.cuEventRecord(events_[eventsUsed_], stream_), "cuEventRecord");
    return (int)eventsUsed_++;
  }
  double elapsedMs(int from, int to) override {
    float ms = 0;
    check(d_.cuEventElapsedTime(&ms, events_.at(from), events_.at(to)), "cuEventElapsedTime");
    return ms;
  }
  void resetTimestamps() override { eventsUsed_ = 0; }

private:
  struct Plan {
    bool ready = false;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };

  void makePlan(const GemmCall &g, Plan &p) {
    auto ok = [](cublasStatus_t s, const char *what) {
      if (s != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuBLASLt ") + what + " failed");
    };
    ok(b_.cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    ok(b_.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "transa");
    ok(b_.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n), "transb");
    if (g.bias) {
      cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
      cudaDataType_t bt = cudaType(g.bias_type);
      ok(b_.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "epilogue");
      ok(b_.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt), "bias type");
    }
    ok(b_.cublasLtMatrixLayoutCreate(&p.a, cudaType(g.w_type), g.K, g.N, g.K), "layout a");
    ok(b_.cublasLtMatrixLayoutCreate(&p.b, cudaType(g.x_type), g.K, g.M, g.K), "layout b");
    ok(b_.cublasLtMatrixLayoutCreate(&p.d, cudaType(g.out_type), g.N, g.M, g.N), "layout d");
    cublasLtMatmulPreference_t pref;
    ok(b_.cublasLtMatmulPreferenceCreate(&pref), "preference");
    ok(b_.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspaceBytes_, sizeof workspaceBytes_), "workspace");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    ok(b_.cublasLtMatmulAlgoGetHeuristic(lt_, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found),
       "heuristic");
    if (found < 1)
      throw std::runtime_error("cuBLASLt has no algorithm for this GEMM");
    p.algo = result.algo;
    p.ready = true;
  }

  void check(CUresult r, const char *what) {
    if (r != CUDA_SUCCESS) {
      const char *msg = nullptr;
      if (d_.cuGetErrorString)
        d_.cuGetErrorString(r, &msg);
      throw std::runtime_error(std::string(what) + ": " + (msg ? msg : "CUDA error " + std::to_string((int)r)));
    }
  }

  void ncclCheck(ncclResult_t r, const char *what) {
    if (r != ncclSuccess)
      throw std::runtime_error(std::string(what) + ": " + nccl_.ncclGetErrorString(r));
  }

  Driver d_;
  Blas b_;
  Nccl nccl_;
  ncclComm_t group_ = nullptr;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_;
  std::string arch_, name_;
  cublasLtHandle_t lt_ = nullptr;
  void *workspace_ = nullptr;
  size_t workspaceBytes_ = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int, int, int, bool, int>, Plan> plans_;
  std::map<uint64_t, CUgraphExec> graphs_;
  std::vector<CUevent> events_;
  size_t eventsUsed_ = 0;
};

} // namespace

std::unique_ptr<Device> openCudaDevice(int rank) { return std::make_unique<DriverDevice>(rank); }

} // namespace cbc::rt
