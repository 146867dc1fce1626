// Logits processing against its definitions (SamplingParams, runtime/logits_process.h): the order
// bias, repetition penalty, presence and frequency penalties, min_tokens; and what is refused.
// transformers' own processors decide tokens in test/parity/processors_test.cpp; presence and
// frequency have none there, so their arithmetic is checked here.
#include "runtime/logits_process.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cbc::test {
namespace {

TEST(LogitsProcess, EachFieldByItsDefinition) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  std::vector<float> out;
  rt::SamplingParams p;
  // Repetition: once per distinct token of the prompt and the output, by sign.
  p.repetition_penalty = 2.0;
  rt::processLogits(logits.data(), 5, p, {0, 1, 1}, {1, 4}, {}, out);
  EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, -4.0f}));
  // Presence and frequency: the output's tokens only, presence once, frequency per occurrence.
  p = {};
  p.presence_penalty = 0.5;
  p.frequency_penalty = 0.25;
  rt::processLogits(logits.data(), 5, p, {2, 2}, {3, 3, 3, 0}, {}, out);
  EXPECT_EQ(out, (std::vector<float>{2.0f - 0.75f, -1.0f, 0.5f, 3.0f - 1.25f, -2.0f}));
  // The bias comes before the repetition penalty (transformers' order): 0.5 + 1 = 1.5, then / 3.
  p = {};
  p.logit_bias = {{2, 1.0f}};
  p.repetition_penalty = 3.0;
  rt::processLogits(logits.data(), 5, p, {2}, {}, {}, out);
  EXPECT_FLOAT_EQ(out[2], 0.5f);
  // Bad words: a one-token sequence always; a longer one where the tokens so far, the prompt's
  // and then the output's, end with all but its last.
  p = {};
  p.bad_words = {{1}, {0, 4}, {2, 3, 0}};
  rt::processLogits(logits.data(), 5, p, {2, 3}, {}, {}, out);
  EXPECT_TRUE(std::isinf(out[1]));
  EXPECT_FALSE(std::isinf(out[4])); // the tokens end with 3, not 0
  EXPECT_TRUE(std::isinf(out[0]));  // the prompt ends with 2, 3
  rt::processLogits(logits.data(), 5, p, {2}, {3, 0}, {}, out);
  EXPECT_TRUE(std::isinf(out[4]) && out[4] < 0); // the output ends with 0
  EXPECT_FALSE(std::isinf(out[0]));              // 2, 3 is no longer the end
  // min_tokens: the eos ids out until that many tokens exist, then back.
  p = {};
  p.max_new_tokens = 8;
  p.min_tokens = 2;
  rt::processLogits(logits.data(), 5, p, {1}, {0}, {3, 4}, out);
  EXPECT_TRUE(std::isinf(out[3]) && out[3] < 0);
  EXPECT_TRUE(std::isinf(out[4]) && out[4] < 0);
  rt::processLogits(logits.data(), 5, p, {1}, {0, 1}, {3, 4}, out);
  EXPECT_EQ(out, logits);
}

TEST(LogitsProcess, BadFieldsAreRefusedWithTheirReason) {
  auto why = [](auto set) {
    rt::SamplingParams p;
    set(p);
    return rt::validateLogitsProcessing(p, 10);
  };
  EXPECT_EQ(why([](rt::SamplingParams &) {}), "");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.repetition_penalty = 0; }),
            "repetition_penalty must be a finite number > 0");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.repetition_penalty = INFINITY; }),
            "repetition_penalty must be a finite number > 0");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.presence_penalty = 2.5; }), "presence_penalty must be in [-2, 2]");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.frequency_penalty = -3; }), "frequency_penalty must be in [-2, 2]");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.min_tokens = 17; }), "min_tokens must be in [0, max_new_tokens]");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.logit_bias = {{10, 1.0f}}; }),
            "logit_bias names token id 10, outside the vocabulary [0, 10)");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.logit_bias = {{3, 101.0f}}; }),
            "logit_bias values must be in [-100, 100]");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.bad_words = {{1}, {}}; }), "bad_words sequences must not be empty");
  EXPECT_EQ(why([](rt::SamplingParams &p) { p.bad_words = {{1, -2}}; }),
            "bad_words names token id -2, outside the vocabulary [0, 10)");
}

} // namespace
} // namespace cbc::test
