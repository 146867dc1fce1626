"""Per-request-state families: gated DeltaNet, short-conv, KDA and lightning-attention hybrids, RWKV-4,
RecurrentGemma, xLSTM and Qwen4-Exp (gated DeltaNet + QSA + PLE, pending).

Each FAMILIES entry: a seed, a config builder, whether the norms are zero-centred and the features
the fixture exercises (make_fixtures.py reads them)."""

from oracle_common import *  # noqa: F401,F403

# --------------------------------------------------------------------------------------
# Per-request-state families (linear attention / short conv hybrids). Four layers each, with
# the recurrent layers on both sides of the attention layer, so a state carried wrongly through
# an attention layer shows up. Prompts are longer (PROMPT_LENGTHS_STATE) so that the 80-token
# prompt crosses the 64-token chunk of transformers' torch chunked gated-delta kernel.
# --------------------------------------------------------------------------------------

# Seeds: the best of each family's block by the same criteria as above, but with the floor at 0.01
# (margins and router gaps; more positions and routed layers make large gaps rare) and >= 6
# distinct tokens: qwen3_next 3000-3299, qwen3_5_text 3300-3399, qwen3_5_moe_text 3400-3699,
# olmo_hybrid 3700-3799, lfm2 3800-3899, lfm2_moe 3900-4499.

# GDN dims: 2 key heads, 4 value heads (GVA r=2: value head h reads q/k head h // 2).
GDN_DIMS = dict(
    linear_conv_kernel_dim=4,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=16,
    linear_value_head_dim=16,
)


def _cfg_qwen3_next():
    from transformers import Qwen3NextConfig

    return Qwen3NextConfig(
        **COMMON,
        **GDN_DIMS,
        num_hidden_layers=4,
        full_attention_interval=3,  # legacy key -> layer_types [linear, linear, full, linear]
        head_dim=32,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=48,
        norm_topk_prob=True,
        decoder_sparse_step=1,
        mlp_only_layers=[1],  # layers 0, 2, 3 MoE; 1 dense
    )


def _cfg_qwen3_5_text():
    from transformers import Qwen3_5TextConfig

    return Qwen3_5TextConfig(
        **COMMON,
        **GDN_DIMS,
        num_hidden_layers=4,
        full_attention_interval=3,
        head_dim=32,
        rms_norm_eps=1e-6,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": [2, 1, 1],  # sums to rotary_dim/2 = 4, as [11, 11, 10] does for 64
            "mrope_interleaved": True,
        },
    )


def _cfg_qwen3_5_moe_text():
    from transformers import Qwen3_5MoeTextConfig

    common = {k: v for k, v in COMMON.items() if k != "intermediate_size"}  # every layer is MoE
    return Qwen3_5MoeTextConfig(
        **common,
        **GDN_DIMS,
        num_hidden_layers=4,
        full_attention_interval=3,
        head_dim=32,
        rms_norm_eps=1e-6,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": [2, 1, 1],
            "mrope_interleaved": True,
        },
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=48,
    )


def _cfg_olmo_hybrid():
    from transformers import OlmoHybridConfig

    return OlmoHybridConfig(
        **COMMON,
        num_hidden_layers=4,
        layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
        rms_norm_eps=1e-6,
        rope_theta=None,  # NoPE, as the released checkpoint (OLMo-core writes "rope_theta": null)
        linear_conv_kernel_dim=4,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=16,
        linear_value_head_dim=32,  # dv = 2 dk as in the release; dk != dv catches a transposed state
        linear_allow_neg_eigval=True,
    )


def _cfg_lfm2():
    from transformers import Lfm2Config

    return Lfm2Config(
        **{**COMMON, "intermediate_size": 200},  # auto-adjust: int(2*200/3)=133 -> round up to 32k -> 160
        num_hidden_layers=4,
        full_attn_idxs=[2],  # legacy key -> layer_types [conv, conv, full_attention, conv]
        conv_L_cache=3,
        conv_bias=False,
        norm_eps=1e-5,
        block_auto_adjust_ff_dim=True,
        block_ffn_dim_multiplier=1.0,
        block_multiple_of=32,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )


def _cfg_lfm2_moe():
    from transformers import Lfm2MoeConfig

    return Lfm2MoeConfig(
        **COMMON,
        num_hidden_layers=4,
        layer_types=["conv", "conv", "full_attention", "conv"],  # required: lfm2_moe has no default
        conv_L_cache=3,
        conv_bias=False,
        norm_eps=1e-5,
        num_dense_layers=1,  # layer 0 dense (intermediate_size, no auto-adjust), 1..3 MoE
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        use_expert_bias=True,
        routed_scaling_factor=1.5,  # released 1.0; != 1 so a missing multiply shows
        norm_topk_prob=True,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )


def _cfg_lfm3():
    from transformers import Lfm3Config

    return Lfm3Config(
        **COMMON,  # intermediate 96 (no auto-adjust in lfm3)
        head_dim=16,
        num_hidden_layers=3,
        # all three kinds in 3 layers (the class default needs 5: [conv, conv, full, conv, sliding]);
        # 4+ layers of this width would not fit the 300 kB budget
        layer_types=["conv", "sliding_attention", "full_attention"],
        sliding_window=8,  # the 23- and 80-token prompts cross it
        conv_L_cache=7,  # class default (the hub causal_conv1d kernels stop at 4; lfm3 runs torch)
        conv_bias=False,
        norm_eps=1e-5,
        use_sandwich_norm=True,
        use_attention_gate=True,
        tie_word_embeddings=True,
        rope_parameters=None,  # class default: sliding {default, 1e4}, full {proportional, 1e6, partial 0.5}
    )


# Init rules for the state families (regex on the in-memory parameter name -> mean, std), checked
# before the shared table. A_log ~ N(-3, 1) puts the typical per-token decay exp(g) near 0.97
# (g = -exp(A_log) * softplus(a + dt_bias)), so the state of many heads survives the 64-token chunk
# boundary, while the tail of the distribution forgets within a few tokens.
# Conv taps at std 0.5 make the short conv an O(1) map, so silu and tap order matter.
GDN_INIT_RULES = [
    (r"\.A_log$", -3.0, 1.0),
    (r"\.dt_bias$", 0.0, 0.5),
    (r"conv1d\.weight$", 0.0, 0.5),
]
SEED_LFM3 = 24806  # lfm3: best of 24800-25199 by the criteria above with the floor at 0.018 (margin 0.0725, >= 13 distinct)
LFM2_INIT_RULES = [
    (r"\.conv\.conv\.weight$", 0.0, 0.5),
    (r"feed_forward\.gate\.weight$", 0.0, 0.3),  # router, as BASE_STD["router"]
]


# --------------------------------------------------------------------------------------
# KDA hybrids (kimi_linear, bailing_hybrid; SEMANTICS_KDA.md): Kimi delta attention layers on both sides of one
# MLA layer, [kda, kda, full, kda], DSMoE routers (12 experts in 4 groups of 3, top-3, one shared expert) on
# layers 1-3. KDA: 4 heads of 16, short conv K=4. Prompts are the state families' (5, 23, 80): the 80-token
# prompt runs transformers' chunked KDA over two 64-row chunks. kimi_linear: softplus gate, low-rank f_a/f_b
# and g_a/g_b, A_log [1, 1, H, 1], NoPE MLA (the shared rope part of the key, 8 wide, stays unrotated).
# bailing_hybrid: the bounded gate (-5 * sigmoid(exp(A_log) * x)), full-rank f_proj/g_proj, MLA with interleaved
# RoPE over 16 dims and a sigmoid gate per head. Its config class takes the KDA head_dim from head_dim, which it
# then overwrites (and saves) as qk_rope_head_dim; the two are equal (16) so the saved config reloads the same
# model.
# --------------------------------------------------------------------------------------

KDA_MOE = dict(
    moe_intermediate_size=8,
    n_group=4,  # groups of 3
    topk_group=2,
    num_experts_per_tok=3,
    n_shared_experts=1,
    first_k_dense_replace=1,
    norm_topk_prob=True,
)


def _cfg_kimi_linear():
    from transformers import KimiLinearConfig

    return KimiLinearConfig(
        **{**MLA_COMMON, "num_key_value_heads": 4},
        **{**KDA_MOE, "first_k_dense_replace": 2},  # layers 0-1 dense, 2-3 MoE: fewer routed layers, wider router gaps
        num_hidden_layers=4,
        num_local_experts=12,
        routed_scaling_factor=2.446,
        kv_lora_rank=32,
        q_lora_rank=None,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=12,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        # the checkpoint's form: 1-indexed lists
        linear_attn_config={"head_dim": 16, "num_heads": 2, "short_conv_kernel_size": 4,
                            "full_attn_layers": [3], "kda_layers": [1, 2, 4]},
    )


def _cfg_bailing_hybrid():
    from transformers import BailingHybridConfig

    return BailingHybridConfig(
        **{**MLA_COMMON, "num_key_value_heads": 4},
        **KDA_MOE,
        num_hidden_layers=4,
        layer_group_size=3,  # full iff (i + 1) % 3 == 0: [kda, kda, full, kda]
        num_local_experts=12,
        routed_scaling_factor=2.5,
        kv_lora_rank=32,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        head_dim=8,  # the KDA head_dim, = qk_rope_head_dim (see above)
        v_head_dim=12,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        kda_safe_gate=True,
        kda_lower_bound=-5.0,
        num_mtp_layers=0,
        tie_word_embeddings=False,
    )


# KDA init: the conv taps as GDN's. kimi_linear's softplus gate with A_log ~ N(-3, 1) and dt_bias ~ N(0, 0.5) decays
# each channel by ~0.97 a token (the state crosses the 64-row chunk); bailing's bounded gate -5 sigmoid(exp(A_log) x)
# with A_log ~ N(0.5, 0.5) and dt_bias ~ N(-2, 1) puts exp(A_log) x near -3.3 +- 2.3, so channels range from
# nearly keeping their state (g ~ -0.02) to forgetting within a few tokens (g ~ -1.4).
KDA_INIT_RULES = {
    "kimi_linear": [(r"\.A_log$", -3.0, 1.0), (r"\.dt_bias$", 0.0, 0.5), (r"conv1d\.weight$", 0.0, 0.5)],
    "bailing_hybrid": [(r"\.A_log$", 0.5, 0.5), (r"\.dt_bias$", -2.0, 1.0), (r"conv1d\.weight$", 0.0, 0.5)],
}
KDA_FAMILY = dict(
    zero_centred_norms=False,
    prompt_lengths=PROMPT_LENGTHS_STATE,
    state=True,
    atol=5e-4,
    buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
)


# --------------------------------------------------------------------------------------
# MiniMax-Text-01 (minimax; SEMANTICS_LIGHTNING.md). 4 layers, the default schedule written out:
# [full, linear, full, linear] (full on the even layers), so a lightning state is carried past an
# attention layer and the last layer's decay (factor ~1e-5) is nearly none. block_size 16 (released 256):
# the prompts of PROMPT_LENGTHS_STATE (5, 23, 80) prefill 1, 2 and 5 blocks in transformers' block form,
# and the saved decay buffers (diagonal_decay [1, H, B, B]) stay small. The residual mixing factors are
# all different from 1 and from each other, so a swapped alpha/beta or a full/linear mix-up shows.
# Seed: of 11000-11301 (floor 0.01 for margins and router gaps, >= 6 distinct tokens) 11030 scores best (margin
# 0.0168, router gap 0.0137) but its choices flip once router logits are rounded to bf16; 11037 (margin 0.0560,
# router gap 0.0129) does not, and is used.
# --------------------------------------------------------------------------------------

MINIMAX_BLOCK = 16


def _cfg_minimax():
    from transformers import MiniMaxConfig

    common = {k: v for k, v in COMMON.items() if k != "intermediate_size"}
    return MiniMaxConfig(
        **common,
        intermediate_size=16,  # per expert
        head_dim=16,
        num_hidden_layers=4,  # layer_types default [full, linear, full, linear], written out
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        num_local_experts=4,
        num_experts_per_tok=2,
        block_size=MINIMAX_BLOCK,
        full_attn_alpha_factor=0.75,
        full_attn_beta_factor=1.25,
        linear_attn_alpha_factor=1.5,
        linear_attn_beta_factor=0.5,
        mlp_alpha_factor=0.875,
        mlp_beta_factor=1.125,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )


MINIMAX_INIT_RULES = [(r"mlp\.experts\.down_proj$", 0.0, 0.25)]

# --------------------------------------------------------------------------------------
# RWKV-4 (rwkv, RwkvForCausalLM; SEMANTICS_RWKV.md). No attention and no positions: every block is a time mix
# (token shift + the WKV recurrence, per-channel state num/den/max) and a channel mix (token shift + squared-relu
# MLP gated by a sigmoid receptance). 4 blocks with rescale_every 2, so transformers' inference-time rescaling
# (block b's attention.output / feed_forward.value weights divided by 2^(b // 2), the hidden state halved after
# blocks 1 and 3) happens twice. 48 wide (attention_hidden_size = hidden; transformers' cached path needs them
# equal, its state tensors are [batch, hidden, layers]) with intermediate 96: at 64 x 128 the checkpoint alone
# would be 366 kB, at 48 x 96 the whole directory stays under 300 kB. Prompts as the state families (5, 23, 80).
# Init: time_decay ~ N(-1, 1.5) puts the per-token decay exp(-exp(time_decay)) between ~1e-4 (forgets at once) and
# ~0.99 (keeps most of the 96 positions); time_first ~ N(0, 1); the time_mix_* interpolation weights U(0, 1); every
# linear at 1/sqrt(fan_in); LayerNorms (pre_ln, ln1, ln2, ln_out) N(1, 0.1) with biases N(0, 0.05); embeddings and
# head N(0, 0.25) as BASE_STD["embed"].
# Seed: 27134, the best of 27000-27199 by the state families' criteria (floor 0.01, >= 6 distinct tokens;
# 88 of the 200 pass): min top-1/top-2 margin 0.0834, >= 14 distinct tokens per prompt.
# --------------------------------------------------------------------------------------

RWKV_HIDDEN = 48
RWKV_INTERMEDIATE = 96


def _cfg_rwkv():
    from transformers import RwkvConfig

    return RwkvConfig(
        vocab_size=VOCAB,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        hidden_size=RWKV_HIDDEN,
        attention_hidden_size=RWKV_HIDDEN,
        intermediate_size=RWKV_INTERMEDIATE,
        num_hidden_layers=4,
        context_length=256,
        layer_norm_epsilon=1e-5,
        rescale_every=2,
        tie_word_embeddings=False,
    )


RWKV_INIT_RULES = [
    (r"\.time_decay$", -1.0, 1.5),
    (r"\.time_first$", 0.0, 1.0),
    (r"\.time_mix_(key|value|receptance)$", "uniform", 0.0, 1.0),
    (r"\.(pre_ln|ln1|ln2|ln_out)\.weight$", 1.0, 0.1),
    (r"feed_forward\.value\.weight$", 0.0, round(RWKV_INTERMEDIATE**-0.5, 4)),
    (r"(attention\.(key|value|receptance|output)|feed_forward\.(key|receptance))\.weight$", 0.0, round(RWKV_HIDDEN**-0.5, 4)),
    (r"(^|\.)embeddings\.weight$", 0.0, 0.25),
    (r"^head\.weight$", 0.0, 0.25),
]

# --------------------------------------------------------------------------------------
# RecurrentGemma (recurrent_gemma, RecurrentGemmaForCausalLM; Griffin): 4 layers from block_types [recurrent,
# recurrent, attention] repeated -> [recurrent, recurrent, attention, recurrent], so an RG-LRU state is carried past
# the attention layer. Recurrent block: linear_y -> gelu_tanh; linear_x -> depthwise causal conv (width 4, bias) ->
# RG-LRU (block-diagonal input / recurrent gates, 4 blocks of 16); out = linear_out(lru * y). Attention: MQA (4 query
# heads, 1 kv head, head_dim 16), partial rotate-half RoPE over the first 8 dims, local window 16, so the 23- and
# 80-token prompts cross it. lru_width = hidden_size: transformers sizes the decode conv state by hidden_size.
# Init: recurrent_param ~ N(RG_PARAM_MEAN, 1.5) spreads a = exp(-8 sigmoid(gate) softplus(param)): per layer the 5th
# percentile is 0.12-0.37, the median ~0.91, the 99th 0.996-0.999 (checks.recurrent_gemma.a_spread); the gate weights at 1/sqrt(block width 16) with biases N(0, 0.5); conv taps
# 1/sqrt(width) = 0.5 with biases N(0, 0.1); the linears at 1/sqrt(64) with biases N(0, 0.05) (the shared table);
# zero-centred (1 + w) RMSNorms N(0, 0.1); tied embeddings N(0, RG_EMBED_STD). Two departures, both for the tied
# head: the current token's embedding enters the residual stream x sqrt(64) = 8 and dominates it, so with (1 + w) ~ 1
# on final_norm its own logit wins (every seed repeated one token); final_norm's w ~ N(-1, 1) makes the gains
# (1 + w) ~ N(0, 1), and the residual writers (linear_out, o_proj, down_proj) at RG_OUT_STD make each block's output
# as large as the scaled embedding (8 x 0.35 = 2.8 RMS). intermediate_size 96 (MLP 48 wide): at 128 the directory
# is 318 kB.
# Seed: 28319, the best of 28000-28399 by the state families' criteria (floor 0.01, >= 6 distinct tokens; 177 of the
# 400 pass): min top-1/top-2 margin 0.134, >= 6 distinct tokens per prompt (28126: 0.106 with >= 12).
# --------------------------------------------------------------------------------------

RG_PARAM_MEAN = -3.5
RG_EMBED_STD = 0.35
RG_OUT_STD = 0.35


def _cfg_recurrent_gemma():
    from transformers import RecurrentGemmaConfig

    return RecurrentGemmaConfig(
        vocab_size=VOCAB,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        hidden_size=64,
        lru_width=64,  # = hidden_size (see above)
        num_attention_heads=4,  # head_dim 64 // 4 = 16, also the RG-LRU's gate blocks (4 of 16)
        num_key_value_heads=1,  # MQA as released (the class default is num_attention_heads)
        intermediate_size=96,  # the MLP is intermediate_size // 2 = 48 wide (128 would put the directory at 318 kB)
        num_hidden_layers=4,
        block_types=["recurrent", "recurrent", "attention"],
        attention_window_size=16,
        conv1d_width=4,
        logits_soft_cap=30.0,
        rms_norm_eps=1e-6,
        attention_bias=False,
        tie_word_embeddings=True,
        hidden_activation="gelu_pytorch_tanh",
    )


RG_INIT_RULES = [
    (r"^model\.final_norm\.weight$", -1.0, 1.0),
    (r"\.(linear_out|o_proj|down_proj)\.weight$", 0.0, RG_OUT_STD),
    (r"rg_lru\.recurrent_param$", RG_PARAM_MEAN, 1.5),
    (r"rg_lru\.(input|recurrent)_gate_weight$", 0.0, 0.25),
    (r"rg_lru\.(input|recurrent)_gate_bias$", 0.0, 0.5),
    (r"conv_1d\.weight$", 0.0, 0.5),
    (r"conv_1d\.bias$", 0.0, 0.1),
]

# --------------------------------------------------------------------------------------
# xLSTM (xlstm, xLSTMForCausalLM; SEMANTICS_RECURRENT.md part B). No attention, no positions: every block is an
# mLSTM block of the xLSTM-Large (xLSTM-7B) layout, x += mlstm_layer(norm_mlstm(x)); x += ffn(norm_ffn(x)), with the
# mLSTM cell's per-head matrix memory C [dqk, dv], normaliser n [dqk] and stabiliser m as the per-request state.
# 32 wide, 3 blocks, 4 heads; qk_dim_factor 2.0 and v_dim_factor 4.0 make the layer's int(H * f) dims (64 and 128)
# equal to the config's rounded-up-to-64 qk_dim / v_dim that size xLSTMCache (any other choice breaks every cached
# forward, SEMANTICS_RECURRENT.md B5.1), so dqk 16 != dv 32 (a transposed C shows). FFN width round_up(32 * 2.667,
# 64) = 128. chunk_size 8: the 23- and 80-token prefills run 16 / 80 tokens through the chunkwise kernel and the
# rest (7 / 0) through the recurrent loop, the 5-token one only the loop; decode is the 1-step kernel.
# Init (SEMANTICS_RECURRENT.md C, "xLSTM init"; transformers' own init makes the input gate a constant -8.74 and the
# normaliser's exp(-m) floor win every step): igate/fgate weights N(0, 0.3^2), igate bias N(-1, 2^2), fgate bias
# N(2, 1); the RMSNorm / multi-head-norm weights (norm_mlstm, norm_ffn, multihead_norm, out_norm) N(1, 0.2); the
# other linears at 1/sqrt(fan_in) (32 for q, k, v, ogate_preact, proj_up*; 128 for out_proj, proj_down); embeddings
# and lm_head (untied) N(0, 0.25).
# Seed: 28050, the best of 28000-28199 by the state families' criteria (floor 0.01, >= 6 distinct tokens; 82 of the
# 200 pass): min top-1/top-2 margin 0.0593, >= 13 distinct tokens per prompt (28001: 0.0525 with >= 14).
# --------------------------------------------------------------------------------------

XLSTM_HIDDEN = 32
XLSTM_INNER = 128  # v_dim = int(32 * 4.0) and the FFN width round_up(32 * 2.667, 64): out_proj / proj_down fan-in


def _cfg_xlstm():
    from transformers import xLSTMConfig

    return xLSTMConfig(
        vocab_size=VOCAB,
        bos_token_id=0,
        eos_token_id=2,
        pad_token_id=1,
        hidden_size=XLSTM_HIDDEN,  # embedding_dim follows (xLSTMConfig.__post_init__)
        num_hidden_layers=3,  # num_blocks follows
        num_heads=4,
        qk_dim_factor=2.0,  # qk_dim int(32 * 2.0) = 64 = round_up(64, 64): dqk 16
        v_dim_factor=4.0,  # v_dim int(32 * 4.0) = 128 = round_up(128, 64): dv 32
        ffn_proj_factor=2.667,
        ffn_round_up_to_multiple_of=64,  # FFN width 128
        chunk_size=8,
        mode="inference",
        weight_mode="single",  # "fused" cannot be constructed in 5.23 (SEMANTICS_RECURRENT.md B1)
        use_bias=False,
        gate_soft_cap=15.0,
        output_logit_soft_cap=30.0,
        norm_eps=1e-6,
        eps=1e-6,
        tie_word_embeddings=False,
    )


XLSTM_INIT_RULES = [
    (r"mlstm_layer\.(igate|fgate)_preact\.weight$", 0.0, 0.3),
    (r"mlstm_layer\.igate_preact\.bias$", -1.0, 2.0),
    (r"mlstm_layer\.fgate_preact\.bias$", 2.0, 1.0),
    (r"(norm_mlstm|norm_ffn|multihead_norm|out_norm)\.weight$", 1.0, 0.2),
    (r"(mlstm_layer\.out_proj|ffn\.proj_down)\.weight$", 0.0, round(XLSTM_INNER**-0.5, 4)),
    (r"(mlstm_layer\.(q|k|v|ogate_preact)|ffn\.proj_up(_gate)?)\.weight$", 0.0, round(XLSTM_HIDDEN**-0.5, 4)),
    (r"^backbone\.embeddings\.weight$", 0.0, 0.25),
    (r"^lm_head\.weight$", 0.0, 0.25),
]

# --------------------------------------------------------------------------------------
# Qwen4-Exp (qwen4_exp_text, Qwen4ExpForCausalLM; SEMANTICS_QWEN4_EXP.md): the text decoder of qwen4_exp, which
# AutoModelForCausalLM builds from either config. 3 layers [GDN + PLE, gated attention + QSA, GDN + PLE], so a GDN
# state is carried past the attention layer and both PLE layers (1-indexed ple_layer_ids [1, 3]) hash with their own
# multipliers and primes (PLE layer index 0 and 1). Every layer is MoE (4 experts top-2 of width 8, softmax,
# renormalised, a sigmoid-gated shared expert of 8). GatedResidual with 3 streams and rank 4. Attention: 4 q / 2 kv
# heads of 16, partial rotary 0.5 (8 dims) with mrope_section [2, 1, 1] (text-only: plain RoPE). QSA: 16 indexer
# heads of 16 (fewer tie at ReLU zeros, families_5_23.md section 4.2; 16 > the 8 rotary dims, so the indexer heads
# have a pass-through part), blocks of 4, budget 8 = 2 blocks per query plus a raw tail of up to 3 keys; the 23- and
# 80-token prompts (+15 generated) have up to 23 complete blocks. PLE: ngram 3 (2-grams and 3-grams), 2 heads per
# n-gram, 16-wide (4 per head), conv kernel 4 with dilation 3 (a 9-step state); ngram_vocab_size_base 61 (itself
# prime: the first head's prime is 61, not 67), tables padded to 32 rows (288 and 352 rows), split_ngram_parts 4,
# seed 4321 (not the default 1234, so a reader must take it from the config); EOS (2) inside the prompts
# (QWEN4_EXP_PROMPT_EOS). GDN as the qwen3_5 fixtures (GVA 2 key / 4 value heads of 16, conv 4) with
# output_gate_type "sigmoid" (the gated norm's gate; the default, hidden_act, would be silu). rms_norm_eps 1e-5.
# Not in the default config and so required here: every QSA field (transformers' attention layer cannot be built
# without them), layer_types (the default puts attention at (i + 1) % 4 == 0, none in 3 layers), a small
# ngram_vocab_size_base (the default 20M makes 16 tables of ~20M rows), a partial rotary factor <= the indexer head dim.
# Size: 395 kB with rank 4 and 8-wide experts (rank 8 came out at 416 kB).
# --------------------------------------------------------------------------------------


def _cfg_qwen4_exp_text():
    from transformers import Qwen4ExpTextConfig

    common = {k: v for k, v in COMMON.items() if k != "intermediate_size"}  # every layer is MoE
    return Qwen4ExpTextConfig(
        **common,
        head_dim=16,
        num_hidden_layers=3,
        layer_types=["linear_attention", "indexed_attention", "linear_attention"],
        **GDN_DIMS,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=8,
        shared_expert_intermediate_size=8,
        norm_topk_prob=True,
        hc_count=3,
        hc_lowrank=4,
        ple_layer_ids=[1, 3],
        ple_embed_dim=16,
        ple_conv_kernel_size=4,
        ngram_size=3,
        heads_per_ngram=2,
        ngram_vocab_size_base=61,
        make_ngram_vocab_size_divisible_by=32,
        seed=4321,  # the hash seed (config key), not the fixture's draw seed
        split_ngram_parts=4,
        indexer_n_heads=16,
        indexer_kv_heads=1,
        indexer_head_dim=16,
        indexer_budget=8,
        indexer_compress_ratio=4,
        output_gate_type="sigmoid",
        rms_norm_eps=1e-5,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5,
            "mrope_section": [2, 1, 1],
            "mrope_interleaved": True,
        },
        tie_word_embeddings=False,
    )


# Init (the shared table otherwise: weights 0.125, zero-centred (1 + w) norms N(0, 0.1), router 0.3, shared-expert
# gate 0.2). What transformers' _init_weights or a generic draw would hide, and the draw instead:
# - GatedResidual: nn.Linear's N(0, 0.02) leaves the input gate at sigmoid(~0) = 0.5 everywhere and inject at
#   2 sigmoid(~0) = 1 (measured on this config: 0.497-0.503 and 0.84-1.20, a plain residual) -> down N(0, 0.2) (silu
#   of O(1)), up N(0, 1), inject N(0, 0.25): over the fixture run the input gates span 0.10-0.93 and inject 0.2-1.8
#   (5th-95th percentiles, all sites);
# - PLE: _init_weights zeroes the dilated conv (its term is silu(0) = 0) -> N(0, 0.5) like the GDN conv; n-gram
#   tables N(0, 0.5), key/value projections 1/sqrt(16): the stream gates sigmoid(sign sqrt) span 0.15-0.86;
# - GDN: A_log N(-3, 1), dt_bias N(0, 0.5), conv N(0, 0.5), the gated norm's plain weight mean 1 (GDN_INIT_RULES,
#   norm_mean): decay exp(g) 0.72-0.99 a token (5th-95th percentile);
# - embedding N(0, 2^-7) (hy_v4's / glm5_next's): the streams start as 3 copies of it, so layer 0's PLE query norm
#   sees mean squares near rms_norm_eps (every norm at 1e-6 moves the rows by 0.64);
# - the routed / shared experts' down projections 1/sqrt(8); lm_head N(0, 1) (the final mixer's output is a mean of
#   gated unit-RMS streams, ~0.5 RMS) and routers N(0, 0.6) (std below) widen the margins and router gaps.
QWEN4_EXP_INIT_RULES = [
    (r"embed_tokens\.weight$", 0.0, 2**-7),
    (r"\.A_log$", -3.0, 1.0),
    (r"\.dt_bias$", 0.0, 0.5),
    (r"conv1d\.weight$", 0.0, 0.5),
    (r"input_mix_weight_down\.weight$", 0.0, 0.2),
    (r"input_mix_weight_up\.weight$", 0.0, 1.0),
    (r"block_inject_weight\.weight$", 0.0, 0.25),
    (r"ngram_embedding\.weight$", 0.0, 0.5),
    (r"ple\.(key|value)_proj\.weight$", 0.0, 0.25),
    (r"mlp\.experts\.down_proj$", 0.0, 0.35),
    (r"mlp\.shared_expert\.down_proj\.weight$", 0.0, 0.35),
    (r"^lm_head\.weight$", 0.0, 1.0),
]
# EOS (2) inside the prompts (make_fixtures' prompt_eos), so the n-gram hash's segment restart matters: prompt 0 ends
# with EOS (the first decode step hashes across it from the cached context), prompt 1 has EOS at 7 (the 1-token
# piece of its continuation check: the next piece starts from a cached context ending in EOS) and 15, prompt 2 at
# 30, 31 (two in a row) and 62.
QWEN4_EXP_PROMPT_EOS = {0: [4], 1: [7, 15], 2: [30, 31, 62]}
# Seed: of 5200-5399 (`--search-seeds 5200 200 --floor 0`, >= 6 distinct tokens) 5210 and 5399 share the best
# min(margin, router gap, block-score cut), 0.0087; 5399 has the wider logit margin (0.0213 against 0.0087) and router
# gap (0.0247 against 0.0131), its block-score cut is 0.0087, and >= 13 distinct tokens per prompt.
QWEN4_EXP_SEED = 5399


FAMILIES = {
    # ---- per-request-state families (see PROMPT_LENGTHS_STATE and the *_INIT_RULES above) ----
    "qwen3_next": dict(
        atol_note="Routing weights are renormalised top-2 softmax; the shared expert's sigmoid gate is smooth. The GDN recurrence is a contraction (|exp(g)| <= 1, (I - beta k k^T) with beta in (0,1) and |k| = 1), so state error does not grow over the 96 positions.",
        seed=3270,
        atol=5e-4,
        build=_cfg_qwen3_next,
        zero_centred_norms=True,
        norm_mean={"linear_attn.norm.": 1.0},  # the gated norm is w*x (init ones), not (1+w)*x
        init_rules=GDN_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        features=[
            "layer_types from legacy full_attention_interval=3 -> [linear, linear, full, linear] (written out as layer_types)",
            "gated DeltaNet: grouped in_proj_qkvz [nk, (dk|dk|r*dv|r*dv)] and in_proj_ba [nk, (r|r)], GVA nk=2 nv=4 (r=2), dk=dv=16",
            "short conv K=4 over cat(q,k,v) (128 channels, no bias) + silu; conv state carried",
            "l2norm(q,k) eps 1e-6, q * dk^-0.5, g = -exp(A_log)*softplus(a+dt_bias), beta = sigmoid(b)",
            "gated RMSNorm over dv (w*x, eps rms_norm_eps) * silu(z)",
            "gated attention: q_proj -> per head [q (32) | gate (32)], o *= sigmoid(gate); q_norm/k_norm (1+w) per head",
            "partial rotary 0.25 (rotary dim 8 of head_dim 32, leading slice, rotate_half)",
            "zero-centred (1+w) RMSNorm for layer norms, q/k norms and final norm",
            "MoE 4 experts top-2 softmax renormalised + shared expert (48) with sigmoid gate; mlp_only_layers=[1] dense",
            "prompt 80 > 64: chunked prefill kernel runs two chunks",
        ],
    ),
    "qwen3_5_text": dict(
        atol_note="The GDN recurrence is a contraction, so state error does not grow over the 96 positions.",
        seed=3375,
        atol=5e-4,
        build=_cfg_qwen3_5_text,
        zero_centred_norms=True,
        norm_mean={"linear_attn.norm.": 1.0},
        init_rules=GDN_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        features=[
            "text model of the qwen3_5 VL composite (Qwen3_5ForCausalLM, model_type qwen3_5_text), dense MLP",
            "layer_types from legacy full_attention_interval=3 -> [linear, linear, full, linear]",
            "gated DeltaNet with flat in_proj_qkv [q all | k all | v all], in_proj_z, in_proj_b, in_proj_a; GVA nk=2 nv=4",
            "short conv K=4 + silu, gated RMSNorm * silu(z)",
            "gated attention (per-head [q | gate] in q_proj), (1+w) q/k norms, partial rotary 0.25",
            "interleaved MRoPE (mrope_section [2,1,1]); text-only positions make it plain RoPE on the rotary dims",
            "prompt 80 > 64: chunked prefill kernel runs two chunks",
        ],
    ),
    "qwen3_5_moe_text": dict(
        atol_note="Routing weights are top-2 softmax, always renormalised (no norm_topk_prob key); the shared expert's sigmoid gate is smooth.",
        seed=3411,
        atol=5e-4,
        build=_cfg_qwen3_5_moe_text,
        zero_centred_norms=True,
        norm_mean={"linear_attn.norm.": 1.0},
        init_rules=GDN_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        features=[
            "text model of the qwen3_5_moe VL composite (Qwen3_5MoeForCausalLM, model_type qwen3_5_moe_text)",
            "every layer MoE: 4 experts top-2, softmax -> top-2 -> always renormalised, + shared expert (48) with sigmoid gate",
            "gated DeltaNet with flat in_proj_qkv/z/b/a, GVA nk=2 nv=4, short conv K=4 + silu",
            "gated attention, (1+w) norms, partial rotary 0.25, interleaved MRoPE section [2,1,1]",
            "checkpoint names mlp.experts.N.{gate,up,down}_proj (save_pretrained reverts the fused layout)",
            "prompt 80 > 64: chunked prefill kernel runs two chunks",
        ],
    ),
    "olmo_hybrid": dict(
        atol_note="beta = 2*sigmoid(b) lies in (0,2), so (I - beta k k^T) may reflect (eigenvalue down to -1) but stays non-expansive; state error does not grow.",
        seed=3779,
        atol=5e-4,
        build=_cfg_olmo_hybrid,
        zero_centred_norms=False,
        init_rules=GDN_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        checkpoint_fix="olmo_conv_split",
        features=[
            "NoPE (rope_theta null, as the released Olmo-Hybrid-7B): no rotary anywhere",
            "layer_types [linear, linear, full, linear]",
            "GDN with separate q/k/v/a/b/g projections, GVA nk=2 nv=4, dk=16 dv=32",
            "linear_allow_neg_eigval: beta = 2*sigmoid(b_proj(x))",
            "gated RMSNorm o_norm with eps 1e-5 hard-coded (rms_norm_eps is 1e-6)",
            "linear layers pre-norm (input_layernorm / post_attention_layernorm), attention layer OLMo post-norm (norm on attn output and on MLP output)",
            "attention q_norm/k_norm over the whole projection (q [64], k [32]), Olmo RMSNorm (w*x in fp32)",
            "checkpoint names as save_pretrained writes them: attention_layer_norm, feedforward_layer_norm, q/k/v_conv1d (split fixed, see notes)",
            "prompt 80 > 64: chunked prefill kernel runs two chunks",
        ],
    ),
    "lfm2": dict(
        atol_note="The short conv is linear and C-gated; no recurrence amplifies error.",
        seed=3805,
        atol=2.5e-4,
        build=_cfg_lfm2,
        zero_centred_norms=False,
        init_rules=LFM2_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        features=[
            "layer_types from legacy full_attn_idxs=[2] -> [conv, conv, full_attention, conv]",
            "gated short conv: in_proj -> chunk(3) B, C, x; y = C * conv_L(B * x); no activation; conv_L_cache=3, no bias",
            "conv state holds the last L_cache pre-conv B*x columns",
            "attention q_layernorm/k_layernorm per head (w*x), out_proj, RoPE theta 1e6",
            "MLP w1/w3/w2 with block_auto_adjust_ff_dim: 200 -> int(2*200/3)=133 -> *1.0 -> round up to 32 -> 160",
            "operator_norm / ffn_norm pre-norm; final norm named embedding_norm; tied embeddings",
        ],
    ),
    "lfm2_moe": dict(
        atol_note="Routing uses sigmoid(logits) + expert_bias for the choice and renormalised sigmoid weights times routed_scaling_factor; both are smooth. The router gap reported is logit-equivalent: 2 x the smallest k-th/(k+1)-th gap of sigmoid(logit) + expert_bias (a logit error e moves a sigmoid by at most e/4).",
        seed=3911,
        atol=2.5e-4,
        build=_cfg_lfm2_moe,
        zero_centred_norms=False,
        init_rules=LFM2_INIT_RULES,
        buffer_init=[(r"feed_forward\.expert_bias$", 0.0, 0.15)],
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        features=[
            "layer_types [conv, conv, full_attention, conv] (explicit: lfm2_moe has no layer_types default)",
            "gated short conv as lfm2 (conv_L_cache=3)",
            "num_dense_layers=1: layer 0 dense MLP (intermediate_size 96, no auto-adjust), layers 1..3 MoE",
            "router: sigmoid(logits); top-2 chosen on sigmoid + expert_bias (buffer, N(0,0.15)); weights = unbiased sigmoid, renormalised (+1e-6), x routed_scaling_factor 1.5",
            "checkpoint names feed_forward.experts.N.w1/w3/w2, feed_forward.gate.weight, feed_forward.expert_bias",
            "tied embeddings, final norm embedding_norm",
        ],
    ),
    "lfm3": dict(
        atol_note="The short conv is linear and C-gated; no recurrence amplifies error. The attention gate is a smooth sigmoid per head.",
        seed=SEED_LFM3,
        atol=2.5e-4,
        build=_cfg_lfm3,
        zero_centred_norms=False,
        init_rules=LFM2_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        features=[
            "layer_types [conv, sliding_attention, full_attention] (explicit; all three kinds)",
            "gated short conv as lfm2: in_proj -> chunk(3) B, C, x; y = C * conv_L(B * x); conv_L_cache=7 (class default), no bias",
            "sandwich norms: post_operator_norm on the mixer output and post_ffn_norm on the MLP output before each residual add",
            "attention q_norm/k_norm per head (w*x), out o_proj; sigmoid output gate per head: o *= sigmoid(g_proj(operator_norm(x))) [4], before o_proj",
            "checkpoint name self_attn.gate_proj.weight [4, 64] (the module is g_proj; transformers' conversion mapping renames gate_proj -> g_proj on load and back on save)",
            "sliding layer: window 8 (the 23- and 80-token prompts cross it), default RoPE theta 1e4 over the whole head (16)",
            "full layer: proportional RoPE theta 1e6, partial_rotary_factor 0.5: rotate-half over the whole head, inv_freq[i] = 1e6^(-2i/16) for i < 4, 0 for i = 4..7",
            "MLP w1/w3/w2 at intermediate_size 96; operator_norm / ffn_norm pre-norm; final norm embedding_norm; tied embeddings",
        ],
    ),
    # ---- MLA families (see MLA_DIMS and mla_init_rules above; SEMANTICS_MLA.md) ----
    # ---- KDA hybrids (KDA_FAMILY above; SEMANTICS_KDA.md) ----
    "kimi_linear": dict(
        KDA_FAMILY,
        seed=12029,
        build=_cfg_kimi_linear,
        init_rules=KDA_INIT_RULES["kimi_linear"] + mla_init_rules(kv_lora=32, expert_width=8, shared_width=8),
        atol_note=MLA_ATOL_NOTE + " " + SIGMOID_ROUTER_NOTE + " The KDA recurrence is a contraction per channel (exp(g) <= 1, beta in (0,1), |k| = 1).",
        features=[
            "layers [kda, kda, full, kda] from linear_attn_config full_attn_layers [3], kda_layers [1, 2, 4] (1-indexed)",
            "KDA: q/k/v_proj 64->4x16 each, q/k/v_conv1d K=4 (concatenated on load) + silu, conv state carried",
            "l2norm(q,k) eps 1e-6 in fp32, q * 16^-0.5, beta = sigmoid(b_proj x) per head",
            "forget gate per channel: g = -exp(A_log[h]) * softplus(f_b(f_a(x)) + dt_bias), f_a 64->16, f_b 16->64, A_log [1,1,4,1], dt_bias [64]",
            "output: o_proj(RMSNorm_fp32(o) per head (eps rms_norm_eps 1e-5) * o_norm.weight * sigmoid(g_b(g_a(x))))",
            "MLA without q-LoRA (q_proj 64->4x24) and without RoPE: the shared 8-wide key part is cached and used unrotated; scale 24^-0.5",
            "first_k_dense_replace 1: layer 0 dense MLP (64), layers 1-3 DSMoE",
            "checkpoint names block_sparse_moe.gate.{weight,e_score_correction_bias}, block_sparse_moe.experts.N.w{1,2,3}, block_sparse_moe.shared_experts.*, and block_sparse_moe.{gate,up,down}_proj for the dense layer (save_pretrained reverts the mlp rename everywhere)",
            "prompt 80 > 64: chunked prefill kernel runs two chunks",
        ],
    ),
    "bailing_hybrid": dict(
        KDA_FAMILY,
        seed=13054,
        build=_cfg_bailing_hybrid,
        std={"router": 0.6},  # routers on 3 layers x 108 positions: wider logits, wider gaps
        init_rules=KDA_INIT_RULES["bailing_hybrid"] + mla_init_rules(kv_lora=32, expert_width=8, shared_width=8),
        atol_note=MLA_ATOL_NOTE + " " + SIGMOID_ROUTER_NOTE + " The KDA recurrence is a contraction per channel (exp(g) <= 1, beta in (0,1), |k| = 1).",
        features=[
            "layers [kda, kda, full, kda] from layer_group_size 3 (full iff (i+1) % 3 == 0)",
            "KDA with the bounded (safe) gate: g = -5 * sigmoid(exp(A_log[h]) * (f_proj(x) + dt_bias)), full-rank f_proj 64->64, A_log [4]",
            "KDA head_dim from head_dim (16) = qk_rope_head_dim, heads = num_attention_heads; output gate full-rank g_proj 64->64, sigmoid",
            "MLA without q-LoRA (q_proj 64->4x32), interleaved RoPE over qk_rope_head_dim 16 (theta 10000), per-head output gate sigmoid(g_proj(x)) [4] before dense",
            "first_k_dense_replace 1: layer 0 dense MLP, layers 1-3 DSMoE with mlp.gate.expert_bias",
            "checkpoint names model.word_embeddings, attention.*, attention.dense, mlp.gate.expert_bias",
            "num_mtp_layers 0; prompt 80 > 64: chunked prefill kernel runs two chunks",
        ],
    ),

    "minimax": dict(
        seed=11037,
        build=_cfg_minimax,
        zero_centred_norms=False,
        init_rules=MINIMAX_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        atol_note="Routing weights are renormalised top-2 softmax (smooth once the choice is made). The lightning state is "
        "not a contraction (exp(-s) < 1 but k^T v accumulates: the last layer's rates are 5e-8 to 3e-6 per token), so its "
        "entries grow with the length; the RMSNorm over all heads after the scan makes the output scale-free. transformers' "
        "prefill (block form) and its decode (token recurrence) differ by up to 1.2e-5, hence the atol/10 flag below. "
        "reload_row0_max_abs is ~2e-3 because the reloaded model reads the decay buffers (slope_rate, query/key/diagonal_decay) "
        "back from the bf16 checkpoint; the expected rows use the fp32 buffers the config gives, as cbc computes them.",
        features=[
            "layer_types default written out: [full_attention, linear_attention, full_attention, linear_attention]",
            "lightning attention (linear layers): qkv_proj rows per head [q (16) | k (16) | v (16)], silu on all of q|k|v, "
            "no q/k norm and no 1/sqrt(d); per-head decay s_h = (2^(-8/H))^(h+1) * (1 - l/(L-1+1e-5) + 1e-5) (H 4, L 4); "
            "S = exp(-s) S + k^T v, o = q S (state [4, 16, 16]); block form (block_size 16) when the layer has no state, "
            "the token recurrence for every later forward",
            "lightning output: RMSNorm over all 64 channels with eps 1e-6 (not rms_norm_eps), times sigmoid(output_gate x), "
            "out_proj",
            "residual after the norm: h = input_layernorm(x); h = alpha h + beta mixer(h) (full 0.75 / 1.25, linear "
            "1.5 / 0.5); h2 = post_attention_layernorm(h); out = 0.875 h2 + 1.125 MoE(h2)",
            "full layers: GQA 4q/2kv, head_dim 16, rotate-half RoPE over the whole head (theta 1e4), scale 16^-0.5",
            "MoE on every layer: Mixtral router softmax (fp32) top-2 of 4 renormalised, SwiGLU experts width 16; checkpoint "
            "names block_sparse_moe.gate.weight, block_sparse_moe.experts.N.{w1,w3,w2}.weight",
            "saved buffers self_attn.{slope_rate, query_decay, key_decay, diagonal_decay} on the linear layers (bf16 in "
            "the checkpoint; a reader recomputes the decays in fp32 from the formula)",
            "prompt 80 > 64 and > 5 blocks of 16; the continuation check feeds multi-token pieces through the recurrence",
        ],
    ),
    "rwkv": dict(
        seed=27134,
        build=_cfg_rwkv,
        zero_centred_norms=False,
        init_rules=RWKV_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        rwkv=True,
        feature_effects="rwkv",
        atol=2.5e-4,
        atol_note="The WKV recurrence is a normalised average (num/den with the running max subtracted in fp32), so "
        "its error does not grow over the 96 positions. transformers' CPU path runs the same per-token loop with and "
        "without the state; cached and uncached differ only by the batched vs 1-row matmuls of the projections. "
        "rescale_every 2: the rows are what transformers computes in eval mode, i.e. with the weights divided and the "
        "hidden state halved; mathematically that is the identity except through the LayerNorm eps (LN(x/s) with eps "
        "= LN(x) with eps*s^2), so ignoring the rescaling entirely moves the rows only slightly, while applying half "
        "of it moves them by O(1) (checks.feature_effects).",
        features=[
            "RwkvForCausalLM: embeddings -> blocks -> ln_out -> head (untied); no positions, no attention, no KV cache",
            "block 0 only: pre_ln (LayerNorm) on the embeddings; every block: x += time_mix(ln1(x)); x += channel_mix(ln2(x))",
            "token shift: each mix reads its LayerNorm output h_t and h_{t-1} (the request's carried row before its "
            "first token, zeros at the start): x_k = h*mix_k + h_prev*(1-mix_k), per channel; separate shift states "
            "for the time mix (ln1 output) and the channel mix (ln2 output)",
            "time mix: k = key(x_k), v = value(x_v), r = sigmoid(receptance(x_r)); WKV per channel with w = -exp(time_decay), "
            "u = time_first, the num/den/max state in fp32 (rwkv_linear_attention_cpu); out = output(r * wkv)",
            "channel mix: r = sigmoid(receptance(x_r)) [H], k = relu(key(x_k))^2 [I], out = r * value(k)",
            "rescale_every 2 (inference only): block b's attention.output and feed_forward.value weights / 2^(b // 2) "
            "(blocks 2, 3 / 2), hidden / 2 after blocks 1 and 3 (so ln_out reads it / 4); applied by "
            "RwkvModel.forward on the first eval-mode forward (generate() included), in place. Ignoring it entirely "
            "moves the rows by 4.6e-4 (1.8x atol: only the LayerNorm eps sees it); dividing the weights without "
            "halving the hidden state by 2.3, halving without dividing by 3.9 (checks.feature_effects)",
            "time_decay spread (N(-1, 1.5)): per-token decays from ~1e-4 to ~0.99 in every layer (checks.rwkv.decay_spread)",
            "LayerNorm eps layer_norm_epsilon 1e-5 for pre_ln/ln1/ln2; ln_out uses nn.LayerNorm's default 1e-5 regardless",
            "checkpoint names rwkv.embeddings, rwkv.blocks.N.{pre_ln,ln1,ln2,attention.*,feed_forward.*}, rwkv.ln_out, head; "
            "time_mix_* saved [1, 1, H]",
            "prompt 80 and the continuation pieces (multi-token forwards on a carried state) run the recurrence past "
            "every chunk boundary the engine's budgets (1, 7, 16, 64) make",
        ],
    ),
    "recurrent_gemma": dict(
        seed=28319,
        build=_cfg_recurrent_gemma,
        zero_centred_norms=True,
        std={"embed": RG_EMBED_STD},
        init_rules=RG_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        recurrent_gemma=True,
        feature_effects="recurrent_gemma",
        atol=2.5e-4,
        atol_note="The RG-LRU is a contraction per channel (0 < a < 1, the input scaled by sqrt(1 - a^2)), the causal "
        "conv is linear, and the local attention reads at most 16 keys, so state error does not grow over the 96 "
        "positions. The soft cap tanh(x / 30) * 30 only shrinks differences. transformers' prefill (full conv, "
        "token loop of the scan) and decode (conv over the carried columns, one scan step) differ only in "
        "reduction order. checks.continuation is O(1) by design: transformers restarts the conv in every "
        "multi-token forward (checks.recurrent_gemma.continuation_with_conv_state_carried shows that this is the "
        "whole difference); the fixture's rows never take that path (one-forward prefill, then one token per forward).",
        features=[
            "RecurrentGemmaForCausalLM (Griffin): block_types [recurrent, recurrent, attention] repeated -> layers "
            "[recurrent, recurrent, attention, recurrent] (config.layers_block_type / layer_types: linear_attention, "
            "sliding_attention; neither key is saved, block_types is)",
            "embedding x normalizer (bf16 buffer sqrt(hidden) = 8, not saved); tied lm_head; logits soft cap "
            "tanh(x / 30) * 30",
            "residual block: x + temporal(temporal_pre_norm(x)), then + mlp(channel_pre_norm(.)); zero-centred (1 + w) "
            "RMSNorms (eps 1e-6, in fp32); final_norm",
            "recurrent block: y = gelu_tanh(linear_y(h)); x = linear_x(h) -> depthwise causal conv1d (width 4, bias) -> "
            "RG-LRU; out = linear_out(lru(x) * y); all linears biased",
            "RG-LRU: block-diagonal gates (4 blocks of 16): i = sigmoid(x W_i + b_i), r = sigmoid(x W_r + b_r) "
            "(input_gate_weight [4, 16, 16], x @ W); log a = -8 r softplus(recurrent_param); "
            "h_t = a h_{t-1} + sqrt(1 - a^2) (i x) (fp32 state), at position 0: a = 0 and the multiplier 1",
            "recurrent_param N(-3.5, 1.5): a spans ~0.1 to ~0.999 in every layer (checks.recurrent_gemma.a_spread)",
            "attention: MQA (4 query heads, 1 kv head, head_dim 16), no q/k/v bias, o_proj biased; scale 16^-0.5; "
            "partial rotate-half RoPE over the first 8 dims of each head (rope_parameters.partial_rotary_factor 0.5, "
            "theta 1e4); local window 16: key j visible from p iff p - 16 < j <= p (checks.recurrent_gemma.window_mask), "
            "so the 23- and 80-token prompts cross it",
            "MLP: gelu_tanh(gate_proj) * up_proj -> down_proj, width intermediate_size // 2 = 48, all biased",
            "final_norm (1 + w) ~ N(0, 1) (w ~ N(-1, 1)) and the residual writers (linear_out, o_proj, down_proj) at "
            "0.35: with a tied head and the embedding scaled by 8, the current token's own logit otherwise wins "
            "every step",
            "states per request: conv1d_state [64, 3] and the RG-LRU state [64] (fp32) per recurrent layer, kept in "
            "the modules; the attention layer's keys/values in a sliding-window cache of 15",
        ],
    ),
    "xlstm": dict(
        seed=28050,
        build=_cfg_xlstm,
        zero_centred_norms=False,
        init_rules=XLSTM_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        xlstm=True,
        feature_effects="xlstm",
        atol=5e-4,
        atol_note="The mLSTM state is a decaying sum (forget gate sigmoid(f) in (0, 1), stabilised by m in fp32), so its "
        "error does not grow over the 96 positions; but each head's output h = q.C / max(|q.n|, exp(-m)) goes through "
        "a per-head LayerNorm, which rescales it to unit variance, so where h is small (the floor wins, a weak input "
        "gate) fp32 rounding is amplified (a head's h has std below 1e-2 on 1.6 % of (token, head) steps, down to "
        "2e-4, in reference_xlstm.py's float64 run, which lands 7.9e-5 from these rows): transformers' own paths differ by up to 4.1e-5 (cached vs uncached), "
        "5.1e-5 (recurrent form everywhere vs the chunkwise kernel) and 1.1e-4 (prefill in 7-token pieces, "
        "checks.xlstm.chunked_prefill_vs_uncached), hence 5e-4 rather than 2.5e-4. Prefill runs the chunkwise kernel "
        "over floor(T / 8) * 8 tokens and the recurrent loop over the rest, decode the 1-step kernel; all three are "
        "the same recurrence (checks.feature_effects.recurrent_form_everywhere). The gate and output soft caps are "
        "tanh, they only shrink differences.",
        features=[
            "xLSTMForCausalLM (xLSTM-Large / xLSTM-7B layout, native torch path, no sLSTM): embeddings -> 3 mLSTM blocks "
            "-> out_norm -> lm_head (untied) -> logits.float() -> 30 * tanh(logits / 30); no positions, no attention",
            "block: x += mlstm_layer(norm_mlstm(x)); x += ffn(norm_ffn(x)); RMSNorms with a plain weight (not 1 + w), "
            "eps norm_eps 1e-6, in fp32",
            "mLSTM layer: q, k [64] (4 heads x dqk 16), v and the output gate o [128] (4 x dv 32), no biases; "
            "i~ = 15 tanh((W_i x + b_i) / 15), f~ likewise (one per head, always biased); head h = contiguous slice "
            "h*d:(h+1)*d; out = out_proj(sigmoid(o) * multihead_norm(h))",
            "mLSTM cell per head, state C [16, 32], n [16], m (zeros at the start, m included): m_t = max(logsigmoid(f~) "
            "+ m_{t-1}, i~); C = exp(logsigmoid(f~) + m_{t-1} - m_t) C + exp(i~ - m_t) k v^T (k unscaled), n likewise "
            "with k; h = (q / 4) C / (max(|(q / 4) . n|, exp(-m_t)) + 1e-6)",
            "normaliser floor: |q.n| beats exp(-m) on 35-65 % of (token, head) steps per layer "
            "(checks.xlstm.normaliser_floor); dropping the floor moves the rows by 0.43 (checks.feature_effects)",
            "gates: soft-capped i~ spans -10.1..7.1 (raw -12.2..7.7, so the 15-cap bends), sigmoid(f~) 0.014..0.9996 "
            "(checks.xlstm.gate_range); removing the gate cap moves the rows by 1.4",
            "multihead_norm: LayerNorm (mean-centred, biased variance, eps 1e-6, fp32) over each head's 32 values, "
            "then one weight [128]; skipping it moves the rows by 6.7, one LayerNorm over all 128 by 8.1",
            "FFN: proj_down(silu(proj_up_gate(x)) * proj_up(x)), width round_up(32 * 2.667, 64) = 128, no biases",
            "qk_dim_factor 2.0 / v_dim_factor 4.0: int(32 * f) = 64 / 128 equal the config's qk_dim / v_dim (rounded "
            "up to 64), which size xLSTMCache; with other factors transformers' cached forwards fail",
            "chunk_size 8: prefill runs floor(T / 8) * 8 tokens through the chunkwise kernel and the rest through the "
            "recurrent loop (prompt 5: loop only; 23: 16 + 7; 80: 80 + 0), decode the 1-step kernel; the continuation "
            "pieces and checks.xlstm.chunked_prefill_vs_uncached (pieces of 1, 7, 8, 16, 64) start chunks from a "
            "carried (C, n, m)",
            "states per request: per layer C [4, 16, 32], n [4, 16], m [4, 1] in fp32 (xLSTMCache.rnn_state); "
            "xLSTMCache's default dtype is bf16, which moves the rows by 1.6 (checks.xlstm.bf16_cache_default)",
            "checkpoint names backbone.embeddings, backbone.blocks.N.{norm_mlstm, mlstm_layer.{q,k,v,ogate_preact,"
            "igate_preact,fgate_preact,multihead_norm,out_proj}, norm_ffn, ffn.{proj_up_gate,proj_up,proj_down}}, "
            "backbone.out_norm, lm_head (weight_mode single); config.json keeps hidden_size = embedding_dim and "
            "num_hidden_layers = num_blocks",
        ],
    ),
    "qwen4_exp_text": dict(
        seed=QWEN4_EXP_SEED,
        build=_cfg_qwen4_exp_text,
        zero_centred_norms=True,
        norm_mean={"linear_attn.norm.": 1.0},
        std={"router": 0.6},  # 3 routers x ~300 positions: wider logits, wider gaps (bailing_hybrid's)
        init_rules=QWEN4_EXP_INIT_RULES,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        prompt_eos=QWEN4_EXP_PROMPT_EOS,
        state=True,
        dsa=True,
        atol=5e-4,
        atol_note="Routing: softmax top-2 of 4 renormalised, smooth once the choice is made; the QSA block choice is "
        "discrete too (checks.indexer: its k-th vs next block-score cut). fp32 noise: transformers' cached, uncached and "
        "chunked paths agree to 1.1e-5, perturbing the weights by 6e-8 (relative) moves the rows by 1.7e-5, and an "
        "independent reimplementation (reference_qwen4_exp.py) lands at 1.4e-5 in fp32, 6.7e-6 in fp64; atol 5e-4 (the "
        "GDN families') leaves 29x over the worst of those.",
        features=[
            "Qwen4ExpForCausalLM (model_type qwen4_exp_text; the qwen4_exp composite's text decoder, which "
            "AutoModelForCausalLM also builds from a composite config / checkpoint); 3 layers: layer_types "
            "[linear_attention, indexed_attention, linear_attention], ple_layer_ids [1, 3] (1-indexed, linear layers "
            "only), every layer MoE",
            "checkpoint as save_pretrained writes it: model.layers.N.{attn,mlp}_hyper_connection.{hc_norm [192], "
            "input_mix_weight_down [4, 192], input_mix_weight_up [192, 4], block_inject_weight [3, 192]}, "
            "model.hyper_connection_mixer.{hc_norm, input_mix_weight_down, input_mix_weight_up} (no inject, no "
            "model.norm); GDN linear_attn.{in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv1d, A_log, dt_bias, norm, "
            "out_proj}; attention self_attn.{q_proj [2 x 4 x 16, 64], k_proj, v_proj, o_proj, q_norm, k_norm, "
            "indexer.{index_qk_proj [(16 + 1) x 16, 64], q_layernorm, k_layernorm}}; PLE ple.{key_proj [192, 16], "
            "value_proj [64, 16], norm_key, norm_query, norm_conv [192], conv1d [192, 1, 4], "
            "ple_embedding.ngram_embedding.shard_0..3.weight (the table [288 | 352, 4] in 4 row chunks), "
            "ple_embedding.{layer_multipliers [3], ngram_heads_vocab_sizes [4], ngram_heads_offsets [4]} (int64 "
            "buffers)}; mlp.gate, mlp.experts.E.{gate,up,down}_proj, mlp.shared_expert.*, mlp.shared_expert_gate; "
            "untied lm_head",
            "GatedResidual (hc_count 3, streams flat [3 x 64], start: 3 copies of the embedding): u = (1 + w) "
            "RMSNorm of each 64-wide stream (eps rms_norm_eps); block input x = mean_n(sigmoid(W_up silu(W_down u / "
            "3))_n * u_n) (no other pre-norm); inject = 2 sigmoid(W_inject u / 3) [3]; h_n += inject_n * block(x); "
            "after the last layer the mixer's x (no inject) replaces the final norm, then lm_head",
            "PLE before the attn site of layers 0 and 2: per token the 2-gram and 3-gram of the current and previous "
            "ids (walking back past an EOS or the start gives EOS), hashed per head: (t0 m0 XOR t1 m1 [XOR t2 m2]) mod "
            "p_head + offset_head, multipliers 2 (splitmix64(seed + 10007 l + gamma (j + 1)) mod floor(floor((2^63 - "
            "1) / vocab) / 2)) + 1, p = the (4 l + head + 1)-th prime >= 61; e = the 4 rows of 4 concatenated [16]; "
            "gate_n = sign sqrt(max(|g|, 1e-6)) of g = <(1 + w) RMSNorm(key_proj e)_n, (1 + w) RMSNorm(h)_n> / 8; "
            "v = sigmoid(gate_n) value_proj(e); h_n += v_n + silu(dilated depthwise conv (kernel 4, dilation 3, no "
            "bias) of the (1 + w) RMSNorm'd v)_n",
            "gated DeltaNet layers 0 and 2 as qwen3_5 (split in_proj_qkv / z / b / a, GVA 2 key / 4 value heads of 16, "
            "conv 4 + silu, l2-normed q/k, g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)) with "
            "output_gate_type sigmoid: o = w * RMSNorm(o) * sigmoid(z) per head",
            "gated attention layer 1: q_proj rows per head [q (16) | gate (16)], (1 + w) q_norm / k_norm per head, "
            "partial rotate-half RoPE over 8 of 16 dims (theta 1e4, mrope_section [2, 1, 1]: text-only, plain RoPE), "
            "GQA 4/2, scale 16^-0.5, o * sigmoid(gate), o_proj",
            "QSA indexer on layer 1: index_qk_proj x -> q [16 heads x 16], raw key [16] (cached as is); q = RoPE((1 + "
            "w) RMSNorm(q)); for query t the complete blocks of 4 visible keys (0-3, 4-7, ...) each get key = RoPE at "
            "the block's first position of (1 + w) RMSNorm(mean of its 4 raw keys); score = sum_h ReLU(q_h . key) / "
            "4; the top 2 blocks (all if <= 2) plus the raw tail 4 floor((t + 1) / 4) .. t are the keys t attends to "
            "(AND causal), so a query that completes a block it does not choose does not attend to itself",
            "MoE on every layer: softmax router (fp32), top-2 of 4 renormalised, SwiGLU experts of 8 plus shared "
            "expert (8) x sigmoid(shared_expert_gate x)",
            "per-request state: GDN conv [128, 4] (last K pre-conv columns) and recurrent [4, 16, 16] fp32; PLE conv "
            "[192, 9] (the last (4 - 1) x 3 normed gated values) and the last 2 token ids (int64) on the PLE layers; "
            "the attention layer's keys / values [2, T, 16], raw indexer keys [T, 16] and the [3, T] position "
            "history (meta.json state_shapes_per_request lists the conv ones)",
            "prompts 5, 23, 80 (+15 generated) with EOS at 4 | 7, 15 | 30, 31, 62 (QWEN4_EXP_PROMPT_EOS); the "
            "continuation check feeds pieces on a carried cache (GDN, PLE conv and n-gram context, indexer keys)",
        ],
    ),
}
