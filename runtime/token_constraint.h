// A request's restriction of the tokens it may sample next (structured outputs: a JSON schema, a
// regex, a grammar), kept per request by the engine and consulted before each sample. The runtime
// knows only this interface; runtime/structured/ implements it with xgrammar.
#ifndef CBC_RUNTIME_TOKEN_CONSTRAINT_H
#define CBC_RUNTIME_TOKEN_CONSTRAINT_H

#include <cstdint>
#include <memory>
#include <vector>

namespace cbc::rt {

class TokenConstraint {
public:
  virtual ~TokenConstraint() = default;
  // The ids allowed next, as a bitmask of (vocab + 31) / 32 words: id i is bit i % 32 of word
  // i / 32. At least one id (an end token once the text is complete) is always allowed.
  virtual void allowed(std::vector<uint32_t> &bits, int64_t vocab) = 0;
  // Advances past the sampled `token`; false when the constraint cannot take it.
  virtual bool accept(int32_t token) = 0;
  // The constrained text has ended (an end token was accepted after it).
  virtual bool terminated() const = 0;
  // An independent copy in the same state, for a fork of the request (n > 1).
  virtual std::unique_ptr<TokenConstraint> fork() const = 0;
};

// Sets the logits of the ids `bits` does not allow to -inf.
void maskLogits(float *logits, int64_t vocab, const std::vector<uint32_t> &bits);

} // namespace cbc::rt

#endif
