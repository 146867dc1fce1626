// The family groups, one source file each; family_registry.cpp assembles their tables.
#ifndef CBC_FRONTENDS_HF_CONFIG_FAMILIES_FAMILIES_H
#define CBC_FRONTENDS_HF_CONFIG_FAMILIES_FAMILIES_H

#include "frontends/hf_config/family_registry.h"

namespace cbc::hf {

FamilyTable denseFamilies();      // dense.cpp: llama, mistral, qwen2, qwen3, phi3
FamilyTable gemmaFamilies();      // gemma.cpp: gemma2, gemma3_text
FamilyTable moeFamilies();        // moe.cpp: mixtral, qwen2_moe, qwen3_moe, gpt_oss
FamilyTable gatedDeltaFamilies(); // gated_delta.cpp: qwen3_next, qwen3_5_text, qwen3_5_moe_text, olmo_hybrid
FamilyTable lfm2Families();       // lfm2.cpp: lfm2, lfm2_moe, lfm3
FamilyTable mambaFamilies();      // mamba.cpp: mamba, mamba2, falcon_mamba
FamilyTable hybridFamilies();     // hybrids.cpp: bamba, granitemoehybrid, nemotron_h, falcon_h1, jamba
FamilyTable zambaFamilies();      // zamba.cpp: zamba, zamba2
FamilyTable llama4Families();     // llama4.cpp: llama4_text
FamilyTable miniMaxFamilies();    // minimax.cpp: minimax
FamilyTable rwkvFamilies();       // rwkv.cpp: rwkv
FamilyTable xlstmFamilies();      // xlstm.cpp: xlstm
FamilyTable kdaFamilies();        // kda.cpp: kimi_linear, bailing_hybrid, glm5_next_text
FamilyTable mlaFamilies();        // mla.cpp: deepseek_v3 (kimi_k2), deepseek_v2, glm4_moe_lite, axk1, mistral4,
                                  //   longcat_flash, youtu, minicpm3
FamilyTable inklingFamilies();    // inkling.cpp: inkling_text, inkling2_text
FamilyTable dsaVariantFamilies(); // dsa_variants.cpp: glm_moe_dsa, axk2, hy_v4, dots3_note(_text)
FamilyTable mistralLarge4Families(); // mistral_large4.cpp: mistral_large4_text
FamilyTable qwen4ExpFamilies();   // qwen4_exp.cpp: qwen4_exp_text
FamilyTable deepseekV4Families(); // deepseek_v4.cpp: deepseek_v4
FamilyTable hunyuanFamilies();    // hunyuan.cpp: hunyuan_v1_dense, hunyuan_v1_moe
FamilyTable cohereFamilies();     // cohere.cpp: cohere, cohere2, cohere2_moe, cohere_compass_text
FamilyTable zayaFamilies();       // zaya.cpp: zaya
FamilyTable gptFamilies();        // gpt.cpp: gpt2, gpt-sw3, openai-gpt, gpt_bigcode, gpt_neo, opt, biogpt, xglm, gpt_neox, gpt_neox_japanese,
                                  //   gptj, codegen, phi, stablelm, starcoder2, persimmon, nemotron, falcon, bloom, mpt, modernbert-decoder,
                                  //   ctrl

// mamba.cpp: the original state-spaces (mamba_ssm) config format, which has no model_type,
// rewritten into transformers' mamba / mamba2 keys.
nlohmann::json translateMambaSsm(const nlohmann::json &config);

} // namespace cbc::hf

#endif
