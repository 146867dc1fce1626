// Runtime benchmarks (figures, not tests):
//   scheduler  the scheduler plus step-metadata cost per step with a null backend, at 1, 64,
//              1024 and 4096 concurrent decode requests;
//   cpu        the CPU backend's throughput on the bundled example;
//   scans      the CPU cost per token of each state scan, one thread, for prefill (the chunked
//              form where there is one) and decode: gated delta (Qwen3-Next-80B-A3B's linear
//              attention), KDA (Kimi-Linear-48B-A3B's), lightning attention (MiniMax-Text-01),
//              Mamba2 SSD (Mamba2-2.7B), Mamba's selective scan (Jamba-v0.1) and the mLSTM
//              cell (xLSTM-7B);
//   dsa        DeepSeek-V3.2's sparse attention per decoded token, one layer, one thread, at 1k, 8k
//              and 32k cached tokens: the indexer's scoring plus top-k (64 heads of 128, top 2048),
//              and latent attention over the 2048 selected rows against the dense form.
#include "driver/compile.h"
#include "runtime/cpu/kernels.h"
#include "runtime/engine.h"
#include "runtime/artefact.h"
#include "runtime/backend.h"
#include "runtime/cpu/matrix.h"
#include "runtime/safetensors.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include <cblas.h>
#include <thread>
#include <vector>

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
  driver::CompileOptions o;
  o.emit_cuda = false;
  auto r = driver::compileConfig(readFile(configPath), o);
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
    // Every request stays live through the timed steps: it is asked for more tokens than the
    // prefill (the first requests decode while the last are prefilled: about 200 steps at 64),
    // the warm-up and the timed steps produce, so no timed step runs with fewer than n.
    const int steps = n >= 1024 ? 200 : 2000, warmup = 4;
    const int64_t maxPrompt = 64, newTokens = 4 * steps;
    rt::EngineOptions o;
    o.backend = "null";
    o.max_batch_tokens = n;
    o.max_requests = n;
    o.max_live_requests = n;
    o.max_model_len = maxPrompt + newTokens;
    // The null backend stores 1 byte per token: room for every request at full length, and a
    // block's rounding each.
    o.cache_memory_bytes = n * (o.max_model_len + 64);
    auto engine = rt::Engine::withBackend(a, rt::makeNullBackend(a), o);
    std::mt19937 rng(1);
    for (int64_t i = 0; i < n; ++i) {
      rt::SamplingParams p;
      p.max_new_tokens = newTokens;
      p.ignore_eos = true;
      std::vector<int32_t> prompt(1 + rng() % maxPrompt);
      for (auto &t : prompt)
        t = (int32_t)(rng() % a.meta.vocab_size);
      if (!engine->add_request(prompt, p).accepted)
        throw std::runtime_error("the scheduler benchmark's request was rejected");
    }
    // Prefill everything (until a step samples a token for every request: a request is running,
    // not waiting, while its prompt is still in chunks), then time pure decode steps.
    while ((int64_t)engine->step().size() != n)
      ;
    for (int i = 0; i < warmup; ++i)
      engine->step();
    auto before = engine->stats();
    auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i)
      engine->step();
    auto t1 = Clock::now();
    const auto &after = engine->stats();
    // Each timed step decoded one token of every request: a request that finished or was
    // preempted early would make the figure per step too low.
    if ((int64_t)engine->num_running() != n || after.generated_tokens - before.generated_tokens != n * steps ||
        after.preemptions != before.preemptions)
      throw std::runtime_error("the scheduler benchmark's requests did not all stay live (" +
                               std::to_string(engine->num_running()) + " of " + std::to_string(n) + " running, " +
                               std::to_string(after.generated_tokens - before.generated_tokens) + " tokens, " +
                               std::to_string(after.preemptions - before.preemptions) + " preemptions)");
    double us = seconds(t0, t1) / steps * 1e6;
    double schedUs = (after.schedule_seconds - before.schedule_seconds) / steps * 1e6;
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

std::vector<float> randomVector(size_t n, std::mt19937 &rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

const rt::cpu::ParallelFor kSerial = [](int64_t n, const std::function<void(int64_t)> &fn) {
  for (int64_t i = 0; i < n; ++i)
    fn(i);
};

// Packed-row metadata for R requests of n tokens each, slots 0..R-1, states carried.
struct Rows {
  std::vector<int32_t> cu, slots, has;
  rt::cpu::StateRows view;
  Rows(int64_t R, int64_t n) : cu(R + 1), slots(R), has(R, 1) {
    for (int64_t r = 0; r <= R; ++r)
      cu[r] = (int32_t)(r * n);
    for (int64_t r = 0; r < R; ++r)
      slots[r] = (int32_t)r;
    view = {cu.data(), slots.data(), slots.data(), has.data(), R};
  }
};

// Seconds per token of the kernel that `prepare(R, n)` sets up (inputs made outside the
// timing), run `reps` times after a warm-up.
template <class Prepare> double perToken(int64_t R, int64_t n, int reps, Prepare prepare) {
  auto run = prepare(R, n);
  run();
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i)
    run();
  return seconds(t0, Clock::now()) / reps / (R * n);
}

void printScan(const char *name, double prefill, double decode, const char *prefillForm) {
  std::printf("  %-44s prefill %8.1f us/token (%s), decode %8.1f us/token, ratio %.2f\n", name,
              prefill * 1e6, prefillForm, decode * 1e6, prefill / decode);
}

// Lightning attention at MiniMax-Text-01's shape (64 heads of 128; its layer-0 decay rates).
void lightningBench(std::mt19937 &rng) {
  namespace cpu = rt::cpu;
  cpu::LightningParams p;
  p.heads = 64, p.head_dim = 128;
  for (int64_t h = 0; h < p.heads; ++h)
    p.decay.push_back(std::pow(std::pow(2.0f, -8.0f / (float)p.heads), (float)(h + 1)));
  int64_t w = p.heads * p.head_dim, state = p.heads * p.head_dim * p.head_dim;
  auto scan = [&](int64_t R, int64_t n) {
    int64_t T = R * n;
    auto in = std::make_shared<std::vector<std::vector<float>>>(std::vector<std::vector<float>>{
        randomVector(T * w, rng), randomVector(T * w, rng), randomVector(T * w, rng), std::vector<float>(T * w),
        std::vector<float>(R * state)});
    auto rows = std::make_shared<Rows>(R, n);
    return [=, &p] {
      auto &v = *in;
      cpu::lightningScan(v[0].data(), v[1].data(), v[2].data(), p, rows->view, v[4].data(), v[3].data(), kSerial,
                         64);
    };
  };
  printScan("lightning (MiniMax-Text-01: 64 heads, 128x128)", perToken(1, 512, 2, scan), perToken(16, 1, 20, scan),
            "blocks, 64");
}

// One layer of each scan at a published model's shape: prefill is one 512-token request,
// decode 16 requests of one token.
void scanBench() {
  namespace cpu = rt::cpu;
  openblas_set_num_threads(1); // OpenBLAS's own threads would time the pool, not the kernel
  std::mt19937 rng(5);
  std::printf("CPU state scans, one layer, one thread (prefill: 1 x 512 tokens; decode: 16 x 1):\n");
  {
    cpu::GatedDeltaParams p;
    p.k_heads = 16, p.v_heads = 32, p.k_dim = 128, p.v_dim = 128;
    auto A_log = randomVector(p.v_heads, rng), dt_bias = randomVector(p.v_heads, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
    int64_t qw = p.k_heads * p.k_dim, vw = p.v_heads * p.v_dim, state = p.v_heads * p.k_dim * p.v_dim;
    auto scan = [&](int64_t R, int64_t n) {
      int64_t T = R * n;
      auto in = std::make_shared<std::vector<std::vector<float>>>(std::vector<std::vector<float>>{
          randomVector(T * qw, rng), randomVector(T * qw, rng), randomVector(T * vw, rng),
          randomVector(T * p.v_heads, rng), randomVector(T * p.v_heads, rng), std::vector<float>(T * vw),
          std::vector<float>(R * state)});
      auto rows = std::make_shared<Rows>(R, n);
      return [=, &p] {
        auto &v = *in;
        cpu::gatedDeltaScan(v[0].data(), v[1].data(), v[2].data(), v[3].data(), v[4].data(), p, rows->view,
                            v[6].data(), v[5].data(), kSerial, 64);
      };
    };
    printScan("gated delta (Qwen3-Next: 16/32 heads, 128x128)", perToken(1, 512, 2, scan),
              perToken(16, 1, 20, scan), "chunked, 64");
  }
  lightningBench(rng);
  {
    cpu::KdaParams p;
    p.heads = 32, p.k_dim = 128, p.v_dim = 128;
    auto A_log = randomVector(p.heads, rng, -3.0f, -1.0f), dt_bias = randomVector(p.heads * p.k_dim, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data();
    int64_t kw = p.heads * p.k_dim, vw = p.heads * p.v_dim, state = p.heads * p.k_dim * p.v_dim;
    auto scan = [&](int64_t R, int64_t n) {
      int64_t T = R * n;
      auto in = std::make_shared<std::vector<std::vector<float>>>(std::vector<std::vector<float>>{
          randomVector(T * kw, rng), randomVector(T * kw, rng), randomVector(T * vw, rng), randomVector(T * kw, rng),
          randomVector(T * p.heads, rng), std::vector<float>(T * vw), std::vector<float>(R * state)});
      auto rows = std::make_shared<Rows>(R, n);
      return [=, &p] {
        auto &v = *in;
        cpu::kdaScan(v[0].data(), v[1].data(), v[2].data(), v[3].data(), v[4].data(), p, rows->view, v[6].data(),
                     v[5].data(), kSerial, 64);
      };
    };
    printScan("KDA (Kimi-Linear-48B-A3B: 32 heads, 128x128)", perToken(1, 512, 2, scan),
              perToken(16, 1, 20, scan), "chunked, 64");
  }
  {
    cpu::SsdParams p;
    p.heads = 80, p.head_dim = 64, p.groups = 1, p.state = 128;
    auto A_log = randomVector(p.heads, rng), dt_bias = randomVector(p.heads, rng), D = randomVector(p.heads, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data(), p.D = D.data();
    int64_t xw = p.heads * p.head_dim, bw = p.groups * p.state, state = p.heads * p.head_dim * p.state;
    auto scan = [&](int64_t R, int64_t n) {
      int64_t T = R * n;
      auto in = std::make_shared<std::vector<std::vector<float>>>(std::vector<std::vector<float>>{
          randomVector(T * xw, rng), randomVector(T * p.heads, rng), randomVector(T * bw, rng),
          randomVector(T * bw, rng), std::vector<float>(T * xw), std::vector<float>(R * state)});
      auto rows = std::make_shared<Rows>(R, n);
      return [=, &p] {
        auto &v = *in;
        cpu::ssdScan(v[0].data(), v[1].data(), v[2].data(), v[3].data(), p, rows->view, v[5].data(), v[4].data(),
                     kSerial, 64);
      };
    };
    printScan("Mamba2 SSD (Mamba2-2.7B: 80 heads, 64x128)", perToken(1, 512, 2, scan), perToken(16, 1, 20, scan),
              "chunked, 64");
  }
  {
    cpu::SelectiveParams p;
    p.channels = 8192, p.groups = 1, p.state = 16;
    auto A_log = randomVector(p.channels * p.state, rng), dt_bias = randomVector(p.channels, rng);
    auto D = randomVector(p.channels, rng);
    p.A_log = A_log.data(), p.dt_bias = dt_bias.data(), p.D = D.data();
    int64_t I = p.channels, bw = p.groups * p.state;
    auto scan = [&](int64_t R, int64_t n) {
      int64_t T = R * n;
      auto in = std::make_shared<std::vector<std::vector<float>>>(std::vector<std::vector<float>>{
          randomVector(T * I, rng), randomVector(T * I, rng), randomVector(T * bw, rng), randomVector(T * bw, rng),
          randomVector(T * I, rng), std::vector<float>(T * I), std::vector<float>(R * I * p.state)});
      auto rows = std::make_shared<Rows>(R, n);
      return [=, &p] {
        auto &v = *in;
        cpu::selectiveScan(v[0].data(), v[1].data(), v[2].data(), v[3].data(), v[4].data(), p, rows->view,
                           v[6].data(), v[5].data(), kSerial);
      };
    };
    printScan("Mamba selective (Jamba-v0.1: 8192 channels, 16)", perToken(1, 512, 2, scan),
              perToken(16, 1, 20, scan), "recurrent");
  }
  {
    // xLSTM-7B's mLSTM: 8 heads of C [256, 512]; gates as a trained model's (input around 0,
    // forget gates that keep most of the memory).
    cpu::MlstmParams p{8, 256, 512, 1e-6f};
    int64_t wk = p.heads * p.k_dim, wv = p.heads * p.v_dim, state = p.heads * (p.k_dim * (p.v_dim + 1) + 1);
    auto scan = [&](int64_t R, int64_t n) {
      int64_t T = R * n;
      auto in = std::make_shared<std::vector<std::vector<float>>>(std::vector<std::vector<float>>{
          randomVector(T * wk, rng), randomVector(T * wk, rng), randomVector(T * wv, rng),
          randomVector(T * p.heads, rng, -2.0f, 2.0f), randomVector(T * p.heads, rng, 2.0f, 6.0f),
          std::vector<float>(T * wv), std::vector<float>(R * state)});
      auto rows = std::make_shared<Rows>(R, n);
      return [=, &p] {
        auto &v = *in;
        cpu::mlstmScan(v[0].data(), v[1].data(), v[2].data(), v[3].data(), v[4].data(), p, rows->view, v[6].data(),
                       v[5].data(), kSerial, 64);
      };
    };
    printScan("mLSTM (xLSTM-7B: 8 heads, 256x512)", perToken(1, 512, 2, scan), perToken(16, 1, 20, scan),
              "chunkwise, 64");
  }
}

// Milliseconds per call of fn, the best of `reps`.
template <class F> double bestMs(int reps, F &&fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return best;
}

// One request decoding its next token over n cached tokens of one DeepSeek-V3.2 layer (rows of
// latent 512 | k_rope 64 | index_key 128). The indexer's cost grows with n (it scores every
// cached key); the sparse latent attention reads 2048 rows whatever n is. The attention runs 16
// of the model's 128 heads (the cost per head is what scales).
void dsaBench() {
  namespace cpu = rt::cpu;
  openblas_set_num_threads(1);
  std::mt19937 rng(9);
  const int64_t B = 64, L = 512, R = 64, DI = 128, HI = 64, K = 2048, H = 16;
  std::printf("DeepSeek-V3.2 sparse attention, one decode token, one layer, one thread:\n");
  std::printf("%10s %22s %24s %24s\n", "cached", "indexer+top-k (ms)", "sparse attention (ms)",
              "dense attention (ms)");
  for (int64_t n : {1024, 8192, 32768}) {
    cpu::KvLayout layout{B, L + R + DI, L, DI};
    std::vector<float> pool = randomVector(n * layout.row_elems, rng);
    std::vector<int32_t> table(n / B), pos = {(int32_t)(n - 1)}, seq = {0}, slots = {0};
    for (size_t b = 0; b < table.size(); ++b)
      table[b] = (int32_t)b;
    auto q = randomVector(HI * DI, rng), w = randomVector(HI, rng);
    std::vector<int32_t> sel(K);
    cpu::IndexSelectParams ip{HI, DI, K, 1.0f / std::sqrt((float)DI), 1.0f / std::sqrt((float)HI)};
    double index = bestMs(3, [&] {
      cpu::indexSelect(q.data(), w.data(), 1, pos.data(), seq.data(), slots.data(), table.data(),
                       (int64_t)table.size(), layout, pool.data(), ip, sel.data(), kSerial);
    });
    auto ql = randomVector(H * L, rng), qr = randomVector(H * R, rng);
    std::vector<float> out(H * L);
    cpu::LatentAttentionParams lp{H, L, R, 0.1f, 0, 0};
    double sparse = bestMs(3, [&] {
      cpu::sparseLatentAttention(ql.data(), qr.data(), 1, seq.data(), slots.data(), table.data(),
                                 (int64_t)table.size(), layout, pool.data(), lp, sel.data(), K, out.data(), kSerial);
    });
    double dense = bestMs(3, [&] {
      cpu::latentAttention(ql.data(), qr.data(), 1, pos.data(), seq.data(), slots.data(), table.data(),
                           (int64_t)table.size(), layout, pool.data(), lp, out.data(), kSerial);
    });
    std::printf("%10lld %22.2f %24.2f %24.2f\n", (long long)n, index, sparse, dense);
  }
}

// The machine's ceilings for the CPU backend, on `threads` threads, for bench/cpu_roofline.py:
// streaming-read memory bandwidth (each thread sums its slice of a 1 GiB buffer of 64-bit
// integers, far larger than the caches, in the widest vectors the CPU has so that the loads
// and adds never limit it; best of 5), the fp32 GEMM peak of OpenBLAS (sgemm, 2048 cubed, its own threads; best of
// 3), and cbc's own product kernels (runtime/cpu/matrix.h) on a packed bf16 weight: the GEMM
// at 512 rows (AMX where the CPU has it) and the matrix-vector product at one row, as the
// bandwidth it streams the weight with (1 GiB, past the caches).
// A slice's sum in four vectors of eight 64-bit lanes, built for the widest vectors the CPU
// has: scalar or narrow loads would bound the sweep by the core, not by memory.
typedef uint64_t U64x8 __attribute__((vector_size(64), aligned(8)));
__attribute__((target_clones("avx512f", "avx2", "default"))) uint64_t sumSlice(const uint64_t *p, size_t n) {
  U64x8 acc[4] = {};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k)
      acc[k] += *(const U64x8 *)(p + i + 8 * k);
  uint64_t sum = 0;
  for (; i < n; ++i)
    sum += p[i];
  for (int k = 0; k < 4; ++k)
    for (int l = 0; l < 8; ++l)
      sum += acc[k][l];
  return sum;
}

void rooflineBench(int threads) {
  const size_t n = (size_t(1) << 30) / sizeof(uint64_t);
  std::vector<uint64_t> buf(n, 1);
  std::vector<uint64_t> partial(threads);
  auto sweep = [&] {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        partial[t] = sumSlice(buf.data() + lo, hi - lo);
      });
    for (auto &th : pool)
      th.join();
  };
  double ms = bestMs(5, sweep);
  uint64_t check = 0;
  for (uint64_t v : partial)
    check += v;
  if (check != n)
    throw std::runtime_error("the bandwidth sweep summed the wrong total");
  std::printf("threads %d\n", threads);
  std::printf("read bandwidth %.2f GB/s (1 GiB streamed, best of 5)\n", (double)(n * sizeof(uint64_t)) / (ms * 1e6));

  openblas_set_num_threads(threads);
  const int d = 2048;
  std::vector<float> a(size_t(d) * d, 0.5f), b(size_t(d) * d, 0.25f), c(size_t(d) * d);
  double gemm = bestMs(3, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, d, 1.0f, a.data(), d, b.data(), d, 0.0f, c.data(), d);
  });
  std::printf("sgemm peak %.2f GFLOP/s (OpenBLAS, %d x %d x %d, best of 3)\n", 2.0 * d * d * d / (gemm * 1e6), d,
              d, d);
  openblas_set_num_threads(1);

  rt::ThreadPool pool(threads);
  rt::cpu::ParallelFor pfor = [&](int64_t count, const std::function<void(int64_t)> &fn) {
    pool.parallelFor(count, fn);
  };
  // 1 GiB of bf16, as the sweep: past any cache (this VM reports a 480 MiB L3).
  const int64_t K = 8192, N = 65536, M = 512;
  std::vector<uint16_t> w(size_t(N) * K, rt::floatToBf16(0.125f));
  rt::cpu::packBf16(w.data(), 1, N, K);
  std::vector<float> x(size_t(M) * K, 0.5f), y(size_t(M) * N);
  rt::cpu::Matrix packed(w.data(), rt::Storage::BF16Panels);
  const int64_t gemmN = 2048; // the GEMM's weight: the first 2048 rows (32 MiB)
  double cbcGemm = bestMs(3, [&] { rt::cpu::matmul(x.data(), M, K, packed, gemmN, y.data(), pfor); });
  std::printf("cbc gemm peak %.2f GFLOP/s (%s, packed bf16, %lld x %lld x %lld, best of 3)\n",
              2.0 * M * gemmN * K / (cbcGemm * 1e6), rt::cpu::gemmKernel(), (long long)M, (long long)gemmN,
              (long long)K);
  double gemv = bestMs(5, [&] { rt::cpu::matmul(x.data(), 1, K, packed, N, y.data(), pfor); });
  std::printf("cbc gemv bandwidth %.2f GB/s (%s, packed bf16, 1 x %lld x %lld, best of 5)\n",
              (double)N * K * 2 / (gemv * 1e6), rt::cpu::gemvKernel(), (long long)N, (long long)K);
}

const char *const kUsage =
    "usage: cbc-bench-runtime [MODE]\n"
    "Runtime benchmarks (figures, not tests). MODE is one of:\n"
    "  all        every mode below, in this order (the default)\n"
    "  scheduler  scheduler plus step-metadata cost per decode step, null backend, at 1, 64, 1024\n"
    "             and 4096 concurrent requests, every request live through the timed steps\n"
    "  cpu        the CPU backend's throughput on the bundled example (examples/tiny-llama)\n"
    "  scans      the CPU cost per token of each state scan, one thread, prefill and decode\n"
    "  dsa        DeepSeek-V3.2's sparse attention per decoded token at 1k, 8k and 32k cached tokens\n"
    "  roofline [THREADS]  memory read bandwidth, the fp32 sgemm peak and cbc's own GEMM and\n"
    "             matrix-vector kernels on THREADS threads (default: all cores), for\n"
    "             bench/cpu_roofline.py; not part of all\n"
    "  -h, --help this text\n";

} // namespace

int main(int argc, char **argv) {
  std::string what = argc > 1 ? argv[1] : "all";
  if (what == "-h" || what == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  bool known = what == "all" || what == "scheduler" || what == "cpu" || what == "scans" || what == "dsa";
  if (what == "roofline") {
    int threads = (int)std::thread::hardware_concurrency();
    if (argc > 2) {
      char *end = nullptr;
      long v = std::strtol(argv[2], &end, 10);
      if (argc > 3 || *end != '\0' || v < 1 || v > 1024) {
        std::fprintf(stderr, "cbc-bench-runtime: error: roofline THREADS must be in [1, 1024]\n%s", kUsage);
        return 2;
      }
      threads = (int)v;
    }
    try {
      rooflineBench(std::max(1, threads));
    } catch (const std::exception &e) {
      std::fprintf(stderr, "bench: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  if (!known || argc > 2) {
    std::fprintf(stderr, "cbc-bench-runtime: error: %s\n%s",
                 known ? ("unexpected argument '" + std::string(argv[2]) + "'").c_str()
                       : ("unknown mode '" + what + "'").c_str(),
                 kUsage);
    return 2;
  }
  std::string root = CBC_SOURCE_DIR;
  try {
    if (what == "scheduler" || what == "all")
      schedulerBench(root + "/test/configs/published/llama-3.1-8b.json");
    if (what == "cpu" || what == "all")
      cpuBench(root + "/examples/tiny-llama/config.json", root + "/examples/tiny-llama/prompts.jsonl");
    if (what == "scans" || what == "all") // last: it pins OpenBLAS to one thread
      scanBench();
    if (what == "dsa" || what == "all")
      dsaBench();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
