// Requests that give embeddings for runs of their prompt's rows (multimodal prompts): what the
// engine refuses and why, and that the rows reach the model exactly. The parity against
// transformers' own multimodal forward is test/parity/multimodal_test.cpp; here the reference is
// the engine itself: giving a placeholder row its own token's embedding must change nothing.
#include "runtime/safetensors.h"
#include "runtime/weights.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cbc::test {
namespace {

// The composite llama4 fixture: a multimodal wrapper, so its decoder takes embeddings.
const char *kFamily = "llama4";

class Embeddings : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    artefact_ = new rt::Artefact(compileArtefact(readFile(fixtureDir(kFamily) + "/config.json")));
    rt::Checkpoint ck(fixtureDir(kFamily) + "/model.safetensors");
    table_ = new rt::HostTensor(rt::readTensorAsFloat(ck, "language_model.model.embed_tokens.weight", artefact_->meta));
  }
  static void TearDownTestSuite() {
    delete artefact_;
    delete table_;
  }

  static rt::EngineOptions options(int64_t budget = 64) {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.threads = 1;
    o.max_batch_tokens = budget;
    o.cache_memory_bytes = 16ll << 20;
    return o;
  }
  static int64_t width() { return artefact_->meta.hidden_size; }

  // A segment of rows [start, start + n) holding the table rows of `tokens` (n of them).
  static rt::EmbeddingSegment tableRows(int64_t start, const std::vector<int32_t> &tokens) {
    auto data = std::make_shared<std::vector<float>>();
    std::span<const float> t = table_->f32();
    for (int32_t id : tokens)
      data->insert(data->end(), t.begin() + id * width(), t.begin() + (id + 1) * width());
    return {start, (int64_t)tokens.size(), data};
  }
  // A segment of n rows of a smooth pattern, different for each `salt`.
  static rt::EmbeddingSegment pattern(int64_t start, int64_t n, float salt) {
    auto data = std::make_shared<std::vector<float>>();
    for (int64_t i = 0; i < n * width(); ++i)
      data->push_back(0.5f * std::sin(salt + 0.37f * (float)i));
    return {start, n, data};
  }

  static rt::Artefact *artefact_;
  static rt::HostTensor *table_;
  rt::WeightSource weights_{fixtureDir(kFamily), 0};
};

rt::Artefact *Embeddings::artefact_ = nullptr;
rt::HostTensor *Embeddings::table_ = nullptr;

const std::vector<int32_t> kPrompt = {11, 200, 37, 37, 37, 37, 5, 90, 91, 37, 37, 8, 13, 21, 34, 55, 89, 7, 37};

TEST_F(Embeddings, AModelWithoutInjectionRefusesThem) {
  rt::Artefact text = compileArtefact(readFile(fixtureDir("llama") + "/config.json"));
  auto engine = rt::Engine::create(text, {fixtureDir("llama"), 0}, options());
  EXPECT_EQ(engine->embedding_width(), 0);
  auto seg = std::make_shared<std::vector<float>>(64, 0.0f);
  rt::AddResult r = engine->add_request({1, 2, 3}, greedyWithLogits(2), {{1, 1, seg}});
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.error.find("takes no embeddings"), std::string::npos) << r.error;
}

TEST_F(Embeddings, BadSegmentsAreRefusedWithAReasonAndLoseNothing) {
  auto engine = rt::Engine::create(*artefact_, weights_, options());
  ASSERT_EQ(engine->embedding_width(), width());
  rt::EmbeddingSegment good = pattern(2, 4, 1.0f);
  auto narrow = std::make_shared<std::vector<float>>(4 * (width() - 1), 0.0f);
  auto nan = std::make_shared<std::vector<float>>(*good.data);
  (*nan)[width() + 3] = std::nanf("");
  auto inf = std::make_shared<std::vector<float>>(*good.data);
  (*inf)[0] = INFINITY;
  struct Case {
    std::vector<rt::EmbeddingSegment> embeds;
    std::string reason;
  } cases[] = {
      {{{2, 4, narrow}}, "rows of the model's width"},
      {{{2, 4, nullptr}}, "has 0 values"},
      {{{2, 0, good.data}}, "non-empty run"},
      {{{-1, 4, good.data}}, "non-empty run"},
      {{{17, 4, good.data}}, "within the prompt's 19 rows"},
      {{good, pattern(4, 2, 2.0f)}, "after the previous segment"},
      {{{2, 4, nan}}, "not finite at row 3"},
      {{{2, 4, inf}}, "not finite at row 2"},
  };
  for (const Case &c : cases) {
    rt::AddResult r = engine->add_request(kPrompt, greedyWithLogits(2), c.embeds);
    EXPECT_FALSE(r.accepted) << c.reason;
    EXPECT_NE(r.error.find(c.reason), std::string::npos) << r.error;
  }
  rt::AddResult ok = engine->add_request(kPrompt, greedyWithLogits(2), {good});
  ASSERT_TRUE(ok.accepted) << ok.error;
  while (!engine->idle())
    engine->step();
  std::vector<rt::RequestOutput> done = engine->take_finished();
  ASSERT_EQ(done.size(), std::size(cases) + 1); // the refused ones come back too, with their reasons
  EXPECT_EQ(done.back().tokens.size(), 2u);
  EXPECT_EQ(engine->stats().rejected, (int64_t)std::size(cases));
}

// What the multimodal fixtures' decoders need of a segment besides its rows: a grid where
// positions come from it (multimodal RoPE), a step that holds an image whose rows see each other.
TEST_F(Embeddings, ModelsThatReadGridsOrWholeImagesRefuseWhatTheyCannotPlace) {
  auto engineFor = [](const std::string &family, int64_t budget) {
    std::string dir = sourceDir() + "/test/parity/fixtures_mm/" + family;
    rt::EngineOptions o = options(budget);
    return rt::Engine::create(compileArtefact(readFile(dir + "/config.json")), {dir, 0}, o);
  };
  auto rows = [](int64_t n, int64_t width) { return std::make_shared<std::vector<float>>(n * width, 0.1f); };
  std::vector<int32_t> prompt(24, 9);

  auto qwen = engineFor("qwen3_5", 64);
  int64_t w = qwen->embedding_width();
  rt::AddResult r = qwen->add_request(prompt, greedyWithLogits(1), {{2, 6, rows(6, w)}});
  EXPECT_NE(r.error.find("needs its grid"), std::string::npos) << r.error;
  rt::EmbeddingSegment wrongGrid{2, 6, rows(6, w)};
  wrongGrid.grid[0] = 1, wrongGrid.grid[1] = 2, wrongGrid.grid[2] = 2;
  r = qwen->add_request(prompt, greedyWithLogits(1), {wrongGrid});
  EXPECT_NE(r.error.find("cells (4) must be its 6 rows"), std::string::npos) << r.error;
  wrongGrid.grid[2] = 3;
  EXPECT_TRUE(qwen->add_request(prompt, greedyWithLogits(1), {wrongGrid}).accepted);

  auto llama = engineFor("llama4", 64);
  rt::EmbeddingSegment gridded{2, 6, rows(6, llama->embedding_width())};
  gridded.grid[0] = 1, gridded.grid[1] = 2, gridded.grid[2] = 3;
  r = llama->add_request(prompt, greedyWithLogits(1), {gridded});
  EXPECT_NE(r.error.find("has a grid, but this model's positions do not read one"), std::string::npos) << r.error;

  auto gemma = engineFor("gemma3", 8);
  w = gemma->embedding_width();
  r = gemma->add_request(prompt, greedyWithLogits(1), {{2, 9, rows(9, w)}});
  EXPECT_NE(r.error.find("computes an image's rows in one step and the step's token budget is 8"), std::string::npos)
      << r.error;
  EXPECT_TRUE(gemma->add_request(prompt, greedyWithLogits(1), {{2, 8, rows(8, w)}}).accepted);
  rt::SamplingParams two = greedyWithLogits(1);
  two.n = 2;
  r = gemma->add_request(prompt, two, {{20, 4, rows(4, w)}});
  EXPECT_NE(r.error.find("n > 1 needs a prompt that does not end inside an image"), std::string::npos) << r.error;
  EXPECT_TRUE(gemma->add_request(prompt, two, {{19, 4, rows(4, w)}}).accepted);
  // An audio clip's rows are causal, so neither rule holds them.
  rt::EmbeddingSegment audio{2, 9, rows(9, w)};
  audio.modality = rt::Modality::Audio;
  EXPECT_TRUE(gemma->add_request(prompt, greedyWithLogits(1), {audio}).accepted);
  audio.start = 15;
  EXPECT_TRUE(gemma->add_request(prompt, two, {audio}).accepted);
}

// A placeholder row given its own token's embedding computes what the plain prompt does,
// whatever the steps' token budget splits: segments at the start, middle and end, and a
// text-only request beside them.
TEST_F(Embeddings, RowsGivenTheirOwnEmbeddingChangeNothing) {
  std::vector<int32_t> prompt = kPrompt;
  std::vector<rt::EmbeddingSegment> own = {tableRows(0, {11, 200}), tableRows(3, {37, 37, 37}),
                                           tableRows(9, {37, 37}), tableRows(18, {37})};
  for (int64_t budget : {64, 5, 1}) {
    RunResult plain = serve(*artefact_, weights_, options(budget),
                            {{prompt, greedyWithLogits(6)}, {{3, 4, 5}, greedyWithLogits(3)}});
    cbc::test::Run given{prompt, greedyWithLogits(6)};
    given.embeds = own;
    RunResult injected = serve(*artefact_, weights_, options(budget), {given, {{3, 4, 5}, greedyWithLogits(3)}});
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(injected.outputs[i].tokens, plain.outputs[i].tokens) << "budget " << budget;
      ASSERT_EQ(injected.outputs[i].logits.size(), plain.outputs[i].logits.size());
      for (size_t s = 0; s < plain.outputs[i].logits.size(); ++s)
        EXPECT_EQ(injected.outputs[i].logits[s], plain.outputs[i].logits[s]) << "budget " << budget << " step " << s;
    }
  }
}

// Other embeddings behind the same placeholder tokens change the logits, and prefix caching
// shares only the blocks before the first row where two requests' embeddings differ.
TEST_F(Embeddings, OtherEmbeddingsChangeTheOutputAndAreNotShared) {
  int64_t block = artefact_->cache_plan.block_size;
  std::vector<int32_t> prompt(3 * block + 3, 37);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = 1 + (int32_t)(i * 7 % 250);
  int64_t at = block + 2; // the image starts in the second block
  auto run = [&](float salt, rt::Engine &e) {
    rt::AddResult r = e.add_request(prompt, greedyWithLogits(2), {pattern(at, 5, salt)});
    EXPECT_TRUE(r.accepted) << r.error;
    while (!e.idle())
      e.step();
    return std::move(e.take_finished().at(0));
  };
  auto engine = rt::Engine::create(*artefact_, weights_, options());
  rt::RequestOutput first = run(1.0f, *engine), again = run(1.0f, *engine), other = run(2.0f, *engine);
  EXPECT_EQ(again.cached_tokens, 3 * block); // every full block: the same image
  EXPECT_EQ(other.cached_tokens, block);     // only the block before the image
  auto maxDiff = [](const rt::RequestOutput &a, const rt::RequestOutput &b) {
    double d = 0;
    for (size_t v = 0; v < a.logits[0].size(); ++v)
      d = std::max(d, (double)std::fabs(a.logits[0][v] - b.logits[0][v]));
    return d;
  };
  EXPECT_EQ(again.tokens, first.tokens);
  EXPECT_LE(maxDiff(again, first), 1e-4); // a warm prefill reduces in another order
  EXPECT_GT(maxDiff(other, first), 1e-2);
}

} // namespace
} // namespace cbc::test
