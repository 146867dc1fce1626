// A runtime built without CUDA (CBC_CUDA=OFF) has no CUDA backend: "auto" serves every artefact
// on the CPU, kernels or not, without a note, and "cuda" is refused by name. In a build with
// CUDA these tests are skipped: there "auto" tries the GPU, which cbc-gpu-check covers.
#include "runtime/artefact_check.h"
#include "runtime/build_config.h"
#include "test/support/test_support.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace cbc::test {
namespace {

// The committed llama artefact (compiled with --no-cuda) with a kernel bundle attached, one the
// loader's check accepts (as Artefact::fromBytes calls it), as a cbc built with CUDA would have
// written it: the CPU backend must not care.
rt::Artefact withKernels() {
  rt::Artefact a = committedArtefact("llama");
  rt::KernelBundle k;
  k.names = {"kernel"};
  k.value_dtypes.assign(a.program.values.size(), rt::DType::BF16);
  rt::KernelImage image;
  image.arch = "sm_90";
  image.image.assign(64, 0xcb);
  image.registers = image.spills = image.shared_bytes = {0};
  k.cubins.push_back(image);
  a.kernels = k;
  rt::checkKernels(a);
  return a;
}

std::vector<Run> prompts() {
  std::vector<Run> runs(2);
  runs[0].prompt = {1, 5, 9, 2};
  runs[1].prompt = {7, 3};
  for (Run &r : runs) {
    r.params.max_new_tokens = 6;
    r.params.ignore_eos = true;
  }
  return runs;
}

TEST(CpuOnlyBuild, AutoServesAnArtefactWithKernelsOnTheCpu) {
  if (kBuiltWithCuda)
    GTEST_SKIP() << "built with CUDA: auto tries the CUDA backend there";
  rt::Artefact a = withKernels();
  ASSERT_TRUE(a.kernels.has_value());
  rt::WeightSource weights{fixtureDir("llama"), 0};
  rt::EngineOptions o;
  o.backend = "auto";
  std::vector<std::string> logs;
  o.log = [&](const std::string &m) { logs.push_back(m); };
  EXPECT_EQ(rt::makeBackend(a, weights, o)->name(), "cpu");

  // The same tokens as the artefact without kernels on the cpu backend, and nothing logged.
  RunResult got = serve(a, weights, o, prompts());
  rt::EngineOptions cpu;
  cpu.backend = "cpu";
  RunResult want = serve(committedArtefact("llama"), weights, cpu, prompts());
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    EXPECT_EQ(got.outputs[i].tokens.size(), 6u);
    EXPECT_EQ(got.outputs[i].tokens, want.outputs[i].tokens) << "request " << i;
  }
  EXPECT_TRUE(logs.empty()) << logs.front();
}

TEST(CpuOnlyBuild, TheCudaBackendIsRefusedByName) {
  if (kBuiltWithCuda)
    GTEST_SKIP() << "built with CUDA: the cuda backend exists there";
  rt::EngineOptions o;
  o.backend = "cuda";
  for (const rt::Artefact &a : {withKernels(), committedArtefact("llama")}) {
    try {
      rt::makeBackend(a, rt::WeightSource{"", 1}, o);
      ADD_FAILURE() << "the cuda backend was made";
    } catch (const std::invalid_argument &e) {
      EXPECT_EQ(std::string(e.what()), "the CUDA backend is not in this runtime: cbc was built without CUDA "
                                       "(CBC_CUDA=OFF); use the cpu backend");
    }
  }
}

} // namespace
} // namespace cbc::test
