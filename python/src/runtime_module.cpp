// cbc._runtime: the engine (runtime/engine.h) for Python. The C++ engine is single-threaded, so
// every method takes the engine's mutex; a thread waits for it, and steps, with the GIL released,
// so other Python threads run meanwhile. Results cross over as plain tuples and lists; the
// Python classes around them live in python/cbc/__init__.py.
#include "runtime/artefact.h"
#include "runtime/build_config.h"
#include "runtime/cache/coordinator.h"
#include "runtime/comm/communicator.h"
#if CBC_MPI
#include "runtime/comm/mpi_communicator.h"
#endif
#include "runtime/engine.h"
#include "runtime/speculative.h"
#include "runtime/memory_estimate.h"
#include "runtime/safetensors.h"
#ifdef CBC_STRUCTURED
#include "runtime/structured/grammar_constraint.h"
#endif

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <mutex>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using cbc::rt::FinishReason;

nb::object reasonName(FinishReason r) {
  if (r == FinishReason::None)
    return nb::none();
  return nb::str(cbc::rt::finishReasonName(r));
}

struct LoadOptions {
  std::string backend = "cpu";
  int threads = 0;
  // 0 for either budget: the engine chooses it from the machine (runtime/engine_sizing.h).
  int64_t max_batch_tokens = 0, max_requests = 64, cache_memory_mib = 0, max_model_len = 0;
  bool prefix_caching = true;
  int64_t snapshot_memory_mib = -1, snapshot_interval = 0, swap_space_mib = 0; // -1: the engine's default
  int64_t tp = 1; // ranks of the tensor-parallel group this process is one of (an MPI job's)
  std::string speculative; // "" off, "ngram"
  int64_t num_speculative_tokens = 3, speculative_max_tokens = 0;
};

// This process's rank of the MPI job that started it, opened once (MPI starts once a process):
// what an engine of a --tp artefact runs its collectives over. A ValueError where the job is not
// `tp` ranks, or this build has no MPI.
std::shared_ptr<cbc::rt::Communicator> rankGroup(int64_t tp) {
  static std::shared_ptr<cbc::rt::Communicator> group;
#if CBC_MPI
  if (!group && cbc::rt::launchedByMpi())
    group = cbc::rt::openMpi(300);
#endif
  if (!group)
    throw nb::value_error(("--tp " + std::to_string(tp) + " runs as " + std::to_string(tp) +
                           " ranks of one MPI job (mpiexec -n " + std::to_string(tp) + "), " +
                           (cbc::kBuiltWithMpi ? "and this process was not started by mpiexec"
                                               : "and this cbc was built without MPI (CBC_MPI=OFF)"))
                              .c_str());
  if (group->size() != tp)
    throw nb::value_error(("--tp " + std::to_string(tp) + " in an MPI job of " + std::to_string(group->size()) +
                           " ranks: start it with mpiexec -n " + std::to_string(tp))
                              .c_str());
  return group;
}

cbc::rt::EngineOptions engineOptions(const LoadOptions &o) {
  cbc::rt::EngineOptions options;
  options.backend = o.backend;
  options.threads = o.threads;
  options.max_batch_tokens = o.max_batch_tokens;
  options.max_requests = o.max_requests;
  options.cache_memory_bytes = o.cache_memory_mib << 20;
  options.max_model_len = o.max_model_len;
  options.prefix_caching = o.prefix_caching;
  options.snapshot_memory_bytes = o.snapshot_memory_mib < 0 ? -1 : o.snapshot_memory_mib << 20;
  options.snapshot_interval = o.snapshot_interval;
  options.swap_space_bytes = o.swap_space_mib << 20;
  if (!o.speculative.empty())
    if (std::string why = cbc::rt::checkSpeculativeMethod(o.speculative); !why.empty())
      throw nb::value_error(why.c_str());
  options.speculative = o.speculative;
  options.num_speculative_tokens = o.num_speculative_tokens;
  options.speculative_max_tokens = o.speculative_max_tokens;
  if (o.tp > 1)
    options.communicator = rankGroup(o.tp);
  return options;
}

// A rank other than 0 of a --tp group: this rank's shard, running rank 0's steps until rank 0's
// engine closes. A failure ends every rank of the job (the others may wait in a collective).
void followRank0(const std::string &artefact, const std::string &checkpoint, uint64_t seed, const LoadOptions &o) {
  cbc::rt::EngineOptions options = engineOptions(o);
  if (!options.communicator || options.communicator->rank() == 0)
    throw nb::value_error("follow_rank0 runs on the ranks other than 0 of a --tp group");
  cbc::rt::WeightSource weights{checkpoint, seed};
  nb::gil_scoped_release release;
  try {
    cbc::rt::followRank0(cbc::rt::Artefact::load(artefact), weights, options);
  } catch (const std::exception &e) {
    options.communicator->abort("cbc serve: rank " + std::to_string(options.communicator->rank()) + ": " + e.what());
  }
}

class Engine {
public:
  // checkpoint empty: random weights from `seed`.
  Engine(const std::string &artefact, const std::string &checkpoint, uint64_t seed, const LoadOptions &o) {
    cbc::rt::EngineOptions options = engineOptions(o);
    if (options.communicator && options.communicator->rank() != 0)
      throw nb::value_error("the engine of a --tp group runs on rank 0; the other ranks follow it");
    cbc::rt::WeightSource weights{checkpoint, seed};
    // Loading reads the weights: other threads run meanwhile. The runtime's refusals of the
    // input (a bad artefact or checkpoint, a budget this machine cannot hold) are ValueErrors.
    nb::gil_scoped_release release;
    try {
      engine_ = cbc::rt::Engine::load(artefact, weights, options);
    } catch (const cbc::rt::ArtefactError &e) {
      throw nb::value_error(e.what());
    } catch (const cbc::rt::WeightError &e) {
      throw nb::value_error(e.what());
    } catch (const cbc::rt::MemoryError &e) {
      throw nb::value_error(e.what());
    }
  }

  // (id, accepted, error, fork ids): the Python side raises for a rejected request.
  nb::tuple addRequest(std::vector<int32_t> prompt, const cbc::rt::SamplingParams &params,
                       std::vector<cbc::rt::EmbeddingSegment> embeds = {}) {
    cbc::rt::AddResult r;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      r = live().add_request(std::move(prompt), params, std::move(embeds));
    }
    return nb::make_tuple(r.id, r.accepted, r.error, nb::cast(r.forks));
  }

  // [(id, token, logprob, finished, finish_reason, top_logprobs)]
  nb::list step() {
    std::vector<cbc::rt::TokenEvent> events;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      events = live().step();
    }
    nb::list out;
    for (const auto &e : events)
      out.append(nb::make_tuple(e.id, e.token, e.logprob, e.finished, reasonName(e.reason), nb::cast(e.top)));
    return out;
  }

  bool idle() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return live().idle();
  }

  bool cancel(int64_t id) {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return live().cancel(id);
  }

  // [(id, prompt, tokens, logprobs, finish_reason, error, ttft_s, latency_s, preemptions,
  //   cached_tokens, parent, fork_index, top_logprobs, prompt_logprobs, prompt_top_logprobs)]
  nb::list takeFinished() {
    std::vector<cbc::rt::RequestOutput> done;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      done = live().take_finished();
    }
    nb::list out;
    for (auto &o : done) {
      nb::object error = o.error.empty() ? nb::none() : nb::object(nb::str(o.error.c_str()));
      out.append(nb::make_tuple(o.id, nb::cast(o.prompt), nb::cast(o.tokens), nb::cast(o.logprobs),
                                reasonName(o.finish), error, o.ttft_s, o.latency_s, o.preemptions,
                                o.cached_tokens, o.parent >= 0 ? nb::object(nb::int_(o.parent)) : nb::none(),
                                o.fork_index, nb::cast(o.top_logprobs), nb::cast(o.prompt_logprobs),
                                nb::cast(o.prompt_top_logprobs)));
    }
    return out;
  }

  // Everything a property reads, taken under one lock so the values agree with each other.
  nb::dict info() {
    cbc::rt::EngineStats s;
    size_t waiting, running;
    bool idle;
    double usage;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = live().stats();
      waiting = live().num_waiting();
      running = live().num_running();
      idle = live().idle();
      usage = cacheUsage();
    }
    nb::dict stats;
    stats["steps"] = s.steps;
    stats["prompt_tokens"] = s.prompt_tokens;
    stats["generated_tokens"] = s.generated_tokens;
    stats["computed_tokens"] = s.computed_tokens;
    stats["preemptions"] = s.preemptions;
    stats["finished"] = s.finished;
    stats["rejected"] = s.rejected;
    stats["cancelled"] = s.cancelled;
    stats["step_seconds"] = s.step_seconds;
    stats["schedule_seconds"] = s.schedule_seconds;
    stats["prefix_queries"] = s.prefix_queries;
    stats["prefix_hits"] = s.prefix_hits;
    stats["prefix_limited_by_state"] = s.prefix_limited_by_state;
    stats["cached_blocks"] = s.cached_blocks;
    stats["block_evictions"] = s.block_evictions;
    stats["snapshots"] = s.snapshots;
    stats["snapshot_drops"] = s.snapshot_drops;
    stats["snapshot_evictions"] = s.snapshot_evictions;
    stats["cached_snapshots"] = s.cached_snapshots;
    stats["snapshot_bytes"] = s.snapshot_bytes;
    stats["forks"] = s.forks;
    stats["fork_fallbacks"] = s.fork_fallbacks;
    stats["swaps_out"] = s.swaps_out;
    stats["swaps_in"] = s.swaps_in;
    stats["swap_fallbacks"] = s.swap_fallbacks;
    stats["swap_bytes"] = s.swap_bytes;
    stats["draft_tokens"] = s.draft_tokens;
    stats["accepted_tokens"] = s.accepted_tokens;
    stats["spec_rollbacks"] = s.spec_rollbacks;
    stats["drafted_at"] = s.drafted_at;
    stats["accepted_at"] = s.accepted_at;
    nb::dict d;
    d["stats"] = stats;
    d["num_waiting"] = waiting;
    d["num_running"] = running;
    d["idle"] = idle;
    d["cache_usage"] = usage;
    return d;
  }

  // Fixed at load: no lock needed.
  std::vector<int64_t> eosTokenIds() const { return live().artefact().meta.eos_token_ids; }
  int64_t vocabSize() const { return live().artefact().meta.vocab_size; }
  int64_t promptVocabSize() const { return live().artefact().meta.promptVocab(); }
  int64_t embeddingWidth() const { return live().embedding_width(); }
  int64_t maxModelLen() const { return live().max_model_len(); }
  std::string backendName() const { return live().backend().name(); }
  // The budgets in force, chosen from the machine when none was given.
  int64_t cacheMemoryMib() const { return live().options().cache_memory_bytes >> 20; }
  int64_t maxBatchTokens() const { return live().options().max_batch_tokens; }

private:
  // The larger of the two fractions in use: kv blocks (all groups with block tables) and request
  // slots (each holding one state unit).
  double cacheUsage() const {
    const cbc::rt::CacheCoordinator &c = live().cache();
    double blocks = (double)c.blocksPerGroup() * c.numTableGroups();
    double slots = (double)c.maxSlots();
    double b = blocks > 0 ? (double)c.usedBlocks() / blocks : 0.0;
    double s = slots > 0 ? (double)(c.maxSlots() - c.freeSlots()) / slots : 0.0;
    return std::max(b, s);
  }

public:
  // Structured outputs: the tokenizer's vocabulary for the grammars' compiler (once per engine).
  void setStructuredVocab(std::vector<std::string> vocab, const std::string &tokenizerJson,
                          std::vector<int32_t> stopIds) {
#ifdef CBC_STRUCTURED
    nb::gil_scoped_release release;
    try {
      structured_ = std::make_unique<cbc::rt::StructuredOutputs>(vocab, tokenizerJson,
                                                                 live().artefact().meta.vocab_size, stopIds);
    } catch (const std::invalid_argument &e) {
      throw nb::value_error(e.what());
    }
#else
    (void)vocab, (void)tokenizerJson, (void)stopIds;
    throw nb::value_error(kNoStructured);
#endif
  }

  // A constraint for `kind` ("json_schema", "json", "regex", "grammar") and its spec; a bad
  // spec, a missing vocabulary or a build without xgrammar is a ValueError.
  std::shared_ptr<cbc::rt::TokenConstraint> constraint(const std::string &kind, const std::string &spec) {
#ifdef CBC_STRUCTURED
    cbc::rt::GrammarKind k;
    if (!cbc::rt::grammarKindFromName(kind, k))
      throw nb::value_error(
          ("structured output kind must be json_schema, json, regex, grammar or structural_tag, not '" + kind + "'")
              .c_str());
    if (!structured_)
      throw nb::value_error("structured outputs need the tokenizer's vocabulary: call set_structured_vocab first");
    nb::gil_scoped_release release;
    try {
      return structured_->constraint(k, spec);
    } catch (const std::invalid_argument &e) {
      throw nb::value_error(("cannot compile the " + kind + ": " + e.what()).c_str());
    }
#else
    (void)kind, (void)spec;
    throw nb::value_error(kNoStructured);
#endif
  }

  // Ends the engine (a --tp group's other ranks are told to stop); later calls raise.
  void close() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    engine_.reset();
  }

private:
  cbc::rt::Engine &live() const {
    if (!engine_)
      throw std::runtime_error("the engine is closed");
    return *engine_;
  }
  static constexpr const char *kNoStructured =
      "this cbc was built without structured outputs (xgrammar's source could not be had at configure time)";
  std::unique_ptr<cbc::rt::Engine> engine_;
  std::mutex mutex_;
#ifdef CBC_STRUCTURED
  std::unique_ptr<cbc::rt::StructuredOutputs> structured_;
#endif
};

cbc::rt::SamplingParams samplingParams(int64_t max_new_tokens, double temperature, int64_t top_k, double top_p,
                                       double min_p, uint64_t seed, std::vector<int64_t> stop_token_ids,
                                       bool ignore_eos, bool logprobs, int64_t n, std::string cache_salt,
                                       std::vector<int64_t> cache_marks) {
  cbc::rt::SamplingParams p;
  p.n = n;
  p.cache_salt = std::move(cache_salt);
  p.cache_marks = std::move(cache_marks);
  p.max_new_tokens = max_new_tokens;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = seed;
  p.stop_token_ids = std::move(stop_token_ids);
  p.ignore_eos = ignore_eos;
  p.logprobs = logprobs;
  return p;
}

// The segments of add_request: (start, rows, data, grid) with data the rows' float32 values as
// bytes in the machine's order (cbc.EmbeddingSegment makes them) and grid () or (t, h, w). The
// engine checks the rows against the data and the model; only the shape of the tuples is
// checked here.
std::vector<cbc::rt::EmbeddingSegment> embeddingSegments(nb::handle embeds) {
  std::vector<cbc::rt::EmbeddingSegment> out;
  if (embeds.is_none())
    return out;
  for (nb::handle item : embeds) {
    nb::tuple t = nb::cast<nb::tuple>(item);
    if (t.size() != 5)
      throw nb::type_error("an embedding segment is (start, rows, data, grid, modality)");
    cbc::rt::EmbeddingSegment seg;
    seg.start = nb::cast<int64_t>(t[0]);
    seg.rows = nb::cast<int64_t>(t[1]);
    nb::bytes data = nb::cast<nb::bytes>(t[2]);
    if (data.size() % sizeof(float) != 0)
      throw nb::value_error("embedding data must be whole float32 values (4 bytes each)");
    auto values = std::make_shared<std::vector<float>>(data.size() / sizeof(float));
    std::memcpy(values->data(), data.c_str(), data.size());
    seg.data = std::move(values);
    nb::tuple grid = nb::cast<nb::tuple>(t[3]);
    if (grid.size() != 0 && grid.size() != 3)
      throw nb::value_error("an embedding segment's grid is (t, h, w)");
    for (size_t c = 0; c < grid.size(); ++c)
      seg.grid[c] = nb::cast<int64_t>(grid[c]);
    std::string modality = nb::cast<std::string>(t[4]);
    if (!cbc::rt::modalityFromName(modality, seg.modality))
      throw nb::value_error(("an embedding segment's modality is \"image\", \"video\" or \"audio\", not \"" +
                             modality + "\"").c_str());
    out.push_back(std::move(seg));
  }
  return out;
}

} // namespace

NB_MODULE(_runtime, m) {
  m.doc() = "The cbc runtime's engine (runtime/engine.h); use cbc.Engine, which wraps it.";
  // The artefact format this runtime reads: compiled artefacts cached by it key on it.
  m.attr("format_version") = cbc::kFormatVersion;
  // Whether an engine can be one rank of an MPI job (Engine(tp=N), follow_rank0).
  m.attr("built_with_mpi") = cbc::kBuiltWithMpi;
  m.def("check_speculative_method", &cbc::rt::checkSpeculativeMethod, "method"_a,
        "Empty when --speculative METHOD is one this build runs; otherwise why not.");
  m.def(
      "follow_rank0",
      [](const std::string &artefact, const std::string &checkpoint, uint64_t seed, const std::string &backend,
         int threads, int64_t tp) {
        LoadOptions o;
        o.backend = backend;
        o.threads = threads;
        o.tp = tp;
        followRank0(artefact, checkpoint, seed, o);
      },
      "artefact"_a, "checkpoint"_a, "seed"_a, "backend"_a, "threads"_a, "tp"_a);
  nb::class_<Engine>(m, "Engine")
      .def("__init__",
           [](Engine *self, const std::string &artefact, const std::string &checkpoint, uint64_t seed,
              const std::string &backend, int threads, int64_t max_batch_tokens, int64_t max_requests,
              int64_t cache_memory_mib, int64_t max_model_len, bool prefix_caching, int64_t snapshot_memory_mib,
              int64_t snapshot_interval, int64_t swap_space_mib, int64_t tp, std::string speculative,
              int64_t num_speculative_tokens, int64_t speculative_max_tokens) {
             LoadOptions o{backend,       threads,        max_batch_tokens,    max_requests,
                           cache_memory_mib, max_model_len, prefix_caching, snapshot_memory_mib,
                           snapshot_interval, swap_space_mib, tp, speculative, num_speculative_tokens,
                           speculative_max_tokens};
             new (self) Engine(artefact, checkpoint, seed, o);
           },
           "artefact"_a, "checkpoint"_a, "seed"_a, "backend"_a, "threads"_a, "max_batch_tokens"_a,
           "max_requests"_a, "cache_memory_mib"_a, "max_model_len"_a, "prefix_caching"_a = true,
           "snapshot_memory_mib"_a = -1, "snapshot_interval"_a = 0, "swap_space_mib"_a = 0, "tp"_a = 1,
           "speculative"_a = "", "num_speculative_tokens"_a = 3, "speculative_max_tokens"_a = 0)
      .def("close", &Engine::close)
      .def("add_request",
           [](Engine &e, std::vector<int32_t> prompt, int64_t max_new_tokens, double temperature, int64_t top_k,
              double top_p, double min_p, uint64_t seed, std::vector<int64_t> stop_token_ids, bool ignore_eos,
              bool logprobs, int64_t n, std::string cache_salt, std::vector<int64_t> cache_marks, nb::handle embeds,
              std::map<int32_t, float> logit_bias, double repetition_penalty, double presence_penalty,
              double frequency_penalty, int64_t min_tokens, std::vector<std::vector<int32_t>> bad_words,
              int64_t top_logprobs, int64_t prompt_logprobs, std::string structured_kind,
              std::string structured_spec) {
             cbc::rt::SamplingParams p =
                 samplingParams(max_new_tokens, temperature, top_k, top_p, min_p, seed, std::move(stop_token_ids),
                                ignore_eos, logprobs, n, std::move(cache_salt), std::move(cache_marks));
             p.logit_bias.assign(logit_bias.begin(), logit_bias.end());
             p.repetition_penalty = repetition_penalty;
             p.presence_penalty = presence_penalty;
             p.frequency_penalty = frequency_penalty;
             p.min_tokens = min_tokens;
             p.bad_words = std::move(bad_words);
             p.top_logprobs = top_logprobs;
             p.prompt_logprobs = prompt_logprobs;
             if (!structured_kind.empty())
               p.constraint = e.constraint(structured_kind, structured_spec);
             return e.addRequest(std::move(prompt), p, embeddingSegments(embeds));
           },
           "prompt"_a, "max_new_tokens"_a, "temperature"_a, "top_k"_a, "top_p"_a, "min_p"_a, "seed"_a,
           "stop_token_ids"_a, "ignore_eos"_a, "logprobs"_a, "n"_a = 1, "cache_salt"_a = "",
           "cache_marks"_a = std::vector<int64_t>{}, "embeds"_a = nb::none(),
           "logit_bias"_a = std::map<int32_t, float>{}, "repetition_penalty"_a = 1.0, "presence_penalty"_a = 0.0,
           "frequency_penalty"_a = 0.0, "min_tokens"_a = 0,
           "bad_words"_a = std::vector<std::vector<int32_t>>{}, "top_logprobs"_a = 0,
           "prompt_logprobs"_a = -1, "structured_kind"_a = "", "structured_spec"_a = "")
      .def("set_structured_vocab", &Engine::setStructuredVocab, "vocab"_a, "tokenizer_json"_a, "stop_ids"_a)
      .def("step", &Engine::step)
      .def("cancel", &Engine::cancel, "id"_a)
      .def("idle", &Engine::idle)
      .def("take_finished", &Engine::takeFinished)
      .def("info", &Engine::info)
      .def_prop_ro("eos_token_ids", &Engine::eosTokenIds)
      .def_prop_ro("vocab_size", &Engine::vocabSize)
      .def_prop_ro("prompt_vocab_size", &Engine::promptVocabSize)
      .def_prop_ro("embedding_width", &Engine::embeddingWidth)
      .def_prop_ro("max_model_len", &Engine::maxModelLen)
      .def_prop_ro("backend", &Engine::backendName)
      .def_prop_ro("cache_memory_mib", &Engine::cacheMemoryMib)
      .def_prop_ro("max_batch_tokens", &Engine::maxBatchTokens);
}
