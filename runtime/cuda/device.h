// What the GPU backend needs from a device: memory, kernel launches, GEMMs. Two devices
// implement it: the CUDA driver with cuBLASLt (driver_device.cpp, loaded with dlopen), and the
// SIMT emulator of the tests, which runs the same generated kernels on the CPU.
#ifndef CBC_RUNTIME_CUDA_DEVICE_H
#define CBC_RUNTIME_CUDA_DEVICE_H

#include "runtime/artefact.h"
#include "runtime/comm/communicator.h"
#include "runtime/schema/kernel_abi.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cbc::rt {

// out[M, N] = x[M, K] . w[N, K]^T (+ bias[N]), bf16 inputs, fp32 accumulation.
struct GemmCall {
  const void *x = nullptr, *w = nullptr, *bias = nullptr;
  void *out = nullptr;
  int64_t M = 0, N = 0, K = 0;
  DType x_type = DType::BF16, w_type = DType::BF16, bias_type = DType::BF16, out_type = DType::BF16;
};

class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual void *alloc(size_t bytes) = 0; // zero-filled
  virtual void release(void *p) = 0;
  // Bytes the device can still allocate; -1 when it cannot say.
  virtual int64_t freeMemory() { return -1; }
  virtual void upload(void *dst, const void *src, size_t bytes) = 0;
  virtual void download(void *dst, const void *src, size_t bytes) = 0;
  // Device to device, ordered after the work issued so far (cache units copied before a step).
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  // Makes the artefact's kernels launchable (module load, or host compilation in the tests).
  virtual void loadKernels(const KernelBundle &kernels) = 0;
  virtual void launch(int kernel, const uint32_t grid[3], int block, int smem, const CbcArgs &args) = 0;
  virtual void gemm(const GemmCall &call) = 0;
  // Makes the device one of `comm`'s group, once, before any work (every rank calls it alike).
  // A device without collectives throws std::runtime_error for a group of more than one.
  virtual void joinGroup(std::shared_ptr<Communicator> comm);
  // Every rank's `bytes` bytes at `in`, concatenated in rank order at `out` ([ranks * bytes]),
  // ordered after the work issued so far: a collective of the group joined, which every rank
  // calls alike.
  virtual void allGather(const void *in, size_t bytes, void *out);
  virtual void synchronize() = 0;
  // Replays of the launches recorded between beginCapture and endCapture (CUDA Graphs); a
  // device without graphs returns false and the backend issues launches directly.
  virtual bool beginCapture() { return false; }
  virtual bool endCaptureAndReplay(uint64_t key) { (void)key; return false; }
  virtual bool replay(uint64_t key) { (void)key; return false; }
  // Profiling timestamps on the device's stream (CUDA events): recordTimestamp() marks the
  // point after the work issued so far and returns its id, or -1 on a device without timers;
  // elapsedMs(a, b) is the time between two marks, valid once synchronize() has returned;
  // resetTimestamps() forgets every mark.
  virtual int recordTimestamp() { return -1; }
  virtual double elapsedMs(int from, int to) { (void)from, (void)to; return 0; }
  virtual void resetTimestamps() {}
};

// The CUDA driver and cuBLASLt, loaded with dlopen, on GPU `rank` modulo the GPUs the process
// sees (a tensor-parallel rank's own, on a host with one GPU per rank). Throws std::runtime_error with a clear
// message when no driver or no GPU is usable.
std::unique_ptr<Device> openCudaDevice(int rank = 0);

} // namespace cbc::rt

#endif
