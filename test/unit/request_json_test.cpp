// The JSONL request parser of `cbc run`: every bad line is an error naming the field, nothing is
// truncated or cast out of range, and well-formed lines keep the defaults they do not override.
#include "runtime/request_json.h"

#include <gtest/gtest.h>

#include <limits>

namespace cbc::test {
namespace {

rt::ParsedRequest parse(const std::string &line) { return rt::parseRequestLine(line, rt::SamplingParams{}); }

void expectError(const std::string &line, const std::vector<std::string> &mentions) {
  rt::ParsedRequest p = parse(line);
  ASSERT_FALSE(p.error.empty()) << line << " was accepted";
  for (const std::string &m : mentions)
    EXPECT_NE(p.error.find(m), std::string::npos) << line << ": '" << p.error << "' lacks '" << m << "'";
}

TEST(RequestJson, WellFormedLinesParse) {
  rt::SamplingParams d;
  d.max_new_tokens = 7;
  d.seed = 42;
  rt::ParsedRequest list = rt::parseRequestLine("[1, 2, 3]", d);
  EXPECT_EQ(list.error, "");
  EXPECT_EQ(list.ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(list.params.max_new_tokens, 7);
  EXPECT_EQ(list.params.seed, 42u);

  rt::ParsedRequest obj = rt::parseRequestLine(
      R"({"prompt": [5], "id": "a", "max_new_tokens": 3, "temperature": 1, "top_k": 4, "top_p": 0.5,
          "min_p": 0.1, "seed": 18446744073709551615, "ignore_eos": true, "logprobs": true,
          "stop_token_ids": [9, 10]})", d);
  EXPECT_EQ(obj.error, "");
  EXPECT_EQ(obj.ids, (std::vector<int32_t>{5}));
  EXPECT_EQ(obj.user_id, "a");
  EXPECT_EQ(obj.params.max_new_tokens, 3);
  EXPECT_EQ(obj.params.temperature, 1.0);
  EXPECT_EQ(obj.params.top_k, 4);
  EXPECT_EQ(obj.params.top_p, 0.5);
  EXPECT_EQ(obj.params.min_p, 0.1);
  EXPECT_EQ(obj.params.seed, std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(obj.params.ignore_eos);
  EXPECT_TRUE(obj.params.logprobs);
  EXPECT_EQ(obj.params.stop_token_ids, (std::vector<int64_t>{9, 10}));
}

TEST(RequestJson, UnknownKeysAreErrorsWithASuggestion) {
  expectError(R"({"prompt": [1], "max_tokens": 4})", {"unknown key \"max_tokens\"", "did you mean \"max_new_tokens\""});
  expectError(R"({"prompt": [1], "bogus": 4})", {"unknown key \"bogus\""});
}

TEST(RequestJson, IntegerFieldsAreNeverTruncatedOrCastOutOfRange) {
  for (const char *field : {"max_new_tokens", "top_k", "seed"}) {
    for (const char *value : {"2.7", "1e30", "-1e30", "2.0", "\"3\"", "true", "99999999999999999999999"}) {
      std::string line = std::string(R"({"prompt": [1], ")") + field + "\": " + value + "}";
      expectError(line, {std::string("\"") + field + "\""});
    }
  }
  expectError(R"({"prompt": [1], "seed": -1})", {"\"seed\""});
  expectError(R"({"prompt": [1], "max_new_tokens": 0})", {"\"max_new_tokens\""});
  expectError(R"({"prompt": [1], "max_new_tokens": -5})", {"\"max_new_tokens\""});
  expectError(R"({"prompt": [1], "max_new_tokens": 9223372036854775808})", {"\"max_new_tokens\"", "out of range"});
  expectError(R"({"prompt": [1], "top_k": -1})", {"\"top_k\""});
  // Token ids: integers that fit int32, in the prompt and in the stop ids.
  expectError("[1, 2.5]", {"\"prompt[1]\"", "integer"});
  expectError("[1, 4294967296]", {"\"prompt[1]\"", "out of range"});
  expectError("[18446744073709551615]", {"\"prompt[0]\"", "out of range"});
  expectError(R"({"prompt": [1], "stop_token_ids": [2.7]})", {"\"stop_token_ids[0]\""});
  expectError(R"({"prompt": [1], "stop_token_ids": 3})", {"\"stop_token_ids\""});
}

TEST(RequestJson, TypeErrorsNameTheField) {
  expectError(R"({"prompt": [1], "temperature": "hot"})", {"\"temperature\" must be a number"});
  expectError(R"({"prompt": [1], "top_p": null})", {"\"top_p\" must be a number"});
  expectError(R"({"prompt": [1], "min_p": [0.1]})", {"\"min_p\" must be a number"});
  expectError(R"({"prompt": [1], "temperature": 1e400})", {"1e400"});
  expectError(R"({"prompt": [1], "ignore_eos": 1})", {"\"ignore_eos\""});
  expectError(R"({"prompt": [1], "logprobs": "yes"})", {"\"logprobs\""});
  expectError(R"({"prompt": "hello"})", {"\"prompt\" must be a list"});
  expectError(R"({"max_new_tokens": 3})", {"missing \"prompt\""});
  expectError("42", {"list of token ids"});
  // An "id" is echoed back; one nested too deep to copy and print safely is refused.
  std::string deep(100000, '['), closing(100000, ']');
  expectError(R"({"prompt": [1], "id": )" + deep + closing + "}", {"\"id\" nests deeper"});
  rt::ParsedRequest nested = parse(R"({"prompt": [1], "id": {"run": [1, {"k": "v"}]}})");
  EXPECT_EQ(nested.error, "");
  EXPECT_EQ(nested.user_id.dump(), R"({"run":[1,{"k":"v"}]})");
  expectError("[1, 2", {"malformed JSON"});
  expectError("", {"malformed JSON"});
}

// Prefix caching's and forks' fields: n in [1, 1024], a salt, marks at prompt positions.
TEST(RequestJson, ForksAndCacheFields) {
  rt::ParsedRequest p = parse(R"({"prompt": [1, 2], "n": 3, "cache_salt": "tenant-a", "cache_marks": [0, 17]})");
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.params.n, 3);
  EXPECT_EQ(p.params.cache_salt, "tenant-a");
  EXPECT_EQ(p.params.cache_marks, (std::vector<int64_t>{0, 17}));
  expectError(R"({"prompt": [1], "n": 0})", {"\"n\"", "[1, 1024]"});
  expectError(R"({"prompt": [1], "n": 1025})", {"\"n\""});
  expectError(R"({"prompt": [1], "n": 2.0})", {"\"n\"", "integer"});
  expectError(R"({"prompt": [1], "cache_salt": 5})", {"cache_salt", "string"});
  expectError(R"({"prompt": [1], "cache_marks": 5})", {"cache_marks", "list"});
  expectError(R"({"prompt": [1], "cache_marks": [-1]})", {"cache_marks[0]", ">= 0"});
  expectError(R"({"prompt": [1], "num_return_sequences": 2})", {"did you mean \"n\""});
}

// Logits processing: OpenAI's logit_bias (ids as strings), the penalties, min_tokens.
TEST(RequestJson, LogitsProcessingFields) {
  rt::ParsedRequest p = parse(R"({"prompt": [1], "logit_bias": {"5": 2.5, "17": -100}, "repetition_penalty": 1.2,
      "presence_penalty": 0.5, "frequency_penalty": -0.25, "min_tokens": 3})");
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.params.logit_bias, (std::vector<std::pair<int32_t, float>>{{17, -100.0f}, {5, 2.5f}}));
  EXPECT_EQ(p.params.repetition_penalty, 1.2);
  EXPECT_EQ(p.params.presence_penalty, 0.5);
  EXPECT_EQ(p.params.frequency_penalty, -0.25);
  EXPECT_EQ(p.params.min_tokens, 3);
  EXPECT_TRUE(p.params.processesLogits());
  EXPECT_FALSE(parse(R"({"prompt": [1]})").params.processesLogits());
  expectError(R"({"prompt": [1], "logit_bias": [5, 1]})", {"\"logit_bias\" must be an object"});
  expectError(R"({"prompt": [1], "logit_bias": {"five": 1}})", {"\"logit_bias.five\" does not name a token id"});
  expectError(R"({"prompt": [1], "logit_bias": {"-3": 1}})", {"logit_bias.-3", "token id"});
  expectError(R"({"prompt": [1], "logit_bias": {"5x": 1}})", {"logit_bias.5x", "token id"});
  expectError(R"({"prompt": [1], "logit_bias": {"5": "up"}})", {"\"logit_bias.5\" must be a number"});
  expectError(R"({"prompt": [1], "repetition_penalty": "high"})", {"\"repetition_penalty\" must be a number"});
  expectError(R"({"prompt": [1], "presence_penalty": null})", {"\"presence_penalty\" must be a number"});
  expectError(R"({"prompt": [1], "frequency_penalty": true})", {"\"frequency_penalty\" must be a number"});
  expectError(R"({"prompt": [1], "min_tokens": -1})", {"\"min_tokens\"", ">= 0"});
  expectError(R"({"prompt": [1], "min_new_tokens": 2})", {"did you mean \"min_tokens\""});
  rt::ParsedRequest words = parse(R"({"prompt": [1], "bad_words": [[3], [4, 5]]})");
  EXPECT_EQ(words.error, "");
  EXPECT_EQ(words.params.bad_words, (std::vector<std::vector<int32_t>>{{3}, {4, 5}}));
  expectError(R"({"prompt": [1], "bad_words": [3, 4]})", {"\"bad_words[0]\" must be a list of token ids"});
  expectError(R"({"prompt": [1], "bad_words": {"a": 1}})", {"\"bad_words\" must be a list of token id lists"});
  expectError(R"({"prompt": [1], "bad_words_ids": [[3]]})", {"did you mean \"bad_words\""});
  EXPECT_EQ(parse(R"({"prompt": [1], "top_logprobs": 20})").params.top_logprobs, 20);
  EXPECT_TRUE(parse(R"({"prompt": [1], "top_logprobs": 2})").params.wantsLogprobs());
  expectError(R"({"prompt": [1], "top_logprobs": 21})", {"\"top_logprobs\"", "[0, 20]"});
  expectError(R"({"prompt": [1], "top_logprobs": true})", {"\"top_logprobs\" must be an integer"});
  EXPECT_EQ(parse(R"({"prompt": [1, 2], "prompt_logprobs": 3})").params.prompt_logprobs, 3);
  EXPECT_FALSE(parse(R"({"prompt": [1, 2]})").params.wantsPromptLogprobs());
  expectError(R"({"prompt": [1], "prompt_logprobs": -1})", {"\"prompt_logprobs\"", "[0, 20]"});
}

// "embeds": segments with their source (a file, parsed but not read, or inline base64) and
// place ("start", or the runs of the request's "placeholder").
TEST(RequestJson, EmbeddingSegmentsParse) {
  // 1.0f, -2.0f as float32 little-endian, base64.
  rt::ParsedRequest p = parse(R"({"prompt": [1, 9, 9, 2], "embeds": [
      {"base64": "AACAPwAAAMA=", "start": 1, "grid": [1, 1, 2]},
      {"file": "rows.npy", "start": 3},
      {"file": "dir/f.safetensors", "tensor": "image_0", "start": 3}]})");
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.embeds.size(), 3u);
  EXPECT_EQ(p.placeholder, -1);
  ASSERT_TRUE(p.embeds[0].values);
  EXPECT_EQ(*p.embeds[0].values, (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(p.embeds[0].start, 1);
  EXPECT_EQ((std::vector<int64_t>(p.embeds[0].grid, p.embeds[0].grid + 3)), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(p.embeds[1].file, "rows.npy");
  EXPECT_FALSE(p.embeds[1].values);
  EXPECT_EQ(p.embeds[2].file, "dir/f.safetensors");
  EXPECT_EQ(p.embeds[2].tensor, "image_0");
  EXPECT_EQ(p.embeds[0].modality, rt::Modality::Image); // the default

  rt::ParsedRequest m = parse(R"({"prompt": [1, 9, 9, 2], "embeds": [
      {"base64": "AACAPwAAAMA=", "start": 1, "modality": "audio"}, {"base64": "AACAPw==", "start": 3, "modality": "video"}]})");
  ASSERT_EQ(m.error, "");
  EXPECT_EQ(m.embeds[0].modality, rt::Modality::Audio);
  EXPECT_EQ(m.embeds[1].modality, rt::Modality::Video);

  rt::ParsedRequest ph = parse(R"({"placeholder": 9, "prompt": [1, 9, 9, 2], "embeds": [{"base64": "AACAPwAAAMA"}]})");
  ASSERT_EQ(ph.error, "");
  EXPECT_EQ(ph.placeholder, 9);
  EXPECT_EQ(ph.embeds[0].start, -1);
  EXPECT_EQ(*ph.embeds[0].values, (std::vector<float>{1.0f, -2.0f})); // padding is optional
  EXPECT_EQ(parse(R"({"prompt": [1], "embeds": []})").error, "");
}

TEST(RequestJson, BadEmbeddingSegmentsNameTheField) {
  expectError(R"({"prompt": [1], "embeds": {"base64": "AAAA"}})", {"\"embeds\" must be a list of segments"});
  expectError(R"({"prompt": [1], "embeds": [3]})", {"\"embeds[0]\" must be an object"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0}]})", {"\"embeds[0]\" needs exactly one of \"file\"", "\"base64\""});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "file": "a.npy", "base64": "AAAAAA=="}]})",
              {"\"embeds[0]\" needs exactly one of"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": "AAAAAA=="}, {"start": 0, "data": "AAAA"}]})",
              {"unknown key \"data\" in \"embeds[1]\"", "did you mean \"base64\""});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "file": ""}]})", {"\"embeds[0].file\" must be a path"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "file": 7}]})", {"\"embeds[0].file\" must be a path"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "file": "rows.bin"}]})",
              {"\"embeds[0].file\" must name a .npy or .safetensors file", "rows.bin"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "file": "rows.npy", "tensor": "x"}]})",
              {"\"embeds[0].tensor\" names a tensor of a .safetensors"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": "AAAAAA==", "tensor": "x"}]})", {"\"embeds[0].tensor\""});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": 12}]})", {"\"embeds[0].base64\" must be a string"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": "AA*A"}]})",
              {"\"embeds[0].base64\" is not valid base64", "'*' at offset 2"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": "AAAAA"}]})", {"\"embeds[0].base64\" is not valid base64", "partial byte"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": "AAA=A"}]})", {"\"embeds[0].base64\" is not valid base64"});
}

TEST(RequestJson, BadEmbeddingPlacesNameTheField) {
  EXPECT_EQ(parse(R"({"prompt": [1], "embeds": [{"start": 0, "base64": "AAAAAA=="}]})").error, "");
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": "AAAAAAA="}]})",
              {"\"embeds[0].base64\" decodes to 5 bytes, not a whole number of float32 values"});
  expectError(R"({"prompt": [1], "embeds": [{"start": 0, "base64": ""}]})", {"\"embeds[0].base64\" holds no values"});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA=="}]})",
              {"\"embeds[0]\" needs \"start\"", "\"placeholder\""});
  expectError(R"({"prompt": [1], "placeholder": 1, "embeds": [{"base64": "AAAAAA==", "start": 0}]})",
              {"\"embeds[0].start\" cannot be given with \"placeholder\""});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA==", "start": -1}]})", {"\"embeds[0].start\" is out of range"});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA==", "start": 1.5}]})", {"\"embeds[0].start\" must be an integer"});
  expectError(R"({"prompt": [1], "placeholder": -3})", {"\"placeholder\""});
  expectError(R"({"prompt": [1], "placeholder": "<image>"})", {"\"placeholder\" must be an integer"});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA==", "start": 0, "grid": [1, 2]}]})",
              {"\"embeds[0].grid\" must be [t, h, w]"});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA==", "start": 0, "grid": [1, 0, 2]}]})",
              {"\"embeds[0].grid[1]\""});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA==", "start": 0, "modality": "speech"}]})",
              {"\"embeds[0].modality\" must be \"image\", \"video\" or \"audio\""});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA==", "start": 0, "modality": 2}]})",
              {"\"embeds[0].modality\""});
  expectError(R"({"prompt": [1], "embeds": [{"base64": "AAAAAA==", "start": 0, "type": "audio"}]})",
              {"unknown key \"type\"", "did you mean \"modality\""});
  expectError(R"({"prompt": [1], "image_token_id": 5})", {"did you mean \"placeholder\""});
  expectError(R"({"prompt": [1], "inputs_embeds": []})", {"did you mean \"embeds\""});
}

TEST(RequestJson, Base64DecodesTheStandardAlphabet) {
  std::vector<uint8_t> out;
  EXPECT_EQ(rt::decodeBase64("", out), "");
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(rt::decodeBase64("TWFu", out), "");
  EXPECT_EQ(std::string(out.begin(), out.end()), "Man");
  EXPECT_EQ(rt::decodeBase64("TWE=", out), "");
  EXPECT_EQ(std::string(out.begin(), out.end()), "Ma");
  EXPECT_EQ(rt::decodeBase64("TQ==", out), "");
  EXPECT_EQ(std::string(out.begin(), out.end()), "M");
  EXPECT_EQ(rt::decodeBase64("TQ", out), "");
  EXPECT_EQ(std::string(out.begin(), out.end()), "M");
  EXPECT_EQ(rt::decodeBase64("+/+/", out), "");
  EXPECT_EQ(out, (std::vector<uint8_t>{0xfb, 0xff, 0xbf}));
  EXPECT_NE(rt::decodeBase64("TQ=", out), "");
  EXPECT_NE(rt::decodeBase64("T===", out), "");
  EXPECT_NE(rt::decodeBase64("-_", out).find("'-' at offset 0"), std::string::npos);
  EXPECT_NE(rt::decodeBase64("TW\nF", out).find("byte 10 at offset 2"), std::string::npos);
}

} // namespace
} // namespace cbc::test
