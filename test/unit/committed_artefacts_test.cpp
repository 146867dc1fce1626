// The committed test artefacts (test/artefacts/*.fb), which the runtime's tests read instead of
// compiling, are what the compiler writes today for their fixtures' configs, byte for byte.
#include "driver/compile.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace cbc::test {
namespace {

std::vector<std::string> committedFamilies() {
  std::vector<std::string> out;
  for (const auto &e : std::filesystem::directory_iterator(sourceDir() + "/test/artefacts"))
    if (e.path().extension() == ".fb")
      out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CommittedArtefacts, EachNamesAFixture) {
  std::vector<std::string> families = committedFamilies();
  ASSERT_FALSE(families.empty());
  for (const std::string &f : families)
    EXPECT_TRUE(std::filesystem::exists(fixtureDir(f) + "/config.json")) << f;
}

TEST(CommittedArtefacts, MatchAFreshCompile) {
  for (const std::string &family : committedFamilies()) {
    driver::CompileOptions o;
    o.emit_cuda = false;
    std::vector<uint8_t> fresh =
        driver::compileConfig(readFile(fixtureDir(family) + "/config.json"), o).artefact;
    EXPECT_TRUE(fresh == committedArtefactBytes(family))
        << committedArtefactPath(family) << " is stale (" << fresh.size() << " bytes compiled, "
        << committedArtefactBytes(family).size()
        << " committed): run tools/refresh_test_artefacts.sh and commit the result";
  }
}

} // namespace
} // namespace cbc::test
