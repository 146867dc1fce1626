// The memory a model needs is worked out from the artefact before loading and compared with
// what the machine has: a model too large is refused at once with the figures, instead of a
// std::bad_alloc a minute into loading. Published configs give real sizes; the "available"
// figure is passed in, so no big machine is needed.
#include "runtime/engine.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/memory_estimate.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <vector>

#include <chrono>

namespace cbc::test {
namespace {

const rt::Artefact &llama8b() {
  static const rt::Artefact a = compileArtefact(readFile(sourceDir() + "/test/configs/published/llama-3.1-8b.json"));
  return a;
}

std::string refusal(const rt::MemoryEstimate &e, int64_t available) {
  try {
    rt::checkFits(e, available);
  } catch (const rt::MemoryError &err) {
    return err.what();
  }
  return "";
}

// Held as bf16 (a bf16 checkpoint), the matrices count two bytes an element and the norm scales
// four; each matrix is assembled as float32 before it is narrowed.
TEST(MemoryEstimate, Llama8bOnTheCpuInBf16) {
  rt::BackendLimits limits{256, 64};
  std::vector<bool> bf16 = rt::cpuBf16Weights(llama8b());
  rt::MemoryEstimate e = rt::estimateCpuMemory(llama8b(), 256ll << 20, limits, bf16);
  int64_t norms = 4096ll * (2 * 32 + 1); // two per layer and the final one, float32
  EXPECT_EQ(e.weights, 2 * (8'030'261'248ll - norms) + 4 * norms);
  EXPECT_EQ(e.weight_dtype, "bf16 and f32");
  // The embedding's float32 form (128256 x 4096) outweighs gate_up's two assembly copies and
  // its float32 form (3 x 2 x 14336 x 4096 floats).
  int64_t logits = 4 * 64 * 128256ll, embed = 4 * 128256ll * 4096;
  EXPECT_GT(e.workspaces, logits + embed);
  EXPECT_LT(e.workspaces, logits + embed + (200ll << 20));
  EXPECT_LT(e.total(), 24ll << 30) << "an 8B model in bf16 fits a 24 GiB machine";
}

TEST(MemoryEstimate, Llama8bOnTheCpuIsItsParametersAsF32) {
  rt::BackendLimits limits{256, 64};
  rt::MemoryEstimate e = rt::estimateCpuMemory(llama8b(), 256ll << 20, limits);
  EXPECT_EQ(e.weights, 4 * 8'030'261'248ll); // Llama-3.1-8B's parameter count
  EXPECT_EQ(e.weight_dtype, "f32");
  EXPECT_EQ(e.cache, 256ll << 20);
  // The arenas, the logits rows (64 x 128256 floats) and two more copies of the largest weight
  // assembled from several tensors, gate_up (2 x 14336 x 4096 floats); the embedding and the
  // head, larger, are read as stored.
  int64_t logits = 4 * 64 * 128256ll, gateUp = 4 * 2 * 14336ll * 4096;
  EXPECT_GT(e.workspaces, logits + 2 * gateUp);
  EXPECT_LT(e.workspaces, logits + 2 * gateUp + (200ll << 20)) << "the arenas of 256 tokens are far smaller";
  EXPECT_EQ(refusal(e, 22'800'000'000), "the model needs " + rt::gigabytes(e.total()) +
                                            " of host memory (weights 32.1 GB as f32, cache 0.3 GB, workspaces " +
                                            rt::gigabytes(e.workspaces) + "), 22.8 GB available; lower --cache-memory, "
                                            "--max-batch-tokens or --max-requests, or use a machine with more memory");
  EXPECT_EQ(refusal(e, e.total()), "");   // exactly enough
  EXPECT_EQ(refusal(e, -1), "");          // unknown: no check
  EXPECT_NE(refusal(e, e.total() - 1), "");
}

TEST(MemoryEstimate, TheGpuKeepsTheDtypeOfEachProgramValue) {
  // Compiled --no-cuda there are no value dtypes: weights count as bf16, the compile default.
  rt::MemoryEstimate e = rt::estimateGpuMemory(llama8b(), 1ll << 30, {256, 64});
  EXPECT_EQ(e.where, "GPU");
  EXPECT_EQ(e.weights, 2 * 8'030'261'248ll);
  EXPECT_EQ(e.weight_dtype, "bf16");
  EXPECT_NE(refusal(e, 10'000'000'000).find("of GPU memory (weights 16.1 GB as bf16, cache 1.1 GB"), std::string::npos)
      << refusal(e, 10'000'000'000);
}

TEST(MemoryEstimate, TheEngineRefusesBeforeLoadingAnything) {
  rt::EngineOptions o;
  o.backend = "cpu";
  o.host_memory_available = 8'000'000'000; // a small machine
  auto start = std::chrono::steady_clock::now();
  try {
    rt::Engine::create(llama8b(), {"", 0}, o); // random weights: 16 GB of bf16 matrices if it tried
    ADD_FAILURE() << "no MemoryError";
  } catch (const rt::MemoryError &e) {
    EXPECT_NE(std::string(e.what()).find("of host memory (weights 16.1 GB as bf16 and f32"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("8.0 GB available"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  // The cache budget counts: a small model with a cache larger than the machine is refused too.
  o.host_memory_available = 0; // the machine's own figure
  o.cache_memory_bytes = int64_t(1) << 50;
  EXPECT_THROW(rt::Engine::create(committedArtefact("llama"), {"", 0}, o), rt::MemoryError);
}

TEST(MemoryEstimate, AvailableHostMemoryIsTheLowerOfMeminfoAndTheCgroup) {
  std::string meminfo = "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n";
  EXPECT_EQ(rt::availableHostMemory(meminfo, "", ""), 20'000'000ll * 1024);
  EXPECT_EQ(rt::availableHostMemory(meminfo, "max\n", "123\n"), 20'000'000ll * 1024);
  EXPECT_EQ(rt::availableHostMemory(meminfo, "8589934592\n", "1073741824\n"), 8589934592ll - 1073741824);
  EXPECT_EQ(rt::availableHostMemory(meminfo, "1000\n", "2000\n"), 0); // over its limit already
  EXPECT_EQ(rt::availableHostMemory("", "", ""), -1);
  EXPECT_GT(rt::availableHostMemory(), 0); // this machine says something
}

TEST(MemoryEstimate, PeakResidentMemoryIsVmHwm) {
  EXPECT_EQ(rt::peakResidentMemory("Name:\tcbc\nVmPeak:\t  900 kB\nVmHWM:\t    5120 kB\nVmRSS:\t 4096 kB\n"),
            5120ll * 1024);
  EXPECT_EQ(rt::peakResidentMemory("Name:\tcbc\n"), -1);
  // This process's own: at least the 64 MiB it has just touched.
  std::vector<char> touched(64 << 20, 1);
  asm volatile("" : : "r"(touched.data()) : "memory"); // the writes must happen
  EXPECT_GE(rt::peakResidentMemory(), (int64_t)touched.size());
}

} // namespace
} // namespace cbc::test
