#include "frontends/hf_config/family_registry.h"

#include "frontends/hf_config/families/families.h"

#include <algorithm>
#include <stdexcept>

namespace cbc::hf {

const FamilyTable &families() {
  static const FamilyTable table = [] {
    FamilyTable all;
    for (const FamilyTable &group : {denseFamilies(), gemmaFamilies(), moeFamilies(), gatedDeltaFamilies(),
                                     lfm2Families(), mambaFamilies(), hybridFamilies(), zambaFamilies(), mlaFamilies(),
                                     llama4Families(), miniMaxFamilies(), kdaFamilies(), inklingFamilies(),
                                     dsaVariantFamilies(), hunyuanFamilies(), cohereFamilies(),
                                     zayaFamilies(), gptFamilies(), rwkvFamilies(), xlstmFamilies(),
                                     mistralLarge4Families(), qwen4ExpFamilies(), deepseekV4Families()})
      for (const auto &[type, family] : group)
        if (!all.emplace(type, family).second)
          throw std::logic_error("model_type '" + type + "' is registered by two family groups");
    return all;
  }();
  return table;
}

const std::map<std::string, std::string> &multimodalWrappers() {
  static const std::map<std::string, std::string> table = {
      {"gemma3", "gemma3_text"}, {"gemma3n", "gemma3n_text"}, {"gemma4", "gemma4_text"}, {"gemma4_unified", "gemma4_unified_text"}, {"llama4", "llama4_text"}, {"qwen3_5", "qwen3_5_text"},
      {"qwen3_5_moe", "qwen3_5_moe_text"}, {"mistral_large4", "mistral_large4_text"}, {"glm5_next", "glm5_next_text"}, {"inkling2", "inkling2_text"},
      {"qwen4_exp", "qwen4_exp_text"}, {"nemo_speechlm", "nemotron_h"},
      {"inkling_mm_model", "inkling_text"}};
  return table;
}

const std::vector<std::string> &supportedModelTypes() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto &[name, _] : families())
      t.push_back(name);
    for (const auto &[name, _] : multimodalWrappers())
      t.push_back(name);
    std::sort(t.begin(), t.end());
    return t;
  }();
  return types;
}

} // namespace cbc::hf
