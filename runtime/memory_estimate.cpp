#include "runtime/memory_estimate.h"

#include "runtime/tensor.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace cbc::rt {

namespace {

int64_t elems(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d; // the loader bounds every dimension (limits.h): no overflow
  return n;
}

std::string readFileText(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The arenas both backends size by the step limits, and the engine's logits rows.
int64_t stepBuffers(const Artefact &a, const BackendLimits &limits) {
  return 4 * (a.program.token_row_elems * limits.max_tokens + a.program.request_row_elems * limits.max_requests) +
         4 * a.meta.vocab_size * limits.max_requests;
}

} // namespace

MemoryEstimate estimateCpuMemory(const Artefact &a, int64_t cacheBytes, const BackendLimits &limits,
                                 const std::vector<bool> &bf16) {
  MemoryEstimate e;
  e.where = "host";
  // A weight read as stored is moved into the store; one concatenated, stacked, transposed or
  // regrouped passes through up to two more float32 buffers of its size (the growing
  // concatenation, the transposed copy) while it is assembled, one weight at a time; one held
  // as bf16 is assembled as float32 first.
  int64_t transient = 0;
  bool anyF32 = false, anyBf16 = false;
  for (size_t wi = 0; wi < a.weights.size(); ++wi) {
    const WeightEntry &w = a.weights[wi];
    bool half = wi < bf16.size() && bf16[wi];
    int64_t f32Bytes = formatBytes(Storage::F32, elems(w.shape));
    e.weights += formatBytes(half ? Storage::BF16 : Storage::F32, elems(w.shape));
    (half ? anyBf16 : anyF32) = true;
    bool reshaped = w.parts.size() > 1 || (!w.parts.empty() && w.parts[0].size() > 1) || w.stack || w.transpose ||
                    !w.regroup.empty() || w.block_diag > 0 || w.flatten;
    int64_t copies = (reshaped ? 2 : 0) + (half ? 1 : 0);
    transient = std::max(transient, copies * f32Bytes);
  }
  e.weight_dtype = anyBf16 && anyF32 ? "bf16 and f32" : anyBf16 ? "bf16" : "f32";
  e.cache = cacheBytes;
  e.workspaces = stepBuffers(a, limits) + transient;
  return e;
}

MemoryEstimate estimateGpuMemory(const Artefact &a, int64_t cacheBytes, const BackendLimits &limits) {
  MemoryEstimate e;
  e.where = "GPU";
  std::vector<DType> type(a.weights.size(), DType::BF16);
  if (a.kernels && a.kernels->value_dtypes.size() == a.program.values.size())
    for (size_t v = 0; v < a.program.values.size(); ++v)
      if (a.program.values[v].kind == Value::Weight)
        type[a.program.values[v].weight] = a.kernels->value_dtypes[v];
  std::set<std::string> names;
  for (size_t w = 0; w < a.weights.size(); ++w) {
    e.weights += (int64_t)dtypeBytes(type[w]) * elems(a.weights[w].shape);
    names.insert(dtypeName(type[w]));
  }
  for (const std::string &n : names)
    e.weight_dtype += (e.weight_dtype.empty() ? "" : " and ") + n;
  e.cache = cacheBytes;
  e.workspaces = stepBuffers(a, limits);
  if (a.kernels)
    for (const WorkspaceDesc &w : a.kernels->workspaces)
      e.workspaces += w.bytes_per_token * limits.max_tokens + w.bytes_fixed;
  return e;
}

RankPlan planRank(const Artefact &a, int64_t deviceBytes, int64_t stepTokens) {
  RankPlan p;
  p.ranks = a.ranks;
  p.device_bytes = deviceBytes;
  p.memory = estimateGpuMemory(a, 0, {stepTokens, std::min<int64_t>(stepTokens, 1024)});
  for (const CacheGroup &g : a.cache_plan.groups)
    if (g.kind != CacheGroup::State)
      p.cache_bytes_per_token += g.bytes_per_token;
    else
      p.state_bytes_per_request += g.bytes_per_unit;
  int64_t left = deviceBytes - p.memory.weights - p.memory.workspaces;
  p.memory.cache = std::max<int64_t>(0, left);
  p.cache_tokens = p.cache_bytes_per_token > 0 ? p.memory.cache / p.cache_bytes_per_token : 0;
  // A collective's payload: its rows' width in the dtype the device holds them in (the
  // kernels' value dtypes; without kernels, bf16 activations and f32 logits), per token row or
  // per sampled row.
  for (const Instr &in : a.program.instrs) {
    bool reduce = in.opcode == fb::Opcode::AllReduce, gather = in.opcode == fb::Opcode::AllGather;
    if (!reduce && !gather)
      continue;
    int v = in.outputs.at(0);
    const Value &out = a.program.values[v];
    bool wide = a.kernels && (size_t)v < a.kernels->value_dtypes.size() ? a.kernels->value_dtypes[v] == DType::F32
                                                                        : v == a.program.output;
    int64_t bytes = out.cols() * (wide ? 4 : 2);
    (out.arena == 0 ? p.reduce_bytes_per_token : p.gather_bytes_per_row) += bytes;
    (reduce ? p.all_reduces : p.all_gathers) += 1;
  }
  return p;
}

int64_t availableHostMemory(const std::string &meminfo, const std::string &cgroupMax,
                            const std::string &cgroupCurrent) {
  int64_t available = -1;
  std::istringstream lines(meminfo);
  std::string line;
  while (std::getline(lines, line)) {
    long long kb;
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kb) == 1)
      available = (int64_t)kb * 1024;
  }
  long long limit, used = 0;
  // memory.max is "max" when the cgroup sets no limit.
  if (std::sscanf(cgroupMax.c_str(), "%lld", &limit) == 1) {
    std::sscanf(cgroupCurrent.c_str(), "%lld", &used);
    int64_t left = std::max<int64_t>(0, (int64_t)limit - (int64_t)used);
    available = available < 0 ? left : std::min(available, left);
  }
  return available;
}

int64_t availableHostMemory() {
  return availableHostMemory(readFileText("/proc/meminfo"), readFileText("/sys/fs/cgroup/memory.max"),
                             readFileText("/sys/fs/cgroup/memory.current"));
}

int64_t peakResidentMemory(const std::string &status) {
  std::istringstream lines(status);
  std::string line;
  while (std::getline(lines, line)) {
    long long kb;
    if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kb) == 1)
      return (int64_t)kb * 1024;
  }
  return -1;
}

int64_t peakResidentMemory() { return peakResidentMemory(readFileText("/proc/self/status")); }

std::string gigabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", (double)bytes / 1e9);
  return buf;
}

void checkFits(const MemoryEstimate &e, int64_t available) {
  if (available < 0 || e.total() <= available)
    return;
  throw MemoryError("the model needs " + gigabytes(e.total()) + " of " + e.where + " memory (weights " +
                    gigabytes(e.weights) + " as " + e.weight_dtype + ", cache " + gigabytes(e.cache) +
                    ", workspaces " + gigabytes(e.workspaces) + "), " + gigabytes(available) +
                    " available; lower --cache-memory, --max-batch-tokens or --max-requests, or use a machine with more memory");
}

std::function<void(int64_t, int64_t)> terminalLoadProgress(const std::string &prefix) {
  return [prefix, shown = std::string()](int64_t done, int64_t total) mutable {
    char buf[64];
    double unit = total >= 1'000'000'000 ? 1e9 : 1e6;
    std::snprintf(buf, sizeof buf, "%.1f/%.1f %s", (double)done / unit, (double)total / unit, unit > 1e6 ? "GB" : "MB");
    if (buf == shown && done < total)
      return; // redraw only when the figure changes
    shown = buf;
    std::fprintf(stderr, "\r%sloading weights %s%s", prefix.c_str(), buf, done >= total ? "\n" : "");
    std::fflush(stderr);
  };
}

} // namespace cbc::rt
