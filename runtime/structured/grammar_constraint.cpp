#include "runtime/structured/grammar_constraint.h"

#include <dlpack/dlpack.h>
#include <nlohmann/json.hpp>
#include <xgrammar/xgrammar.h>

#include <mutex>
#include <stdexcept>

namespace cbc::rt {
namespace {

class GrammarConstraint final : public TokenConstraint {
public:
  explicit GrammarConstraint(xgrammar::GrammarMatcher matcher) : matcher_(std::move(matcher)) {}

  void allowed(std::vector<uint32_t> &bits, int64_t vocab) override {
    int64_t words = xgrammar::GetBitmaskSize((int)vocab);
    bits.assign((size_t)words, 0u);
    DLTensor t{};
    t.data = bits.data();
    t.device = {kDLCPU, 0};
    t.ndim = 1;
    t.dtype = xgrammar::GetBitmaskDLType();
    t.shape = &words;
    matcher_.FillNextTokenBitmask(&t);
  }
  bool accept(int32_t token) override { return matcher_.AcceptToken(token); }
  bool terminated() const override { return matcher_.IsTerminated(); }
  std::unique_ptr<TokenConstraint> fork() const override {
    return std::make_unique<GrammarConstraint>(matcher_.Fork());
  }

private:
  xgrammar::GrammarMatcher matcher_;
};

xgrammar::TokenizerInfo tokenizerInfo(const std::vector<std::string> &vocab, const std::string &tokenizerJson,
                                      int64_t modelVocab, const std::vector<int32_t> &stopIds) {
  auto meta = nlohmann::json::parse(xgrammar::TokenizerInfo::DetectMetadataFromHF(tokenizerJson));
  auto type = static_cast<xgrammar::VocabType>(meta.at("vocab_type").get<int>());
  return xgrammar::TokenizerInfo(vocab, type, (int)modelVocab, stopIds, meta.at("add_prefix_space").get<bool>());
}

} // namespace

bool grammarKindFromName(const std::string &name, GrammarKind &out) {
  if (name == "json_schema")
    out = GrammarKind::JsonSchema;
  else if (name == "json")
    out = GrammarKind::Json;
  else if (name == "regex")
    out = GrammarKind::Regex;
  else if (name == "grammar")
    out = GrammarKind::Ebnf;
  else if (name == "structural_tag")
    out = GrammarKind::StructuralTag;
  else
    return false;
  return true;
}

struct StructuredOutputs::Impl {
  xgrammar::GrammarCompiler compiler;
  std::mutex mutex; // the compiler's cache is shared by the callers
};

StructuredOutputs::StructuredOutputs(const std::vector<std::string> &vocab, const std::string &tokenizerJson,
                                     int64_t modelVocab, const std::vector<int32_t> &stopIds) {
  try {
    impl_.reset(new Impl{xgrammar::GrammarCompiler(tokenizerInfo(vocab, tokenizerJson, modelVocab, stopIds), 1), {}});
  } catch (const std::exception &e) {
    throw std::invalid_argument(std::string("structured outputs: cannot read the tokenizer: ") + e.what());
  }
}

StructuredOutputs::~StructuredOutputs() = default;

std::shared_ptr<TokenConstraint> StructuredOutputs::constraint(GrammarKind kind, const std::string &spec) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  try {
    // Compact JSON (no free whitespace between tokens): a sampled text cannot run on in spaces.
    // Json is any object (OpenAI's json_object), so the schema is not strict about properties.
    xgrammar::CompiledGrammar g = kind == GrammarKind::JsonSchema ? impl_->compiler.CompileJSONSchema(spec, false)
                                  : kind == GrammarKind::Json
                                      ? impl_->compiler.CompileJSONSchema(R"({"type": "object"})", false, std::nullopt,
                                                                          std::nullopt, false)
                                  : kind == GrammarKind::Regex    ? impl_->compiler.CompileRegex(spec)
                                  : kind == GrammarKind::StructuralTag ? impl_->compiler.CompileStructuralTag(spec)
                                                                  : impl_->compiler.CompileGrammar(spec);
    return std::make_shared<GrammarConstraint>(xgrammar::GrammarMatcher(g));
  } catch (const std::exception &e) {
    throw std::invalid_argument(e.what());
  }
}

} // namespace cbc::rt
