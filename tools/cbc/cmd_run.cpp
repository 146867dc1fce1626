#include "runtime/engine.h"
#include "runtime/speculative.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/embedding_source.h"
#include "runtime/artefact.h"
#include "runtime/build_config.h"
#include "runtime/cache/coordinator.h"
#include "runtime/weights.h"
#include "runtime/memory_estimate.h"
#include "runtime/schema/limits.h"
#include "tools/cbc/cli.h"
#include "tools/cbc/commands.h"
#include "tools/cbc/prompt_reader.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace cbc::cli {

namespace {

using nlohmann::json;

// A progress line on stderr (a terminal only). The total is unknown until the input ends.
class Progress {
public:
  explicit Progress(bool enabled) : enabled_(enabled && isatty(2)) {}
  void update(size_t done, size_t read, bool allRead, int64_t generated, double elapsed) {
    if (!enabled_)
      return;
    shown_ = true;
    std::string total = allRead ? std::to_string(read) : std::to_string(read) + "+";
    int width = 30, filled = allRead && read ? (int)(width * done / read) : 0;
    std::fprintf(stderr, "\r\033[K[%s%s] %zu/%s requests, %lld tokens, %.1f tok/s",
                 std::string(filled, '#').c_str(), std::string(width - filled, allRead ? ' ' : '.').c_str(),
                 done, total.c_str(), (long long)generated, elapsed > 0 ? generated / elapsed : 0.0);
  }
  // Before a result goes to a terminal that also shows the bar.
  void clear() {
    if (shown_)
      std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }
  void end() {
    if (shown_)
      std::fprintf(stderr, "\n");
    shown_ = false;
  }

private:
  bool enabled_, shown_ = false;
};

const char *kRunAbout =
    "Serves JSONL prompts with continuous batching. Lines are read as they arrive (a file, a\n"
    "pipe or the terminal) and each is served at once; each request's result is printed, as one\n"
    "JSONL line with its \"index\" (its place among the input's non-blank lines, from 0), as soon\n"
    "as it finishes: results come in completion order, not input order. A line is a list of token\n"
    "ids or an object {\"prompt\": [...], \"id\": ANY, \"max_new_tokens\": N, \"temperature\": T,\n"
    "\"top_k\": K, \"top_p\": P, \"min_p\": M, \"seed\": S, \"stop_token_ids\": [...],\n"
    "\"ignore_eos\": B, \"logprobs\": B, \"top_logprobs\": K, \"n\": N, \"cache_salt\": S,\n"
    "\"cache_marks\": [...],\n"
    "\"logit_bias\": {\"ID\": BIAS}, \"repetition_penalty\": R, \"presence_penalty\": P,\n"
    "\"frequency_penalty\": F, \"bad_words\": [[...], ...], \"min_tokens\": M}. The logits pass the\n"
    "bias, the repetition penalty (prompt and output tokens, transformers'\n"
    "RepetitionPenaltyLogitsProcessor), the presence and frequency penalties (output tokens,\n"
    "OpenAI's), the bad words (a sequence's last token where the tokens so far end with the rest of\n"
    "it) and min_tokens (no eos before it), in that order, before sampling; \"logprobs\" then\n"
    "reports the processed distribution, and \"top_logprobs\" (0 to 20, implying \"logprobs\") the K\n"
    "most likely ids of it per token, [[id, logprob], ...] best first. \"prompt_logprobs\": K (0 to\n"
    "20) reports the raw log-probability of each prompt token after the first, with the K most\n"
    "likely ids of its row (such a prompt is computed whole, never from the prefix cache). Every\n"
    "line gets exactly one result, or one per sequence with \"n\" (each with its \"sequence\", from 0;\n"
    "the n sequences share the prompt's cache): a bad one (malformed, an unknown key, a wrong type\n"
    "or range) is \"rejected\" with an \"error\" naming its line and field, and the others go on.\n"
    "Prefix caching is on unless --no-prefix-cache: a prompt starts past the longest prefix whose\n"
    "cache rows an earlier request left (\"cached_tokens\" in its result); \"cache_salt\" keeps\n"
    "prompts of different salts apart, and \"cache_marks\" names prompt positions (a chat\n"
    "message's start) where a recurrent model's state is worth keeping. With --stream, each generated token is also printed as\n"
    "{\"index\": I, \"token\": T} (with \"logprob\" when asked for) as it is generated. A bad flag\n"
    "or prompts file exits with status 2 before any work.\n"
    "\n"
    "A multimodal model's decoder takes embeddings (an encoder's image or audio features) for\n"
    "runs of prompt rows: \"embeds\": [SEGMENT, ...], each SEGMENT {\"file\": \"x.npy\"} (float32,\n"
    "float16 or float64, little-endian, C order), {\"file\": \"x.safetensors\", \"tensor\": NAME}\n"
    "(F32, BF16 or F16; NAME defaults to the file's only tensor) or {\"base64\": B} (float32\n"
    "little-endian bytes), placed by \"start\": ROW (its first prompt row) or, when the request\n"
    "gives \"placeholder\": ID, on the prompt's runs of that token id in order (one segment a run);\n"
    "\"grid\": [t, h, w] for a model with multimodal RoPE. A segment's rows are its values divided\n"
    "by the model's embedding width; relative paths are read from the current directory. A bad\n"
    "segment (a missing file, a width, a count of runs or rows that does not fit) rejects its line.";

Args runArgs() {
  return Args("run", kRunAbout,
              {{"--weights", "CHECKPOINT", "safetensors checkpoint: a directory, a .safetensors file, its model.safetensors.index.json or the config.json beside it"},
               {"--random-weights", "", "use random weights instead of a checkpoint"},
               {"--seed", "S", "seed of the random weights and of request i's sampling (S + i), >= 0 (default 0)"},
               {"--prompts", "FILE", "JSONL prompts (default: standard input)"},
               {"-o", "FILE", "write results here (default: standard output)"},
               {"--stream", "", "also print each token as it is generated"},
               {"--max-new-tokens", "N", "default max_new_tokens, >= 1 (default 16)"},
               {"--temperature", "T", "default temperature, >= 0; 0 is greedy (default 0)"},
               {"--top-k", "K", "default top-k, >= 0 (default 0: off)"},
               {"--top-p", "P", "default top-p, in (0, 1] (default 1)"},
               {"--min-p", "P", "default min-p, in [0, 1] (default 0)"},
               {"--logprobs", "", "report the log-probability of each generated token"},
               {"--backend", "auto|cpu|cuda",
                kBuiltWithCuda ? "execution backend (default auto: CUDA if usable, else CPU)"
                               : "execution backend (default auto, which is the CPU: this cbc was built without CUDA)"},
               {"--max-batch-tokens", "N", "token budget per step, 1 to 2^20 (default: chosen for the backend, 1024 on the CPU)"},
               {"--max-requests", "N", "requests per step, 1 to 2^20 (default 64)"},
               {"--cache-memory", "MIB",
                "memory for the paged cache, 1 to 16777216 MiB (default: half the host memory left beside the "
                "weights, 0.9 of the GPU's; at least 256, at most what the live requests can use)"},
               {"--threads", "N", "CPU threads, 1 to 1024 (default 0: all cores)"},
               {"--no-prefix-cache", "", "compute every prompt whole: no prefix caching"},
               {"--snapshot-memory", "MIB",
                "recurrent models: cache memory for state snapshots (prefix-cache hits), 0 to 16777216 MiB "
                "(default: a fifth of the cache memory)"},
               {"--snapshot-interval", "N",
                "recurrent models: also keep a state snapshot every N prompt tokens, a multiple of 64 "
                "(default 0: only at the prompt's end, at marks and where attention matched further)"},
               {"--swap-space", "MIB",
                "host memory for preempted requests' cache, restored when they resume instead of recomputed, "
                "0 to 16777216 MiB (default 0: recompute)"},
               {"--speculative", "METHOD",
                "speculative decoding: ngram (prompt lookup: guess the tokens that followed the context's last "
                "n-gram before) verifies up to --num-speculative-tokens guesses per request in a step "
                "(draft:PATH and mtp are not supported yet; default off)"},
               {"--num-speculative-tokens", "K", "with --speculative: guesses per request and step, 1 to 64 (default 3)"},
               {"--speculative-max-tokens", "N",
                "with --speculative: no guesses once a step would pass N tokens (the batch is compute-bound), "
                "1 to 2^20 (default 16)"},
               {"--collective-timeout", "S",
                "tensor-parallel artefacts (mpiexec -n N cbc run): seconds a step may wait for the other ranks "
                "before every rank is aborted, 1 to 86400 (default 300)"},
               {"--quiet", "", "no progress bar or summary"}},
              "MODEL");
}

// What the flags ask for. Throws UsageError.
struct RunSettings {
  rt::EngineOptions options;
  rt::SamplingParams defaults;
  rt::WeightSource weights;
  bool quiet = false, stream = false;
  double collectiveTimeout = 300;
};

// An integer flag within [lo, hi]: the message names the flag and the range.
int64_t intFlag(const Args &args, const std::string &flag, int64_t fallback, int64_t lo, int64_t hi,
                const std::string &range) {
  int64_t v = args.getInt(flag, fallback);
  if (v < lo || v > hi)
    throw UsageError(flag + " must be " + range + ", got " + std::to_string(v));
  return v;
}

// A number flag: finite, and ok(v) (the range in words).
template <typename Ok>
double numberFlag(const Args &args, const std::string &flag, double fallback, Ok ok, const std::string &range) {
  double v = args.getDouble(flag, fallback);
  if (!std::isfinite(v) || !ok(v))
    throw UsageError(flag + " must be " + range + ", got " + args.get(flag));
  return v;
}

void readSpeculative(const Args &args, rt::EngineOptions &o) {
  if (!args.has("--speculative")) {
    for (const char *flag : {"--num-speculative-tokens", "--speculative-max-tokens"})
      if (args.has(flag))
        throw UsageError(std::string(flag) + " needs --speculative METHOD");
    return;
  }
  o.speculative = args.get("--speculative");
  if (std::string why = rt::checkSpeculativeMethod(o.speculative); !why.empty())
    throw UsageError(why);
  o.num_speculative_tokens = intFlag(args, "--num-speculative-tokens", 3, 1, 64, "in [1, 64]");
  o.speculative_max_tokens = intFlag(args, "--speculative-max-tokens", 16, 1, 1 << 20, "in [1, 2^20]");
}

RunSettings readSettings(const Args &args) {
  if (args.positionals().size() != 1)
    throw UsageError("expected exactly one MODEL argument");
  if (args.has("--weights") == args.has("--random-weights"))
    throw UsageError("give either --weights CHECKPOINT or --random-weights");
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  RunSettings r;
  r.weights.checkpoint_dir = args.get("--weights");
  r.weights.seed = (uint64_t)intFlag(args, "--seed", 0, 0, kMax, ">= 0");
  rt::SamplingParams &d = r.defaults;
  d.max_new_tokens = intFlag(args, "--max-new-tokens", 16, 1, kMax, ">= 1");
  d.temperature = numberFlag(args, "--temperature", 0.0, [](double v) { return v >= 0; }, "a number >= 0");
  d.top_k = intFlag(args, "--top-k", 0, 0, kMax, ">= 0");
  d.top_p = numberFlag(args, "--top-p", 1.0, [](double v) { return v > 0 && v <= 1; }, "in (0, 1]");
  d.min_p = numberFlag(args, "--min-p", 0.0, [](double v) { return v >= 0 && v <= 1; }, "in [0, 1]");
  d.logprobs = args.has("--logprobs");
  rt::EngineOptions &o = r.options;
  o.backend = args.get("--backend", "auto");
  if (o.backend != "auto" && o.backend != "cpu" && o.backend != "cuda")
    throw UsageError("--backend must be auto, cpu or cuda, got '" + o.backend + "'");
  if (!kBuiltWithCuda && o.backend == "cuda")
    throw UsageError("--backend cuda: this cbc was built without CUDA (CBC_CUDA=OFF); use --backend cpu or auto");
  // Left at 0 unless given: the engine chooses them from the machine (runtime/engine_sizing.h).
  if (args.has("--max-batch-tokens"))
    o.max_batch_tokens = intFlag(args, "--max-batch-tokens", 0, 1, 1 << 20, "in [1, 2^20]");
  o.max_requests = intFlag(args, "--max-requests", 64, 1, 1 << 20, "in [1, 2^20]");
  // In MiB, shifted to bytes: bounded so that the shift cannot overflow (2^24 MiB: 16 TiB).
  if (args.has("--cache-memory"))
    o.cache_memory_bytes = intFlag(args, "--cache-memory", 0, 1, int64_t(1) << 24, "in [1, 16777216] MiB") << 20;
  o.threads = (int)intFlag(args, "--threads", 0, 0, 1024, "in [1, 1024], or 0 for all cores");
  o.prefix_caching = !args.has("--no-prefix-cache");
  if (args.has("--snapshot-memory"))
    o.snapshot_memory_bytes = intFlag(args, "--snapshot-memory", 0, 0, int64_t(1) << 24, "in [0, 16777216] MiB") << 20;
  o.snapshot_interval = intFlag(args, "--snapshot-interval", 0, 0, int64_t(1) << 40, "a multiple of 64, >= 0");
  if (o.snapshot_interval % 64 != 0)
    throw UsageError("--snapshot-interval must be a multiple of 64 (the snapshot grid), got " +
                     std::to_string(o.snapshot_interval));
  o.swap_space_bytes = intFlag(args, "--swap-space", 0, 0, int64_t(1) << 24, "in [0, 16777216] MiB") << 20;
  readSpeculative(args, o);
  r.collectiveTimeout = (double)intFlag(args, "--collective-timeout", 300, 1, 86400, "in [1, 86400] seconds");
  r.quiet = args.has("--quiet");
  r.stream = args.has("--stream");
  bool quiet = r.quiet;
  o.log = [quiet](const std::string &m) {
    if (!quiet)
      std::fprintf(stderr, "cbc run: %s\n", m.c_str());
  };
  return r;
}

// The prompts' file descriptor: standard input for "-". Throws UsageError for a missing file,
// a directory or one that cannot be read, before any work.
int openPrompts(const std::string &path) {
  if (path == "-")
    return 0;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError("cannot read prompts '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    throw UsageError("prompts '" + path + "' is a directory, not a JSONL file");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw UsageError("cannot read prompts '" + path + "': " + std::strerror(errno));
  return fd;
}

// The engine, or the exit status: 2 for a bad artefact or checkpoint, 1 for anything else.
std::unique_ptr<rt::Engine> loadEngine(rt::Artefact artefact, const RunSettings &s, int &status) {
  try {
    rt::EngineOptions options = s.options;
    if (!s.quiet && isatty(2))
      options.load_progress = rt::terminalLoadProgress("cbc run: ");
    auto engine = rt::Engine::create(std::move(artefact), s.weights, options);
    if (!s.quiet) {
      // What the engine chose for the budgets not given (sized from the machine).
      const rt::EngineOptions &in = engine->options();
      std::fprintf(stderr,
                   "cbc run: %s backend, %d cache blocks per group of %d tokens, cache memory %lld MiB%s, "
                   "%lld tokens a step%s\n",
                   engine->backend().name().c_str(), engine->cache().blocksPerGroup(), engine->cache().blockSize(),
                   (long long)(in.cache_memory_bytes >> 20), s.options.cache_memory_bytes ? "" : " (chosen)",
                   (long long)in.max_batch_tokens, s.options.max_batch_tokens ? "" : " (chosen)");
    }
    return engine;
  } catch (const rt::ArtefactError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    status = 2;
  } catch (const rt::WeightError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    status = 2;
  } catch (const rt::MemoryError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    status = 2;
  } catch (const std::bad_alloc &) {
    // What the flags asked for (or the model) does not fit this machine: bad input, not a bug.
    // A budget left to the engine (0) is named as chosen: its figure was not kept.
    auto given = [](int64_t v, const char *unit) {
      return v ? std::to_string(v) + unit : std::string("chosen from the machine");
    };
    std::fprintf(stderr,
                 "cbc run: error: out of memory loading the model and its buffers (--cache-memory %s, "
                 "--max-batch-tokens %s, --max-requests %lld); lower them\n",
                 given(s.options.cache_memory_bytes >> 20, " MiB").c_str(), given(s.options.max_batch_tokens, "").c_str(),
                 (long long)s.options.max_requests);
    status = 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    status = 1;
  }
  return nullptr;
}

json resultLine(const rt::RequestOutput &o, const PromptLine &p) {
  json r = {{"index", p.index}, {"tokens", o.tokens}, {"finish_reason", rt::finishReasonName(o.finish)},
            {"prompt_tokens", o.prompt.size()}, {"generated_tokens", o.tokens.size()},
            {"ttft_ms", o.ttft_s * 1e3}, {"latency_ms", o.latency_s * 1e3},
            {"preemptions", o.preemptions}, {"cached_tokens", o.cached_tokens}};
  if (p.request.params.n > 1)
    r["sequence"] = o.fork_index;
  if (!p.request.user_id.is_null())
    r["id"] = p.request.user_id;
  if (!o.error.empty())
    r["error"] = "line " + std::to_string(p.line) + ": " + o.error;
  if (p.request.params.wantsLogprobs())
    r["logprobs"] = o.logprobs;
  if (p.request.params.top_logprobs > 0)
    r["top_logprobs"] = o.top_logprobs; // per token: [[id, logprob], ...], best first
  if (p.request.params.wantsPromptLogprobs()) {
    r["prompt_logprobs"] = o.prompt_logprobs; // prompt tokens 1.. (the first has none)
    if (p.request.params.prompt_logprobs > 0)
      r["prompt_top_logprobs"] = o.prompt_top_logprobs;
  }
  return r;
}

// A line the parser refused: answered without reaching the engine.
json malformedLine(const PromptLine &p) {
  json r = {{"index", p.index}, {"tokens", json::array()}, {"finish_reason", "rejected"},
            {"error", "line " + std::to_string(p.line) + ": " + p.request.error}};
  if (!p.request.user_id.is_null())
    r["id"] = p.request.user_id;
  return r;
}

// Serves the prompts as the reader hands them over; prints each result (and with --stream each
// token) as it comes, flushed, so a consumer can answer a result before sending the next line.
// Only this thread touches the engine. Throws what the engine throws.
class Server {
public:
  Server(rt::Engine &engine, PromptReader &reader, std::ostream &out, const RunSettings &s)
      : engine_(engine), reader_(reader), out_(out), stream_(s.stream), progress_(!s.quiet) {}

  void run() {
    auto start = std::chrono::steady_clock::now();
    // Lines wait in the reader (bounded) rather than in the engine once this many are queued.
    const size_t maxWaiting = 1024;
    std::vector<PromptLine> arrived;
    bool inputOpen = true;
    while (inputOpen || !engine_.idle()) {
      if (inputOpen) {
        arrived.clear();
        size_t room = engine_.num_waiting() < maxWaiting ? maxWaiting - engine_.num_waiting() : 0;
        if (room > 0 || engine_.idle())
          inputOpen = reader_.take(arrived, std::max<size_t>(room, 1), engine_.idle());
        for (PromptLine &p : arrived)
          add(std::move(p));
        collect();
      }
      if (!engine_.idle()) {
        std::vector<rt::TokenEvent> events = engine_.step();
        if (stream_)
          print(events);
        collect();
      }
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress_.update(done_, reader_.count(), !inputOpen, engine_.stats().generated_tokens, elapsed);
    }
    progress_.end();
    if (!lines_.empty())
      throw std::logic_error(std::to_string(lines_.size()) + " requests ended without a result");
  }
  void abandon() { progress_.end(); }

  size_t malformed() const { return malformed_; }

private:
  void add(PromptLine p) {
    if (!p.request.error.empty()) {
      emit(malformedLine(p));
      ++malformed_;
      return;
    }
    // Embeddings: read and placed now that the model's width is known; the line keeps no data.
    std::vector<rt::EmbeddingSegment> embeds;
    if (!p.request.embeds.empty() || p.request.placeholder >= 0) {
      std::string bad = rt::resolveEmbeddings(p.request.embeds, p.request.placeholder, p.request.ids,
                                              engine_.embedding_width(), embeds);
      std::vector<rt::PendingSegment>().swap(p.request.embeds);
      if (!bad.empty()) {
        p.request.error = bad;
        emit(malformedLine(p));
        ++malformed_;
        return;
      }
    }
    // The engine keeps the prompt; the line keeps what its result echoes (once per sequence).
    rt::AddResult added = engine_.add_request(std::move(p.request.ids), p.request.params, std::move(embeds));
    for (rt::RequestId fork : added.forks)
      lines_[fork] = p;
    sequencesLeft_[p.index] = 1 + (int64_t)added.forks.size();
    lines_[added.id] = std::move(p);
  }

  void collect() {
    for (const rt::RequestOutput &o : engine_.take_finished()) {
      auto it = lines_.find(o.id);
      write(resultLine(o, it->second));
      // A line is done when its last sequence is.
      auto left = sequencesLeft_.find(it->second.index);
      if (--left->second == 0) {
        sequencesLeft_.erase(left);
        ++done_;
      }
      lines_.erase(it);
    }
  }

  void print(const std::vector<rt::TokenEvent> &events) {
    for (const rt::TokenEvent &ev : events) {
      const PromptLine &p = lines_.at(ev.id);
      json e = {{"index", p.index}, {"token", ev.token}};
      if (p.request.params.wantsLogprobs())
        e["logprob"] = ev.logprob;
      if (p.request.params.top_logprobs > 0)
        e["top_logprobs"] = ev.top;
      write(e);
    }
  }

  void emit(const json &result) {
    write(result);
    ++done_;
  }

  void write(const json &line) {
    progress_.clear();
    out_ << line.dump() << "\n";
    out_.flush();
    if (!out_)
      throw std::runtime_error("cannot write the results (disk full or output closed?)");
  }

  rt::Engine &engine_;
  PromptReader &reader_;
  std::ostream &out_;
  bool stream_;
  Progress progress_;
  std::map<rt::RequestId, PromptLine> lines_;
  std::map<int64_t, int64_t> sequencesLeft_; // by line index
  size_t done_ = 0, malformed_ = 0;
};

// Speculative decoding's figures: drafts verified and accepted, in all and per position.
std::string speculationSummary(const rt::EngineStats &s, const std::string &method) {
  auto percent = [](int64_t a, int64_t b) { return b > 0 ? 100.0 * (double)a / (double)b : 0.0; };
  char line[256];
  std::snprintf(line, sizeof line, "speculative decoding (%s): %lld draft tokens verified, %lld accepted (%.1f%%); by position",
                method.c_str(), (long long)s.draft_tokens, (long long)s.accepted_tokens,
                percent(s.accepted_tokens, s.draft_tokens));
  std::string out = line;
  for (size_t j = 0; j < s.drafted_at.size(); ++j) {
    std::snprintf(line, sizeof line, " %.1f%%", percent(s.accepted_at[j], s.drafted_at[j]));
    out += line;
  }
  std::snprintf(line, sizeof line, "; %lld steps undone for a recurrent state", (long long)s.spec_rollbacks);
  return out + line;
}

void printSummary(const rt::EngineStats &s, const rt::EngineOptions &o, size_t prompts, size_t malformed,
                  double elapsed) {
  int64_t rss = rt::peakResidentMemory();
  std::string peak = rss < 0 ? "unknown" : std::to_string((rss + 500'000) / 1'000'000) + " MB";
  std::fprintf(stderr,
               "cbc run: %zu requests (%lld rejected), %lld prompt tokens, %lld generated tokens "
               "in %.2f s: %.1f generated tok/s, %.1f processed tok/s, %lld steps, %lld preemptions "
               "(cache memory %lld MiB, %lld tokens a step, peak RSS %s)\n",
               prompts, (long long)(s.rejected + malformed), (long long)s.prompt_tokens,
               (long long)s.generated_tokens, elapsed,
               elapsed > 0 ? s.generated_tokens / elapsed : 0.0,
               elapsed > 0 ? s.computed_tokens / elapsed : 0.0, (long long)s.steps,
               (long long)s.preemptions, (long long)(o.cache_memory_bytes >> 20), (long long)o.max_batch_tokens,
               peak.c_str());
  if (!o.prefix_caching) {
    std::fprintf(stderr, "cbc run: prefix cache off\n");
  } else {
    std::fprintf(stderr,
                 "cbc run: prefix cache: %lld of %lld prompt tokens found cached (%.1f%%), %lld more had attention "
                 "rows but no state snapshot; %lld blocks cached, %lld evicted; %lld state snapshots kept "
                 "(%.1f MB), %lld taken, %lld dropped, %lld evicted\n",
                 (long long)s.prefix_hits, (long long)s.prefix_queries,
                 s.prefix_queries > 0 ? 100.0 * (double)s.prefix_hits / (double)s.prefix_queries : 0.0,
                 (long long)s.prefix_limited_by_state, (long long)s.cached_blocks, (long long)s.block_evictions,
                 (long long)s.cached_snapshots, (double)s.snapshot_bytes / 1e6, (long long)s.snapshots,
                 (long long)s.snapshot_drops, (long long)s.snapshot_evictions);
  }
  if (!o.speculative.empty())
    std::fprintf(stderr, "cbc run: %s\n", speculationSummary(s, o.speculative).c_str());
  if (s.forks + s.fork_fallbacks + s.swaps_out + s.swap_fallbacks > 0)
    std::fprintf(stderr,
                 "cbc run: %lld forks shared their prompt's cache (%lld computed it alone); %lld preempted requests "
                 "swapped to host memory, %lld back, %lld recomputed for want of swap space\n",
                 (long long)s.forks, (long long)s.fork_fallbacks, (long long)s.swaps_out, (long long)s.swaps_in,
                 (long long)s.swap_fallbacks);
}

// Everything that can be refused before work: the flags, the prompts file and the output file.
struct Setup {
  RunSettings settings;
  int promptFd = -1;
  std::unique_ptr<std::ofstream> outFile;
};

Setup setUp(const Args &args) {
  Setup s;
  s.settings = readSettings(args);
  std::string promptPath = args.get("--prompts", "-");
  s.promptFd = openPrompts(promptPath);
  if (args.has("-o")) {
    s.outFile = std::make_unique<std::ofstream>(args.get("-o"));
    if (!*s.outFile)
      throw UsageError("cannot write '" + args.get("-o") + "'");
  }
  return s;
}

// This process's rank: of the MPI job that started it, or a group of one.
std::shared_ptr<rt::Communicator> openRanks(double timeout) {
  if constexpr (kBuiltWithMpi) {
    if (rt::launchedByMpi())
      return rt::openMpi(timeout);
  } else if (std::getenv("PMI_SIZE") || std::getenv("OMPI_COMM_WORLD_SIZE")) {
    const char *n = std::getenv("PMI_SIZE") ? std::getenv("PMI_SIZE") : std::getenv("OMPI_COMM_WORLD_SIZE");
    if (std::atoi(n) > 1)
      throw UsageError("started by mpiexec, but this cbc was built without MPI (CBC_MPI=OFF): it serves "
                       "--tp 1 artefacts as one process only");
  }
  return rt::singleRank();
}

// The artefact, read by every rank alike, and whether this group can run it: a bad file or a
// group of the wrong size is the same verdict on every rank, which each exits with (status 2),
// said once, by rank 0.
std::optional<rt::Artefact> openArtefact(const std::string &model, const rt::Communicator &comm, bool quiet) {
  try {
    if (!quiet && comm.rank() == 0)
      std::fprintf(stderr, "cbc run: loading %s\n", model.c_str());
    rt::Artefact a = rt::Artefact::load(model);
    rt::checkRanks(a.ranks, comm);
    return a;
  } catch (const std::exception &e) {
    if (comm.rank() == 0)
      std::fprintf(stderr, "cbc run: error: %s\n", e.what());
  }
  return std::nullopt;
}

// Rank 0 stopping once the others may wait for its calls: they must go too.
int stopRanks(const std::shared_ptr<rt::Communicator> &comm, int status) {
  if (comm->size() > 1)
    comm->abort("rank 0 stopped (status " + std::to_string(status) + ")");
  return status;
}

// A rank other than 0: this rank's weights, then rank 0's calls until it stops.
int followRank0(const rt::Artefact &a, RunSettings settings, const std::shared_ptr<rt::Communicator> &comm) {
  try {
    settings.options.communicator = comm;
    settings.options.log = nullptr;
    rt::followRank0(a, settings.weights, settings.options);
    return 0;
  } catch (const std::exception &e) {
    comm->abort("cbc run: rank " + std::to_string(comm->rank()) + ": " + e.what());
  }
}

} // namespace

int runMain(int argc, char **argv) {
  Args args = runArgs();
  Setup setup;
  RunSettings flags;
  try {
    if (!args.parse(argc, argv))
      return 0;
    flags = readSettings(args);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 2;
  }
  std::shared_ptr<rt::Communicator> comm;
  try {
    comm = openRanks(flags.collectiveTimeout);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 2;
  }
  // The other ranks read no prompts and write nothing: rank 0 serves, they follow.
  if (comm->rank() == 0) {
    try {
      setup = setUp(args);
    } catch (const UsageError &e) {
      std::fprintf(stderr, "cbc run: error: %s\n", e.what());
      return stopRanks(comm, 2);
    }
  }
  std::optional<rt::Artefact> artefact = openArtefact(args.positionals()[0], *comm, flags.quiet);
  if (!artefact)
    return 2;
  if (comm->rank() > 0)
    return followRank0(*artefact, flags, comm);
  setup.settings.options.communicator = comm;
  const RunSettings &settings = setup.settings;
  int status = 0;
  std::unique_ptr<rt::Engine> engine = loadEngine(std::move(*artefact), settings, status);
  if (!engine)
    return stopRanks(comm, status);
  std::ostream &out = setup.outFile ? *setup.outFile : std::cout;
  if (setup.promptFd == 0 && isatty(0) && !settings.quiet)
    std::fprintf(stderr, "cbc run: reading prompts from standard input, one JSON line each (end with Ctrl-D)\n");

  auto start = std::chrono::steady_clock::now();
  PromptReader reader(setup.promptFd, settings.defaults, settings.weights.seed);
  Server server(*engine, reader, out, settings);
  try {
    server.run();
  } catch (const std::exception &e) {
    server.abandon();
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 1;
  }
  if (!reader.error().empty()) {
    std::fprintf(stderr, "cbc run: error: reading prompts: %s\n", reader.error().c_str());
    return 2;
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!settings.quiet)
    printSummary(engine->stats(), engine->options(), reader.count(), server.malformed(), elapsed);
  return 0;
}

} // namespace cbc::cli
