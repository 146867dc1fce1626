// Helpers for the tests that need only the runtime: locating fixtures, reading committed
// artefacts and running prompts through an engine. compile_support.h adds the compiler.
#ifndef CBC_TEST_SUPPORT_TEST_SUPPORT_H
#define CBC_TEST_SUPPORT_TEST_SUPPORT_H

#include "runtime/artefact.h"
#include "runtime/backend.h"
#include "runtime/cache/coordinator.h"
#include "runtime/engine.h"
#include "runtime/scheduler.h"
#include "runtime/weights.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cbc::test {

std::string sourceDir();                      // the repository root
std::string readFile(const std::string &path);
std::vector<std::string> fixtureFamilies();   // directories under test/parity/fixtures
std::string fixtureDir(const std::string &family);

// An F32 host tensor's values, to compare whole (any other format throws std::logic_error).
inline std::vector<float> floats(const rt::HostTensor &t) {
  std::span<const float> v = t.f32();
  return {v.begin(), v.end()};
}

// The committed artefact of a parity fixture, test/artefacts/<family>.fb (cbc compile --no-cuda
// of its config; tools/refresh_test_artefacts.sh writes them and a compiler unit test checks
// they are current), so that the runtime's tests need no compiler. Read once per process.
std::string committedArtefactPath(const std::string &family);
const std::vector<uint8_t> &committedArtefactBytes(const std::string &family);
const rt::Artefact &committedArtefact(const std::string &family);

// Greedy decoding of n tokens, EOS ignored, every step's logits kept: the parity tests' requests.
inline rt::SamplingParams greedyWithLogits(int64_t n) {
  rt::SamplingParams p;
  p.max_new_tokens = n;
  p.ignore_eos = true;
  p.keep_logits = true;
  return p;
}

struct Run {
  std::vector<int32_t> prompt;
  rt::SamplingParams params;
  int64_t arrive_at_step = 0; // the step before which it is added
  bool cancel = false;
  int64_t cancel_at_step = 0;
  std::vector<rt::EmbeddingSegment> embeds = {}; // embeddings for runs of the prompt's rows
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
