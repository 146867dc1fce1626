#include "runtime/engine_sizing.h"

#include "runtime/comm/communicator.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace cbc::rt {

int64_t chooseCacheBytes(const CacheSizing &s) {
  // Enough for every live request at full length, its kv and its states (which may take only
  // max_state_fraction of the budget), saturating instead of overflowing.
  double perRequest = (double)s.max_model_len * (double)s.bytes_per_token + (double)s.state_bytes;
  double statesOnly = s.max_state_fraction > 0 ? (double)s.state_bytes / s.max_state_fraction : 0;
  double cap = (double)s.live_requests * std::max(perRequest, statesOnly);
  cap = std::min(cap, (double)(int64_t(1) << 44)); // 16 TiB, the --cache-memory limit
  double want = s.available < 0 ? (double)kMinCacheBytes
                                : s.fraction * (double)std::max<int64_t>(0, s.available - s.fixed);
  double chosen = std::max(std::min(want, cap), (double)std::min<int64_t>(kMinCacheBytes, (int64_t)cap));
  int64_t bytes = (int64_t)chosen & ~((int64_t(1) << 20) - 1);
  return std::max<int64_t>(bytes, int64_t(1) << 20);
}

CacheSizing cacheSizing(const Artefact &a, const EngineOptions &o, bool gpu, int64_t available, int64_t fixed) {
  CacheSizing s;
  s.available = available;
  s.fixed = fixed;
  s.fraction = gpu ? kGpuCacheFraction : kHostCacheFraction;
  int64_t kvBytes = gpu ? (int64_t)dtypeBytes(a.cache_plan.kv_dtype) : 4;
  for (const CacheLayer &l : a.cache_plan.layers)
    s.bytes_per_token += l.elemsPerToken() * kvBytes;
  for (const StateDecl &st : a.cache_plan.states)
    s.state_bytes += st.elems() * 4;
  s.live_requests = o.max_live_requests;
  s.max_model_len = o.max_model_len > 0 ? std::min(o.max_model_len, a.meta.max_positions) : a.meta.max_positions;
  s.max_state_fraction = o.max_state_fraction;
  return s;
}

EngineOptions sizeFromMachine(const Artefact &a, EngineOptions o, bool gpu, int64_t available,
                              const std::function<int64_t(const EngineOptions &)> &fixedBytes) {
  if (o.max_batch_tokens == 0)
    o.max_batch_tokens = gpu ? kGpuMaxBatchTokens : kCpuMaxBatchTokens;
  if (o.cache_memory_bytes == 0)
    o.cache_memory_bytes = chooseCacheBytes(cacheSizing(a, o, gpu, available, fixedBytes ? fixedBytes(o) : 0));
  return o;
}

void shareBudgets(Communicator &comm, EngineOptions &options) {
  if (comm.size() == 1)
    return;
  std::vector<uint8_t> bytes(3 * sizeof(int64_t));
  int64_t budgets[3] = {options.max_batch_tokens, options.max_requests, options.cache_memory_bytes};
  std::memcpy(bytes.data(), budgets, sizeof budgets);
  comm.broadcast(bytes, true);
  if (bytes.size() != sizeof budgets)
    comm.abort("rank " + std::to_string(comm.rank()) + ": a malformed budget message from rank 0");
  std::memcpy(budgets, bytes.data(), sizeof budgets);
  options.max_batch_tokens = budgets[0];
  options.max_requests = budgets[1];
  options.cache_memory_bytes = budgets[2];
}

} // namespace cbc::rt
