// Ring 1 for multimodal prompts: the CPU backend against transformers' whole multimodal forward.
// Each fixture under test/parity/fixtures_mm/ (tools/oracle/make_mm_fixtures.py) holds a tiny
// random multimodal model, its prompts with placeholder tokens, the rows transformers' encoder
// and projector scattered into them (embeds_i, by runs segments_i), and the greedy tokens and
// logits of the real forward. cbc gets the prompts and those rows, and must give the same.
#include "frontends/hf_config/config_reader.h"
#include "runtime/safetensors.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

namespace cbc::test {
namespace {

class Multimodal : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    dir_ = mmFixtureDir(GetParam());
    artefact_ = compileArtefact(readFile(dir_ + "/config.json"));
    prompts_ = loadMultimodal(dir_);
    atol_ = hf::parseConfigJson(readFile(dir_ + "/meta.json")).at("atol").get<double>();
    weights_.checkpoint_dir = dir_;
  }

  std::vector<cbc::test::Run> runs() const {
    std::vector<cbc::test::Run> out;
    for (const MultimodalPrompt &p : prompts_) {
      out.push_back({p.ids, greedyWithLogits((int64_t)p.tokens.size())});
      out.back().embeds = p.embeds;
    }
    return out;
  }

  // Tokens exact, every step's logits within the fixture's tolerance: output k of `res` is
  // prompt first + k's.
  void check(const RunResult &res, const std::string &how, size_t first = 0) const {
    int64_t vocab = artefact_.meta.vocab_size;
    for (size_t k = 0; k < res.outputs.size(); ++k) {
      size_t i = first + k;
      const rt::RequestOutput &out = res.outputs[k];
      EXPECT_EQ(out.tokens, prompts_[i].tokens) << GetParam() << " prompt " << i << " " << how;
      double diff = 0;
      for (size_t s = 0; s < out.logits.size() && s < prompts_[i].tokens.size(); ++s)
        for (int64_t v = 0; v < vocab; ++v)
          diff = std::max(diff, (double)std::fabs(out.logits[s][v] - prompts_[i].logits[s * vocab + v]));
      EXPECT_LE(diff, atol_) << GetParam() << " prompt " << i << " " << how << ": max |dlogit| " << diff;
    }
  }

  std::string dir_;
  rt::Artefact artefact_;
  std::vector<MultimodalPrompt> prompts_;
  double atol_ = 0;
  rt::WeightSource weights_;
};

TEST_P(Multimodal, TheFixtureHasImagesAtTheStartMiddleAndEnd) {
  ASSERT_EQ(prompts_.size(), 4u);
  bool start = false, end = false, two = false;
  for (const MultimodalPrompt &p : prompts_) {
    two |= p.embeds.size() >= 2;
    for (const rt::EmbeddingSegment &s : p.embeds) {
      start |= s.start <= 2;
      end |= s.start + s.rows + 2 >= (int64_t)p.ids.size();
    }
  }
  EXPECT_TRUE(start && end && two);
  EXPECT_TRUE(prompts_.back().embeds.empty()) << "the last prompt is text-only";
}

TEST_P(Multimodal, EachPromptAloneMatchesTransformers) {
  std::vector<cbc::test::Run> all = runs();
  for (size_t i = 0; i < all.size(); ++i) {
    rt::EngineOptions o;
    o.threads = 2;
    check(serve(artefact_, weights_, o, {all[i]}), "alone", i);
  }
}

// All prompts at once, text-only beside multimodal, with token budgets that split images' rows
// across steps. A model whose image rows attend to each other (key ends: Gemma 3) computes an
// image in one step instead: its steps end before an image that does not fit, and a request
// with an image larger than the budget is refused with the reason.
TEST_P(Multimodal, BatchedChunkedPrefillMatchesTransformers) {
  bool whole = artefact_.program.readArg(StepArg::KeyEnds) != nullptr;
  for (int64_t budget : {1, 5, 16, 20, 64}) {
    rt::EngineOptions o;
    o.max_batch_tokens = budget;
    o.threads = 2;
    std::string how = "with a budget of " + std::to_string(budget) + " tokens";
    RunResult res = serve(artefact_, weights_, o, runs());
    for (size_t i = 0; i < prompts_.size(); ++i) {
      bool tooBig = whole && std::any_of(prompts_[i].embeds.begin(), prompts_[i].embeds.end(),
                                         [&](const rt::EmbeddingSegment &s) { return s.visual() && s.rows > budget; });
      if (!tooBig)
        continue;
      EXPECT_EQ(res.outputs[i].finish, rt::FinishReason::Rejected) << GetParam() << " prompt " << i << " " << how;
      EXPECT_NE(res.outputs[i].error.find("in one step"), std::string::npos) << res.outputs[i].error;
      res.outputs[i].tokens = prompts_[i].tokens, res.outputs[i].logits.clear(); // checked above
    }
    check(res, how);
  }
}

// A cache too small for all of them at once: requests are preempted and recompute their
// prompts, images included.
TEST_P(Multimodal, PreemptedRequestsRecomputeTheirImages) {
  rt::EngineOptions o;
  o.threads = 2;
  o.max_batch_tokens = 16;
  o.prefix_caching = false;
  const rt::CachePlan &plan = artefact_.cache_plan;
  int64_t blockRow = 0;
  for (const rt::CacheLayer &l : plan.layers)
    blockRow += l.elemsPerToken() * 4 * plan.block_size;
  size_t longest = 0;
  for (const MultimodalPrompt &p : prompts_)
    longest = std::max(longest, p.ids.size() + p.tokens.size());
  int64_t stateBytes = 0; // two requests' states at most, and no snapshots
  for (const rt::StateDecl &st : plan.states)
    stateBytes += st.elems() * 4;
  o.cache_memory_bytes = (int64_t)(longest / plan.block_size + 2) * blockRow + 2 * stateBytes;
  if (stateBytes > 0) {
    o.max_live_requests = 2;
    o.max_state_fraction = (double)(2 * stateBytes) / (double)o.cache_memory_bytes;
    o.snapshot_memory_bytes = 0;
  }
  RunResult res = serve(artefact_, weights_, o, runs());
  check(res, "under preemption");
  if (blockRow > 0)
    EXPECT_GT(res.stats.preemptions, 0) << "the cache budget is meant to force preemption";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Multimodal, ::testing::ValuesIn(mmFamilies()),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace cbc::test
