// Logits processing against transformers' logits processors: the request fields as `cbc run`
// reads them (logit_bias, repetition_penalty, bad_words, min_tokens) give transformers' greedy tokens on the
// llama fixture (test/parity/processors/llama.json, tools/oracle/make_processor_fixture.py), each
// request alone and all of them in one batch with chunked prefill.
#include "runtime/request_json.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cbc::test {
namespace {

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
  rt::Artefact a = compileArtefact(readFile(fixtureDir("llama") + "/config.json"));
  rt::WeightSource w;
  w.checkpoint_dir = fixtureDir("llama");
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

} // namespace
} // namespace cbc::test
