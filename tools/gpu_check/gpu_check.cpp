// cbc-gpu-check: ring 4 on a real GPU. (1) Every parity fixture runs on the CUDA backend and is
// compared with the CPU backend. (2) A random-weight model shaped like the given config
// (Llama-3.1-8B and an 8-layer Qwen3-Next-80B-A3B in tools/gpu_check.sh) is benchmarked in bf16:
// decode tokens/s at several concurrencies, prefill tokens/s, and the fraction of HBM bandwidth
// a decode step reaches, counting weights, the kv cache and per-request states.
// Prints figures; exits non-zero only when the CUDA backend is unusable or disagrees with the
// CPU backend. (3) With --launch-times CSV ARTEFACT it profiles bench/roofline.py's workloads
// (decode of 1, 64 and 256 requests with 1024 cached tokens each, a 2048-token prefill) launch
// by launch with CUDA events and writes the mean time of each launch to CSV, which
// `bench/roofline.py ARTEFACT --measured CSV` prints beside its prediction.
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cuda/gpu_backend.h"
#include "runtime/engine.h"
#include "runtime/safetensors.h"
#include "tools/gpu_check/launch_profile.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

using namespace cbc;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::vector<int32_t>> fixturePrompts(const std::string &dir) {
  rt::Checkpoint ck(dir + "/expected.safetensors");
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; ck.has("prompt_" + std::to_string(i)); ++i) {
    const rt::TensorView &t = ck.get("prompt_" + std::to_string(i));
    const int32_t *p = reinterpret_cast<const int32_t *>(t.data);
    out.emplace_back(p, p + t.numel());
  }
  return out;
}

std::vector<rt::RequestOutput> serve(rt::Engine &e, const std::vector<std::vector<int32_t>> &prompts,
                                     int64_t newTokens, bool keepLogits) {
  for (const auto &p : prompts) {
    rt::SamplingParams s;
    s.max_new_tokens = newTokens;
    s.ignore_eos = true;
    s.keep_logits = keepLogits;
    e.add_request(p, s);
  }
  while (!e.idle())
    e.step();
  auto outs = e.take_finished();
  std::sort(outs.begin(), outs.end(), [](auto &a, auto &b) { return a.id < b.id; });
  return outs;
}

// CUDA against CPU on one fixture: greedy tokens and first-step logits.
bool checkFixture(const std::string &artefactPath, const std::string &fixture) {
  rt::Artefact a = rt::Artefact::load(artefactPath);
  rt::WeightSource w{fixture, 0};
  rt::EngineOptions o;
  o.max_batch_tokens = 64;
  o.cache_memory_bytes = 64 << 20;
  auto prompts = fixturePrompts(fixture);
  auto cpuEngine = rt::Engine::withBackend(a, rt::makeCpuBackend(a, rt::WeightStore::load(a, w), {64, 64}, 4), o);
  auto gpuEngine = rt::Engine::withBackend(a, rt::makeGpuBackend(a, w, rt::openCudaDevice(), {64, 64}), o);
  auto cpu = serve(*cpuEngine, prompts, 16, true), gpu = serve(*gpuEngine, prompts, 16, true);
  int same = 0, total = 0;
  double worst = 0;
  bool ok = true;
  for (size_t i = 0; i < cpu.size(); ++i) {
    double maxAbs = 0, maxErr = 0;
    for (size_t v = 0; v < cpu[i].logits[0].size(); ++v) {
      maxAbs = std::max(maxAbs, (double)std::fabs(cpu[i].logits[0][v]));
      maxErr = std::max(maxErr, (double)std::fabs(cpu[i].logits[0][v] - gpu[i].logits[0][v]));
    }
    worst = std::max(worst, maxErr / std::max(1e-6, maxAbs));
    ok &= maxErr <= 0.05 * maxAbs && cpu[i].tokens[0] == gpu[i].tokens[0];
    for (size_t t = 0; t < cpu[i].tokens.size(); ++t, ++total)
      same += cpu[i].tokens[t] == gpu[i].tokens[t];
  }
  std::printf("  %-14s %-5s  first-step max|dlogit| %.3f of the logit range, %d/%d greedy tokens equal\n",
              fs::path(fixture).filename().c_str(), ok ? "ok" : "FAIL", worst, same, total);
  return ok;
}

struct BenchResult {
  double decodeTokS = 0, prefillTokS = 0, stepMs = 0, e2eTokS = 0;
};

BenchResult bench(const rt::Artefact &a, int concurrency, int promptLen, int newTokens) {
  rt::EngineOptions o;
  o.backend = "cuda";
  o.max_batch_tokens = 8192;
  o.max_requests = std::max(concurrency, 1);
  o.max_live_requests = std::max(concurrency, 1);
  o.max_model_len = promptLen + newTokens + 16;
  o.cache_memory_bytes = 48ll << 30;
  auto engine = rt::Engine::withBackend(
      a, rt::makeGpuBackend(a, rt::WeightSource{"", 0}, rt::openCudaDevice(), {o.max_batch_tokens, o.max_requests}), o);
  std::mt19937 rng(7);
  auto t0 = Clock::now();
  for (int r = 0; r < concurrency; ++r) {
    std::vector<int32_t> p(promptLen);
    for (auto &t : p)
      t = (int32_t)(rng() % a.meta.vocab_size);
    rt::SamplingParams s;
    s.max_new_tokens = newTokens;
    s.ignore_eos = true;
    engine->add_request(p, s);
  }
  // Prefill: until every request has its first token.
  int64_t firsts = 0;
  while (firsts < concurrency && !engine->idle())
    for (auto &ev : engine->step())
      firsts += 1, (void)ev;
  double prefill = since(t0);
  auto t1 = Clock::now();
  int64_t steps = 0, generated = 0;
  while (!engine->idle()) {
    generated += (int64_t)engine->step().size();
    ++steps;
  }
  double decode = since(t1);
  BenchResult r;
  r.prefillTokS = concurrency * (double)promptLen / prefill;
  r.decodeTokS = generated / decode;
  r.stepMs = decode / std::max<int64_t>(1, steps) * 1e3;
  r.e2eTokS = concurrency * (double)newTokens / since(t0);
  return r;
}

// k / E of the model's routers (1 without experts): the share of the experts one token uses.
double expertsPerTokenShare(const rt::Artefact &a) {
  for (const auto &in : a.program.instrs)
    if (in.opcode == fb::Opcode::MoeRoute && !in.inputs.empty() && !in.outputs.empty()) {
      double k = (double)a.program.values[in.outputs[0]].shape.back();
      double e = (double)a.program.values[in.inputs[0]].shape.back();
      return e > 0 ? k / e : 1.0;
    }
  return 1.0;
}

// Decode and prefill figures for one model shape at several concurrencies.
bool benchModel(const rt::Artefact &a) {
  // Bytes a decode step must move: every weight once (bf16), the kv cache it attends to, and
  // each request's fp32 states read and written once.
  // Routed experts count by the share a step of `c` requests is expected to touch, 1 - (1 - k/E)^c
  // (k of E experts per token); latent-attention layers' cache rows are their latents.
  double denseBytes = 0, expertBytes = 0;
  for (const auto &w : a.weights) {
    double n = 2;
    for (int64_t d : w.shape)
      n *= (double)d;
    (w.name.find(".moe.gate_up") != std::string::npos || w.name.find(".moe.down") != std::string::npos
         ? expertBytes : denseBytes) += n;
  }
  double weightBytes = denseBytes + expertBytes;
  double expertShare = expertsPerTokenShare(a);
  double kvPerToken = 0, statePerRequest = 0;
  for (const auto &g : a.cache_plan.groups)
    kvPerToken += (double)g.bytes_per_token;
  for (const auto &st : a.cache_plan.states)
    statePerRequest += 2.0 * 4.0 * (double)st.elems();
  const int promptLen = 512, newTokens = 128;
  std::printf("\nbenchmark: %s shape, %lld layers, random bf16 weights (%.2f GB), %.1f MB of states per "
              "request, %d-token prompts, %d new tokens\n",
              a.meta.model_type.c_str(), (long long)a.meta.num_layers, weightBytes / 1e9,
              statePerRequest / 2e6, promptLen, newTokens);
  std::printf("%12s %14s %14s %12s %14s %12s\n", "concurrency", "decode tok/s", "prefill tok/s",
              "ms/step", "end-to-end", "HBM frac");
  bool ok = true;
  for (int c : {1, 16, 64, 256}) {
    try {
      BenchResult r = bench(a, c, promptLen, newTokens);
      double ctx = promptLen + newTokens / 2.0;
      double touched = expertShare >= 1 ? 1.0 : 1.0 - std::pow(1.0 - expertShare, c);
      double bytes = denseBytes + touched * expertBytes + c * (ctx * kvPerToken + statePerRequest);
      double frac = bytes / (r.stepMs * 1e-3) / 4.8e12;
      std::printf("%12d %14.1f %14.1f %12.3f %14.1f %12.3f\n", c, r.decodeTokS, r.prefillTokS, r.stepMs,
                  r.e2eTokS, frac);
      if (c == 256)
        std::printf("CBC_THROUGHPUT_256_%s %.3f\n", a.meta.model_type.c_str(), r.e2eTokS);
    } catch (const std::exception &e) {
      std::printf("%12d  ERROR %s\n", c, e.what());
      ok = false;
    }
  }
  return ok;
}

// Per-launch times of the roofline's workloads, outside graphs, averaged over several steps.
bool profileModel(const std::string &artefactPath, const std::string &csvPath) {
  rt::Artefact a = rt::Artefact::load(artefactPath);
  rt::EngineOptions o;
  o.backend = "cuda";
  o.max_batch_tokens = 8192;
  o.max_requests = 256;
  o.max_live_requests = 256;
  o.max_model_len = 2048 + 16;
  o.cache_memory_bytes = 40ll << 30;
  std::vector<gpu_check::ProfileWorkload> works;
  for (int r : {1, 64, 256})
    works.push_back({true, r, 1024, 1, 10});
  works.push_back({false, 1, 0, 2048, 5});
  try {
    auto backend = rt::makeGpuBackend(a, rt::WeightSource{"", 0}, rt::openCudaDevice(),
                                      {o.max_batch_tokens, o.max_requests});
    auto profiles = gpu_check::profileLaunches(a, std::move(backend), o, works);
    std::ofstream out(csvPath);
    gpu_check::writeLaunchCsv(out, a, profiles);
    if (!out)
      throw std::runtime_error("cannot write " + csvPath);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc-gpu-check: profiling %s: %s\n", artefactPath.c_str(), e.what());
    return false;
  }
  std::printf("launch times of %s written to %s\n", artefactPath.c_str(), csvPath.c_str());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "--launch-times")
    return profileModel(argv[3], argv[2]) ? 0 : 1;
  std::vector<std::string> positional;
  bool skipParity = false;
  for (int i = 1; i < argc; ++i)
    (std::string(argv[i]) == "--skip-parity" ? (void)(skipParity = true) : positional.push_back(argv[i]));
  if (positional.size() < 2) {
    std::fprintf(stderr, "usage: cbc-gpu-check FIXTURE_ARTEFACT_DIR BENCH_ARTEFACT... [--skip-parity]\n"
                         "       cbc-gpu-check --launch-times CSV ARTEFACT\n");
    return 2;
  }
  std::string fixtures = positional[0];
  std::vector<std::string> benchPaths(positional.begin() + 1, positional.end());
  try {
    auto device = rt::openCudaDevice();
    std::printf("device: %s\n", device->name().c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cbc-gpu-check: %s\n", e.what());
    return 3;
  }
  bool ok = true;
  if (!skipParity) {
    std::printf("parity: CUDA backend against the CPU backend (bf16 against fp32)\n");
    for (const auto &e : fs::directory_iterator(fixtures))
      if (e.path().extension() == ".fb") {
        std::string fam = e.path().stem().string();
        try {
          ok &= checkFixture(e.path().string(), std::string(CBC_SOURCE_DIR) + "/test/parity/fixtures/" + fam);
        } catch (const std::exception &ex) {
          std::printf("  %-14s ERROR  %s\n", fam.c_str(), ex.what());
          ok = false;
        }
      }
  }
  for (const std::string &benchPath : benchPaths)
    ok &= benchModel(rt::Artefact::load(benchPath));
  return ok ? 0 : 1;
}
