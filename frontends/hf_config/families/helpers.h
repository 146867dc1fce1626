// Rules that several family groups share, each written once: activations, layer kinds and
// sliding windows, attention biases, expert counts and names, and the Qwen conventions that
// the dense, MoE and gated-delta Qwen families have in common.
#ifndef CBC_FRONTENDS_HF_CONFIG_FAMILIES_HELPERS_H
#define CBC_FRONTENDS_HF_CONFIG_FAMILIES_HELPERS_H

#include "frontends/hf_config/config_reader.h"
#include "frontends/hf_config/model_spec.h"

#include <functional>
#include <map>

namespace cbc::hf {

// ----- config values --------------------------------------------------------------------------

// The activation named by `key`, whichever of transformers' spellings names it.
FfnActivation activation(const ConfigReader &r, const char *key, const char *fallback);
// Mixers whose convolution runs SiLU only: `key` must name silu (or be absent).
void requireSilu(const ConfigReader &r, const char *key, const std::string &mixer);
// `key` is the string "auto" (a size the family derives).
bool isAuto(const ConfigReader &r, const char *key);
// attention_bias sets the q/k/v and the o projections' biases together.
void attentionBiases(const ConfigReader &r, ModelSpec &s, bool fallback = false);
// clip_qkv (OLMo, OLMoE, DBRX) clamps q, k and v; cbc refuses a config that sets it.
void refuseClipQkv(const ConfigReader &r);
// Granite's multipliers: embeddings, residual branches, the attention scale (instead of
// 1/sqrt(head_dim)) and logits (divided by logits_scaling).
void graniteMultipliers(const ConfigReader &r, ModelSpec &s);

// per_layer_config (transformers 5.23's heterogeneous configs), an object keyed by layer index
// (possibly zero-padded): apply(layer, reader of its overrides, key) for each override, each key
// one `allowed` accepts, else a ConfigError with `refusal`.
void perLayerOverrides(const ConfigReader &r, int64_t layers, const std::function<bool(const std::string &)> &allowed,
                       const std::string &refusal,
                       const std::function<void(int64_t, const ConfigReader &, const std::string &)> &apply);

// ----- layer kinds and windows -----------------------------------------------------------------

// Which layers use RoPE: no_rope_layers (1 = RoPE; the config's own, inverted, naming), else
// every no_rope_layer_interval-th layer (default 4) is NoPE.
std::vector<bool> ropeLayers(const ConfigReader &r, int64_t layers);

using KindNames = std::map<std::string, LayerKind>;
// full_attention (or attention) and sliding_attention.
const KindNames &attentionKinds();
// An explicit per-layer list must have one entry per layer.
void checkLayerCount(const ConfigReader &r, const char *key, size_t entries, int64_t layers);
// layer_types given explicitly, validated against the allowed kinds and the layer count.
std::vector<LayerKind> explicitLayerTypes(const ConfigReader &r, int64_t layers,
                                          const KindNames &allowed = attentionKinds());
// Layer i is `yes` where pick(i) holds, else `no`: a config class's default layer pattern.
std::vector<LayerKind> kindsWhere(int64_t layers, const std::function<bool(int64_t)> &pick, LayerKind yes,
                                  LayerKind no);
// Sets the layers' kinds and windows; a sliding layer without a window attends to everything.
void setLayers(ModelSpec &spec, const std::vector<LayerKind> &kinds, int64_t window);
// Sliding layers need a window where the class masks them with one (transformers' sliding mask
// refuses a missing window).
void requireWindowForSliding(const ConfigReader &r, const std::vector<LayerKind> &kinds, int64_t window);
// sliding_window when set (it must not be negative), else 0.
int64_t optionalWindow(const ConfigReader &r, const char *key = "sliding_window");
// An absent sliding_window takes the config class's default; an explicit null means no window.
int64_t windowOrClassDefault(const ConfigReader &r, int64_t classDefault);
// Every layer slides when the window is set (Mistral, Mixtral, Phi-3, Qwen3-MoE).
void uniformWindowLayers(ModelSpec &spec, int64_t window);
// layer_types, else every pattern-th layer full and the others sliding (Gemma, gpt-oss).
void alternatingLayers(const ConfigReader &r, ModelSpec &spec, int64_t window, int64_t pattern);

// EXAONE 4 and K-EXAONE: per-head q/k norms before RoPE, and without layer_types every
// sliding_window_pattern-th layer full, the others sliding; with a window only the sliding
// layers rotate (the full ones are NoPE). Their config classes cannot build layer_types from a
// string pattern or without a window: refused.
void exaoneLayers(const ConfigReader &r, ModelSpec &s);

// ----- experts ---------------------------------------------------------------------------------

// The expert count's key: transformers maps num_experts and num_local_experts onto each other.
std::string expertCountKey(const ConfigReader &r, const char *preferred);
// The routed experts' count: a size, or with `noneAllowed` a non-negative int (0: no MoE layers).
int64_t expertCount(const ConfigReader &r, const std::string &key, int64_t fallback, bool noneAllowed);
// num_experts_per_tok; it must not exceed the count once there are at least `routedFrom` experts
// (fewer route nothing). `countName` is the count as the family's error names it.
int64_t expertTopK(const ConfigReader &r, int64_t fallback, int64_t experts, const std::string &countName,
                   int64_t routedFrom = 1, const std::string &key = "num_experts_per_tok");

// How a family reads its routed experts' count and top-k.
struct ExpertKeys {
  std::string count;              // the count's key
  int64_t experts = 0, top_k = 0; // the config class's defaults
  std::string count_name;         // how "exceeds ..." names the count: the families word it differently
  bool none_allowed = false;      // see expertCount
  int64_t routed_from = 1;        // see expertTopK
  std::string top_k_key = "num_experts_per_tok";
};
void parseExperts(const ConfigReader &r, const ExpertKeys &keys, MoeSpec &m);

// A gated shared expert under `module`: <module>.{gate,up,down}_proj.weight.
void gatedSharedExpert(ExpertNaming &n, const std::string &module);
// One tensor set per expert under <mlp>.experts.{e}, named by the family's Names (gate/up/down),
// routed by <mlp>.<router>.
ExpertNaming perExpertNames(const Names &n, const std::string &router, bool gated);
void allLayersMoe(ModelSpec &spec);

// Granite's MoE: <module>.router.layer over fused experts, input_linear [E, 2I, H] (gate and up
// halves) and output_linear [E, H, I] (block_sparse_moe in GraniteMoE, mlp in JetMoE).
ExpertNaming graniteNames(const std::string &module = "block_sparse_moe");
// Full-attention layers, each with experts routed by a softmax over the top-k logits (GraniteMoE,
// JetMoE): num_local_experts (8), num_experts_per_tok (2), intermediate_size wide, hidden_act.
void topkSoftmaxExperts(const ConfigReader &r, ModelSpec &s, ExpertNaming names);
// Granite's shared MLP as the layer's dense MLP: shared_mlp.input_linear ([gate | up]) and
// shared_mlp.output_linear.
void graniteSharedMlpNames(Names &n);

// ----- Qwen ------------------------------------------------------------------------------------

// Qwen2-family sliding windows exist only with use_sliding_window.
int64_t qwenWindow(const ConfigReader &r);
// layer_types, else the config class's rule: `slides(i, max_window_layers)`.
void qwenWindowLayers(const ConfigReader &r, ModelSpec &spec, bool (*slides)(int64_t layer, int64_t maxWindowLayers));

// A Qwen MoE config class's defaults.
struct QwenMoeDefaults {
  int64_t experts, top_k, intermediate;
  int64_t shared_intermediate; // 0: no shared expert
  bool renorm;
  std::vector<int64_t> mlp_only = {}; // mlp_only_layers when the config has none
};
// Qwen2-MoE, Qwen3-MoE, Qwen3-Next: experts placed by mlp_only_layers and decoder_sparse_step.
void parseQwenMoe(const ConfigReader &r, ModelSpec &spec, const QwenMoeDefaults &d);
// Qwen3.5-MoE's and Qwen4-Exp's: MoE on every layer with the sigmoid-gated shared expert,
// renormalised top-k as norm_topk_prob says (default d.renorm), or always d.renorm without
// renormKey (a router that ignores the key).
void parseQwenMoeEveryLayer(const ConfigReader &r, ModelSpec &spec, const QwenMoeDefaults &d, bool renormKey);
// Qwen3-Next's and Qwen3.5's gated delta net keys (linear_*), with the projections' layout.
// mHC streams (hc_mult, hc_sinkhorn_iters, hc_eps) with the sites' tensors hc_attn_* and hc_ffn_*
// (DeepSeek-V4, GLM5-Next).
void parseManifoldHyper(const ConfigReader &r, ModelSpec &s);
void parseGatedDeltaNet(const ConfigReader &r, ModelSpec &s, GdnSpec::Projections projections);
// The sigmoid-gated shared expert under mlp.shared_expert.
void qwenSharedExpert(ExpertNaming &n);

} // namespace cbc::hf

#endif
