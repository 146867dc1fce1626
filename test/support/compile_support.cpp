#include "test/support/compile_support.h"

#include "driver/compile.h"
#include "frontends/hf_config/config_reader.h"
#include "runtime/safetensors.h"

#include <nlohmann/json.hpp>

namespace cbc::test {

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
