#include "test/support/test_support.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace cbc::test {

std::string sourceDir() { return CBC_SOURCE_DIR; }

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> fixtureFamilies() {
  std::vector<std::string> out;
  for (const auto &e : std::filesystem::directory_iterator(sourceDir() + "/test/parity/fixtures"))
    if (e.is_directory())
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string fixtureDir(const std::string &family) {
  return sourceDir() + "/test/parity/fixtures/" + family;
}

std::string committedArtefactPath(const std::string &family) {
  return sourceDir() + "/test/artefacts/" + family + ".fb";
}

const std::vector<uint8_t> &committedArtefactBytes(const std::string &family) {
  // Tests run one after another in one thread (gtest), so a plain cache is enough.
  static std::map<std::string, std::vector<uint8_t>> read;
  auto it = read.find(family);
  if (it == read.end()) {
    std::string bytes = readFile(committedArtefactPath(family));
    it = read.emplace(family, std::vector<uint8_t>(bytes.begin(), bytes.end())).first;
  }
  return it->second;
}

const rt::Artefact &committedArtefact(const std::string &family) {
  static std::map<std::string, rt::Artefact> loaded;
  auto it = loaded.find(family);
  if (it == loaded.end()) {
    const std::vector<uint8_t> &b = committedArtefactBytes(family);
    it = loaded.emplace(family, rt::Artefact::fromBytes(b.data(), b.size())).first;
  }
  return it->second;
}

RunResult serve(const rt::Artefact &a, const rt::WeightSource &w, const rt::EngineOptions &o,
                const std::vector<Run> &runs) {
  auto engine = rt::Engine::create(a, w, o);
  RunResult result;
  result.outputs.resize(runs.size());
  std::map<rt::RequestId, size_t> index;
  size_t collected = 0;
  int64_t step = 0;
  auto collect = [&] {
    for (auto &out : engine->take_finished()) {
      result.outputs[index.at(out.id)] = std::move(out);
      ++collected;
    }
  };
  while (collected < runs.size()) {
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i].arrive_at_step == step) {
        auto r = engine->add_request(runs[i].prompt, runs[i].params, runs[i].embeds);
        index[r.id] = i;
      }
    for (const auto &[id, i] : index)
      if (runs[i].cancel && runs[i].cancel_at_step == step)
        engine->cancel(id);
    engine->step();
    collect();
    ++step;
    if (step > 100000)
      throw std::runtime_error("serve: no progress after 100000 steps");
  }
  result.stats = engine->stats();
  return result;
}

} // namespace cbc::test
