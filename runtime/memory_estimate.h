// What serving a model needs in memory, worked out from the artefact before anything is
// loaded, so that a model too large for the machine is refused in a second with the figures
// instead of dying a minute into loading with a bare std::bad_alloc.
#ifndef CBC_RUNTIME_MEMORY_ESTIMATE_H
#define CBC_RUNTIME_MEMORY_ESTIMATE_H

#include "runtime/artefact.h"
#include "runtime/backend.h"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cbc::rt {

// The model does not fit the memory the machine has (a bad input: cbc run exits 2).
class MemoryError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct MemoryEstimate {
  std::string where;        // "host" or "GPU"
  std::string weight_dtype; // as the backend keeps them: "f32", "bf16", "bf16 and f32"
  int64_t weights = 0;      // bytes
  int64_t cache = 0;        // the paged cache and state slots (the cache memory budget)
  int64_t workspaces = 0;   // activation arenas, logits, and the buffers loading uses
  int64_t total() const { return weights + cache + workspaces; }
};

// The CPU backend keeps the cache and its arenas as float32 in host memory, and every weight as
// float32 except those `bf16` marks (weights.h storedAsBf16), held as bf16. Assembling a weight
// passes through float32 buffers: two more copies of a concatenated or transposed weight, and
// the float32 form of one held as bf16.
MemoryEstimate estimateCpuMemory(const Artefact &a, int64_t cacheBytes, const BackendLimits &limits,
                                 const std::vector<bool> &bf16 = {});
// The GPU backend keeps each weight in the dtype of its program value and its cache and
// workspaces on the device.
MemoryEstimate estimateGpuMemory(const Artefact &a, int64_t cacheBytes, const BackendLimits &limits);

// One rank of a tensor-parallel artefact (cbc compile --tp N) on a device of `deviceBytes`, as
// the GPU backend would hold it: its weight slices, the step's buffers for `stepTokens` tokens,
// the cache tokens the rest holds, and the bytes its collectives move. A plan from the
// artefact's shapes: the CUDA backend does not run --tp artefacts yet.
struct RankPlan {
  int64_t ranks = 1;
  MemoryEstimate memory;          // weights and workspaces; cache: what the device has left
  int64_t cache_bytes_per_token = 0; // every paged group, at the cache dtype
  int64_t state_bytes_per_request = 0;
  int64_t cache_tokens = 0;       // tokens of cache the rest holds (0 when nothing is left)
  int64_t all_reduces = 0, all_gathers = 0; // per step
  int64_t reduce_bytes_per_token = 0;      // summed over the step's all-reduces (token rows)
  int64_t gather_bytes_per_row = 0;        // summed over its all-gathers (sampled rows: logits)
  int64_t device_bytes = 0;
  bool fits() const { return memory.weights + memory.workspaces < device_bytes; }
};
RankPlan planRank(const Artefact &a, int64_t deviceBytes, int64_t stepTokens);

// Bytes this process may still allocate: MemAvailable (/proc/meminfo), or what is left under
// the cgroup's memory.max when that is lower. -1 when neither can be read.
int64_t availableHostMemory();
// The same from given file contents (tests): meminfo text, memory.max and memory.current.
int64_t availableHostMemory(const std::string &meminfo, const std::string &cgroupMax, const std::string &cgroupCurrent);

// The most resident memory this process has held (VmHWM of /proc/self/status: this program's
// own, not a parent's it was forked from, as getrusage's ru_maxrss can be); -1 when unknown.
int64_t peakResidentMemory();
// The same from given /proc/<pid>/status text (tests).
int64_t peakResidentMemory(const std::string &status);

// Throws MemoryError when the estimate exceeds `available` bytes (available < 0: unknown, no
// check), e.g. "the model needs 32.1 GB of host memory (weights 30.0 GB as f32, cache 0.3 GB,
// workspaces 1.8 GB), 22.8 GB available".
void checkFits(const MemoryEstimate &e, int64_t available);

// 1.5e9 -> "1.5 GB".
std::string gigabytes(int64_t bytes);

// A progress callback that rewrites one line of stderr ("<prefix>loading weights 3.2/16.1 GB";
// MB below a gigabyte),
// and ends it when done; for a terminal only (the caller checks isatty).
std::function<void(int64_t done, int64_t total)> terminalLoadProgress(const std::string &prefix);

} // namespace cbc::rt

#endif
