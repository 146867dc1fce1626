// What a backend receives each step, and the interface every backend implements.
#ifndef CBC_RUNTIME_BACKEND_H
#define CBC_RUNTIME_BACKEND_H

#include "runtime/artefact.h"
#include "runtime/cache/managers.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cbc::rt {

// The step's batch metadata, exactly the step function's arguments.
struct StepBatch {
  int64_t num_tokens = 0;     // T
  int64_t num_requests = 0;   // R: requests in the step
  int64_t num_logit_rows = 0; // requests that sample this step
  int64_t num_groups = 0;      // the cache groups with block tables (paged and static)
  // The cache coordinator's persistent block tables: [num_groups, table_slots, table_width].
  const int32_t *block_tables = nullptr;
  int64_t table_slots = 0, table_width = 0;
  std::vector<int32_t> tokens, positions, seq_ids;  // [T]
  std::vector<int32_t> cu_seqlens;                  // [R + 1]
  std::vector<int32_t> kv_lens;                     // [R]
  std::vector<int32_t> logit_rows;                  // [num_logit_rows]
  std::vector<int32_t> prompt_lens;                 // [R]: each request's original prompt length
  std::vector<int32_t> slots;                       // [R]: each request's slot (block-table row)
  std::vector<int32_t> has_initial_state;           // [R]
  std::vector<int32_t> state_in, state_out;         // [R]: the state units read and written
  // Rows whose embeddings requests give (multimodal prompts), and those embeddings [J, hidden].
  std::vector<int32_t> inject_rows;                 // [J]
  std::vector<float> inject_embeds;                 // [J * hidden]
  // Multimodal RoPE: each token's three position components, component-major [3 * T]. Filled
  // only where `rope_sections` (the engine sets it for a model that reads them).
  std::vector<int32_t> rope_positions;
  bool rope_sections = false;
  // Each token's key end (StepArg::KeyEnds): its position + 1, or for a row of an injected
  // segment the segment's end. Filled only where `key_ends_needed` (a model that reads them).
  std::vector<int32_t> key_ends;
  bool key_ends_needed = false;
  // The token id the step reads at injected rows (ModelMeta::injected_token); -1: the request's.
  int32_t injected_token = -1;

  void clear();
};

// Device time per launch of the artefact's launch table (KernelBundle::launches), summed over
// the steps run while attached to a backend (Backend::setLaunchTimes), for profiling.
struct LaunchTimes {
  std::vector<double> ms;      // per launch index: milliseconds, summed
  std::vector<int64_t> calls;  // per launch index: the steps that issued it (an empty grid is not issued)
  int64_t steps = 0;
};

struct BackendLimits {
  int64_t max_tokens = 512;   // token budget per step
  int64_t max_requests = 256; // rows per step
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Bytes the backend stores per cached token of a group with block tables, and per unit of the
  // state group (one snapshot of every state).
  virtual int64_t cacheBytesPerToken(int group) const = 0;
  virtual int64_t stateBytesPerUnit() const { return 0; }
  // Blocks per group with block tables, and units of the state group.
  virtual void allocateCache(int32_t blocksPerGroup, int32_t stateUnits) = 0;
  // Copies cache units before a step: blocks of a group with block tables in every layer of the
  // group, or state units in every state (CacheCoordinator::fork says which).
  virtual void copyUnits(const std::vector<UnitCopy> &copies) = 0;
  // Whether `c` copies a state unit rather than blocks; throws std::logic_error naming the
  // backend when it names no group of `plan` or no unit of its group (the units allocateCache made).
  static bool isStateCopy(const CachePlan &plan, const UnitCopy &c, int32_t blocksPerGroup, int32_t stateUnits,
                          const std::string &backend);
  // Swapping: copies units of a group (blocks of a group with block tables, over its layers in
  // the plan's order, or state units, over the plan's states) out to host memory, unit after
  // unit, or back in. A unit takes cacheBytesPerToken(group) * block_size bytes, or
  // stateBytesPerUnit(). False where the backend cannot (the engine then recomputes).
  virtual bool transferUnits(int group, const std::vector<int32_t> &units, uint8_t *host, bool toHost) {
    return false;
  }
  // Runs the step; writes [num_logit_rows, vocab] logits.
  virtual void run(const StepBatch &batch, std::vector<float> &logits) = 0;
  // Runs the step and returns each logit row's argmax (first index on ties), so that the
  // logits never leave the device. False when the backend cannot; the engine then calls run().
  virtual bool runGreedy(const StepBatch &batch, std::vector<int32_t> &tokens) { return false; }

  // Test hooks for checking one backend against another instruction by instruction. The
  // observer runs after each instruction of run(); inside it, activations of the current step
  // can be read and overwritten as fp32 rows (tokens or logit rows, by the value's arena).
  virtual void setObserver(std::function<void(int instr)> observer) { (void)observer; }
  virtual bool readValue(int value, std::vector<float> &out) { return false; }
  virtual bool writeValue(int value, const std::vector<float> &in) { return false; }
  // Profiling: while `times` is set (null detaches), every step issues its launches one by one
  // (no graph replay) with a device timestamp after each, and adds each launch's time to
  // `times`. False when the backend has no launch table or its device no timers.
  virtual bool setLaunchTimes(LaunchTimes *times) { return times == nullptr; }
};

// A backend that computes nothing (scheduler benchmarks): its logits favour one token.
std::unique_ptr<Backend> makeNullBackend(const Artefact &a);

} // namespace cbc::rt

#endif
