#include "test/support/test_support.h"

#include "driver/compile.h"
#include "frontends/hf_config/config_reader.h"
#include "runtime/safetensors.h"

#include <nlohmann/json.hpp>

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

std::vector<FamilyVariant> familyVariants() {
  std::vector<FamilyVariant> out;
  for (const std::string &f : fixtureFamilies())
    for (bool fuse : {true, false})
      out.push_back({f, fuse});
  return out;
}

std::string variantName(const FamilyVariant &v) { return v.family + (v.fuse ? "" : "_unfused"); }

rt::Artefact compileArtefact(const std::string &configJson, const std::string &dtype, bool fuse) {
  driver::CompileOptions o;
  o.dtype = dtype;
  o.emit_cuda = false;
  o.fuse = fuse;
  auto result = driver::compileConfig(configJson, o);
  return rt::Artefact::fromBytes(result.artefact.data(), result.artefact.size());
}

const rt::Artefact &fixtureArtefact(const std::string &family) {
  // Tests run one after another in one thread (gtest), so a plain cache is enough.
  static std::map<std::string, rt::Artefact> compiled;
  auto it = compiled.find(family);
  if (it == compiled.end())
    it = compiled.emplace(family, compileArtefact(readFile(fixtureDir(family) + "/config.json"))).first;
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
        auto r = engine->add_request(runs[i].prompt, runs[i].params);
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

Expected loadExpected(const std::string &family) {
  Expected e;
  rt::Checkpoint ck(fixtureDir(family) + "/expected.safetensors");
  auto ints = [&](const std::string &name) {
    const rt::TensorView &t = ck.get(name);
    const int32_t *p = reinterpret_cast<const int32_t *>(t.data);
    return std::vector<int32_t>(p, p + t.numel());
  };
  for (int i = 0; ck.has("prompt_" + std::to_string(i)); ++i) {
    e.prompts.push_back(ints("prompt_" + std::to_string(i)));
    e.tokens.push_back(ints("tokens_" + std::to_string(i)));
    const rt::TensorView &l = ck.get("logits_" + std::to_string(i));
    const float *p = reinterpret_cast<const float *>(l.data);
    e.logits.emplace_back(p, p + l.numel());
  }
  // The oracle writes meta.json with Python's json module (bare Infinity in its range checks).
  auto meta = hf::parseConfigJson(readFile(fixtureDir(family) + "/meta.json"));
  e.atol = meta.at("atol").get<double>();
  return e;
}

} // namespace cbc::test
