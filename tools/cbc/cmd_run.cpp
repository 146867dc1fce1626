#include "runtime/engine.h"
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

struct PromptLine {
  std::vector<int32_t> ids;
  rt::SamplingParams params;
  json user_id;      // echoed back when given
  std::string error; // a malformed line becomes a rejected request
};

// One JSONL line: either a list of token ids or an object with "prompt" and sampling fields.
PromptLine parsePromptLine(const std::string &line, const rt::SamplingParams &defaults) {
  PromptLine p;
  p.params = defaults;
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception &e) {
    p.error = std::string("malformed JSON: ") + e.what();
    return p;
  }
  try {
    const json *ids = &j;
    if (j.is_object()) {
      if (!j.contains("prompt")) {
        p.error = "missing \"prompt\"";
        return p;
      }
      ids = &j["prompt"];
      if (j.contains("id")) p.user_id = j["id"];
      if (j.contains("max_new_tokens")) p.params.max_new_tokens = j["max_new_tokens"].get<int64_t>();
      if (j.contains("temperature")) p.params.temperature = j["temperature"].get<double>();
      if (j.contains("top_k")) p.params.top_k = j["top_k"].get<int64_t>();
      if (j.contains("top_p")) p.params.top_p = j["top_p"].get<double>();
      if (j.contains("min_p")) p.params.min_p = j["min_p"].get<double>();
      if (j.contains("seed")) p.params.seed = j["seed"].get<uint64_t>();
      if (j.contains("ignore_eos")) p.params.ignore_eos = j["ignore_eos"].get<bool>();
      if (j.contains("logprobs")) p.params.logprobs = j["logprobs"].get<bool>();
      if (j.contains("stop_token_ids")) p.params.stop_token_ids = j["stop_token_ids"].get<std::vector<int64_t>>();
    }
    if (!ids->is_array()) {
      p.error = "\"prompt\" must be a list of token ids";
      return p;
    }
    for (const json &t : *ids) {
      if (!t.is_number_integer()) {
        p.error = "\"prompt\" must be a list of integer token ids";
        return p;
      }
      int64_t v = t.get<int64_t>();
      if (v < INT32_MIN || v > INT32_MAX) {
        p.error = "token id " + std::to_string(v) + " is out of range";
        return p;
      }
      p.ids.push_back((int32_t)v);
    }
  } catch (const json::exception &e) {
    p.error = std::string("bad field: ") + e.what();
  }
  return p;
}

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

} // namespace

int runMain(int argc, char **argv) {
  Args args("run",
            "Serves the prompts of a JSONL file with continuous batching and prints one JSONL\n"
            "line per request, in input order. A line is a list of token ids or an object\n"
            "{\"prompt\": [...], \"max_new_tokens\": N, \"temperature\": T, \"top_k\": K, \"top_p\": P,\n"
            " \"min_p\": M, \"seed\": S, \"stop_token_ids\": [...], \"ignore_eos\": B, \"logprobs\": B}.\n"
            "A bad request is rejected with its reason; the others go on.",
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
  rt::EngineOptions options;
  rt::SamplingParams defaults;
  rt::WeightSource weights;
  try {
    if (!args.parse(argc, argv))
      return 0;
    if (args.positionals().size() != 1)
      throw UsageError("expected exactly one MODEL argument");
    if (args.has("--weights") == args.has("--random-weights"))
      throw UsageError("give either --weights DIR or --random-weights");
    weights.checkpoint_dir = args.get("--weights");
    weights.seed = (uint64_t)args.getInt("--seed", 0);
    defaults.max_new_tokens = args.getInt("--max-new-tokens", 16);
    defaults.temperature = args.getDouble("--temperature", 0.0);
    defaults.top_k = args.getInt("--top-k", 0);
    defaults.top_p = args.getDouble("--top-p", 1.0);
    defaults.min_p = args.getDouble("--min-p", 0.0);
    defaults.logprobs = args.has("--logprobs");
    options.backend = args.get("--backend", "auto");
    options.max_batch_tokens = args.getInt("--max-batch-tokens", 256);
    options.max_requests = args.getInt("--max-requests", 64);
    options.cache_memory_bytes = args.getInt("--cache-memory", 256) << 20;
    options.threads = (int)args.getInt("--threads", 0);
    if (options.max_batch_tokens < 1 || options.max_requests < 1 || options.cache_memory_bytes <= 0)
      throw UsageError("--max-batch-tokens, --max-requests and --cache-memory must be positive");
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 2;
  }
  bool quiet = args.has("--quiet");
  options.log = [quiet](const std::string &m) {
    if (!quiet)
      std::fprintf(stderr, "cbc run: %s\n", m.c_str());
  };

  // Read every prompt first: a malformed line is a rejected request, not a crash.
  std::vector<PromptLine> prompts;
  {
    std::ifstream file;
    std::istream *in = &std::cin;
    std::string path = args.get("--prompts", "-");
    if (path != "-") {
      file.open(path);
      if (!file) {
        std::fprintf(stderr, "cbc run: error: cannot read prompts '%s'\n", path.c_str());
        return 2;
      }
      in = &file;
    }
    std::string line;
    while (std::getline(*in, line)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      rt::SamplingParams d = defaults;
      d.seed = weights.seed + prompts.size();
      prompts.push_back(parsePromptLine(line, d));
    }
  }

  std::unique_ptr<rt::Engine> engine;
  try {
    if (!quiet)
      std::fprintf(stderr, "cbc run: loading %s\n", args.positionals()[0].c_str());
    engine = rt::Engine::load(args.positionals()[0], weights, options);
    if (!quiet)
      std::fprintf(stderr, "cbc run: %s backend, %d cache blocks per group of %d tokens\n",
                   engine->backend().name().c_str(), engine->cache().blocksPerGroup(),
                   engine->cache().blockSize());
  } catch (const rt::ArtefactError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 2;
  } catch (const rt::WeightError &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 1;
  }

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
  std::vector<json> results(prompts.size());
  std::map<rt::RequestId, size_t> indexOf;
  size_t done = 0;
  auto record = [&](const rt::RequestOutput &o) {
    size_t i = indexOf.at(o.id);
    json r = {{"index", i}, {"tokens", o.tokens}, {"finish_reason", rt::finishReasonName(o.finish)},
              {"prompt_tokens", o.prompt.size()}, {"generated_tokens", o.tokens.size()},
              {"ttft_ms", o.ttft_s * 1e3}, {"latency_ms", o.latency_s * 1e3},
              {"preemptions", o.preemptions}};
    if (!prompts[i].user_id.is_null())
      r["id"] = prompts[i].user_id;
    if (!o.error.empty())
      r["error"] = o.error;
    if (prompts[i].params.logprobs)
      r["logprobs"] = o.logprobs;
    results[i] = r;
    ++done;
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    const PromptLine &p = prompts[i];
    if (!p.error.empty()) {
      results[i] = {{"index", i}, {"tokens", json::array()}, {"finish_reason", "rejected"},
                    {"error", "line " + std::to_string(i + 1) + ": " + p.error}};
      ++done;
      continue;
    }
    rt::AddResult added = engine->add_request(p.ids, p.params);
    indexOf[added.id] = i;
  }
  Progress progress(prompts.size(), !quiet);
  try {
    for (const auto &o : engine->take_finished())
      record(o);
    while (!engine->idle()) {
      engine->step();
      for (const auto &o : engine->take_finished())
        record(o);
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.update(done, engine->stats().generated_tokens, elapsed);
    }
  } catch (const std::exception &e) {
    progress.end();
    std::fprintf(stderr, "cbc run: error: %s\n", e.what());
    return 1;
  }
  progress.end();
  for (const json &r : results)
    *out << r.dump() << "\n";
  out->flush();

  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const rt::EngineStats &s = engine->stats();
  if (!quiet)
    std::fprintf(stderr,
                 "cbc run: %zu requests (%lld rejected), %lld prompt tokens, %lld generated tokens "
                 "in %.2f s: %.1f generated tok/s, %.1f processed tok/s, %lld steps, %lld preemptions\n",
                 prompts.size(), (long long)(s.rejected + (prompts.size() - indexOf.size())),
                 (long long)s.prompt_tokens, (long long)s.generated_tokens, elapsed,
                 elapsed > 0 ? s.generated_tokens / elapsed : 0.0,
                 elapsed > 0 ? s.computed_tokens / elapsed : 0.0, (long long)s.steps,
                 (long long)s.preemptions);
  return 0;
}

} // namespace cbc::cli
