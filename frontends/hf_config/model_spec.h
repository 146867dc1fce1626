// The normalised, validated description of a model that the front end derives from a Hugging Face
// config.json. Every derivation rule (layer types, RoPE, windows, MoE placement, tensor names)
// lives in parse_config.cpp and the family files under families/; the lowering to the cbc
// dialect reads only this struct. Its closed sets are the enums of spec_enums.h.
#ifndef CBC_FRONTENDS_HF_CONFIG_MODEL_SPEC_H
#define CBC_FRONTENDS_HF_CONFIG_MODEL_SPEC_H

#include "frontends/hf_config/spec_enums.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cbc::hf {

// A config error names the offending key; `cbc compile` prints it and exits with status 2.
class ConfigError : public std::runtime_error {
public:
  ConfigError(std::string key, const std::string &message)
      : std::runtime_error("config key '" + key + "': " + message), key_(std::move(key)) {}
  const std::string &key() const { return key_; }

private:
  std::string key_;
};

struct RopeSpec {
  RopeType type = RopeType::Default;
  double theta = 10000.0;
  int64_t rotary_dim = 0;
  RotaryPairing pairing = RotaryPairing::Half;
  std::vector<float> inv_freq;
  double attention_factor = 1.0;
  // longrope: the long frequencies, used once a request reaches `long_after` positions.
  std::vector<float> inv_freq_long;
  int64_t long_after = 0;
  // dynamic NTK: the base is rescaled from the request's length beyond `dynamic_max_positions`.
  double dynamic_factor = 0.0;
  int64_t dynamic_max_positions = 0;
  // Multimodal RoPE: the position component (0 temporal, 1 height, 2 width) each frequency
  // reads; empty: the token's one position.
  std::vector<int64_t> sections;
};

enum class LayerKind {
  FullAttention,
  SlidingAttention,
  LinearAttention, // a gated delta net mixer (per-request conv and recurrent states)
  ShortConv,       // LFM2's gated short convolution (a per-request conv state)
  Mamba2,          // Mamba2's SSD mixer (conv and ssm states)
  Mamba1,          // Mamba's selective-scan mixer (conv and ssm states)
  ParallelHybrid,  // attention and a Mamba2 mixer side by side on the same input, summed (Falcon-H1)
  SharedBlock,     // a shared attention block on [h | embeddings] feeding the layer's own Mamba mixer (Zamba)
  LatentAttention, // multi-head latent attention over a cache of latents (DeepSeek-V2/V3)
  Kda,             // Kimi delta attention: a delta rule decaying per key channel (conv and recurrent states)
  None,            // no mixer: the layer is a feed-forward block alone (Nemotron-H '-')
  Lightning,       // linear attention with a constant decay per head (a per-request matrix state)
  Rwkv,            // RWKV's time mix: token-shift mixing and the WKV recurrence (shift and wkv states)
  Mlstm,           // xLSTM's mLSTM layer: a matrix memory per head (recurrent state)
  RgLru,           // Griffin's recurrent block: a short conv and the RG-LRU (conv and recurrent states)
  // Shared-key-value attention over a window of tokens plus, with LayerSpec::compress_rate, the
  // compressed entries of windows of that many tokens (DeepSeek-V4; SharedKvSpec).
  SharedKv,
};

struct LayerSpec {
  LayerKind kind = LayerKind::FullAttention;
  int64_t ple = -1; // this layer's index among the PleSpec layers; -1: none
  int64_t window = 0; // keys with j > p - window; 0 = unbounded
  int64_t chunk = 0;  // keys in the query's chunk of `chunk` positions, j / chunk == p / chunk; 0 = none
  bool nope = false;  // this attention layer has no position embedding, whatever AttentionSpec::rope says
  // The rows of one injected image attend to each other both ways in prefill (key ends), the
  // others causally: a multimodal wrapper's image-block mask (Gemma 3).
  bool image_bidirectional = false;
  double rope_theta = 0; // this layer's own RoPE base over its layer type's dictionary (Granite-SWA); 0: none
  RopeSpec rope;
  bool moe = false;   // MoE MLP rather than the dense MLP
  bool mlp = true;    // false: the layer has no feed-forward block (Mamba blocks)
  bool post_norm = false; // x + norm(f(x)) rather than x + f(norm(x)) (OLMo attention layers)
  bool norm_after_add = false; // norm(x + f(x)), the mixer's and then the MLP's (the original GPT)
  bool input_norm = true; // false: the mixer reads the stream unnormed (ModernBERT-decoder's layer 0)
  bool parallel = false;  // x + f(norm(x)) + mlp(norm(x)): one norm, mixer and MLP side by side (Cohere)
  // With `parallel`, the MLP reads its own norm (Names::post_attn_norm) of the same x:
  // x + f(norm1(x)) + mlp(norm2(x)) (GPT-NeoX, Falcon's two-norm blocks).
  bool parallel_norms = false;
  // The residual is the normed input: h = norm(x); x = alpha * h + beta * f(h), for the mixer and
  // then the feed-forward block, with their own (alpha, beta) (MiniMax-Text-01).
  bool normed_residual = false;
  // Each residual add is alpha * r + beta * f, r the stream (the normed input with
  // normed_residual): the mixer's and the feed-forward block's own factors (MiniMax-Text-01,
  // Beam's depth scaling).
  double mixer_alpha = 1.0, mixer_beta = 1.0, mlp_alpha = 1.0, mlp_beta = 1.0;
  std::vector<double> lightning_decay; // Lightning layers: the decay rate of each head
  // This attention layer's own head counts and head width (Inkling's sliding layers); 0: the
  // AttentionSpec's.
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  std::optional<bool> sinks; // this layer's own sinks choice (MiMo-V2: sliding layers); none: AttentionSpec's
  std::optional<bool> o_bias; // this layer's own output-bias choice (GPT-NeoX-Japanese: the last); none: AttentionSpec's
  double scale_factor = 1.0; // the softmax scale times this (GPT-2's scale_attn_by_inverse_layer_idx)
  double lambda_init = 0.0;  // differential attention's lambda_init for this layer
  // A sparse attention layer without its own indexer: it reads the previous layer's selection.
  bool shared_indexer = false;
  bool block_sparse = false; // attention restricted to the blocks AttentionSpec::block_indexer picks
  // The mixer's input norm and the feed-forward block's norm are followed by the low-rank gate of
  // NormGateSpec (A.X-K2: every layer's input norm, MoE layers' feed-forward norm).
  bool gated_input_norm = false, gated_ff_norm = false;
  // KV sharing (Gemma 4's num_kv_shared_layers): this attention layer projects only q and
  // attends over the cache layer `kv_layer` writes, a layer of its own kind before it; -1: its own.
  // A latent-attention reader re-expands the writer's latent and roped key with its own kv_b_proj
  // (Mistral Large 4's kv_source_layers); its indexer, if it has one, keeps its own key row.
  int64_t kv_layer = -1;
  bool value_is_key = false; // v is the key projection's output (before k's norm and RoPE): no v_proj
  int64_t intermediate = 0;  // this layer's dense MLP width (Gemma 4's double-wide MLPs); 0: MlpSpec's
  // The dense MLP's gate projection keeps only what lies above its row's mean plus this many
  // standard deviations, shifted down to it (cbc.math.gaussian_topk; Gemma 3n's activation
  // sparsity, the normal quantile of the target); none: no sparsity.
  std::optional<double> gate_quantile;
  // SharedKv layers: one compressed entry per `compress_rate` tokens (0: the window alone), pooled
  // over overlapping double windows and chosen per query by the SharedKvSpec indexer
  // (`compress_indexed`: CSA), else over plain windows and all seen (HCA).
  int64_t compress_rate = 0;
  bool compress_indexed = false;
  bool hash_routing = false; // the MoE's experts come from ExpertNaming::route_table[token]
};

// A low-rank, input-dependent gate on a norm's output: y = RMSNorm(x) * w, then
// y * sigmoid(up(SiLU(down(y)))) with down [rank, hidden] and up [hidden, rank], no biases. The
// norm's weight is <norm>.<weight>, the projections <norm>.<down> and <norm>.<up> (A.X-K2).
struct NormGateSpec {
  int64_t rank = 0;
  std::string weight = "norm.weight", down = "W_down.weight", up = "W_up.weight";
};

// A mixture of attention heads (JetMoE): a router over `experts` picks `top_k` per token; the
// chosen experts project q (each num_kv_heads * head_dim rows, one block of query heads reading
// the kv heads in order) and project their blocks of the output back, mixed by the routing
// weights, plus an unweighted bias. k and v come from one shared projection (k rows first).
struct HeadExpertsSpec {
  int64_t experts = 0, top_k = 0; // experts 0: none
  std::string router = "experts.router.layer.weight", q = "experts.input_linear.weight",
              o = "experts.output_linear.weight", o_bias = "experts.bias", kv = "kv_proj.weight";
};

// Compressed convolutional attention (ZAYA's CCA), under <attn>.qkv_proj: q, k and two half-width
// value projections (v_proj_current, v_proj_delayed) in one GEMM. q|k pass a depthwise causal
// conv of kernel t0 (conv_qk_depthwise) and a conv of kernel t1 grouped per head
// (conv_qk_grouped), which sees the first conv's bias before a request's first token; q adds
// (q + k of its group) / 2 and k that mean over its group. The value heads are
// [v_current | v_delayed of the previous token] (the delayed bias before the first token). q and
// k are scaled to norm sqrt(head_dim) (an RMS norm with eps `norm_eps`), k times a learned
// temperature per KV head (<attn>.qk_norm.temp), then RoPE.
struct CcaSpec {
  int64_t t0 = 0, t1 = 0; // t0 0: not CCA
  double norm_eps = 0.0;
};

// MiniMax-M3's block-sparse attention: on LayerSpec::block_sparse layers a lightning indexer under
// <attn>.indexer (q_proj [heads * head_dim], k_proj [head_dim], per-head q_norm and k_norm, the
// layer's RoPE over heads of head_dim) caches one key per token and picks, per indexer head, the
// topk blocks of `block` positions by their best q . k (the `local` blocks ending at the query's
// own always); query head h reads only the blocks of indexer head h / (heads_q / heads).
//
// Qwen4-Exp's QSA block indexer (`pooled`): <attn>.indexer.index_qk_proj gives heads query heads
// and one raw key per token, which is cached; a complete block's key is the mean of its raw keys,
// (1 + w) normed (k_layernorm) and rotated at the block's first position, and each query (q
// normed by q_layernorm and rotated, the layer's RoPE over heads of head_dim) keeps the topk
// blocks by sum_h relu(q_h . key) / sqrt(head_dim) plus its own open block, for every head.
struct BlockIndexerSpec {
  int64_t heads = 0, head_dim = 0, block = 0, topk = 0, local = 1;
  bool pooled = false;
};

// DeepSeek-V4's shared-key-value attention (LayerKind::SharedKv) under Names::attn, heads of
// AttentionSpec::head_dim D with the layer's RoPE on their last rotary_dim features (interleaved):
// q = wq_b(q_norm(wq_a x)) RMS-normed per head without a weight; one key-value row norm(wkv x),
// roped, cached over the window and read as both key and value; sinks; the output rotated back
// by -angle, then the grouped low-rank projection wo_b(wo_a per group of heads). Compressed layers
// pool compressor.{wkv, wgate} (rows [kv | gate]) with the learned compressor.ape, compressor.norm
// and RoPE at the window's first position; indexed ones score their entries with the indexer (its
// own compressor of index_head_dim, queries indexer.wq_b of q_norm's output, weights
// indexer.weights_proj x) and keep index_topk.
struct SharedKvSpec {
  int64_t q_lora_rank = 0, o_groups = 0, o_lora_rank = 0; // q_lora_rank 0: none
  int64_t index_heads = 0, index_head_dim = 0, index_topk = 0;
};

struct AttentionSpec {
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t v_head_dim = 0;   // value heads' width where it differs from head_dim (MiMo-V2); 0: head_dim
  double value_scale = 1.0; // v is scaled before the cache, folded into v_proj's rows (MiMo-V2)
  // Differential attention (DiffLlama): KV head j caches the value heads j mod (kv / 2) and
  // kv / 2 + j mod (kv / 2) side by side, so each head's output is [o1 | o2]; the first half of
  // the heads minus lambda times the second (cbc.math.diff_heads, lambda from <attn>.lambda_{q,k}{1,2}
  // and LayerSpec::lambda_init), a weightless RMS norm over each 2 * head_dim, times 1 - lambda_init.
  bool differential = false;
  double scale = 1.0;
  bool qkv_bias = false, o_bias = false;
  bool qk_norm = false;  // RMSNorm over each head of q and k, before RoPE
  bool qk_norm_after_rope = false; // the q/k norms follow RoPE (Hunyuan)
  // The q/k norms are LayerNorms over each head (eps ModelSpec::norm_eps): with a bias
  // (Persimmon, Phi), or with one weight per head, <q_norm>.norms.<h>.weight, and no bias
  // (StableLM-2-12B).
  bool qk_layer_norm = false, qk_norm_bias = false, qk_norm_per_head = false;
  double softcap = 0.0;  // attention score soft-capping; 0 = none
  double clip_qkv = 0.0; // q, k and v clamped to [-clip_qkv, clip_qkv] after projection; 0 = none
  bool sinks = false;    // one learned logit per head in the softmax denominator
  bool output_gate = false; // a gate on the output: o * sigmoid(gate), from q_proj (per head,
                            // Qwen3-Next) or from Names::attn_gate
  bool gate_per_head = false; // one gate value per head (Names::attn_gate only), not per element
  bool gate_softplus = false; // o * softplus(gate) rather than o * sigmoid(gate) (Laguna)
  bool gate_leads = false;    // the fused Names::qkv projection holds [gate | q | k | v] (HRM's gqkv_proj)
  // The fused Names::qkv projection (and its bias) interleaves its rows per KV head: the group's
  // query heads, then its key and its value head (GPT-NeoX and BLOOM per head, Falcon per group).
  bool qkv_grouped = false;
  // The fused Names::qkv projection is `qkv_shards` blocks of rows (model-parallel shards), each
  // [q | v | k] of its 1 / qkv_shards of the heads (CodeGen's qkv_proj); 0: none.
  int64_t qkv_shards = 0;
  bool rope = true;         // false: no position embedding (NoPE)
  // ALiBi: one slope per query head; the score of the key at distance p - j gains
  // -slope * (p - j) (BLOOM, MPT). Empty: none.
  std::vector<float> alibi_slopes;
  bool qk_norm_whole = false; // q/k norms over the whole projection rather than per head (OLMo)
  RotaryPairing rope_pairing = RotaryPairing::Half; // which features RoPE pairs
  bool qk_l2_norm = false; // weightless RMS norm of each q and k head after RoPE, on RoPE layers (Llama 4)
  bool v_norm = false;     // weightless RMS norm of each value head before the cache (Gemma 4)
  // A score bias per key and KV head (Doge's dynamic mask): exp(A * softplus(dt_proj(v))) of the
  // key's value rows (all KV heads'), <attn>.A [kv] and <attn>.dt_proj [kv, kv * v_dim] (with a
  // bias when qkv_bias). It rides in the cache as an extra key feature (cbc.math.head_pad).
  bool key_bias = false;
  bool rope_reversed = false; // rotations by -angle (NanoChat's rotate_half with the signs flipped)
  // NoPE layers scale q by 1 + beta * log(1 + floor((position + 1) / period)) (Llama 4's attention
  // temperature tuning); beta 0: none.
  double temperature_beta = 0.0;
  int64_t temperature_period = 0;
  QueryTemperature temperature_form = QueryTemperature::LogFloor;
  // Roped queries scaled by 1 + beta * log(1 + floor(position / period)) after RoPE (Ministral 3's
  // llama_4_scaling_beta); beta 0: none.
  double query_scale_beta = 0.0;
  int64_t query_scale_period = 0;
  // A relative-position bias from each token's hidden state (Inkling): r_proj gives rel_dim
  // features per head, which rel_logits_proj.proj [rel_dim, extent] turns into one bias per
  // backward distance below the extent: rel_extent on full layers, the window on sliding ones.
  // 0: none.
  int64_t rel_dim = 0, rel_extent = 0;
  // Full layers scale q and the bias by 1 + alpha * log(max((p + 1) / floor, 1)); floor 0: none.
  double log_scale_alpha = 0.0;
  int64_t log_scale_floor = 0;
  bool scale_inverse_dim = false; // the softmax scale is 1 / head_dim of each layer, not `scale`
  int64_t kv_conv_kernel = 0; // k and v each pass a residual depthwise conv, x + conv(x); 0: none
  // L2 clips instead of q/k norms (Inkling 2): q and the relative states r scaled per feature
  // (<attn>.{q,rel}_l2_clip.scale), each head then shortened to qk_clip (r: rel_clip), and k after
  // its conv to qk_clip unscaled. Such an attention also has per-token sink logits
  // (<attn>.attn_sink_proj), a per-element output gate (<attn>.gate_attn), a weightless v norm,
  // residual convs scaled by 1 / sqrt(K + 1), and on full layers dynamic k/v convs (taps from
  // <attn>.{k,v}_sconv.weight_proj of the k/v input plus .static_w), scaled by 1 / sqrt(2K + 1).
  // 0: none.
  double qk_clip = 0.0, rel_clip = 0.0;
  HeadExpertsSpec head_experts;
  CcaSpec cca;
  BlockIndexerSpec block_indexer;
};

// Multi-head latent attention: the query through q_a -> norm -> q_b (or q_proj), keys and values
// from a normed latent of kv_lora_rank and one roped key of rope_dim that all heads share. The
// rope part's schedule is the layer's RopeSpec, over heads of rope_dim (AttentionSpec::head_dim
// is set to rope_dim); num_heads and the softmax scale are the AttentionSpec's.
// The lightning indexer of sparse (indexed) attention over MLA: per query token, `heads` query
// heads of `head_dim` from q_b's input, one LayerNorm'd key per token, RoPE on the first
// rope_dim features of both; attention reads only the `topk` best cached tokens.
struct IndexerSpec {
  int64_t heads = 0, head_dim = 0, topk = 0; // heads 0: no indexer
  RotaryPairing rope_pairing = RotaryPairing::Half; // the indexer's own pairing (not the attention's)
  double norm_eps = 1e-6;                     // k_norm (a LayerNorm with a bias)
  bool rope_last = false;                     // q and k rotate their last rope_dim features, not their first
  // The queries read LayerNorm(x) (<indexer>.q_input_norm, weight and bias, eps norm_eps) through
  // a wq_b of the hidden size, not the q LoRA's output (Mistral Large 4).
  bool query_norm = false;
  // Pooled keys (GLM5-Next's k-pooled indexer): each token caches its key and the pooling logits
  // <indexer>.index_kpool_compress_gate x; a query keeps the topk / pool best complete pools of
  // `pool` positions (cbc.kv.pool_select, the positional bias <indexer>.index_kpool_compress_ape)
  // and always its own open pool. 0: token-level selection.
  int64_t pool = 0;
};

struct MlaSpec {
  int64_t q_lora_rank = 0; // 0: q_proj
  int64_t kv_lora_rank = 0, nope_dim = 0, rope_dim = 0, v_dim = 0;
  bool bias = false;       // q_a_proj, kv_a_proj_with_mqa and o_proj biases (attention_bias)
  double norm_eps = 1e-6;  // q_a_layernorm and kv_a_layernorm
  // Constant multipliers on the query and on the normed latent before it is cached (LongCat's
  // LoRA scales), folded into q_b's rows and kv_a_layernorm's weight.
  double q_scale = 1.0, latent_scale = 1.0;
  // Queries scaled by 1 + beta * log(1 + floor(position / period)) (Mistral 4); 0: none.
  double position_beta = 0.0;
  int64_t position_period = 0;
  // The attention output of each head times sigmoid(g_proj(x)) [heads], before o_proj (Ling).
  bool head_gate = false;
  // The shared key part passes a learned RMS norm (<attn>.k_rope_only_layernorm, eps norm_eps)
  // before RoPE (Dots3).
  bool k_rope_norm = false;
  // One projection q_b_proj over [norm(q_a) | q_a] (2 q_lora_rank wide) yields, per head,
  // [q nope | q rope | gate of v_dim]; the attention output is multiplied by sigmoid(gate) per
  // element before o_proj (A.X-K2, whose runtime module calls it q_gate_proj).
  bool query_gate = false;
  // A learned logit per head (<attn>.<Names::sinks>) joins each softmax (HY-V4).
  bool sinks = false;
  // Per-head learned query factors scale_h * log(1 + position) + bias_h, the two [heads] tensors
  // under the attention (after RoPE) and under its indexer (before the ReLU) (Mistral Large 4's
  // softmax scaling); empty: none.
  std::string log_position_scale, log_position_bias;
  IndexerSpec indexer;
};

// A Kimi delta attention mixer under Names::attn: q/k/v projections through short convs
// (SiLU), a forget gate per key channel, beta = sigmoid(b_proj x), the KDA scan, then
// o_proj(RMSNorm(o) * w * sigmoid(gate)) per head, Names::o_proj naming the output projection.
struct KdaSpec {
  int64_t heads = 0, head_dim = 0, conv_kernel = 4;
  // The forget gate: -exp(A_log) * softplus(f + dt_bias), or with `bounded`
  // lower_bound * sigmoid(exp(A_log) * (f + dt_bias)).
  bool bounded = false;
  double lower_bound = -5.0;
  // Forget and output gates through rank-head_dim pairs f_a -> f_b and g_a -> g_b (Kimi), else
  // full-rank f_proj and g_proj.
  bool low_rank = true;
  bool a_log_4d = false;  // A_log stored [1, 1, heads, 1] rather than [heads]
  double norm_eps = 1e-6; // the gated output norm's
};

// A gated delta net mixer.
struct GdnSpec {
  int64_t k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0, conv_kernel = 4;
  bool sigmoid_gate = false; // the gated norm's gate is sigmoid(z) instead of silu(z) (Qwen4-Exp)
  double beta_scale = 1.0; // 2 when negative eigenvalues are allowed (OLMo-Hybrid)
  double norm_eps = 1e-6;  // the gated output norm's
  // How the checkpoint lays out the input projections.
  enum class Projections { Grouped, Flat, Separate } projections = Projections::Flat;
};

// Lightning attention: q|k|v = silu(qkv_proj x) with each head's rows [q | k | v], the decayed
// linear attention over a per-request state, an RMSNorm over all heads (its own eps), a sigmoid
// output gate and out_proj. The decay rates are per layer (LayerSpec::lightning_decay).
struct LightningSpec {
  int64_t heads = 0, head_dim = 0;
  double norm_eps = 1e-6;
};

// RWKV (v4): each layer's time mix under <attention>, reading its LayerNorm'd input mixed with
// the previous token's (cbc.state.shift) by time_mix_key / _value / _receptance, key and value
// through the WKV recurrence (cbc.state.wkv with time_decay and time_first), the result gated
// by sigmoid(receptance) into <attention>.output; then the channel mix under <feed_forward>:
// relu(key(mix))^2 through value, gated by sigmoid(receptance(mix)). Layer 0 norms its input
// first (<pre_ln>). In inference transformers divides each layer's output and value weights by
// 2^(layer / rescale_every) and halves the residual after every rescale_every-th layer.
struct RwkvSpec {
  int64_t attention_size = 0, intermediate = 0; // 0 attention_size: not RWKV
  int64_t rescale_every = 0;                    // 0: no rescaling
};

// Griffin's recurrent block (RecurrentGemma) under Names::attn: y = gelu_tanh(linear_y x);
// linear_x x through a depthwise causal conv (conv_1d, with bias) and the RG-LRU, whose input and
// recurrent gates are block-diagonal maps (`heads` blocks) of the conv's output; linear_out(h * y).
// Every linear has a bias.
struct GriffinSpec {
  int64_t width = 0, heads = 0, conv_kernel = 4; // width 0: none
};

// xLSTM's mLSTM layer under Names::attn: q, k, v and the output gate from one projection (the
// `qkvo` tensors concatenated, or one fused tensor), the input and forget gate pre-activations
// (with biases) from another, each soft-capped at gate_cap; the cell (cbc.state.mlstm), a
// LayerNorm per head with a weight over the v columns, sigmoid(o) times it, then out_proj.
struct XlstmSpec {
  int64_t heads = 0, qk_dim = 0, v_dim = 0; // heads 0: none
  double gate_cap = 15.0, eps = 1e-6;
  std::vector<std::string> qkvo, gates; // tensor names under <attn>, concatenated in order
};

// LFM2's gated short convolution.
struct ShortConvSpec {
  int64_t kernel = 3;
  bool bias = false;
};

struct MlpSpec {
  int64_t intermediate = 0;
  FfnActivation act = FfnActivation::Silu;
  double limit = 0.0, alpha = 0.0; // ClampedSwiglu's (MiniMax-M3)
  double up_offset = 1.0;          // ClampedSwiglu's (up + offset): 0 for a clamped SwiGLU (GLM5-Next)
  bool bias = false;
  bool gated = true;        // false: down(act(up(x))), no gate projection (Nemotron-H)
  bool global_scale = false; // the output times a learned scalar, <mlp>.global_scale (Inkling)
  GateUpLayout glu = GateUpLayout::Halves; // how a fused gate_up tensor's rows hold gate and up
};

// Mamba2's mixer: in_proj -> [z | xBC | dt], conv over xBC, SSD scan, gated norm, out_proj.
struct Mamba2Spec {
  int64_t heads = 0, head_dim = 0, groups = 1, state = 128, conv_kernel = 4;
  bool conv_bias = true, bias = false; // conv bias; in_proj/out_proj biases
  bool out_bias = false;               // out_proj's bias (parseMamba2 copies `bias`; Falcon-H1 has its own key)
  double norm_eps = 1e-5;              // the gated norm's
  double dt_min = 0.0, dt_max = INFINITY;
  bool norm_before_gate = false;
  bool gated_norm = true;              // false: y * silu(z) with no norm and no weight (Falcon-H1 option)
  int64_t norm_groups = 1;             // the gated norm's groups over the intermediate width
  int64_t intermediate() const { return heads * head_dim; }
};

// Mamba's mixer: in_proj -> [x | z], conv over x, x_proj -> [dt | B | C], dt_proj, scan.
struct Mamba1Spec {
  int64_t intermediate = 0, state = 16, conv_kernel = 4, dt_rank = 0, groups = 1;
  bool conv_bias = true, bias = false;
  // RMS norms on dt, B and C before dt_proj: none, weighted (Jamba) or weightless (Falcon-Mamba).
  enum class DtBcNorm { None, Weighted, Weightless } dt_bc_norm = DtBcNorm::None;
  double dt_bc_eps = 1e-6;
  // Zamba: independent heads of intermediate / heads channels with their own x_proj and dt_proj
  // (x_proj_weight [heads, R + 2N, hd], ...), and in_proj rows interleaving x and z.
  int64_t heads = 1;
};

// One set of expert projections, named relative to the decoder layer.
struct ExpertTensors {
  std::vector<std::string> gate_up;      // gate then up, concatenated (or one fused tensor); up alone when ungated
  std::vector<std::string> down;         // one tensor (or one [blocks, scales] pair)
  std::vector<std::string> gate_up_bias; // empty: no biases
  std::string down_bias;
};

// Where a family's MoE tensors are, relative to the decoder layer ("<prefix>layers.<n>."). An
// empty optional name means the tensor does not exist.
struct ExpertNaming {
  std::string router;         // the router's [E, H] weight
  std::string router_bias;    // optional
  std::string selection_bias; // optional: a per-expert bias that only steers the choice
  bool selection_bias_row = false; // the selection bias is stored [1, E] (ERNIE-4.5), read as [E]
  // One fused [E, ...] tensor per projection (stored [E, in, out] when transposed), or one tensor
  // set per expert, named with "{e}" for the expert's index and stacked at load.
  bool fused = false, transposed = false;
  // Each expert projection is one MXFP4 [blocks, scales] pair (gpt-oss's released checkpoints),
  // dequantised at load.
  bool mxfp4 = false;
  // Fused experts stored as row blocks (DBRX): gate and up as two [E * I, H] tensors, down as one
  // [E * I, H] tensor holding each expert's down projection transposed.
  bool row_blocks = false;
  ExpertTensors experts;      // biases: fused experts only
  GateUpLayout glu = GateUpLayout::Halves; // how gate and up share the gate_up rows
  ExpertTensors shared;       // the shared expert, when shared_intermediate > 0
  std::string shared_gate;    // optional: sigmoid(x . w) scales the shared expert
  std::string global_scale;   // optional: a learned scalar on every routing weight
  std::string output_bias;    // optional: an unweighted [H] bias on the mixed output (JetMoE)
  std::string route_table;    // the [vocab, k] expert ids of hash-routed layers (LayerSpec::hash_routing)
};

// A router that is a small MLP (ZAYA), its tensors under the layer's <mlp>.gate: r = down_proj(x)
// (with its bias), plus the previous MoE layer's r times router_states_scale where there is one;
// the logits are router_mlp.out_proj(gelu(fc2(gelu(fc1(rms_norm(r)))))), fc1 and fc2 with
// biases, the norm router_mlp.norm with the model's eps.
struct RouterMlpSpec {
  int64_t hidden = 0; // 0: a linear router
  std::string module = "mlp.gate";
};

// Group-limited routing: `count` groups of experts, the `keep` best compete (count 0: none).
struct RouteGroupsSpec {
  int64_t count = 0, keep = 0;
  GroupScoring score = GroupScoring::Top2Sum;   // a group's score from its experts' selection scores
  DroppedGroupFill fill = DroppedGroupFill::NegInf; // the selection score of dropped groups' experts
};

struct MoeSpec {
  int64_t num_experts = 0, top_k = 0, intermediate = 0;
  int64_t zero_experts = 0;      // identity experts after the routed ones: the router scores E + Z
  int64_t null_experts = 0;      // after those, choices that skip the block (output zero): E + Z + N
  ExpertScoring score = ExpertScoring::Softmax;
  RouteGroupsSpec groups;
  bool renorm = false;
  double renorm_eps = 0.0;       // added to the sum when renormalising (LFM2-MoE: 1e-6)
  double scaling = 1.0;          // routed_scaling_factor
  double threshold = 0.0;        // sparsemixer scores: the relative gap that drops an expert
  bool bias_on_logits = false;   // the selection bias adds to the raw logits, not the scores
  double router_softcap = 0.0;   // the router logits soft-capped first, cap * tanh(l / cap) (Laguna); 0: none
  // Sink experts (Inkling's shared experts): the router scores E + sinks logits and every token
  // takes the sinks, weighted in one normalisation with its chosen experts.
  int64_t sinks = 0;
  FfnActivation act = FfnActivation::Silu; // ClampedSwiglu with limit and alpha (gated experts only)
  double limit = 0.0, alpha = 0.0;          // SoftcappedSwiglu: the gate's and the up input's caps
  double up_offset = 1.0;        // ClampedSwiglu's (up + offset): 1 for GPT-OSS, 0 for a clamped SwiGLU

  int64_t shared_intermediate = 0; // 0 = no shared expert
  // The shared expert's activation where it differs from the routed experts' (Aria's follows
  // hidden_act, its routed experts are always SiLU); none: act.
  std::optional<FfnActivation> shared_act;
  bool gated = true;               // false: experts and shared expert are down(act(up x)) (Nemotron-H)
  bool plus_dense = false;         // the layer's dense MLP runs too and adds in (Granite's shared_mlp)
  std::string output_norm;         // a layer-level RMSNorm over the block's output (AX-K1); empty: none
  bool scale_input = false;        // the routing weight scales the expert's input, not its output (Llama 4)
  RouterMlpSpec router_mlp;
  ExpertNaming names;
};

// Module and tensor names inside a decoder layer, where families differ from Llama's.
struct Names {
  std::string input_norm = "input_layernorm", post_attn_norm = "post_attention_layernorm";
  std::string pre_ff_norm = "pre_feedforward_layernorm", post_ff_norm = "post_feedforward_layernorm";
  std::string attn = "self_attn", o_proj = "o_proj", q_norm = "q_norm", k_norm = "k_norm";
  std::string q_proj = "q_proj", k_proj = "k_proj", v_proj = "v_proj"; // separate attention projections
  std::string r_proj = "r_proj";           // the relative features' projection (Inkling)
  std::string conv_weight = "conv1d.weight"; // a residual conv's weight under its module (Inkling)
  std::string o_bias;                      // the output projection's bias under attn; empty: <o_proj>.bias
  std::string sinks = "sinks";             // the attention's per-head sink logits
  std::string attn_gate;                   // the output gate's own [heads * head_dim, H] projection
                                           // (AFMoE's gate_proj, no bias); empty: it rides in q_proj
  std::string attn_gate_bias;              // a learned [heads] bias on the gate, one per head (Beam's
                                           // gate_bias); empty: none
  std::string qkv;                         // one fused q|k|v projection (Phi-3), if set
  std::string qkv_bias;                    // the fused projection's own bias tensor (GPT-NeoX's
                                           // query_key_value.bias); empty: q/k/v_proj biases
  // Norms inside the blocks (BitNet's sub-norms): over the attention output before o_proj, and
  // over the MLP's act(gate) * up before down_proj; empty: none.
  std::string attn_sub_norm, ffn_sub_norm;
  std::string mlp = "mlp", gate = "gate_proj", up = "up_proj", down = "down_proj";
  std::string gate_up;                     // one fused [gate | up] tensor (Phi-3, Granite), if set
  std::string final_norm = "norm";         // empty: none
  std::string linear_attn = "linear_attn"; // the gated delta net module
  std::string conv = "conv";               // LFM2's short-conv module
  std::string mamba = "mixer";             // the Mamba mixer module
  std::string embed = "embed_tokens";
  std::string embed_norm;                  // the embedding norm's module under the prefix; empty: <embed>.embed_norm
  // Learned [hidden] vectors scaling the stream (not the branch) before the mixer's and the
  // feed-forward block's residual adds (Doge's input_residual, post_attention_residual); empty: none.
  std::string mixer_residual_scale, mlp_residual_scale;
  std::string layer_scalar;                // a learned [1] scalar the layer's output is multiplied by
                                           // (Gemma 4's layer_scalar); empty: none
  // Affine maps on the residual stream (ZAYA), empty: none. The embedding rows become
  // (e + <prefix><embed_affine>_bias) * <prefix><embed_affine>_scale; each residual add after the
  // mixer (site affine_mixer) and the feed-forward block (affine_mlp) becomes
  // (f + hidden_states_bias) * hidden_states_scale + (x + residual_bias) * residual_scale, the
  // vectors under <layer>.<site>.
  std::string embed_affine, affine_mixer, affine_mlp;
  std::string layers = "layers";           // the decoder layers' module list
};

// Constant multipliers folded into the weights at load time (Falcon-H1's muP); 1 = none.
struct Multipliers {
  double attn_in = 1, attn_out = 1, key = 1; // attention input, output, and k after k_proj
  double ssm_in = 1, ssm_out = 1;             // Mamba2 input and output
  std::vector<double> ssm = {1, 1, 1, 1, 1};  // Mamba2 in_proj sections z, x, B, C, dt
  double mlp_gate = 1, mlp_down = 1;          // gate projection output, MLP output
};

// Zamba's shared attention blocks: hybrid layer n (its ordinal among the hybrid layers) runs
// block n % blocks on rms_norm([h | embeddings]), then its own `linear`, and adds the result to
// the input of its own Mamba mixer.
struct SharedBlockSpec {
  std::string module = "shared_transf"; // the block's module under the owning layer
  int64_t blocks = 1;                   // num_mem_blocks, round-robin over the hybrid layers
  bool tied = true;                     // shared (tie_word_embeddings); else one block per layer
  bool fused_gate_up = false;           // feed_forward.gate_up_proj rather than gate_proj/up_proj
  bool mlp_bias = false;                // gate_up/down biases (Zamba2's add_bias_linear)
  int64_t adapter_rank = 0;             // LoRA-style adapters per hybrid ordinal (Zamba2)
  bool attn_adapters = false, mlp_adapters = false;
  LayerKind mamba = LayerKind::Mamba1;  // the hybrid layer's own mixer
};

// Hierarchical recurrent stacks (HRM): two weight-shared stacks of `depth` decoder layers, the
// low one under <prefix><low>.layers.<i>. and the high one under <prefix><high>.layers.<i>., each
// ending in the model's (weightless) norm. Per token, for each of `outer` cycles the low stack
// runs `inner` times on z_L + z_H (z_L starting at the learned <prefix><low_init>), then the high
// stack once on z_H + z_L (z_H starting at the scaled embeddings); the head reads z_H. Every
// stack call has its own cache layers: ModelSpec::num_layers is depth * outer * (inner + 1), and
// layer n is call n / depth (the high stack's where call % (inner + 1) == inner), layer n % depth.
struct RecurrentStacksSpec {
  int64_t depth = 0, outer = 1, inner = 1; // depth 0: none
  std::string low = "L_module", high = "H_module", low_init = "z_L_init";
};

// Absolute position embeddings, added to the (scaled) token embeddings. A learned table of `rows`
// rows is <prefix><table>, read `offset` rows in; sinusoidal ones are computed (base 10000) at
// position + offset, the row of position `padding_row` zero.
struct PositionEmbeddingSpec {
  AbsolutePositions kind = AbsolutePositions::None;
  std::string table;
  int64_t rows = 0, offset = 0;
  std::optional<int64_t> padding_row;
  bool power = false; // sinusoidal frequencies 1 / base^(2i / D) (CTRL) rather than tensor2tensor's
};

// Per-layer inputs (Gemma 4's and Gemma 3n's per-layer embeddings): a second table
// <prefix><embed> [vocab, layers * dim] scaled by sqrt(dim) (rounded like the main scale), plus
// the scaled embeddings through <prefix><projection> [layers * dim, hidden] times hidden^-1/2, RMS
// normed per layer slice by <prefix><norm> [dim]; the sum times 2^-1/2. Layer l's slice gates a
// residual branch after the feed-forward block: x + <layer_norm>(<layer_projection>(
// act(<gate>(x)) * slice)), act the MLP's, the three under the decoder layer.
struct PerLayerInputSpec {
  int64_t dim = 0, vocab = 0; // dim 0: none
  std::string embed = "embed_tokens_per_layer", projection = "per_layer_model_projection",
              norm = "per_layer_projection_norm";
  std::string gate = "per_layer_input_gate", layer_projection = "per_layer_projection",
              layer_norm = "post_per_layer_input_norm";
  bool scales_rounded = false; // hidden^-1/2 and 2^-1/2 rounded to the weight dtype (Gemma 3n's buffers)
};

// AltUp (Gemma 3n): the residual stream is `streams` streams of hidden_size. The first starts as
// the embeddings, stream i as <prefix><projections>.<i-1> of them brought to their RMS
// (cbc.math.match_rms). Each layer predicts every stream from all of them with per-token
// coefficients (<altup>.prediction_coefs over the router's modalities, tanh(router(norm(x) / H))
// with <altup>.router_norm and <altup>.modality_router on the first stream), runs its blocks on
// the first prediction, and corrects every prediction by the innovation (the blocks' output minus
// the first prediction) times 1 + <altup>.correction_coefs of the modalities of the output. The
// per-layer input branch reads the first corrected stream times <altup>.correct_output_scale and
// adds to the other streams. At the end, stream i > 0 passes <prefix><unembed>.<i-1>, brought to
// the first stream's RMS, and the streams are averaged.
struct AltUpSpec {
  int64_t streams = 0; // 0: none
  bool correct_scale = true;
  std::string module = "altup", projections = "altup_projections", unembed = "altup_unembed_projections";
};

// Hyper-connections: the residual stream is `streams` streams of hidden_size, side by side in one
// [T, streams * hidden] row, the embeddings repeated at the start. Each block (mixer, feed-forward)
// reads the streams mixed by per-token coefficients, pre, from <site>fn over the streams'
// weightless RMS norm (eps norm_eps) with <site>base and <site>scale (cbc.stream.hc_weights), and
// its output returns to stream k times post_k, added to stream k (iHC) or, with `manifold`, to the
// streams mixed by the Sinkhorn-normalised comb (mHC). The head reads the streams mixed by the
// pre coefficients of <head>fn, <head>base, <head>scale before the final norm.
struct HyperSpec {
  int64_t streams = 0; // 0: one ordinary residual stream
  bool manifold = false;
  int64_t sinkhorn_iters = 0;
  double magnitude = 2.0, eps = 1e-6, post_eps = 0.0, norm_eps = 1e-6;
  // Checkpoint name prefixes of each layer's two sites and of the model's head.
  std::string attn, ffn, head;
  bool mean_head = false; // the head reads the streams' plain mean (GLM5-Next), no head weights
  // Qwen4-Exp's GatedResidual (rank > 0): per site u = the streams each (1 + w) RMS-normed
  // (<site>.hc_norm), the block reads mean_n(sigmoid(up silu(down u / N))_n * u_n) and its output
  // joins stream n times 2 sigmoid(inject u / N)_n; the head reads the mixer's gated mean.
  int64_t rank = 0;
};

// Qwen4-Exp's hashed n-gram embeddings (PLE), added to the streams before the mixer site of
// the layers with LayerSpec::ple >= 0: per token the rows of its 2- to ngram-grams in
// <ple>.ple_embedding.ngram_embedding (shard_* in the checkpoint, concatenated), a gate per
// stream from its normed key and query (sign-sqrt), the gated value plus silu of a depthwise
// conv dilated by ngram over its normed copy.
struct PleSpec {
  int64_t ngram = 0, heads_per_ngram = 0, dim = 0, conv_kernel = 0, eos = 0;
  int64_t shards = 1; // split_ngram_parts: the checkpoint's row chunks of each table
  // Per PLE layer: the hash multipliers (ngram of them), the heads' primes and the table's rows.
  std::vector<std::vector<int64_t>> multipliers, primes;
  std::vector<int64_t> table_rows;
};

// LAuReL (Gemma 3n): a low-rank residual on the mixer's normed input h, h + <norm>(<right>(<left>(h))),
// added to the mixer's residual sum, the two averaged as (x + mixer + laurel) / sqrt(2).
struct LaurelSpec {
  int64_t rank = 0; // 0: none
  std::string left = "laurel.linear_left", right = "laurel.linear_right", norm = "laurel.post_laurel_norm";
};

struct ModelSpec {
  std::string model_type;         // as written in config.json (text part for multimodal)
  // The top-level config.json keys parsing looked at (present or not): the runtime refuses a
  // checkpoint whose config.json disagrees with the compiled one on any of them.
  std::vector<std::string> config_keys;
  std::string outer_model_type;   // the multimodal wrapper's model_type, if any
  // Requests may give embeddings for prompt rows (a multimodal wrapper's image or audio
  // features): the step replaces those rows of the token embeddings (cbc.rows.inject).
  bool injects_embeddings = false;
  int64_t injected_token_id = -1; // the id the step reads at those rows (-1: the request's own)
  std::string dtype = "bfloat16"; // torch_dtype / dtype
  int64_t vocab_size = 0, hidden_size = 0, num_layers = 0, max_positions = 0;
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  double norm_eps = 1e-6;
  std::optional<double> layer_norm_eps; // the decoder layers' norms' own eps (JetMoE); none: norm_eps
  double norm_offset = 0.0;     // 1 for zero-centred (1 + w) norms
  NormKind norm_kind = NormKind::Rms;
  bool norm_weight = true, norm_bias = false; // the norms' affine parameters (RMS norms: a weight or none)
  bool sandwich_norms = false;  // Gemma: post-attention and post-feedforward norms
  PositionEmbeddingSpec positions;
  // Embeddings narrower than the model (OPT-350m's word_embed_proj_dim): the table is
  // [vocab, embed_dim], projected up by <prefix><embed_proj> before the positions are added and
  // down by <prefix><head_proj> after the final norm (both without biases). 0: hidden_size.
  int64_t embed_dim = 0;
  std::string embed_proj, head_proj;
  // The attention and MLP projections are stored [in, out] (GPT-2's Conv1D), transposed at load.
  bool linears_transposed = false;
  double embed_scale = 1.0;
  bool embed_scale_rounded = false; // the scale is a tensor of the weight dtype (Gemma), not a float
  double residual_scale = 1.0;  // branch outputs are scaled before each residual add (Granite)
  double logits_scale = 1.0;    // logits are multiplied by this (Granite: 1 / logits_scaling)
  bool tie_word_embeddings = false;
  double final_softcap = 0.0;
  // LeRoPE (Mistral Large 4): a checkpoint tensor of rotary_dim / 2 learned log-scales, every
  // RoPE frequency times exp(scale); empty: none.
  std::string rope_log_scale;
  // Each layer is two latent-attention sublayers with their own MLPs (mlps.0, mlps.1) and a
  // shortcut MoE (LongCat-Flash); the cache has two layers per decoder layer.
  bool dual_sublayers = false;
  // The embedding and the head hold this many rows, padded beyond the vocab_size the logits keep
  // (Inkling's unpadded_vocab_size slices them); 0: vocab_size rows.
  int64_t padded_vocab = 0;
  bool embed_norm = false;        // the embedding rows pass one of the model's norms, Names::embed_norm (Inkling, BLOOM)
  // The mixer's and the feed-forward block's outputs each pass a residual depthwise conv of this
  // kernel, h + conv(h), before the residual add (attn_sconv, mlp_sconv); 0: none.
  int64_t branch_conv_kernel = 0;
  // Block attention residuals (Inkling 2) replace the residual stream: each layer's attention
  // input (<prefix>attn_res.attn_queries.<l - 1>, three queries on full layers), its MLP input
  // (attn_res.mlp_queries.<l>) and the final norm's input (attn_res.output_query) are per-token
  // attention (cbc.stream.attend) over the embedding, the finished blocks' sums and the running
  // sum of the current block; a layer whose index is a multiple of attn_res_block starts a block,
  // its attention output restarting the sum. 0: none.
  int64_t attn_res_block = 0;
  NormGateSpec norm_gate;
  PerLayerInputSpec per_layer_inputs;
  AltUpSpec altup;
  HyperSpec hyper;
  PleSpec ple;
  LaurelSpec laurel;
  AttentionSpec attn;
  MlaSpec mla;
  SharedKvSpec shared_kv;
  // Latent-attention layers with their own MLA geometry (Dots3's sliding layers: other head
  // counts, latent and nope widths, scales, no indexer); the others use `mla`. Their head count
  // and softmax scale are the LayerSpec's (num_heads, scale_factor).
  std::map<int64_t, MlaSpec> layer_mla;
  MlpSpec mlp;
  MoeSpec moe;
  GdnSpec gdn;
  LightningSpec lightning;
  RwkvSpec rwkv;
  GriffinSpec griffin;
  XlstmSpec xlstm;
  KdaSpec kda;
  ShortConvSpec short_conv;
  Mamba2Spec mamba2;
  Mamba1Spec mamba1;
  Multipliers mup;
  SharedBlockSpec shared;
  RecurrentStacksSpec stacks;
  Names names;
  std::vector<LayerSpec> layers;
  std::string prefix = "model.";      // HF prefix of the decoder's tensors
  std::string lm_head = "lm_head.weight";
  std::string lm_head_bias;           // the head's bias (ERNIE-4.5-MoE's use_bias); empty: none
  // A transform before the head (ModernBERT-decoder's prediction head): the final norm's output
  // through <head_transform>.dense (hidden x hidden, with a bias when head_transform_bias), the
  // activation, and the model's norm <head_transform>.norm. Empty: none.
  std::string head_transform;
  bool head_transform_bias = false;
  FfnActivation head_transform_act = FfnActivation::Gelu;
  Quantization quantization = Quantization::None; // the honoured quantisation
  // Quantization::Fp8: the [rows, cols] block of a weight that one weight_scale_inv value scales.
  std::vector<int64_t> fp8_block;
  // Other spellings checkpoints use: a tensor missing under a name containing `first` is
  // looked up with `first` replaced by `second`.
  std::vector<std::pair<std::string, std::string>> weight_aliases;
};

// Parses config.json text into a validated spec. Throws ConfigError.
ModelSpec parseConfig(const std::string &jsonText);

// The model_types the front end accepts.
const std::vector<std::string> &supportedModelTypes();

} // namespace cbc::hf

#endif
