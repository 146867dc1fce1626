// Helpers for the tests that need the compiler: in-process compiles, the fixture variants and
// what transformers produced for each fixture.
#ifndef CBC_TEST_SUPPORT_COMPILE_SUPPORT_H
#define CBC_TEST_SUPPORT_COMPILE_SUPPORT_H

#include "test/support/test_support.h"

#include <ostream>

namespace cbc::test {

// Compiles a config (text) to an artefact, CPU-only, in-process.
rt::Artefact compileArtefact(const std::string &configJson, const std::string &dtype = "bf16",
                             bool fuse = true);

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

} // namespace cbc::test

#endif
