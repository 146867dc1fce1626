// Runtime benchmarks (figures, not tests):
//   scheduler  the scheduler plus step-metadata cost per step with a null backend, at 1, 64,
//              1024 and 4096 concurrent decode requests;
//   cpu        the CPU backend's throughput on the bundled example;
//   gdn        the CPU gated-delta scan per token, Qwen3-Next-80B-A3B's linear-attention shape,
//              for prefill (chunked form) and decode (recurrent form), one thread.
#include "codegen/pipeline.h"
#include "runtime/cpu/kernels.h"
#include "runtime/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

// OpenBLAS's own threads would time the pool, not the kernel.
extern "C" void openblas_set_num_threads(int);

using namespace cbc;
using Clock = std::chrono::steady_clock;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

rt::Artefact compile(const std::string &configPath) {
  codegen::CompileOptions o;
  o.emit_cuda = false;
  auto r = codegen::compileConfig(readFile(configPath), o);
  return rt::Artefact::fromBytes(r.artefact.data(), r.artefact.size());
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void schedulerBench(const std::string &config) {
  rt::Artefact a = compile(config);
  std::printf("scheduler + step metadata per decode step (null backend sampling greedily on the\n"
              "device, so no logits reach the host; %s)\n", config.c_str());
  std::printf("%12s %12s %14s %14s\n", "concurrent", "steps", "us/step", "ns/request");
  for (int64_t n : {1, 64, 1024, 4096}) {
    rt::EngineOptions o;
    o.backend = "null";
    o.max_batch_tokens = n;
    o.max_requests = n;
    o.max_live_requests = n;
    o.max_model_len = 2048;
    o.cache_memory_bytes = n * 2048; // the null backend stores 1 byte per token: room for 2048 tokens each
    auto engine = rt::Engine::withBackend(a, rt::makeNullBackend(a), o);
    std::mt19937 rng(1);
    for (int64_t i = 0; i < n; ++i) {
      rt::SamplingParams p;
      p.max_new_tokens = 1000;
      p.ignore_eos = true;
      std::vector<int32_t> prompt(1 + rng() % 64);
      for (auto &t : prompt)
        t = (int32_t)(rng() % a.meta.vocab_size);
      engine->add_request(prompt, p);
    }
    // Prefill everything, then time pure decode steps.
    while (engine->num_waiting() > 0)
      engine->step();
    for (int i = 0; i < 4; ++i)
      engine->step();
    int steps = n >= 1024 ? 200 : 2000;
    auto before = engine->stats();
    auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i)
      engine->step();
    auto t1 = Clock::now();
    double us = seconds(t0, t1) / steps * 1e6;
    double schedUs = (engine->stats().schedule_seconds - before.schedule_seconds) / steps * 1e6;
    std::printf("%12lld %12d %14.2f %14.1f   (of which schedule+metadata %.2f us)\n", (long long)n,
                steps, us, us * 1e3 / n, schedUs);
  }
}

void cpuBench(const std::string &config, const std::string &promptsPath) {
  rt::Artefact a = compile(config);
  std::vector<std::vector<int32_t>> prompts;
  std::ifstream in(promptsPath);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<int32_t> ids;
    for (char &c : line)
      if (!(c == '-' || (c >= '0' && c <= '9')))
        c = ' ';
    std::stringstream ss(line);
    int64_t v;
    while (ss >> v)
      ids.push_back((int32_t)v);
    // Object lines carry extra numbers (max_new_tokens, seed); keep the prompt part only.
    if (!ids.empty())
      prompts.push_back(ids);
  }
  rt::EngineOptions o;
  o.backend = "cpu";
  auto engine = rt::Engine::create(a, rt::WeightSource{"", 0}, o);
  auto t0 = Clock::now();
  for (int rep = 0; rep < 4; ++rep)
    for (const auto &p : prompts) {
      rt::SamplingParams s;
      s.max_new_tokens = 32;
      s.ignore_eos = true;
      std::vector<int32_t> ids = p;
      for (auto &t : ids)
        t = std::clamp<int32_t>(t, 0, (int32_t)a.meta.vocab_size - 1);
      engine->add_request(ids, s);
    }
  while (!engine->idle())
    engine->step();
  auto t1 = Clock::now();
  const auto &st = engine->stats();
  double s = seconds(t0, t1);
  std::printf("CPU backend on %s: %lld requests, %lld prompt + %lld generated tokens in %.3f s\n",
              config.c_str(), (long long)(4 * prompts.size()), (long long)st.prompt_tokens,
              (long long)st.generated_tokens, s);
  std::printf("  %.1f generated tok/s, %.1f processed tok/s, %lld steps (%.2f ms/step)\n",
              st.generated_tokens / s, st.computed_tokens / s, (long long)st.steps,
              s / st.steps * 1e3);
}

// One linear-attention layer of Qwen3-Next-80B-A3B: 16 key heads, 32 value heads, 128 x 128.
void gatedDeltaBench() {
  namespace cpu = rt::cpu;
  cpu::GatedDeltaParams p;
  p.k_heads = 16, p.v_heads = 32, p.k_dim = 128, p.v_dim = 128;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = d(rng);
    return v;
  };
  std::vector<float> A_log = fill(p.v_heads), dt_bias = fill(p.v_heads);
  p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
  int64_t qw = p.k_heads * p.k_dim, vw = p.v_heads * p.v_dim;
  int64_t stateElems = p.v_heads * p.k_dim * p.v_dim;
  cpu::ParallelFor serial = [](int64_t n, const std::function<void(int64_t)> &fn) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
  };
  // Times `reps` scans of R requests with n tokens each; returns seconds per token.
  auto time = [&](int64_t R, int64_t n, int64_t chunk, int reps) {
    int64_t T = R * n;
    std::vector<float> q = fill(T * qw), k = fill(T * qw), v = fill(T * vw), a = fill(T * p.v_heads),
                       b = fill(T * p.v_heads), out(T * vw), pool(R * stateElems, 0.0f);
    std::vector<int32_t> cu(R + 1), slots(R), has(R, 1);
    for (int64_t r = 0; r <= R; ++r)
      cu[r] = (int32_t)(r * n);
    for (int64_t r = 0; r < R; ++r)
      slots[r] = (int32_t)r;
    cpu::StateRows rows{cu.data(), slots.data(), has.data(), R};
    cpu::gatedDeltaScan(q.data(), k.data(), v.data(), a.data(), b.data(), p, rows, pool.data(),
                        out.data(), serial, chunk); // warm-up
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i)
      cpu::gatedDeltaScan(q.data(), k.data(), v.data(), a.data(), b.data(), p, rows, pool.data(),
                          out.data(), serial, chunk);
    return seconds(t0, Clock::now()) / reps / T;
  };
  openblas_set_num_threads(1);
  std::printf("CPU gated-delta scan, one Qwen3-Next linear layer (Hk 16, Hv 32, dk = dv = 128), "
              "one thread:\n");
  double prefill = time(1, 512, 64, 2);
  double decode = time(16, 1, 64, 20);
  std::printf("  prefill, 1 x 512 tokens, chunked (64): %10.1f us/token/layer\n", prefill * 1e6);
  std::printf("  decode, 16 requests x 1 token:         %10.1f us/token/layer\n", decode * 1e6);
  std::printf("  chunked/recurrent cost per token:       %10.2f\n", prefill / decode);
  std::printf("  state read+written per decode token:   %10.1f MB/layer\n", stateElems * 8 / 1e6);
}

} // namespace

int main(int argc, char **argv) {
  std::string what = argc > 1 ? argv[1] : "all";
  std::string root = CBC_SOURCE_DIR;
  try {
    if (what == "scheduler" || what == "all")
      schedulerBench(root + "/test/configs/published/llama-3.1-8b.json");
    if (what == "cpu" || what == "all")
      cpuBench(root + "/examples/tiny-llama/config.json", root + "/examples/tiny-llama/prompts.jsonl");
    if (what == "gdn" || what == "all") // last: it pins OpenBLAS to one thread
      gatedDeltaBench();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
