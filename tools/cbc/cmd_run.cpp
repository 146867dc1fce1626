#include "runtime/engine.h"
#include "runtime/request_json.h"
#include "tools/cbc/cli.h"
#include "tools/cbc/commands.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace cbc::cli {

namespace {

using nlohmann::json;

using PromptLine = rt::ParsedRequest;

class Progress {
public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled && isatty(2)) {}
  void update(size_t done, int64_t generated, double elapsed) {
    if (!enabled_)
      return;
    int width = 30, filled = total_ ? (int)(width * done / total_) : width;
    std::fprintf(stderr, "\r[%s%s] %zu/%zu requests, %lld tokens, %.1f tok/s", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), done, total_, (long long)generated,
                 elapsed > 0 ? generated / elapsed : 0.0);
  }
  void end() {
    if (enabled_)
      std::fprintf(stderr, "\n");
  }

private:
  size_t total_;
  bool enabled_;
};

const char *kRunAbout =
    "Serves the prompts of a JSONL file with continuous batching and prints one JSONL\n"
    "line per request, in input order. A line is a list of token ids or an object\n"
    "{\"prompt\": [...], \"max_new_tokens\": N, \"temperature\": T, \"top_k\": K, \"top_p\": P,\n"
    " \"min_p\": M, \"seed\": S, \"stop_token_ids\": [...], \"ignore_eos\": B, \"logprobs\": B}.\n"
    "A bad request is rejected with its reason; the others go on.";

Args runArgs() {
  return Args("run", kRunAbout,
              {{"--weights", "DIR", "safetensors checkpoint (a directory or a .safetensors file)"},
               {"--random-weights", "", "use random weights instead of a checkpoint"},
               {"--seed", "S", "seed of the random weights and the default sampling seed (default 0)"},
               {"--prompts", "FILE", "JSONL prompts (default: standard input)"},
               {"-o", "FILE", "write results here (default: standard output)"},
               {"--max-new-tokens", "N", "default max_new_tokens (default 16)"},
               {"--temperature", "T", "default temperature; 0 is greedy (default 0)"},
               {"--top-k", "K", "default top-k (default 0: off)"},
               {"--top-p", "P", "default top-p (default 1)"},
               {"--min-p", "P", "default min-p (default 0)"},
               {"--logprobs", "", "report the log-probability of each generated token"},
               {"--backend", "auto|cpu|cuda", "execution backend (default auto: CUDA if usable, else CPU)"},
               {"--max-batch-tokens", "N", "token budget per step (default 256)"},
               {"--max-requests", "N", "requests per step (default 64)"},
               {"--cache-memory", "MIB", "memory for the paged cache, in MiB (default 256)"},
               {"--threads", "N", "CPU threads (default: all cores)"},
               {"--quiet", "", "no progress bar or summary"}},
              "MODEL");
}

// What the flags ask for. Throws UsageError.
struct RunSettings {
  rt::EngineOptions options;
  rt::SamplingParams defaults;
  rt::WeightSource weights;
  bool quiet = false;
};

RunSettings readSettings(const Args &args) {
  if (args.positionals().size() != 1)
    throw UsageError("expected exactly one MODEL argument");
  if (args.has("--weights") == args.has("--random-weights"))
    throw UsageError("give either --weights DIR or --random-weights");
  RunSettings r;
  r.weights.checkpoint_dir = args.get("--weights");
  r.weights.seed = (uint64_t)args.getInt("--seed", 0);
  r.defaults.max_new_tokens = args.getInt("--max-new-tokens", 16);
  r.defaults.temperature = args.getDouble("--temperature", 0.0);
  r.defaults.top_k = args.getInt("--top-k", 0);
  r.defaults.top_p = args.getDouble("--top-p", 1.0);
  r.defaults.min_p = args.getDouble("--min-p", 0.0);
  r.defaults.logprobs = args.has("--logprobs");
  rt::EngineOptions &o = r.options;
  o.backend = args.get("--backend", "auto");
  o.max_batch_tokens = args.getInt("--max-batch-tokens", 256);
  o.max_requests = args.getInt("--max-requests", 64);
  o.cache_memory_bytes = args.getInt("--cache-memory", 256) << 20;
  o.threads = (int)args.getInt("--threads", 0);
  if (o.max_batch_tokens < 1 || o.max_requests < 1 || o.cache_memory_bytes <= 0)
    throw UsageError("--max-batch-tokens, --max-requests and --cache-memory must be positive");
  r.quiet = args.has("--quiet");
  bool quiet = r.quiet;
  o.log = [quiet](const std::string &m) {
    if (!quiet)
      std::fprintf(stderr, "cbc run: %s\n", m.c_str());
  };
  return r;
}

// Every prompt, read before serving: a malformed line is a rejected request, not a crash.
// Request i's default seed is the weights' seed plus i. False when the file cannot be read.
bool readPrompts(const std::string &path, const RunSettings &s, std::vector<PromptLine> &prompts) {
  std::ifstream file;
  std::istream *in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file)
      return false;
    in = &file;
  }
  std::string line;
  while (std::getline(*in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    rt::SamplingParams d = s.defaults;
    d.seed = s.weights.seed + prompts.size();
    prompts.push_back(rt::parseRequestLine(line, d));
  }
  return true;
}

// The engine, or the exit status: 2 for a bad artefact or checkpoint, 1 for anything else.
std::unique_ptr<rt::Engine> loadEngine(const std::string &model, const RunSettings &s, int &status) {
  try {
    if (!s.quiet)
      std::fprintf(stderr, "cbc run: loading %s\n", model.c_str());
    auto engine = rt::Engine::load(model, s.weights, s.options);
    if (!s.quiet)
      std::fprintf(stderr, "cbc run: %s backend, %d cache blocks per group of %d tokens\n",
                   engine->backend().name().c_str(), engine->cache().blocksPerGroup(),
                   engine->cache().blockSize());
    return engine;
  } catch (const rt::ArtefactError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    status = 2;
  } catch (const rt::WeightError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    status = 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    status = 1;
  }
  return nullptr;
}

json resultLine(size_t index, const rt::RequestOutput &o, const PromptLine &p) {
  json r = {{"index", index}, {"tokens", o.tokens}, {"finish_reason", rt::finishReasonName(o.finish)},
            {"prompt_tokens", o.prompt.size()}, {"generated_tokens", o.tokens.size()},
            {"ttft_ms", o.ttft_s * 1e3}, {"latency_ms", o.latency_s * 1e3},
            {"preemptions", o.preemptions}};
  if (!p.user_id.is_null())
    r["id"] = p.user_id;
  if (!o.error.empty())
    r["error"] = o.error;
  if (p.params.logprobs)
    r["logprobs"] = o.logprobs;
  return r;
}

// Serves every prompt to completion; one result line per prompt, in input order. A malformed
// line is answered as rejected without reaching the engine. Throws what the engine throws.
struct Served {
  std::vector<json> results;
  size_t submitted = 0; // prompts the engine saw
};

Served serveAll(rt::Engine &engine, const std::vector<PromptLine> &prompts, bool quiet) {
  auto start = std::chrono::steady_clock::now();
  Served s;
  s.results.resize(prompts.size());
  std::map<rt::RequestId, size_t> indexOf;
  size_t done = 0;
  auto collect = [&] {
    for (const auto &o : engine.take_finished()) {
      size_t i = indexOf.at(o.id);
      s.results[i] = resultLine(i, o, prompts[i]);
      ++done;
    }
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    const PromptLine &p = prompts[i];
    if (!p.error.empty()) {
      s.results[i] = {{"index", i}, {"tokens", json::array()}, {"finish_reason", "rejected"},
                      {"error", "line " + std::to_string(i + 1) + ": " + p.error}};
      ++done;
      continue;
    }
    indexOf[engine.add_request(p.ids, p.params).id] = i;
  }
  s.submitted = indexOf.size();
  Progress progress(prompts.size(), !quiet);
  try {
    collect();
    while (!engine.idle()) {
      engine.step();
      collect();
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.update(done, engine.stats().generated_tokens, elapsed);
    }
  } catch (...) {
    progress.end();
    throw;
  }
  progress.end();
  return s;
}

void printSummary(const rt::EngineStats &s, size_t prompts, size_t submitted, double elapsed) {
  std::fprintf(stderr,
               "cbc run: %zu requests (%lld rejected), %lld prompt tokens, %lld generated tokens "
               "in %.2f s: %.1f generated tok/s, %.1f processed tok/s, %lld steps, %lld preemptions\n",
               prompts, (long long)(s.rejected + (prompts - submitted)), (long long)s.prompt_tokens,
               (long long)s.generated_tokens, elapsed,
               elapsed > 0 ? s.generated_tokens / elapsed : 0.0,
               elapsed > 0 ? s.computed_tokens / elapsed : 0.0, (long long)s.steps,
               (long long)s.preemptions);
}

} // namespace

int runMain(int argc, char **argv) {
  Args args = runArgs();
  RunSettings settings;
  try {
    if (!args.parse(argc, argv))
      return 0;
    settings = readSettings(args);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 2;
  }
  std::vector<PromptLine> prompts;
  std::string promptPath = args.get("--prompts", "-");
  if (!readPrompts(promptPath, settings, prompts)) {
    std::fprintf(stderr, "cbc run: error: cannot read prompts '%s'\n", promptPath.c_str());
    return 2;
  }
  int status = 0;
  std::unique_ptr<rt::Engine> engine = loadEngine(args.positionals()[0], settings, status);
  if (!engine)
    return status;

  std::ofstream outFile;
  std::ostream *out = &std::cout;
  if (args.has("-o")) {
    outFile.open(args.get("-o"));
    if (!outFile) {
      std::fprintf(stderr, "cbc run: error: cannot write '%s'\n", args.get("-o").c_str());
      return 2;
    }
    out = &outFile;
  }

  auto start = std::chrono::steady_clock::now();
  Served served;
  try {
    served = serveAll(*engine, prompts, settings.quiet);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 1;
  }
  for (const json &r : served.results)
    *out << r.dump() << "\n";
  out->flush();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!settings.quiet)
    printSummary(engine->stats(), prompts.size(), served.submitted, elapsed);
  return 0;
}

} // namespace cbc::cli
