// Structured outputs with xgrammar: one compiler for a tokenizer's vocabulary, and constraints
// (runtime/token_constraint.h) that keep a request's tokens to a JSON schema, any JSON, a regex or
// an EBNF grammar. Compiled grammars are cached by the compiler, so a schema that comes again is
// not compiled again.
#ifndef CBC_RUNTIME_STRUCTURED_GRAMMAR_CONSTRAINT_H
#define CBC_RUNTIME_STRUCTURED_GRAMMAR_CONSTRAINT_H

#include "runtime/token_constraint.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cbc::rt {

enum class GrammarKind { JsonSchema, Json, Regex, Ebnf, StructuralTag };
// The kind `name` spells ("json_schema", "json", "regex", "grammar", "structural_tag": xgrammar's
// JSON description of text and schemas in sequence); false for another name.
bool grammarKindFromName(const std::string &name, GrammarKind &out);

class StructuredOutputs {
public:
  // vocab: the tokenizer's tokens by id as its tokenizer.json writes them (byte-level tokens
  // encoded); tokenizerJson: that file's text (its vocabulary type is read from it);
  // modelVocab: the logits' width; stopIds: the ids that end a complete text.
  StructuredOutputs(const std::vector<std::string> &vocab, const std::string &tokenizerJson, int64_t modelVocab,
                    const std::vector<int32_t> &stopIds);
  ~StructuredOutputs();
  // A fresh constraint for `spec` (the schema's JSON text, the regex, the grammar; unused for
  // Json). Throws std::invalid_argument with the reason when `spec` cannot be compiled.
  std::shared_ptr<TokenConstraint> constraint(GrammarKind kind, const std::string &spec);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace cbc::rt

#endif
