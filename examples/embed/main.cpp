// The embedding API end to end: load an artefact and its weights, add requests, stream their
// tokens step by step, cancel one mid-stream, collect the finished outputs. Exits 1 when the
// engine breaks one of its promises (each request ends once; the cancelled one as cancelled).
//   cbc-embed model.fb CHECKPOINT
#include "runtime/engine.h"

// The embedding header stands alone: none of the runtime's internals come with it.
#if defined(CBC_RUNTIME_CACHE_H) || defined(CBC_RUNTIME_SCHEDULER_H) || defined(CBC_RUNTIME_BACKEND_H) || \
    defined(CBC_RUNTIME_ARTEFACT_H) || defined(CBC_RUNTIME_WEIGHTS_H)
#error "runtime/engine.h includes the runtime's internals"
#endif

#include <cstdio>
#include <map>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cbc-embed model.fb CHECKPOINT\n");
    return 2;
  }
  namespace rt = cbc::rt;
  rt::EngineOptions options;
  options.backend = "cpu";
  std::unique_ptr<rt::Engine> engine;
  try {
    engine = rt::Engine::load(argv[1], rt::WeightSource{argv[2], 0}, options);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc-embed: %s\n", e.what());
    return 2;
  }
  rt::SamplingParams greedy;
  greedy.max_new_tokens = 8;
  greedy.ignore_eos = true;
  rt::SamplingParams sampled = greedy;
  sampled.temperature = 0.8;
  sampled.seed = 7;
  std::vector<rt::RequestId> ids;
  for (auto [prompt, params] : {std::pair{std::vector<int32_t>{1, 2, 3}, greedy},
                                std::pair{std::vector<int32_t>{4, 5}, sampled},
                                std::pair{std::vector<int32_t>{6, 7, 8, 9}, greedy}}) {
    rt::AddResult added = engine->add_request(prompt, params);
    if (!added.accepted) {
      std::fprintf(stderr, "cbc-embed: request rejected: %s\n", added.error.c_str());
      return 1;
    }
    ids.push_back(added.id);
  }
  // Stream tokens as steps produce them; cancel the last request after its first token.
  const rt::RequestId victim = ids.back();
  bool cancelled = false;
  std::map<rt::RequestId, int> ended;
  while (!engine->idle()) {
    for (const rt::TokenEvent &ev : engine->step()) {
      std::printf("request %lld: token %d%s\n", (long long)ev.id, ev.token, ev.finished ? " (finished)" : "");
      if (ev.id == victim && !cancelled)
        cancelled = engine->cancel(victim);
    }
    for (const rt::RequestOutput &out : engine->take_finished()) {
      ++ended[out.id];
      std::printf("request %lld finished: %s, %zu tokens\n", (long long)out.id,
                  rt::finishReasonName(out.finish), out.tokens.size());
      bool wantCancelled = out.id == victim;
      if ((out.finish == rt::FinishReason::Cancelled) != wantCancelled)
        return std::fprintf(stderr, "cbc-embed: request %lld ended as %s\n", (long long)out.id,
                            rt::finishReasonName(out.finish)), 1;
    }
  }
  for (rt::RequestId id : ids)
    if (ended[id] != 1)
      return std::fprintf(stderr, "cbc-embed: request %lld ended %d times\n", (long long)id, ended[id]), 1;
  std::printf("cbc-embed: %zu requests, each ended once; %lld steps, %lld generated tokens\n", ids.size(),
              (long long)engine->stats().steps, (long long)engine->stats().generated_tokens);
  return 0;
}
