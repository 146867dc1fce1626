// Defaults sized from the machine: EngineOptions' cache_memory_bytes and max_batch_tokens of 0
// are chosen here, from the memory left where the cache lives once the weights and workspaces
// are counted, and from the backend (a CPU step's GEMMs run faster per token with more rows).
#ifndef CBC_RUNTIME_ENGINE_SIZING_H
#define CBC_RUNTIME_ENGINE_SIZING_H

#include "runtime/artefact.h"
#include "runtime/engine.h"

#include <cstdint>

namespace cbc::rt {

// What the cache is sized from (all bytes).
struct CacheSizing {
  int64_t available = -1;     // free where the cache lives (host or device); < 0: unknown
  int64_t fixed = 0;          // the weights and workspaces that must fit beside it
  double fraction = 0.5;      // share of what is left that the cache may take
  int64_t bytes_per_token = 0; // kv bytes of one token over every cache group
  int64_t state_bytes = 0;    // per-request states of one live request
  int64_t live_requests = 0;  // EngineOptions::max_live_requests
  int64_t max_model_len = 0;  // the longest request
  double max_state_fraction = 0.5;
};

// The share of what is left once the weights and workspaces are counted: the host has other
// processes and the page cache to keep (half); a GPU is the engine's own (vLLM's 0.9).
constexpr double kHostCacheFraction = 0.5, kGpuCacheFraction = 0.9;
// Never below the budget cbc used before sizing (enough for the small models' tests), so a
// machine with too little left is refused up front with the figures rather than a tiny cache.
constexpr int64_t kMinCacheBytes = 256ll << 20;
// Tokens a step: measured on a Llama-shaped model (hidden 1024, 16 layers) with 64 requests on
// 2 cores; the GPU takes vLLM's chunked-prefill default.
constexpr int64_t kCpuMaxBatchTokens = 1024, kGpuMaxBatchTokens = 2048;

// The cache budget: `fraction` of what is left, at least kMinCacheBytes, at most what
// live_requests requests of max_model_len tokens can use (a small model does not take the
// machine), rounded down to whole MiB. kMinCacheBytes (or the cap) when `available` is unknown.
int64_t chooseCacheBytes(const CacheSizing &s);

// The inputs for `a` on the CPU (kv as float32) or the GPU (kv in the plan's dtype).
CacheSizing cacheSizing(const Artefact &a, const EngineOptions &o, bool gpu, int64_t available, int64_t fixed);

// Returns `o` with max_batch_tokens and cache_memory_bytes of 0 chosen for the backend;
// `available` the free bytes where the cache lives, `fixedBytes(o)` the weights and workspaces
// for options whose max_batch_tokens is set. Explicit (non-zero) values are kept.
EngineOptions sizeFromMachine(const Artefact &a, EngineOptions o, bool gpu, int64_t available,
                              const std::function<int64_t(const EngineOptions &)> &fixedBytes);

class Communicator;

// Every rank sizes its arenas and cache as rank 0 chose (the others' free memory may differ):
// rank 0's budgets are sent to the rest.
void shareBudgets(Communicator &comm, EngineOptions &options);

} // namespace cbc::rt

#endif
