// Speculative decoding: proposers guess a request's next tokens, the step verifies them with the
// request's own token (k + 1 rows of logits in the ordinary batch), and the verdict keeps the
// longest prefix the target model agrees with. Greedy requests keep a draft while it equals the
// row's argmax; sampled ones by rejection sampling (Leviathan et al.), so that the tokens come
// from the target's distribution exactly whatever the proposer guessed.
#ifndef CBC_RUNTIME_SPECULATIVE_H
#define CBC_RUNTIME_SPECULATIVE_H

#include "runtime/request.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cbc::rt {

// Guesses up to `k` tokens that follow a request's known tokens (its prompt and output).
class Proposer {
public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  virtual void propose(const Request &r, int64_t k, std::vector<int32_t> &draft) = 0;
};

// Prompt lookup: the longest suffix of the known tokens, of `minN` to `maxN` tokens, that occurred
// earlier; the tokens that followed its latest earlier occurrence are the guess.
std::unique_ptr<Proposer> makeNgramProposer(int64_t minN = 2, int64_t maxN = 4);

// The methods a user may name (--speculative): "ngram", "draft:PATH", "mtp". Empty when `method`
// is one this build runs; otherwise why not.
std::string checkSpeculativeMethod(const std::string &method);

// One verified row. `p` is the target's distribution at the row after the request's sampling
// settings (temperature, top-k/p, min-p; zero outside the kept candidates); `q` the proposer's
// at the row, or null for a proposer that guesses one token outright (q one-hot at `draft`).
// Accepted with probability min(1, p(draft) / q(draft)), drawn in float64 from (seed, step); on a
// rejection the token is drawn from max(p - q, 0), normalised. Either way its distribution is p.
struct Verdict {
  bool accepted = false;
  int32_t token = -1; // the draft when accepted, otherwise the replacement drawn
};
Verdict verifyDraft(const std::vector<double> &p, const std::vector<double> *q, int32_t draft, uint64_t seed,
                    int64_t step);

} // namespace cbc::rt

#endif
