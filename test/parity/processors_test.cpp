// Logits processing against transformers' logits processors: the request fields as `cbc run`
// reads them (logit_bias, repetition_penalty, bad_words, min_tokens) give transformers' greedy tokens on the
// llama fixture (test/parity/processors/llama.json, tools/oracle/make_processor_fixture.py), each
// request alone and all of them in one batch with chunked prefill.
#include "runtime/request_json.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace cbc::test {
namespace {

// The llama fixture's artefact and weights, which every test here serves.
std::pair<rt::Artefact, rt::WeightSource> llamaModel() {
  rt::WeightSource w;
  w.checkpoint_dir = fixtureDir("llama");
  return {compileArtefact(readFile(fixtureDir("llama") + "/config.json")), w};
}

struct Case {
  std::vector<int32_t> prompt, tokens;
  rt::SamplingParams params;
  std::string fields;
};

std::vector<Case> loadCases() {
  auto j = nlohmann::json::parse(readFile(sourceDir() + "/test/parity/processors/llama.json"));
  std::vector<Case> out;
  for (const auto &c : j.at("cases")) {
    nlohmann::json line = c.at("fields");
    line["prompt"] = c.at("prompt");
    line["max_new_tokens"] = c.at("max_new_tokens");
    rt::ParsedRequest p = rt::parseRequestLine(line.dump(), rt::SamplingParams{});
    EXPECT_EQ(p.error, "") << line.dump();
    out.push_back({p.ids, c.at("tokens").get<std::vector<int32_t>>(), p.params, c.at("fields").dump()});
  }
  return out;
}

TEST(LogitsProcessing, MatchesTransformersProcessors) {
  auto [a, w] = llamaModel();
  std::vector<Case> cases = loadCases();
  ASSERT_EQ(cases.size(), 14u);
  std::vector<cbc::test::Run> batch;
  for (const Case &c : cases) {
    rt::EngineOptions o;
    o.threads = 2;
    RunResult alone = serve(a, w, o, {{c.prompt, c.params}});
    EXPECT_EQ(alone.outputs[0].tokens, c.tokens) << c.fields;
    batch.push_back({c.prompt, c.params});
  }
  rt::EngineOptions o;
  o.threads = 2;
  o.max_batch_tokens = 7; // prompts cut into chunks, requests decoding beside others' prefill
  RunResult together = serve(a, w, o, batch);
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(together.outputs[i].tokens, cases[i].tokens) << "batched: " << cases[i].fields;
}

// top_logprobs: each step's best ids and their log-probabilities are those of transformers' logits
// (the fixture's rows, log-softmaxed here), ids compared where the expected gap exceeds the tolerance.
TEST(LogitsProcessing, TopLogprobsMatchTransformersLogits) {
  auto [a, w] = llamaModel();
  Expected expected = loadExpected("llama");
  const int64_t vocab = a.meta.vocab_size, K = 5;
  for (size_t i = 0; i < expected.prompts.size(); ++i) {
    rt::SamplingParams p;
    p.max_new_tokens = (int64_t)expected.tokens[i].size();
    p.ignore_eos = true;
    p.top_logprobs = K;
    rt::EngineOptions o;
    o.threads = 2;
    RunResult r = serve(a, w, o, {{expected.prompts[i], p}});
    const rt::RequestOutput &out = r.outputs[0];
    ASSERT_EQ(out.tokens, expected.tokens[i]);
    ASSERT_EQ(out.top_logprobs.size(), out.tokens.size());
    for (size_t s = 0; s < out.tokens.size(); ++s) {
      const float *row = expected.logits[i].data() + s * vocab;
      double m = *std::max_element(row, row + vocab), sum = 0;
      for (int64_t v = 0; v < vocab; ++v)
        sum += std::exp((double)row[v] - m);
      std::vector<std::pair<double, int32_t>> ref(vocab);
      for (int64_t v = 0; v < vocab; ++v)
        ref[v] = {(double)row[v] - m - std::log(sum), (int32_t)v};
      std::sort(ref.begin(), ref.end(), [](auto x, auto y) { return x.first > y.first; });
      const auto &top = out.top_logprobs[s];
      ASSERT_EQ((int64_t)top.size(), K);
      EXPECT_EQ(top[0].first, out.tokens[s]);
      EXPECT_NEAR(out.logprobs[s], top[0].second, 0.0) << "the sampled token's logprob is its top entry's";
      for (int64_t k = 0; k < K; ++k) {
        EXPECT_NEAR(top[k].second, ref[k].first, 2 * expected.atol) << "prompt " << i << " step " << s << " rank " << k;
        bool clear = (k == 0 || ref[k - 1].first - ref[k].first > 4 * expected.atol) &&
                     ref[k].first - ref[k + 1].first > 4 * expected.atol;
        if (clear)
          EXPECT_EQ(top[k].first, ref[k].second) << "prompt " << i << " step " << s << " rank " << k;
      }
    }
  }
}

// prompt_logprobs: with each fixture prompt extended by its greedy tokens but the last, the
// extension's prompt log-probabilities are transformers' logits rows at those steps (log-softmaxed
// here), alone, batched with chunked prefill and a step's logit rows scarce (max_requests 3), and
// again after the same prompt was cached (such a request takes nothing from the prefix cache).
TEST(LogitsProcessing, PromptLogprobsMatchTransformersLogits) {
  auto [a, w] = llamaModel();
  Expected expected = loadExpected("llama");
  const int64_t vocab = a.meta.vocab_size, K = 3;
  std::vector<cbc::test::Run> runs;
  for (size_t i = 0; i < expected.prompts.size(); ++i) {
    rt::SamplingParams p;
    p.max_new_tokens = 1;
    p.ignore_eos = true;
    p.prompt_logprobs = K;
    std::vector<int32_t> prompt = expected.prompts[i];
    prompt.insert(prompt.end(), expected.tokens[i].begin(), expected.tokens[i].end() - 1);
    runs.push_back({prompt, p});
  }
  // outputs[k] answers runs[first + k].
  auto check = [&](const RunResult &r, const std::string &how, size_t first = 0) {
    for (size_t k = 0; k < r.outputs.size(); ++k) {
      size_t i = first + k;
      const rt::RequestOutput &out = r.outputs[k];
      size_t P = expected.prompts[i].size(), S = expected.tokens[i].size();
      ASSERT_EQ(out.prompt_logprobs.size(), runs[i].prompt.size() - 1) << how;
      ASSERT_EQ(out.prompt_top_logprobs.size(), out.prompt_logprobs.size()) << how;
      EXPECT_EQ(out.cached_tokens, 0) << how;
      EXPECT_EQ(out.tokens, std::vector<int32_t>{expected.tokens[i].back()}) << how;
      for (size_t s = 0; s + 1 < S; ++s) {
        const float *row = expected.logits[i].data() + s * vocab;
        double m = *std::max_element(row, row + vocab), sum = 0;
        for (int64_t v = 0; v < vocab; ++v)
          sum += std::exp((double)row[v] - m);
        size_t at = P - 1 + s; // the entry of prompt token P + s, which row s predicted
        int32_t token = expected.tokens[i][s];
        EXPECT_NEAR(out.prompt_logprobs[at], row[token] - m - std::log(sum), 2 * expected.atol)
            << how << " prompt " << i << " step " << s;
        const auto &top = out.prompt_top_logprobs[at];
        ASSERT_EQ((int64_t)top.size(), K);
        EXPECT_EQ(top[0].first, token) << how << " prompt " << i << " step " << s; // greedy: the best
        EXPECT_EQ(top[0].second, out.prompt_logprobs[at]);
      }
    }
  };
  rt::EngineOptions o;
  o.threads = 2;
  for (size_t i = 0; i < runs.size(); ++i)
    check(serve(a, w, o, {runs[i]}), "alone", i);
  o.max_batch_tokens = 7;
  o.max_requests = 3;
  check(serve(a, w, o, runs), "batched, 3 logit rows a step");
  std::vector<cbc::test::Run> twice = runs;
  for (cbc::test::Run &r : twice)
    r.arrive_at_step = 200; // after the first copies are done and their blocks cached
  twice.insert(twice.begin(), runs.begin(), runs.end());
  RunResult r = serve(a, w, o, twice);
  check(RunResult{{r.outputs.begin() + (std::ptrdiff_t)runs.size(), r.outputs.end()}, r.stats}, "after caching");
}

} // namespace
} // namespace cbc::test
