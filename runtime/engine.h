// The embedding API: load an artefact and weights, add requests, step, stream tokens, cancel,
// and collect finished outputs. Single-threaded: call it from one thread.
//
//   auto engine = cbc::rt::Engine::load("model.fb", {.checkpoint_dir = "ckpt/"}, {});
//   auto added = engine->add_request({1, 2, 3}, {.max_new_tokens = 32});
//   while (!engine->idle())
//     for (auto &ev : engine->step()) ...;
//   for (auto &out : engine->take_finished()) ...;
#ifndef CBC_RUNTIME_ENGINE_H
#define CBC_RUNTIME_ENGINE_H

#include "runtime/request.h"
#include "runtime/weight_source.h"

#include <functional>
#include <map>
#include <memory>

namespace cbc::rt {

// Declared only: the embedding API does not bring in the loader, the backends, the cache
// coordinator or the scheduler. Include their headers (runtime/artefact.h, backend.h,
// cache/coordinator.h, scheduler.h) to use what artefact(), backend(), cache() and buildBatch()
// expose.
struct Artefact;
class Backend;
class CacheCoordinator;
class Communicator; // runtime/comm/communicator.h
class Proposer;     // runtime/speculative.h
class Scheduler;
struct StepPlan;
struct SchedulerOptions;
struct StepBatch;
struct ScheduledChunk;
struct Sample;

struct EngineOptions {
  std::string backend = "auto";        // auto (CUDA when a GPU is usable), cpu, cuda, null
  // 0 (the default) for either budget: chosen from the machine and the backend when the engine
  // is made (runtime/engine_sizing.h); Engine::options() says what was chosen.
  int64_t max_batch_tokens = 0;        // token budget per step
  int64_t max_requests = 64;           // requests per step
  int64_t max_live_requests = 256;     // requests holding cache at once (cache slots)
  int64_t max_model_len = 0;           // longest request (prompt + new tokens); 0: the model's
  int64_t cache_memory_bytes = 0;      // memory for the paged cache and state slots
  // Per-request states (one slot per live request) take at most this share of the memory; the
  // rest holds kv blocks. Fewer slots than max_live_requests means fewer requests at once.
  double max_state_fraction = 0.5;
  int threads = 0;                     // CPU threads; 0: all cores (shared among the ranks on one host)
  // This process's rank of the tensor-parallel group (runtime/comm/ranks.h); null: a group of one.
  // The backend keeps its rank's slices of the weights and joins the program's collectives.
  std::shared_ptr<Communicator> communicator;
  std::function<void(const std::string &)> log; // backend choice and warnings
  // Called as the CPU backend reads the weights: bytes (as float32) assembled so far, of all.
  std::function<void(int64_t done, int64_t total)> load_progress;
  // Bytes of host memory to plan with; 0: what the machine has (MemAvailable, the cgroup's limit).
  int64_t host_memory_available = 0;
  // Prefix caching (runtime/cache/coordinator.h): a request starts past the longest prefix of its
  // prompt whose rows are cached, freed blocks stay findable until reused.
  bool prefix_caching = true;
  // State models: the bytes of the cache memory that keep state snapshots (prefix caching's hits
  // for recurrent layers; -1: a fifth of it), and a snapshot every this many prompt tokens
  // besides the prompt's end, marks and junctions (0: none).
  int64_t snapshot_memory_bytes = -1;
  int64_t snapshot_interval = 0;
  // Host memory for the cache of preempted requests, copied back when they resume instead of
  // recomputed (0: always recompute; recompute also when it is full or the backend cannot).
  int64_t swap_space_bytes = 0;
  // Speculative decoding (runtime/speculative.h): "" off, or the method that proposes drafts
  // ("ngram": prompt lookup); each decoding request verifies up to num_speculative_tokens of them
  // in a step. Drafts stop where the step would pass speculative_max_tokens tokens (the batch is
  // large enough that verifying costs compute), shrinking evenly over the requests; 0: 16.
  std::string speculative;
  int64_t num_speculative_tokens = 3;
  int64_t speculative_max_tokens = 0;
  int64_t ngram_min = 2, ngram_max = 4; // the n-gram proposer's match lengths
  // A proposer of one's own (tests, embedders), used instead of `speculative`'s.
  std::shared_ptr<Proposer> proposer;
};

struct AddResult {
  RequestId id = -1;
  bool accepted = false;
  std::string error; // why the request was rejected
  std::vector<RequestId> forks; // with SamplingParams::n > 1: the ids of the n - 1 forks
};

struct TokenEvent {
  RequestId id;
  int32_t token;
  float logprob;
  bool finished;
  FinishReason reason;
  std::vector<std::pair<int32_t, float>> top; // the row's most likely ids, with top_logprobs
};

struct RequestOutput {
  RequestId id = 0;
  std::vector<int32_t> prompt, tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs; // per token, with top_logprobs
  std::vector<std::vector<float>> logits;
  // With prompt_logprobs: prompt tokens 1.. (the first has none); a fork's are its parent's.
  std::vector<float> prompt_logprobs;
  std::vector<std::vector<std::pair<int32_t, float>>> prompt_top_logprobs;
  FinishReason finish = FinishReason::None;
  std::string error;
  double ttft_s = 0, latency_s = 0;
  int64_t preemptions = 0;
  int64_t cached_tokens = 0; // prompt tokens its (last) admission took from the prefix cache
  RequestId parent = -1;     // a fork: the request it forked from (-1 otherwise)
  int64_t fork_index = 0;    // 0 for the parent, 1..n-1 for its forks
};

struct EngineStats {
  int64_t steps = 0, prompt_tokens = 0, generated_tokens = 0, computed_tokens = 0;
  int64_t preemptions = 0, finished = 0, rejected = 0, cancelled = 0;
  double step_seconds = 0;      // time inside the backend
  double schedule_seconds = 0;  // scheduling and step metadata
  // Prefix caching, in tokens: looked up over admissions, found cached, and lost for want of a
  // state snapshot where the attention rows were cached.
  int64_t prefix_queries = 0, prefix_hits = 0, prefix_limited_by_state = 0;
  int64_t cached_blocks = 0;      // blocks findable now (held or free), over the paged groups
  int64_t block_evictions = 0;    // cached blocks reused for other content
  int64_t snapshots = 0, snapshot_drops = 0, snapshot_evictions = 0;
  int64_t cached_snapshots = 0, snapshot_bytes = 0; // kept now
  int64_t snapshot_capacity = 0;  // state units beyond one per live request
  int64_t forks = 0, fork_fallbacks = 0;
  int64_t unit_copies = 0;        // blocks and states copied (snapshots, forks)
  // Preemption by swapping: requests saved to host memory and restored, preemptions recomputed
  // for want of room, and the host bytes in use now.
  int64_t swaps_out = 0, swaps_in = 0, swap_fallbacks = 0, swap_bytes = 0;
  // Speculative decoding: draft tokens verified and accepted, per draft position too (position
  // j counts the steps that verified a j-th draft token, and those that accepted it); steps
  // undone for a rejected draft where the model has states.
  int64_t draft_tokens = 0, accepted_tokens = 0, spec_rollbacks = 0;
  std::vector<int64_t> drafted_at, accepted_at;
};

class Engine {
public:
  static std::unique_ptr<Engine> load(const std::string &artefactPath, const WeightSource &weights,
                                      const EngineOptions &options);
  static std::unique_ptr<Engine> create(Artefact artefact, const WeightSource &weights,
                                        const EngineOptions &options);
  // With a given backend (tests, benchmarks).
  static std::unique_ptr<Engine> withBackend(Artefact artefact, std::unique_ptr<Backend> backend,
                                             const EngineOptions &options);
  ~Engine();

  AddResult add_request(std::vector<int32_t> prompt, const SamplingParams &params);
  // With embeddings for runs of the prompt's rows (a multimodal prompt's image or audio
  // features, in the order of the rows): rejected with a reason when the model takes none, or
  // when a segment's rows or width do not fit, or its values are not finite.
  AddResult add_request(std::vector<int32_t> prompt, const SamplingParams &params,
                        std::vector<EmbeddingSegment> embeds);
  // The width of the embeddings a request may give; 0 when the model takes none.
  int64_t embedding_width() const { return injectWidth_; }
  std::vector<TokenEvent> step();
  bool cancel(RequestId id);
  bool idle() const;
  std::vector<RequestOutput> take_finished();

  // The counters, with the cache's gauges read now.
  const EngineStats &stats() const;
  const Artefact &artefact() const { return *artefact_; }
  const Backend &backend() const { return *backend_; }
  const CacheCoordinator &cache() const { return *cache_; }
  // The options in force: the budgets left at 0 are the ones chosen from the machine.
  const EngineOptions &options() const { return options_; }
  size_t num_waiting() const;
  size_t num_running() const;
  // The longest request allowed (prompt + new tokens): max_model_len, or the model's.
  int64_t max_model_len() const { return maxModelLen_; }

  // Builds the step metadata for a plan (exposed for benchmarks). It takes the scheduled requests'
  // state units for the step, which the step's commit then advances.
  void buildBatch(const StepPlan &plan, StepBatch &batch);

private:
  Engine(std::unique_ptr<Artefact> artefact, std::unique_ptr<Backend> backend,
         const EngineOptions &options);
  void finishRequest(Request *r, FinishReason reason);
  void reject(Request *r, const std::string &why);
  std::string validate(const std::vector<int32_t> &prompt, const SamplingParams &p) const;
  std::string validateEmbeds(const std::vector<EmbeddingSegment> &embeds, int64_t promptLen) const;

  std::unique_ptr<Artefact> artefact_;
  std::unique_ptr<Backend> backend_;
  EngineOptions options_;
  std::unique_ptr<CacheCoordinator> cache_;
  std::unique_ptr<Scheduler> scheduler_;
  std::map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<RequestId> finished_;
  int64_t maxModelLen_ = 0;
  RequestId nextId_ = 0;
  uint64_t nextArrival_ = 0;
  // The cache's units from the budget: blocks per group, state slots (one per live request) and
  // spare state units for snapshots.
  struct CacheSizes {
    int32_t blocks = 0, slots = 0, snapshots = 0;
  };
  CacheSizes sizeCache() const;
  SchedulerOptions schedulerOptions() const;
  void sayPrefixLimits(int32_t snapshots) const; // start-up: where prefix caching cannot help
  void flushCopies();
  // Speculative decoding: drafts for the running requests that decode, within the back-off
  // budget; and one planned chunk's rows sampled (its draft verified), the tokens appended.
  void proposeDrafts();
  FinishReason emitChunk(ScheduledChunk &c, int64_t &row, bool deviceGreedy, std::vector<TokenEvent> &events);
  Sample sampleRow(Request &r, int64_t row, bool deviceGreedy, int32_t draft, bool &accepted);
  std::shared_ptr<Proposer> proposer_;
  void runSwaps(const StepPlan &plan);
  int64_t unitBytes(int group) const; // one cache unit of a group, as the backend stores it
  std::map<RequestId, std::vector<uint8_t>> swapped_; // host copies of preempted requests' units
  mutable EngineStats stats_;
  uint64_t fingerprint_ = 0;
  int64_t injectWidth_ = 0; // the width of StepArg::InjectEmbeds where an instruction reads it
  bool ropeSections_ = false; // the program reads StepArg::RopePositions (multimodal RoPE)
  // The program reads StepArg::KeyEnds: an injected segment's rows see each other, so a step
  // never ends inside one (SchedulerOptions::whole_segments).
  bool wholeSegments_ = false;
  std::unique_ptr<StepPlan> plan_;   // this step's plan and metadata, reused across steps
  std::unique_ptr<StepBatch> batch_;
  std::vector<float> logits_;
  std::vector<float> processed_; // a row after its request's logits processing
  std::vector<uint32_t> allowed_; // a constrained request's allowed ids (TokenConstraint)
  std::vector<int32_t> greedy_;
};

// The step metadata of a plan: O(tokens + requests); the block tables are the cache coordinator's.
// `keepStates`: every request's states are written to a new unit, keeping the input for a
// rollback (CacheCoordinator::stateUnits).
void buildStepBatch(const StepPlan &plan, CacheCoordinator &cache, StepBatch &batch, bool keepStates = false);

// A rank other than 0 of a tensor-parallel group (options.communicator): builds the backend of
// its shard as rank 0's engine does, then runs rank 0's calls until rank 0 stops
// (runtime/comm/ranks.h).
void followRank0(const Artefact &artefact, const WeightSource &weights, const EngineOptions &options);

// Chooses and builds a backend: CUDA when requested or (for "auto") when a driver and GPU are
// usable, else the CPU backend.
std::unique_ptr<Backend> makeBackend(const Artefact &a, const WeightSource &weights,
                                     const EngineOptions &options);

} // namespace cbc::rt

#endif
