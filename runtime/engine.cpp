#include "runtime/engine.h"
#include "runtime/comm/ranks.h"

#include "runtime/artefact.h"
#include "runtime/build_config.h"
#include "runtime/backend.h"
#include "runtime/cache/coordinator.h"
#include "runtime/cache/prefix_hash.h"
#include "runtime/scheduler.h"
#include "runtime/weights.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cuda/gpu_backend.h"
#include "runtime/engine_sizing.h"
#include "runtime/memory_estimate.h"
#include "runtime/logits_process.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"

#include <cmath>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <thread>

namespace cbc::rt {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int defaultThreads(int requested) {
  if (requested > 0)
    return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

// The weights as the CPU backend keeps them, refused up front when the host cannot hold them
// with the cache and the arenas; running out anyway (another process took the memory) is a
// MemoryError naming how far loading got, not a bare std::bad_alloc.
WeightStore loadForCpu(const Artefact &a, const WeightSource &weights, const EngineOptions &options,
                       const BackendLimits &limits) {
  std::vector<bool> bf16 = storedAsBf16(a, weights, cpuBf16Weights(a));
  MemoryEstimate need = estimateCpuMemory(a, options.cache_memory_bytes, limits, bf16);
  checkFits(need, options.host_memory_available > 0 ? options.host_memory_available : availableHostMemory());
  int64_t done = 0;
  try {
    return WeightStore::load(
        a, weights,
        [&](size_t index, size_t) {
          int64_t n = 1;
          for (int64_t d : a.weights[index].shape)
            n *= d;
          done += formatBytes(bf16[index] ? Storage::BF16 : Storage::F32, n);
          if (options.load_progress)
            options.load_progress(done, need.weights);
        },
        bf16);
  } catch (const std::bad_alloc &) {
    throw MemoryError("ran out of host memory loading the weights, after " + gigabytes(done) + " of " +
                      gigabytes(need.weights) + " (as " + need.weight_dtype + "); " +
                      gigabytes(availableHostMemory()) + " available now");
  }
}

} // namespace

namespace {

int64_t hostAvailable(const EngineOptions &o) {
  return o.host_memory_available > 0 ? o.host_memory_available : availableHostMemory();
}

// The host's defaults: the cache from the memory left beside the weights and workspaces.
EngineOptions sizeForHost(const Artefact &a, const EngineOptions &options) {
  return sizeFromMachine(a, options, false, hostAvailable(options), [&](const EngineOptions &o) {
    return estimateCpuMemory(a, 0, {o.max_batch_tokens, o.max_requests}).total();
  });
}

// makeBackend, writing the budgets it chose for a 0 (runtime/engine_sizing.h) back to `options`.
std::unique_ptr<Backend> makeSizedBackend(const Artefact &a, const WeightSource &weights, EngineOptions &options) {
  if (options.backend == "null") {
    options = sizeForHost(a, options);
    return makeNullBackend(a);
  }
  if (options.backend != "cpu" && options.backend != "auto" && options.backend != "cuda")
    throw std::runtime_error("unknown backend '" + options.backend + "' (auto, cpu, cuda, null)");
  std::shared_ptr<Communicator> comm = options.communicator ? options.communicator : singleRank();
  checkRanks(a.ranks, *comm); // before loading: a wrong group is a usage error, not a load failure
  if (options.backend != "cpu") {
    if constexpr (kBuiltWithCuda) {
      // CUDA when asked for, or for "auto" when a driver, a GPU and kernels are all there (on
      // every rank of a group).
      std::string why;
      if (auto gpu = openCudaBackend(a, weights, options, why, comm))
        return gpu;
      if (options.backend == "cuda")
        throw std::runtime_error("the CUDA backend is unavailable: " + why);
      if (options.log)
        options.log("CUDA backend unavailable (" + why + "); using the CPU backend");
    } else if (options.backend == "cuda") {
      // Built without CUDA (CBC_CUDA=OFF): "auto" is the CPU, quietly, kernels or not.
      throw std::invalid_argument("the CUDA backend is not in this runtime: cbc was built without CUDA "
                                  "(CBC_CUDA=OFF); use the cpu backend");
    }
  }
  options = sizeForHost(a, options);
  shareBudgets(*comm, options);
  BackendLimits limits{options.max_batch_tokens, options.max_requests};
  WeightSource slice = weights;
  slice.rank = comm->rank();
  // The ranks of a group share the host's cores (the test and bench machines run them on one).
  int threads = options.threads > 0 ? options.threads : std::max(1, defaultThreads(0) / comm->size());
  return makeCpuBackend(a, loadForCpu(a, slice, options, limits), limits, threads, comm);
}

// The width of the embeddings an instruction of the program reads from StepArg::InjectEmbeds;
// 0 when none does.
int64_t embeddingWidth(const Program &p) {
  const Value *v = p.readArg(StepArg::InjectEmbeds);
  return v && v->shape.size() == 2 ? v->shape[1] : 0;
}

// Multimodal RoPE positions (RopeSpec sections): text rows advance all three components by one;
// a segment with a grid (t, h, w) starting at position p gives its rows, in raster order,
// (p + ti, p + hi, p + wi), and the next row starts at p + max(t, h, w). Later positions
// (decoding) are the index plus `delta` = the largest position + 1 - the prompt's length.
void multimodalPositions(Request &r) {
  int64_t n = (int64_t)r.prompt.size(), next = 0, i = 0, top = -1;
  r.rope_positions.assign(3 * n, 0);
  auto place = [&](int64_t row, int64_t t, int64_t h, int64_t w) {
    r.rope_positions[row] = (int32_t)t, r.rope_positions[n + row] = (int32_t)h, r.rope_positions[2 * n + row] = (int32_t)w;
    top = std::max({top, t, h, w});
  };
  for (const EmbeddingSegment &s : r.embeds) {
    for (; i < s.start; ++i, ++next)
      place(i, next, next, next);
    for (int64_t k = 0; k < s.rows; ++k, ++i)
      place(i, next + k / (s.grid[1] * s.grid[2]), next + k / s.grid[2] % s.grid[1], next + k % s.grid[2]);
    next += std::max({s.grid[0], s.grid[1], s.grid[2]});
  }
  for (; i < n; ++i, ++next)
    place(i, next, next, next);
  r.rope_delta = top + 1 - n;
}

} // namespace

std::unique_ptr<Backend> makeBackend(const Artefact &a, const WeightSource &weights,
                                     const EngineOptions &options) {
  EngineOptions sized = options;
  return makeSizedBackend(a, weights, sized);
}

Engine::Engine(std::unique_ptr<Artefact> artefact, std::unique_ptr<Backend> backend,
               const EngineOptions &options)
    : artefact_(std::move(artefact)), backend_(std::move(backend)), options_(options),
      plan_(std::make_unique<StepPlan>()), batch_(std::make_unique<StepBatch>()) {
  // withBackend's callers (tests, benchmarks) may leave the budgets to the machine too.
  if (options_.max_batch_tokens == 0 || options_.cache_memory_bytes == 0)
    options_ = sizeFromMachine(*artefact_, options_, backend_->name().rfind("cuda", 0) == 0, hostAvailable(options_),
                               nullptr);
  if (options_.max_batch_tokens < 1 || options_.max_requests < 1)
    throw std::runtime_error("the token budget and requests per step must be at least 1");
  if (options_.max_live_requests < 1)
    throw std::runtime_error("max_live_requests must be at least 1");
  const CachePlan &plan = artefact_->cache_plan;
  CacheSizes sizes = sizeCache();
  maxModelLen_ = options_.max_model_len > 0
                     ? std::min<int64_t>(options_.max_model_len, artefact_->meta.max_positions)
                     : artefact_->meta.max_positions;
  int32_t width = (int32_t)((maxModelLen_ + plan.block_size - 1) / plan.block_size);
  int32_t stateUnits = sizes.slots + sizes.snapshots;
  backend_->allocateCache(sizes.blocks, stateUnits);
  cache_ = std::make_unique<CacheCoordinator>(plan, sizes.blocks, stateUnits, sizes.slots, width);
  stats_.snapshot_capacity = sizes.snapshots;
  // What the program reads of a request's embeddings: their rows, three positions, key ends.
  injectWidth_ = embeddingWidth(artefact_->program);
  ropeSections_ = artefact_->program.readArg(StepArg::RopePositions) != nullptr;
  batch_->rope_sections = ropeSections_;
  wholeSegments_ = artefact_->program.readArg(StepArg::KeyEnds) != nullptr;
  batch_->key_ends_needed = wholeSegments_;
  batch_->injected_token = (int32_t)artefact_->meta.injected_token;
  scheduler_ = std::make_unique<Scheduler>(schedulerOptions(), *cache_);
  fingerprint_ = modelFingerprint(*artefact_);
  proposer_ = options_.proposer;
  if (!proposer_ && !options_.speculative.empty()) {
    if (std::string why = checkSpeculativeMethod(options_.speculative); !why.empty())
      throw std::runtime_error(why);
    proposer_ = makeNgramProposer(options_.ngram_min, options_.ngram_max);
  }
  if (proposer_) {
    if (options_.num_speculative_tokens < 1 || options_.num_speculative_tokens > 64)
      throw std::runtime_error("num_speculative_tokens must be in [1, 64], not " +
                               std::to_string(options_.num_speculative_tokens));
    if (options_.ngram_min < 1 || options_.ngram_max < options_.ngram_min)
      throw std::runtime_error("the n-gram lengths must satisfy 1 <= ngram_min <= ngram_max");
    if (options_.speculative_max_tokens < 0)
      throw std::runtime_error("speculative_max_tokens must be at least 0");
    if (options_.speculative_max_tokens == 0)
      options_.speculative_max_tokens = 16;
    stats_.drafted_at.assign(options_.num_speculative_tokens, 0);
    stats_.accepted_at.assign(options_.num_speculative_tokens, 0);
  }
  if (options_.log && options_.prefix_caching)
    sayPrefixLimits(sizes.snapshots);
}

Engine::CacheSizes Engine::sizeCache() const {
  const CachePlan &plan = artefact_->cache_plan;
  int64_t bytesPerBlockRow = 0;
  for (int g = 0; g < plan.tableGroups(); ++g)
    bytesPerBlockRow += backend_->cacheBytesPerToken(g) * plan.block_size;
  // One state unit per live request; what is left of the budget holds cache blocks.
  int64_t stateBytes = backend_->stateBytesPerUnit();
  int64_t budget = options_.cache_memory_bytes;
  CacheSizes sizes;
  sizes.slots = (int32_t)std::min<int64_t>(options_.max_live_requests, 1 << 20);
  if (options_.max_state_fraction <= 0 || options_.max_state_fraction > 1)
    throw std::runtime_error("max_state_fraction must be in (0, 1]");
  if (stateBytes > 0) {
    sizes.slots =
        (int32_t)std::min<int64_t>(sizes.slots, (int64_t)((double)budget * options_.max_state_fraction) / stateBytes);
    if (sizes.slots < 1)
      throw std::runtime_error("the cache memory budget cannot hold one request's state (" +
                               std::to_string(stateBytes) + " bytes)");
    budget -= sizes.slots * stateBytes;
  }
  // State snapshots for prefix caching: spare state units, which a live request may also take.
  if (stateBytes > 0 && options_.prefix_caching) {
    if (options_.snapshot_memory_bytes < -1)
      throw std::runtime_error("snapshot_memory_bytes must be -1 (a fifth of the cache memory) or at least 0");
    int64_t share = std::min<int64_t>(
        options_.snapshot_memory_bytes < 0 ? options_.cache_memory_bytes / 5 : options_.snapshot_memory_bytes, budget);
    sizes.snapshots = (int32_t)std::min<int64_t>(share / stateBytes, 1 << 20);
    budget -= sizes.snapshots * stateBytes;
  }
  sizes.blocks = bytesPerBlockRow > 0 ? (int32_t)std::min<int64_t>(budget / bytesPerBlockRow, 1 << 30) : 0;
  if (plan.tableGroups() > 0 && sizes.blocks < 1)
    throw std::runtime_error("the cache memory budget (" + std::to_string(options_.cache_memory_bytes) +
                             " bytes) is smaller than one cache block");
  return sizes;
}

SchedulerOptions Engine::schedulerOptions() const {
  const CachePlan &plan = artefact_->cache_plan;
  if (options_.snapshot_interval < 0)
    throw std::runtime_error("snapshot_interval must be at least 0");
  if (options_.swap_space_bytes < 0)
    throw std::runtime_error("swap_space_bytes must be at least 0");
  SchedulerOptions so{options_.max_batch_tokens, options_.max_requests};
  so.prefix_caching = options_.prefix_caching;
  so.snapshot_interval = options_.snapshot_interval;
  so.length_dependent_above = plan.length_dependent_above;
  so.whole_segments = wholeSegments_;
  // Swapping where the backend can move units to host memory (asked with no units).
  if (options_.swap_space_bytes > 0 && cache_->canSwap() && backend_->transferUnits(0, {}, nullptr, true)) {
    so.swap_bytes = options_.swap_space_bytes;
    for (const CacheGroup &g : plan.groups)
      so.unit_bytes.push_back(unitBytes(g.id));
  } else if (options_.swap_space_bytes > 0 && options_.log) {
    options_.log("swap space is ignored: the " + backend_->name() +
                 " backend cannot move this model's cache to host memory; preempted requests are recomputed");
  }
  return so;
}

void Engine::sayPrefixLimits(int32_t snapshots) const {
  int64_t bound = artefact_->cache_plan.length_dependent_above;
  if (!cache_->cachesPrefixes())
    options_.log("prefix caching is off for this model: its cache has rows computed from another input "
                 "than the tokens (an encoder's)");
  else if (bound > 0)
    options_.log("prefix caching shares only prompts of at most " + std::to_string(bound) +
                 " tokens for this model: its RoPE schedule changes with the sequence's length above that");
  if (cache_->cachesPrefixes() && backend_->stateBytesPerUnit() > 0 && snapshots == 0)
    options_.log("prefix caching finds no hits for this model: its recurrent states need snapshots and the "
                 "cache memory leaves none (raise the cache memory or the snapshot memory)");
}

Engine::~Engine() = default;

std::unique_ptr<Engine> Engine::withBackend(Artefact artefact, std::unique_ptr<Backend> backend,
                                            const EngineOptions &options) {
  return std::unique_ptr<Engine>(
      new Engine(std::make_unique<Artefact>(std::move(artefact)), std::move(backend), options));
}

std::unique_ptr<Engine> Engine::create(Artefact artefact, const WeightSource &weights,
                                       const EngineOptions &options) {
  auto owned = std::make_unique<Artefact>(std::move(artefact));
  EngineOptions sized = options;
  auto backend = makeSizedBackend(*owned, weights, sized);
  if (sized.communicator && sized.communicator->size() > 1)
    backend = leadRanks(std::move(backend), sized.communicator);
  try {
    return std::unique_ptr<Engine>(new Engine(std::move(owned), std::move(backend), sized));
  } catch (const std::bad_alloc &) {
    throw MemoryError("ran out of memory allocating the cache (" + gigabytes(sized.cache_memory_bytes) +
                      ") after loading the weights; lower --cache-memory");
  }
}

void followRank0(const Artefact &artefact, const WeightSource &weights, const EngineOptions &options) {
  if (!options.communicator || options.communicator->rank() == 0)
    throw std::logic_error("followRank0 runs on the ranks other than 0");
  EngineOptions sized = options;
  auto backend = makeSizedBackend(artefact, weights, sized);
  followRank0(*backend, *options.communicator, artefact.cache_plan);
}

std::unique_ptr<Engine> Engine::load(const std::string &path, const WeightSource &weights,
                                     const EngineOptions &options) {
  return create(Artefact::load(path), weights, options);
}

std::string Engine::validate(const std::vector<int32_t> &prompt, const SamplingParams &p) const {
  const ModelMeta &m = artefact_->meta;
  if (prompt.empty())
    return "empty prompt";
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= m.promptVocab())
      return "token id " + std::to_string(prompt[i]) + " at position " + std::to_string(i) +
             " is outside the vocabulary [0, " + std::to_string(m.promptVocab()) + ")";
  std::string bad = validateSampling(p);
  if (bad.empty())
    bad = validateLogitsProcessing(p, m.vocab_size);
  if (!bad.empty())
    return bad;
  // Compared without adding: max_new_tokens may be anything up to INT64_MAX.
  if (p.max_new_tokens > maxModelLen_ - (int64_t)prompt.size())
    return "prompt (" + std::to_string(prompt.size()) + " tokens) plus max_new_tokens (" +
           std::to_string(p.max_new_tokens) + ") exceeds the " + std::to_string(maxModelLen_) +
           " positions allowed" + (maxModelLen_ < m.max_positions ? " (max_model_len)" : " by the model");
  int64_t length = (int64_t)prompt.size() + p.max_new_tokens;
  for (int g = 0; g < cache_->numPagedGroups(); ++g) {
    int64_t need = cache_->maxBlocksFor(g, length, options_.max_batch_tokens);
    if (need > cache_->blocksPerGroup())
      return "needs " + std::to_string(need) + " cache blocks but the cache holds " +
             std::to_string(cache_->blocksPerGroup()) + "; raise the cache memory budget";
  }
  return "";
}

std::string Engine::validateEmbeds(const std::vector<EmbeddingSegment> &embeds, int64_t promptLen) const {
  if (embeds.empty())
    return "";
  if (injectWidth_ == 0)
    return "this model takes no embeddings (only a multimodal model's decoder does)";
  int64_t end = 0;
  for (size_t i = 0; i < embeds.size(); ++i) {
    const EmbeddingSegment &s = embeds[i];
    std::string which = "embedding segment " + std::to_string(i);
    if (s.rows < 1 || s.start < end || s.start + s.rows > promptLen)
      return which + " (rows " + std::to_string(s.start) + " to " + std::to_string(s.start + s.rows) +
             ") must be a non-empty run of prompt rows after the previous segment, within the prompt's " +
             std::to_string(promptLen) + " rows";
    if (!s.data || (int64_t)s.data->size() != s.rows * injectWidth_)
      return which + " has " + std::to_string(s.data ? s.data->size() : 0) + " values; " +
             std::to_string(s.rows) + " rows of the model's width " + std::to_string(injectWidth_) + " are " +
             std::to_string(s.rows * injectWidth_);
    int64_t cells = s.grid[0] * s.grid[1] * s.grid[2];
    if (ropeSections_ && (s.grid[0] < 1 || s.grid[1] < 1 || s.grid[2] < 1 || cells != s.rows))
      return which + " needs its grid: this model places an image's rows by their (t, h, w) grid, whose cells (" +
             std::to_string(cells) + ") must be its " + std::to_string(s.rows) + " rows";
    if (!ropeSections_ && cells != 0)
      return which + " has a grid, but this model's positions do not read one";
    if (wholeSegments_ && s.visual() && s.rows > options_.max_batch_tokens)
      return which + " has " + std::to_string(s.rows) + " rows, but this model computes an image's rows in one step "
             "and the step's token budget is " + std::to_string(options_.max_batch_tokens) +
             " (raise max_batch_tokens)";
    for (size_t k = 0; k < s.data->size(); ++k)
      if (!std::isfinite((*s.data)[k]))
        return which + " has a value that is not finite at row " + std::to_string(s.start + (int64_t)k / injectWidth_);
    end = s.start + s.rows;
  }
  return "";
}

AddResult Engine::add_request(std::vector<int32_t> prompt, const SamplingParams &params) {
  return add_request(std::move(prompt), params, {});
}

AddResult Engine::add_request(std::vector<int32_t> prompt, const SamplingParams &params,
                              std::vector<EmbeddingSegment> embeds) {
  auto make = [&](std::vector<int32_t> tokens, const SamplingParams &p) {
    auto r = std::make_unique<Request>();
    r->id = nextId_++;
    r->prompt = std::move(tokens);
    r->params = p;
    r->arrival = nextArrival_++;
    r->arrival_time = now();
    r->hash_seed = prefixSeed(fingerprint_, p.cache_salt);
    Request *raw = r.get();
    requests_[r->id] = std::move(r);
    return raw;
  };
  std::string why = validateEmbeds(embeds, (int64_t)prompt.size());
  // A model that reads one token id at injected rows may name them by a placeholder past its
  // table (Nemotron-3.5-Transcribe's audio id is the vocabulary's size): they read that id.
  if (int64_t injected = artefact_->meta.injected_token; why.empty() && injected >= 0)
    for (const EmbeddingSegment &s : embeds)
      for (int64_t i = s.start; i < s.start + s.rows; ++i)
        if (prompt[i] >= artefact_->meta.promptVocab())
          prompt[i] = (int32_t)injected;
  Request *parent = make(std::move(prompt), params);
  std::string vocabWhy = validate(parent->prompt, params);
  if (why.empty())
    why = vocabWhy;
  parent->embeds = std::move(embeds);
  if (why.empty() && wholeSegments_ && params.n > 1 && !parent->embeds.empty() && parent->embeds.back().visual() &&
      parent->embeds.back().rows > 1 && parent->embeds.back().start + parent->embeds.back().rows == (int64_t)parent->prompt.size())
    why = "n > 1 needs a prompt that does not end inside an image for this model (its forks part at the last row, "
          "and an image's rows are computed together)";
  if (why.empty() && ropeSections_)
    multimodalPositions(*parent);
  if (why.empty() && (params.n < 1 || params.n > 1024))
    why = "n must be in [1, 1024], not " + std::to_string(params.n);
  if (!why.empty()) {
    reject(parent, why);
    return {parent->id, false, why};
  }
  AddResult added{parent->id, true, "", {}};
  // Forks: each a request of its own (its own seed), waiting for the parent's prompt unless the
  // prompt is one token long and there is nothing to share.
  for (int64_t i = 1; i < params.n; ++i) {
    SamplingParams p = params;
    p.n = 1;
    p.seed = forkSeed(params.seed, i);
    if (params.constraint)
      p.constraint = params.constraint->fork();
    Request *fork = make(parent->prompt, p);
    fork->embeds = parent->embeds;
    fork->rope_positions = parent->rope_positions;
    fork->rope_delta = parent->rope_delta;
    fork->fork_index = i;
    added.forks.push_back(fork->id);
    stats_.prompt_tokens += (int64_t)fork->prompt.size();
    if (parent->prompt.size() > 1) {
      fork->fork_parent = parent;
      parent->forks.push_back(fork);
    }
  }
  stats_.prompt_tokens += (int64_t)parent->prompt.size();
  scheduler_->enqueue(parent);
  for (RequestId id : added.forks)
    if (Request *f = requests_[id].get(); f->fork_parent == nullptr)
      scheduler_->enqueue(f);
    else
      f->status = RequestStatus::Waiting;
  return added;
}

void Engine::flushCopies() {
  std::vector<UnitCopy> &copies = cache_->pendingCopies();
  if (!copies.empty()) {
    backend_->copyUnits(copies);
    stats_.unit_copies += (int64_t)copies.size();
  }
  cache_->copiesDone();
}

int64_t Engine::unitBytes(int group) const {
  const CachePlan &plan = artefact_->cache_plan;
  return plan.groups.at(group).kind == CacheGroup::State ? backend_->stateBytesPerUnit()
                                                         : backend_->cacheBytesPerToken(group) * plan.block_size;
}

void Engine::runSwaps(const StepPlan &plan) {
  // Out first: a resumed request may take units a preempted one just gave back.
  for (const SwapJob &j : plan.swap_out) {
    int64_t bytes = 0;
    for (const UnitRef &u : j.units)
      bytes += unitBytes(u.group);
    std::vector<uint8_t> &host = swapped_[j.request->id];
    host.resize(bytes);
    uint8_t *at = host.data();
    for (const UnitRef &u : j.units) {
      backend_->transferUnits(u.group, {u.unit}, at, true);
      at += unitBytes(u.group);
    }
  }
  for (const SwapJob &j : plan.swap_in) {
    auto it = swapped_.find(j.request->id);
    if (it == swapped_.end())
      throw std::logic_error("a request resumes from a swap that was never made");
    uint8_t *at = it->second.data();
    for (const UnitRef &u : j.units) {
      backend_->transferUnits(u.group, {u.unit}, at, false);
      at += unitBytes(u.group);
    }
    swapped_.erase(it);
  }
}

const EngineStats &Engine::stats() const {
  const PrefixStats &p = scheduler_->prefixStats();
  stats_.swaps_out = p.swaps_out;
  stats_.swaps_in = p.swaps_in;
  stats_.swap_fallbacks = p.swap_fallbacks;
  stats_.swap_bytes = p.swap_bytes_used;
  stats_.prefix_queries = p.queries;
  stats_.prefix_hits = p.hits;
  stats_.prefix_limited_by_state = p.limited_by_state;
  stats_.forks = p.forks;
  stats_.fork_fallbacks = p.fork_fallbacks;
  stats_.spec_rollbacks = p.rollbacks;
  PrefixCounters c = cache_->prefixCounters();
  stats_.block_evictions = c.block_evictions;
  stats_.snapshots = c.snapshots;
  stats_.snapshot_drops = c.snapshot_drops;
  stats_.snapshot_evictions = c.snapshot_evictions;
  stats_.cached_blocks = cache_->cachedBlocks();
  stats_.cached_snapshots = cache_->cachedSnapshots();
  stats_.snapshot_bytes = stats_.cached_snapshots * backend_->stateBytesPerUnit();
  return stats_;
}

void Engine::reject(Request *r, const std::string &why) {
  swapped_.erase(r->id);
  r->error = why;
  r->status = RequestStatus::Finished;
  r->finish = FinishReason::Rejected;
  r->finish_time = now();
  stats_.rejected++;
  finished_.push_back(r->id);
}

void Engine::finishRequest(Request *r, FinishReason reason) {
  scheduler_->finish(r);
  r->finish = reason;
  r->finish_time = now();
  stats_.finished++;
  finished_.push_back(r->id);
}

bool Engine::cancel(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->status == RequestStatus::Finished)
    return false;
  scheduler_->remove(it->second.get());
  swapped_.erase(id);
  it->second->finish = FinishReason::Cancelled;
  it->second->finish_time = now();
  stats_.cancelled++;
  finished_.push_back(id);
  return true;
}

bool Engine::idle() const { return scheduler_->idle(); }

size_t Engine::num_waiting() const { return scheduler_->numWaiting(); }
size_t Engine::num_running() const { return scheduler_->numRunning(); }

void Engine::buildBatch(const StepPlan &plan, StepBatch &b) { buildStepBatch(plan, *cache_, b); }

namespace {

// The rows of a chunk (prompt positions [start, start + count) at step row `row`) whose
// embeddings the request gives, in ascending order, with those embeddings.
void injectRows(const Request &q, int64_t start, int64_t count, int32_t row, StepBatch &b) {
  for (const EmbeddingSegment &seg : q.embeds) {
    int64_t from = std::max(start, seg.start), to = std::min(start + count, seg.start + seg.rows);
    if (from >= to)
      continue;
    int64_t width = (int64_t)seg.data->size() / seg.rows;
    for (int64_t p = from; p < to; ++p) {
      b.inject_rows.push_back(row + (int32_t)(p - start));
      if (b.injected_token >= 0)
        b.tokens[b.inject_rows.back()] = b.injected_token;
    }
    b.inject_embeds.insert(b.inject_embeds.end(), seg.data->begin() + (from - seg.start) * width,
                           seg.data->begin() + (to - seg.start) * width);
  }
}

// The three position components of a chunk's rows: the request's own below its prompt's end,
// past it the index plus its delta (all three alike), appended component by component after
// the batch is complete (see buildStepBatch).
void ropePositions(const Request &q, int64_t start, int64_t count, StepBatch &b) {
  int64_t n = (int64_t)q.prompt.size();
  for (int64_t p = start; p < start + count; ++p)
    for (int c = 0; c < 3; ++c)
      b.rope_positions.push_back(p < n && !q.rope_positions.empty() ? q.rope_positions[c * n + p]
                                                                     : (int32_t)(p + q.rope_delta));
}

// The key end of a chunk's rows: a row of an image's or a video's segment sees its whole
// segment, the others (an audio clip's too) up to themselves.
void keyEnds(const Request &q, int64_t start, int64_t count, StepBatch &b) {
  auto seg = q.embeds.begin();
  for (int64_t p = start; p < start + count; ++p) {
    while (seg != q.embeds.end() && seg->start + seg->rows <= p)
      ++seg;
    bool inside = seg != q.embeds.end() && seg->start <= p && seg->visual();
    b.key_ends.push_back((int32_t)(inside ? seg->start + seg->rows : p + 1));
  }
}

// Token-major [T, 3] as ropePositions appends them, to the component-major [3, T] of the step
// argument.
void componentMajor(std::vector<int32_t> &v, std::vector<int32_t> &scratch) {
  int64_t T = (int64_t)v.size() / 3;
  scratch.resize(v.size());
  for (int64_t t = 0; t < T; ++t)
    for (int c = 0; c < 3; ++c)
      scratch[c * T + t] = v[3 * t + c];
  v.swap(scratch);
}

} // namespace

void buildStepBatch(const StepPlan &plan, CacheCoordinator &cache, StepBatch &b, bool keepStates) {
  // Written by index into buffers reused from step to step.
  int64_t R = (int64_t)plan.chunks.size(), T = plan.tokens;
  b.num_requests = R;
  b.num_tokens = T;
  b.num_groups = cache.numTableGroups();
  b.block_tables = cache.tables();
  b.table_slots = cache.maxSlots();
  b.table_width = cache.tableWidth();
  b.tokens.resize(T);
  b.positions.resize(T);
  b.seq_ids.resize(T);
  b.cu_seqlens.resize(R + 1);
  b.kv_lens.resize(R);
  b.prompt_lens.resize(R);
  b.slots.resize(R);
  b.has_initial_state.resize(R);
  b.state_in.resize(R);
  b.state_out.resize(R);
  b.logit_rows.clear();
  b.inject_rows.clear();
  b.inject_embeds.clear();
  b.rope_positions.clear();
  b.key_ends.clear();
  int32_t t = 0;
  b.cu_seqlens[0] = 0;
  for (int64_t r = 0; r < R; ++r) {
    const ScheduledChunk &c = plan.chunks[r];
    const Request &q = *c.request;
    if (r + 8 < R) // requests are scattered on the heap: hide the misses of the next ones
      __builtin_prefetch(plan.chunks[r + 8].request);
    for (int64_t i = 0; i < c.count; ++i, ++t) {
      b.tokens[t] = q.tokenAt(c.start + i);
      b.positions[t] = (int32_t)(c.start + i);
      b.seq_ids[t] = (int32_t)r;
    }
    b.cu_seqlens[r + 1] = t;
    if (!q.embeds.empty())
      injectRows(q, c.start, c.count, t - (int32_t)c.count, b);
    if (b.rope_sections)
      ropePositions(q, c.start, c.count, b);
    if (b.key_ends_needed)
      keyEnds(q, c.start, c.count, b);
    b.kv_lens[r] = (int32_t)(c.start + c.count);
    int32_t chunkStart = t - (int32_t)c.count;
    for (int64_t p = promptRowsFrom(q, c.start), e = p + c.prompt_rows; p < e; ++p)
      b.logit_rows.push_back(chunkStart + (int32_t)(p - c.start));
    if (c.sample) // the known end's row, then each draft token's
      for (int64_t d = c.drafts; d >= 0; --d)
        b.logit_rows.push_back(t - 1 - (int32_t)d);
    b.prompt_lens[r] = (int32_t)q.prompt.size();
    b.slots[r] = q.slot;
    b.has_initial_state[r] = c.start > 0 ? 1 : 0;
    StateUnits units = cache.stateUnits(q.slot, keepStates);
    if (cache.hasStates() && units.out < 0)
      throw std::logic_error("no free state unit for a scheduled request");
    b.state_in[r] = units.in;
    b.state_out[r] = units.out;
  }
  b.num_logit_rows = (int64_t)b.logit_rows.size();
  if (b.rope_sections) {
    thread_local std::vector<int32_t> scratch;
    componentMajor(b.rope_positions, scratch);
  }
}

namespace {

// Prompt tokens' log-probabilities from `rows` logit rows, the next ones r has not recorded.
void recordPromptLogprobs(Request &r, const float *logits, int64_t rows, int64_t vocab) {
  for (int64_t i = 0; i < rows; ++i) {
    int64_t next = (int64_t)r.prompt_logprobs.size() + 1; // the token this row predicts
    Sample s = scoreToken(logits + i * vocab, vocab, r.prompt[next], r.params.prompt_logprobs);
    r.prompt_logprobs.push_back(s.logprob);
    r.prompt_top_logprobs.push_back(std::move(s.top));
  }
}

} // namespace

std::vector<TokenEvent> Engine::step() {
  std::vector<TokenEvent> events;
  if (scheduler_->idle())
    return events;
  double t0 = now();
  StepPlan &plan = *plan_;
  if (proposer_)
    proposeDrafts();
  scheduler_->schedule(plan);
  for (Request *r : plan.preempted) // a draft is for the step it was proposed for
    r->draft.clear();
  // Counted before anything can return: a step whose every request was preempted runs nothing
  // (but their units are saved now, before any other request reuses them).
  stats_.preemptions += (int64_t)plan.preempted.size();
  if (plan.chunks.empty()) {
    runSwaps(plan);
    flushCopies(); // and the holds of a prefix hit whose request then did not fit are let go
    // Nothing fits although nothing else holds the cache: the head request never will.
    if (scheduler_->numRunning() == 0 && scheduler_->numWaiting() > 0) {
      for (auto &[id, r] : requests_)
        if (r->status == RequestStatus::Waiting) {
          scheduler_->remove(r.get());
          reject(r.get(), "does not fit in the paged cache even alone; raise the cache memory budget");
          break;
        }
    }
    return events;
  }
  runSwaps(plan);
  flushCopies(); // snapshots copied in for this step's cache hits
  buildBatch(plan, *batch_);
  double t1 = now();
  // Greedy rows that want neither logprobs nor logits can be sampled on the device.
  bool deviceGreedy = true;
  for (const ScheduledChunk &c : plan.chunks)
    if (c.prompt_rows > 0 ||
        (c.sample && (c.request->params.temperature != 0 || c.request->params.wantsLogprobs() ||
                      c.request->params.keep_logits || c.request->params.processesLogits())))
      deviceGreedy = false;
  deviceGreedy = deviceGreedy && backend_->runGreedy(*batch_, greedy_);
  if (!deviceGreedy) {
    backend_->run(*batch_, logits_);
    if ((int64_t)logits_.size() < batch_->num_logit_rows * artefact_->meta.vocab_size)
      throw std::runtime_error("the backend returned fewer logits than the step has rows");
  }
  double t2 = now();
  // The tokens first (a verified draft's accepted length decides what the commit keeps), then
  // the commit, then the requests that finished give their cache back.
  int64_t vocab = artefact_->meta.vocab_size, row = 0;
  std::vector<std::pair<Request *, FinishReason>> done;
  for (ScheduledChunk &c : plan.chunks) {
    if (c.prompt_rows > 0) {
      recordPromptLogprobs(*c.request, logits_.data() + row * vocab, c.prompt_rows, vocab);
      row += c.prompt_rows;
    }
    if (c.sample)
      if (FinishReason reason = emitChunk(c, row, deviceGreedy, events); reason != FinishReason::None)
        done.push_back({c.request, reason});
  }
  scheduler_->commit(plan);
  flushCopies(); // snapshots kept and forks made at the commit
  for (auto [r, reason] : done)
    finishRequest(r, reason);
  for (const ScheduledChunk &c : plan.chunks)
    c.request->draft.clear();
  stats_.steps++;
  stats_.computed_tokens += plan.tokens;
  stats_.step_seconds += t2 - t1;
  stats_.schedule_seconds += t1 - t0;
  return events;
}

void Engine::proposeDrafts() {
  int64_t k = options_.num_speculative_tokens;
  // Back off: past speculative_max_tokens a step is compute-bound and draft rows cost time.
  int64_t active = (int64_t)(scheduler_->numRunning() + scheduler_->numWaiting());
  if (active * (k + 1) > options_.speculative_max_tokens)
    k = options_.speculative_max_tokens / std::max<int64_t>(active, 1) - 1;
  for (Request *r : scheduler_->running()) {
    r->draft.clear();
    // Constrained requests and prompt logprobs keep to the plain path. A request still in its
    // prompt has a draft too: its last prompt chunk verifies it (prompt lookup).
    if (k <= 0 || r->params.constraint || r->params.wantsPromptLogprobs())
      continue;
    int64_t room = r->params.max_new_tokens - (int64_t)r->generated.size() - 1;
    if (room > 0)
      proposer_->propose(*r, std::min(k, room), r->draft);
  }
}

Sample Engine::sampleRow(Request &r, int64_t row, bool deviceGreedy, int32_t draft, bool &accepted) {
  if (deviceGreedy) {
    accepted = greedy_[row] == draft;
    return {greedy_[row], 0.0f, {}};
  }
  const ModelMeta &meta = artefact_->meta;
  int64_t vocab = meta.vocab_size;
  const float *l = logits_.data() + row * vocab;
  const float *drawn = l; // what the sampler reads: the row after the request's processing
  if (r.params.processesLogits()) {
    // The output so far holds the drafts accepted before this row, as the history it would have.
    processLogits(l, vocab, r.params, r.prompt, r.generated, meta.eos_token_ids, processed_);
    if (r.params.constraint) {
      r.params.constraint->allowed(allowed_, vocab);
      maskLogits(processed_.data(), vocab, allowed_);
    }
    drawn = processed_.data();
  }
  // A draft without a distribution of its own (one token guessed outright) is verified by
  // sampling the row as without speculation and keeping the draft where it is the token drawn:
  // accepted with probability p(draft), as the rejection sampler's one-hot case, and the tokens
  // are those plain decoding draws, whatever was guessed and however the batch was made.
  Sample s = sampleToken(drawn, vocab, r.params, (int64_t)r.generated.size());
  accepted = draft >= 0 && s.token == draft;
  if (r.params.wantsLogprobs())
    r.logprobs.push_back(s.logprob);
  if (r.params.top_logprobs > 0)
    r.top_logprobs.push_back(s.top);
  if (r.params.keep_logits)
    r.logits.emplace_back(l, l + vocab);
  return s;
}

FinishReason Engine::emitChunk(ScheduledChunk &c, int64_t &row, bool deviceGreedy, std::vector<TokenEvent> &events) {
  Request *r = c.request;
  const ModelMeta &meta = artefact_->meta;
  int64_t rows = 1 + c.drafts, first = row;
  row += rows;
  c.accepted = 0;
  stats_.draft_tokens += c.drafts;
  for (int64_t j = 0; j < c.drafts; ++j)
    stats_.drafted_at[j]++;
  for (int64_t i = 0; i < rows; ++i) {
    int32_t draft = i < c.drafts ? r->draft[i] : -1;
    bool accepted = false;
    Sample s = sampleRow(*r, first + i, deviceGreedy, draft, accepted);
    if (accepted) {
      c.accepted++;
      stats_.accepted_tokens++;
      stats_.accepted_at[i]++;
    }
    r->generated.push_back(s.token);
    if (r->generated.size() == 1)
      r->first_token_time = now();
    stats_.generated_tokens++;
    FinishReason reason = FinishReason::None;
    const auto &stops = r->params.stop_token_ids;
    if (!r->params.ignore_eos &&
        std::find(meta.eos_token_ids.begin(), meta.eos_token_ids.end(), s.token) != meta.eos_token_ids.end())
      reason = FinishReason::Eos;
    else if (std::find(stops.begin(), stops.end(), s.token) != stops.end())
      reason = FinishReason::Stop;
    else if ((int64_t)r->generated.size() >= r->params.max_new_tokens)
      reason = FinishReason::Length;
    // A constrained request ends where its text is complete (its end token accepted), or where
    // its grammar refuses the token; the constraint sees every token either way.
    if (const auto &con = r->params.constraint) {
      bool ok = con->accept(s.token);
      if (reason == FinishReason::None && (!ok || con->terminated()))
        reason = FinishReason::Stop;
    }
    events.push_back({r->id, s.token, s.logprob, reason != FinishReason::None, reason, std::move(s.top)});
    // The first rejected draft's row gave its replacement; the rows after it saw a wrong token.
    if (reason != FinishReason::None || !accepted)
      return reason;
  }
  return FinishReason::None;
}

std::vector<RequestOutput> Engine::take_finished() {
  std::vector<RequestOutput> out;
  for (RequestId id : finished_) {
    auto it = requests_.find(id);
    if (it == requests_.end())
      continue;
    Request &r = *it->second;
    RequestOutput o;
    o.id = r.id;
    o.prompt = std::move(r.prompt);
    o.tokens = std::move(r.generated);
    o.logprobs = std::move(r.logprobs);
    o.top_logprobs = std::move(r.top_logprobs);
    o.logits = std::move(r.logits);
    o.prompt_logprobs = std::move(r.prompt_logprobs);
    o.prompt_top_logprobs = std::move(r.prompt_top_logprobs);
    o.finish = r.finish;
    o.error = r.error;
    o.ttft_s = r.first_token_time > 0 ? r.first_token_time - r.arrival_time : 0;
    o.latency_s = r.finish_time - r.arrival_time;
    o.preemptions = r.preemptions;
    o.cached_tokens = r.cached_tokens;
    o.fork_index = r.fork_index;
    o.parent = r.fork_index > 0 ? r.id - r.fork_index : -1;
    out.push_back(std::move(o));
    requests_.erase(it);
  }
  finished_.clear();
  return out;
}

} // namespace cbc::rt
