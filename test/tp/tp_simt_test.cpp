// Ring 3 across ranks: the CUDA backend of a --tp artefact, each rank a process with its own
// emulated device (test/simt) running the generated kernels on its shard, and the gathers the
// collectives lower to running over MPI where a GPU would use NCCL. Programs in fp32, against
// transformers: the greedy tokens, and logits within a few times the fixture's tolerance (as the
// single-device SIMT suite holds them), through chunked prefill and batched decode.
// Every parity fixture whose shapes the rank count divides (the others are skipped, naming the
// rule), MoE fixtures also with their experts divided among the ranks. Rank 0 builds the kernel
// library once; the others load it.
#include "runtime/comm/ranks.h"
#include "runtime/cuda/gpu_backend.h"
#include "runtime/engine.h"
#include "test/simt/simt_device.h"
#include "test/support/compile_support.h"
#include "test/support/oracle_run.h"
#include "test/tp/tp_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace cbc::test {
namespace {

std::string cacheDir() { return CBC_SIMT_CACHE_DIR; }

class TensorParallelSimt : public ::testing::TestWithParam<std::string> {
protected:
  void check(bool expertParallel);
};

void TensorParallelSimt::check(bool expertParallel) {
  const std::string &family = GetParam();
  driver::CompileOptions options;
  options.emit_cuda = true;
  options.dtype = "f32";
  options.kernel_cache_dir = cacheDir() + "/nvrtc";
  std::string why;
  bool failed = false;
  std::optional<rt::Artefact> a =
      shareArtefact(fixtureDir(family) + "/config.json", options, expertParallel, why, failed);
  if (failed && gComm->rank() == 0)
    FAIL() << family << " does not compile for " << gComm->size() << " ranks: " << why;
  if (!a)
    GTEST_SKIP() << family << " at " << gComm->size() << " ranks: " << why;
  ASSERT_TRUE(a->kernels.has_value());
  // Expert parallelism only changes MoE layers: the other fixtures ran under the plain test.
  if (expertParallel && !shareFlag(gComm->rank() == 0 && hasExperts(*a)))
    GTEST_SKIP() << family << " has no experts";
  if (gComm->rank() == 0)
    simt::buildKernelLibrary(a->kernels->source, cacheDir());
  shareFlag(true); // the library is built: the other ranks load it

  rt::WeightSource w;
  w.checkpoint_dir = fixtureDir(family);
  w.rank = gComm->rank();
  rt::EngineOptions o;
  o.max_batch_tokens = 16;
  o.max_requests = 8;
  o.cache_memory_bytes = 8 << 20;
  o.threads = 1;
  auto gpu = rt::makeGpuBackend(*a, w, simt::makeSimtDevice(cacheDir()), {o.max_batch_tokens, o.max_requests}, gComm);
  if (gComm->rank() > 0) {
    rt::followRank0(*gpu, *gComm, a->cache_plan);
    return;
  }
  const int64_t steps = 4;
  Expected want = loadExpected(family);
  auto engine = rt::Engine::withBackend(*a, rt::leadRanks(std::move(gpu), gComm), o);
  double worst = greedyAgainstOracle(*engine, want, steps, family);
  engine.reset(); // tells the other ranks to stop
  EXPECT_LE(worst, 4 * want.atol) << family;
  RecordProperty("max_abs_dlogit_vs_transformers", std::to_string(worst));
  std::printf("[ tp=%d%s simt ] %s fp32: max |dlogit| against transformers %.2e (CPU tolerance %.0e)\n",
              gComm->size(), expertParallel ? " ep" : "", family.c_str(), worst, want.atol);
}

TEST_P(TensorParallelSimt, Fp32KernelsMatchTransformers) { check(false); }
TEST_P(TensorParallelSimt, ExpertParallelFp32KernelsMatchTransformers) { check(true); }

INSTANTIATE_TEST_SUITE_P(Fixtures, TensorParallelSimt, ::testing::ValuesIn(fixtureFamilies()),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace cbc::test

int main(int argc, char **argv) { return cbc::test::runOnRanks(argc, argv); }
