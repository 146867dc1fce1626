// The gather launches a --tp artefact's collectives lower to (runtime/schema/model.fbs, table
// Gather): what the loader refuses in a damaged one, on a fresh two-rank compile with kernels.
#include "driver/compile.h"
#include "runtime/build_config.h"
#include "runtime/schema/integrity.h"
#include "runtime/schema/model_generated.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

namespace cbc::test {
namespace {

// The loader's message for the bytes resealed (so that only the change is found), or "".
std::string loadError(std::vector<uint8_t> bytes) {
  resealArtefact(bytes);
  try {
    rt::Artefact::fromBytes(bytes.data(), bytes.size());
  } catch (const rt::ArtefactError &e) {
    return e.what();
  }
  return "";
}

TEST(GatherLaunches, DamagedOnesAreRefused) {
  if constexpr (!kBuiltWithCuda)
    GTEST_SKIP() << "a cbc built without CUDA generates no kernels";
  driver::CompileOptions o;
  o.tp = 2;
  std::vector<uint8_t> b = driver::compileConfig(readFile(fixtureDir("llama") + "/config.json"), o).artefact;
  ASSERT_EQ(loadError(b), "");
  auto *launches = fb::GetMutableModel(b.data())->mutable_kernels()->mutable_launches();
  int gather = -1, kernel = -1;
  for (uint32_t i = 0; i < launches->size(); ++i) {
    const fb::Launch *l = launches->Get(i);
    if (l->gather() && gather < 0)
      gather = (int)i;
    if (l->kernel() >= 0 && kernel < 0)
      kernel = (int)i;
  }
  ASSERT_GE(gather, 0) << "the all-reduces lower to no gather";
  ASSERT_GE(kernel, 0);
  std::vector<uint8_t> c = b;
  auto launch = [&](int i) { return fb::GetMutableModel(c.data())->mutable_kernels()->mutable_launches()->GetMutableObject(i); };
  ASSERT_TRUE(launch(gather)->mutable_gather()->mutate_x(1 << 20));
  EXPECT_NE(loadError(c).find("a gather refers to an unknown value"), std::string::npos) << loadError(c);
  c = b;
  ASSERT_TRUE(launch(gather)->mutable_gather()->mutate_workspace(99));
  EXPECT_NE(loadError(c).find("a gather uses an unknown workspace"), std::string::npos) << loadError(c);
  c = b;
  ASSERT_TRUE(launch(gather)->mutable_gather()->mutate_x(0)); // value 0: the tokens, a step argument
  EXPECT_NE(loadError(c).find("a gather reads a value that is not an activation"), std::string::npos) << loadError(c);
  c = b;
  ASSERT_TRUE(launch(gather)->mutate_kernel(0));
  EXPECT_NE(loadError(c).find("a kernel launch also describes a GEMM or a gather"), std::string::npos) << loadError(c);
  c = b;
  ASSERT_TRUE(launch(kernel)->mutate_kernel(-1));
  EXPECT_NE(loadError(c).find("a launch is neither a kernel, a GEMM nor a gather"), std::string::npos) << loadError(c);
  // A workspace too small for every rank's rows of the gathered value.
  c = b;
  int ws = launch(gather)->gather()->workspace();
  auto *w = fb::GetMutableModel(c.data())->mutable_kernels()->mutable_workspaces()->GetMutableObject(ws);
  ASSERT_TRUE(w->mutate_bytes_per_token(4));
  EXPECT_NE(loadError(c).find("a gather's workspace is too small for every rank's rows"), std::string::npos)
      << loadError(c);
}

} // namespace
} // namespace cbc::test
