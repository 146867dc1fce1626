// Helpers shared by the unit and parity tests: locating fixtures, compiling configs in-process,
// and running prompts through an engine.
#ifndef CBC_TEST_SUPPORT_TEST_SUPPORT_H
#define CBC_TEST_SUPPORT_TEST_SUPPORT_H

#include "runtime/engine.h"

#include <ostream>
#include <string>
#include <vector>

namespace cbc::test {

std::string sourceDir();                      // the repository root
std::string readFile(const std::string &path);
std::vector<std::string> fixtureFamilies();   // directories under test/parity/fixtures
std::string fixtureDir(const std::string &family);

// Compiles a config (text) to an artefact, CPU-only, in-process.
rt::Artefact compileArtefact(const std::string &configJson, const std::string &dtype = "bf16",
                             bool fuse = true);
// A parity fixture's config compiled once per process (defaults of compileArtefact), for the
// tests that only read it.
const rt::Artefact &fixtureArtefact(const std::string &family);

// Test parameters: every fixture family, with and without the fusion passes.
struct FamilyVariant {
  std::string family;
  bool fuse;
};
std::vector<FamilyVariant> familyVariants();
inline void PrintTo(const FamilyVariant &v, std::ostream *os) {
  *os << v.family << (v.fuse ? " (fused)" : " (unfused)");
}
std::string variantName(const FamilyVariant &v);

// What transformers produced for a fixture: prompts, greedy tokens and every step's logits.
struct Expected {
  std::vector<std::vector<int32_t>> prompts, tokens;
  std::vector<std::vector<float>> logits; // [steps * vocab] per prompt
  double atol = 0;
};
Expected loadExpected(const std::string &family);

struct Run {
  std::vector<int32_t> prompt;
  rt::SamplingParams params;
  int64_t arrive_at_step = 0; // the step before which it is added
  bool cancel = false;
  int64_t cancel_at_step = 0;
};

struct RunResult {
  std::vector<rt::RequestOutput> outputs; // by request index
  rt::EngineStats stats;
};

// Serves `runs` on one engine, adding each at its step and cancelling as asked.
RunResult serve(const rt::Artefact &a, const rt::WeightSource &w, const rt::EngineOptions &o,
                const std::vector<Run> &runs);

} // namespace cbc::test

#endif
