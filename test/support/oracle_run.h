// An engine's greedy run of a fixture's prompts against transformers (header-only: it asserts
// with gtest, which the support libraries do not link).
#ifndef CBC_TEST_SUPPORT_ORACLE_RUN_H
#define CBC_TEST_SUPPORT_ORACLE_RUN_H

#include "runtime/engine.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace cbc::test {

// Every prompt of `want` through `engine`, `steps` greedy tokens each with their logits; the
// tokens must be transformers' first `steps` (a failure names `label` and the prompt). Returns the
// largest |logit difference| from transformers', or infinity when a run came back short.
inline double greedyAgainstOracle(rt::Engine &engine, const Expected &want, int64_t steps, const std::string &label) {
  for (const auto &p : want.prompts) {
    rt::SamplingParams s;
    s.max_new_tokens = steps;
    s.ignore_eos = true;
    s.keep_logits = true;
    engine.add_request(p, s);
  }
  while (!engine.idle())
    engine.step();
  auto outs = engine.take_finished();
  std::sort(outs.begin(), outs.end(), [](auto &x, auto &y) { return x.id < y.id; });
  EXPECT_EQ(outs.size(), want.prompts.size()) << label;
  int64_t vocab = engine.artefact().meta.vocab_size;
  double worst = 0;
  for (size_t i = 0; i < outs.size() && i < want.prompts.size(); ++i) {
    EXPECT_EQ(outs[i].tokens, std::vector<int32_t>(want.tokens[i].begin(), want.tokens[i].begin() + steps))
        << label << " prompt " << i;
    if ((int64_t)outs[i].logits.size() != steps)
      return INFINITY;
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t v = 0; v < vocab; ++v)
        worst = std::max(worst, (double)std::fabs(outs[i].logits[s][v] - want.logits[i][s * vocab + v]));
  }
  return outs.size() == want.prompts.size() ? worst : INFINITY;
}

} // namespace cbc::test

#endif
