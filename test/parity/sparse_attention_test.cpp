// Each sparse-attention fixture's selection matters (deepseek_v32, glm_moe_dsa with its shared
// layer, axk2): compiled with index_topk raised past every
// sequence (to 4096, so each query keeps all of its keys, which is full MLA attention), the engine's
// greedy tokens differ from transformers' sparse ones, while the sparse compile matches them
// (the parity suite), so the fixture tests the top-k and not only the attention around it.
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

namespace cbc::test {
namespace {

class SparseAttention : public ::testing::TestWithParam<const char *> {};

TEST_P(SparseAttention, FullAttentionChangesTheFixtureTokens) {
  const std::string family = GetParam();
  std::string config = readFile(fixtureDir(family) + "/config.json");
  std::regex topk("\"index_topk\"\\s*:\\s*16\\b");
  ASSERT_TRUE(std::regex_search(config, topk)) << "the fixture's index_topk is no longer 16";
  std::string full = std::regex_replace(config, topk, "\"index_topk\": 4096");
  rt::Artefact artefact = compileArtefact(full);
  Expected expected = loadExpected(family);
  // The weights beside the config they are served with: the loader refuses a checkpoint whose
  // config.json is not the compiled one (index_topk is among the keys it compares).
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("cbc-sparse-" + family + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink(fixtureDir(family) + "/model.safetensors", dir / "model.safetensors");
  std::ofstream(dir / "config.json") << full;
  rt::WeightSource weights;
  weights.checkpoint_dir = dir.string();
  rt::EngineOptions o;
  o.threads = 2;
  std::vector<cbc::test::Run> runs;
  for (size_t i = 0; i < expected.prompts.size(); ++i) {
    rt::SamplingParams p;
    p.max_new_tokens = (int64_t)expected.tokens[i].size();
    p.ignore_eos = true;
    runs.push_back({expected.prompts[i], p});
  }
  auto res = serve(artefact, weights, o, runs);
  fs::remove_all(dir);
  size_t changed = 0;
  for (size_t i = 0; i < runs.size(); ++i)
    changed += res.outputs[i].tokens != expected.tokens[i];
  // The 80-token prompt reads 16 of up to 95 latents under the top-k: full attention must move it.
  EXPECT_NE(res.outputs[2].tokens, expected.tokens[2]) << "full attention left the 80-token prompt's tokens unchanged";
  RecordProperty("prompts_changed_by_full_attention", std::to_string(changed));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SparseAttention, ::testing::Values("deepseek_v32", "glm_moe_dsa", "axk2"),
                         [](const auto &info) { return std::string(info.param); });

} // namespace
} // namespace cbc::test
