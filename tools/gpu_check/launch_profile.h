// Measured time per launch of the step, for bench/roofline.py to print beside its prediction:
// a workload (R decode requests with C tokens cached each, or one P-token prefill) runs on an
// engine, and its profiled steps issue every launch on its own with a device timestamp after
// each (CUDA events on a GPU; Backend::setLaunchTimes), outside CUDA Graphs. cbc-gpu-check runs
// it on the GPU; the SIMT test runs the same path on the emulated device.
#ifndef CBC_TOOLS_GPU_CHECK_LAUNCH_PROFILE_H
#define CBC_TOOLS_GPU_CHECK_LAUNCH_PROFILE_H

#include "runtime/artefact.h"
#include "runtime/backend.h"
#include "runtime/engine.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace cbc::gpu_check {

struct ProfileWorkload {
  bool decode = true;
  int requests = 1; // decode: requests in each profiled step
  int context = 0;  // decode: tokens cached per request before the first profiled step
  int tokens = 1;   // prefill: the prompt, prefilled in one step
  int steps = 1;    // profiled steps, averaged
  // bench/roofline.py's name for the same workload: decode-RxC, prefill-P.
  std::string name() const;
};

struct LaunchProfile {
  ProfileWorkload workload;
  rt::LaunchTimes times;
};

// Runs each workload in turn on one engine over `backend` with `options` (whose budgets must
// let a profiled step hold the largest workload) and returns the summed launch times of each
// one's profiled steps. Throws std::runtime_error when the backend cannot time launches or a
// profiled step is not its workload (fewer requests, a prompt split over steps).
std::vector<LaunchProfile> profileLaunches(const rt::Artefact &a, std::unique_ptr<rt::Backend> backend,
                                           const rt::EngineOptions &options,
                                           const std::vector<ProfileWorkload> &workloads);

// One CSV row per launch issued: workload,requests,tokens,context,launch,instr,kernel,calls,
// mean_us (kernel: the generated kernel's name, gemm for cuBLASLt, or gather for a
// collective).
void writeLaunchCsv(std::ostream &out, const rt::Artefact &a, const std::vector<LaunchProfile> &profiles);

} // namespace cbc::gpu_check

#endif
