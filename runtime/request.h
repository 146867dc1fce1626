// A request as the engine tracks it, and its sampling parameters.
#ifndef CBC_RUNTIME_REQUEST_H
#define CBC_RUNTIME_REQUEST_H

#include "runtime/token_constraint.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cbc::rt {

using RequestId = int64_t;

struct SamplingParams {
  double temperature = 0.0; // 0: greedy
  int64_t top_k = 0;        // 0: off
  double top_p = 1.0;       // in (0, 1]
  double min_p = 0.0;       // in [0, 1]
  uint64_t seed = 0;
  int64_t max_new_tokens = 16;
  std::vector<int64_t> stop_token_ids;
  bool ignore_eos = false;
  bool logprobs = false;    // report the log-probability of each sampled token
  int64_t top_logprobs = 0; // and that many most likely ids of each row with theirs (implies logprobs)
  bool keep_logits = false; // keep every sampled row's logits (tests and debugging)
  // The prompt's own log-probabilities (OpenAI's echo with logprobs): -1 none; k >= 0 the
  // log-probability of each prompt token after the first under the model's raw logits, with the
  // k most likely ids of its row. Such a request computes its whole prompt (no prefix-cache hit).
  int64_t prompt_logprobs = -1;
  // Structured outputs: the tokens sampled must keep to this constraint (the engine masks the
  // others out of each row, after the logits processing). A fork gets its own copy.
  std::shared_ptr<TokenConstraint> constraint;
  // Prefix caching: a salt keeps the request's cached blocks apart from those of other salts
  // (tenants); marks are prompt positions (a chat message's start) where a state snapshot is
  // worth keeping.
  std::string cache_salt;
  std::vector<int64_t> cache_marks;
  // Sequences to return for the prompt (num_return_sequences): n - 1 forks share its prompt's
  // cache; sampled forks draw with seeds derived from `seed`.
  int64_t n = 1;
  // Logits processing before sampling (runtime/logits_process.h), in this order: logit_bias adds
  // to a token's logit (transformers' sequence_bias of one-token sequences); repetition_penalty
  // divides a positive logit of every token in the prompt or the output by it and multiplies a
  // negative one (transformers' RepetitionPenaltyLogitsProcessor); presence_penalty and
  // frequency_penalty subtract from the logit of each token the output holds, once and per
  // occurrence (OpenAI's and vLLM's); bad_words keeps out a sequence's last token where the
  // prompt and output end with the rest of it (NoBadWordsLogitsProcessor); min_tokens keeps the
  // eos ids out for that many tokens (MinNewTokensLengthLogitsProcessor).
  std::vector<std::pair<int32_t, float>> logit_bias;
  double repetition_penalty = 1.0, presence_penalty = 0.0, frequency_penalty = 0.0;
  std::vector<std::vector<int32_t>> bad_words;
  int64_t min_tokens = 0;
  bool wantsLogprobs() const { return logprobs || top_logprobs > 0; }
  bool wantsPromptLogprobs() const { return prompt_logprobs >= 0; }
  bool processesLogits() const {
    return constraint || !logit_bias.empty() || repetition_penalty != 1.0 || presence_penalty != 0 || frequency_penalty != 0 ||
           !bad_words.empty() || min_tokens > 0;
  }
};

// The seed fork `index` (1..n-1) of a request sampling with `seed` draws with.
constexpr int64_t kMaxTopLogprobs = 20; // OpenAI's bound

inline uint64_t forkSeed(uint64_t seed, int64_t index) { return seed + 0x9E3779B97F4A7C15ull * (uint64_t)index; }

// Embeddings a request gives for a run of its prompt's rows (an image's or an audio clip's
// features from an encoder): rows [start, start + rows) take them instead of their tokens'
// embeddings, as a multimodal model's scatter of features into its placeholder rows does. The
// data are shared, not copied, by the request's forks and by a preempted request's recompute.
// What a segment's rows encode. Where a model attends bidirectionally over its images (Gemma 3
// and 4 on their sliding layers), an image's or a video's rows see each other and are computed in
// one step; an audio clip's rows stay causal, as text's do.
enum class Modality : uint8_t { Image, Video, Audio };
const char *modalityName(Modality m);
// The modality `name` spells ("image", "video", "audio"); false for any other name.
bool modalityFromName(const std::string &name, Modality &out);

struct EmbeddingSegment {
  int64_t start = 0, rows = 0;
  std::shared_ptr<const std::vector<float>> data; // [rows * the model's hidden size]
  // The (t, h, w) grid of an image's rows in raster order, for a model with multimodal RoPE
  // (which then needs it); zeros: none.
  int64_t grid[3] = {0, 0, 0};
  Modality modality = Modality::Image;
  // Rows that attend to each other where the model's attention is bidirectional over images.
  bool visual() const { return modality != Modality::Audio; }
};

enum class RequestStatus { Waiting, Running, Finished };
enum class FinishReason { None, Eos, Stop, Length, Cancelled, Rejected };
const char *finishReasonName(FinishReason r);

struct Request {
  RequestId id = 0;
  std::vector<int32_t> prompt;
  std::vector<EmbeddingSegment> embeds; // ascending, disjoint runs of prompt rows
  // Multimodal RoPE: the prompt's three position components (component-major, 3 * its length)
  // and what later positions add to their index.
  std::vector<int32_t> rope_positions;
  int64_t rope_delta = 0;
  SamplingParams params;
  std::vector<int32_t> generated;
  std::vector<float> logprobs;
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs; // per token, with top_logprobs
  std::vector<std::vector<float>> logits;
  // With params.prompt_logprobs: entry i is prompt token i + 1's, from the logits of row i. A
  // recompute after preemption skips the rows already recorded.
  std::vector<float> prompt_logprobs;
  std::vector<std::vector<std::pair<int32_t, float>>> prompt_top_logprobs;
  int64_t computed = 0; // positions [0, computed) are in the cache
  int32_t slot = -1;    // the cache slot while the request holds one
  RequestStatus status = RequestStatus::Waiting;
  FinishReason finish = FinishReason::None;
  std::string error;    // why a request was rejected
  uint64_t arrival = 0; // FIFO order
  int64_t preemptions = 0;
  double arrival_time = 0, first_token_time = 0, finish_time = 0;
  // Prefix caching: the chained hashes of its full blocks (runtime/cache/prefix_hash.h), from the
  // chain's seed; the tokens its latest admission found cached; the positions (on the snapshot
  // grid) where its state is to be kept.
  std::vector<uint64_t> block_hashes;
  uint64_t hash_seed = 0;
  int64_t cached_tokens = 0;
  std::vector<int64_t> snapshot_at;
  // Forks: the request whose prompt a fork waits for, and a parent's forks waiting for it.
  Request *fork_parent = nullptr;
  std::vector<Request *> forks;
  int64_t fork_index = 0; // 0: the parent (or a request without forks)

  // Speculative decoding: tokens guessed to follow the known ones, verified by the next step
  // together with them (positions total() .. total() + draft.size()).
  std::vector<int32_t> draft;
  int64_t total() const { return (int64_t)(prompt.size() + generated.size()); }
  // The known tokens, then the draft.
  int32_t tokenAt(int64_t i) const {
    if (i < (int64_t)prompt.size())
      return prompt[i];
    i -= (int64_t)prompt.size();
    return i < (int64_t)generated.size() ? generated[i] : draft[i - generated.size()];
  }
  int64_t remaining() const { return total() - computed; }
};

} // namespace cbc::rt

#endif
