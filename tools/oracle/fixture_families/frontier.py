"""Llama 4, MiniMax-M2, Inkling, Inkling2 and GLM-5.3-Flash (glm5_next).

Each FAMILIES entry: a seed, a config builder, whether the norms are zero-centred and the features
the fixture exercises (make_fixtures.py reads them)."""

from oracle_common import *  # noqa: F401,F403


# --------------------------------------------------------------------------------------
# Llama 4 (llama4_text, and the composite llama4 served text-only) and MiniMax-M2
# (SEMANTICS_LLAMA4_MINIMAX.md). Attention-family prompts (5, 13, 29): positions reach 29 + 15 = 43.
# Llama 4: 4 layers, so the default no_rope_layers makes layer 3 the NoPE/full-attention layer and layers
# 0-2 chunked RoPE layers; attention_chunk_size 8, so the prompts prefill 1, 2 and 4 chunks and decoding
# reaches chunk 5; floor_scale 6 (!= the chunk size) makes the NoPE layer's query temperature
# 1 + 0.1*log1p(floor((p+1)/6)) step at p = 5, 11, 17, ... (the +1 shows at p = 5, prompt 0's first decoded
# token); interleave_moe_layer_step 2 -> MoE on layers 1, 3 (top-1 of 4 + shared expert, width 16), dense
# SwiGLU (intermediate_size_mlp 32) on 0, 2. The composite llama4 nests the same text config.
# MiniMax-M2: 3 layers, every one MoE (top-2 of 4, sigmoid + e_score_correction_bias, renormalised), q/k
# RMSNorm over the whole projection, rotate-half RoPE on the first rotary_dim 8 of head_dim 16.
# Seeds: the best of each family's block by the criteria above (floor 0.01 for margins and router gaps,
# >= 6 distinct tokens): llama4_text 9800-9999 (9825: margin 0.0334, router gap 0.0353), llama4 10000-10199
# (10047: 0.0590, 0.0867), minimax_m2 10200-10799 (10490: margin 0.0150, router gap 0.0108; only 3 of the 600
# seeds clear 0.01: its sigmoid router is bounded strictly, 2 x the biased-score gap, over 3 routed layers).
# --------------------------------------------------------------------------------------

LLAMA4_CHUNK = 8
LLAMA4_FLOOR_SCALE = 6


def _llama4_text_kwargs() -> dict:
    return dict(
        **{k: v for k, v in COMMON.items() if k != "intermediate_size"},
        intermediate_size=16,  # routed experts and the shared expert
        intermediate_size_mlp=32,  # dense layers
        head_dim=16,
        num_hidden_layers=4,  # no_rope_layers default [1, 1, 1, 0]: layer 3 NoPE, written out
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        num_local_experts=4,
        num_experts_per_tok=1,
        interleave_moe_layer_step=2,  # -> moe_layers [1, 3] (written out)
        attention_chunk_size=LLAMA4_CHUNK,
        use_qk_norm=True,
        attn_temperature_tuning=True,
        floor_scale=LLAMA4_FLOOR_SCALE,
        attn_scale=0.1,
        rope_parameters={  # the llama fixture's llama3 shape: with d = 16 pair 0 is kept, 1 smoothed, 2-7 / factor
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    )


def _cfg_llama4_text():
    from transformers import Llama4TextConfig

    return Llama4TextConfig(**_llama4_text_kwargs())


# The composite's vision tower: as small as Llama4VisionModel allows (one layer, 16 wide, a 2x2 grid of 2x2
# patches); it is never run, only stored so that the checkpoint is a complete llama4 checkpoint.
LLAMA4_VISION = dict(
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=16,
    image_size=4,
    patch_size=2,
    vision_output_dim=16,
    projector_input_dim=16,
    projector_output_dim=16,
)


def _cfg_llama4():
    from transformers import Llama4Config

    return Llama4Config(
        text_config=_llama4_text_kwargs(),
        vision_config=dict(LLAMA4_VISION),
        tie_word_embeddings=False,
    )


def _cfg_minimax_m2():
    from transformers import MiniMaxM2Config

    common = {k: v for k, v in COMMON.items() if k != "intermediate_size"}
    return MiniMaxM2Config(
        **common,
        intermediate_size=16,  # per expert
        head_dim=16,
        num_hidden_layers=3,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        num_local_experts=4,
        num_experts_per_tok=2,
        rotary_dim=8,  # legacy key of the released configs -> rope_parameters.partial_rotary_factor 0.5 (both written)
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},  # released 5e6; 1e4 so every rotary pair turns
    )


def _cfg_inkling_text():
    from transformers import InklingTextConfig

    common = {k: v for k, v in COMMON.items() if k not in ("num_attention_heads", "num_key_value_heads")}
    return InklingTextConfig(
        **common,  # intermediate_size 96: the dense layer's MLP
        num_hidden_layers=3,
        num_attention_heads=4,  # full ("hybrid") layers: 4q/2kv, head_dim 16
        num_key_value_heads=2,
        head_dim=16,
        swa_num_attention_heads=2,  # sliding ("hybrid_sliding") layers: their own 2q/1kv, head_dim 8
        swa_num_key_value_heads=1,
        swa_head_dim=8,
        sliding_window_size=8,  # below every prompt but the 5-token one
        d_rel=4,
        rel_extent=24,  # the full layer's bias stops at distance 24, inside the 80-token prompt
        log_scaling_n_floor=16,  # tau > 1 from position 16 on (full layer only)
        log_scaling_alpha=0.3,
        layer_types=["hybrid_sliding", "hybrid_sliding", "hybrid"],
        mlp_layer_types=["dense", "sparse", "sparse"],
        moe_intermediate_size=16,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_shared_experts=2,
        route_scale=1.5,
        logits_mup_width_multiplier=2.0,
        conv_kernel_size=4,
        rms_norm_eps=1e-6,
    )


# Learned scalars near 1, the bias profiles and the short convs large enough to matter, 1/sqrt(16) for the
# experts' down projections, a wider head (the muP divisor halves the logits).
# Seed: the best of 7100-7179 (margin 0.054, router gap 0.027 logit-equivalent; decisive router, see the rules).
INKLING_SEED = 7130
INKLING_INIT_RULES = [
    (r"mlp\.gate\.weight$", 0.0, 1.5),  # decisive: saturated sigmoids, the correction bias orders them
    (r"global_scale$", 1.0, 0.2),
    (r"rel_logits_proj\.proj$", 0.0, 0.5),
    (r"sconv\.conv1d\.weight$", 0.0, 0.3),
    (r"experts\.down_proj$", 0.0, 0.25),
    (r"^lm_head\.weight$", 0.0, 0.8),
]


# Inkling2 (SEMANTICS_INKLING2.md): 4 layers, sliding / full alternating, two attention-residual blocks of 2 layers
# (layers 0-1 and 2-3; the full layers are the last of their block, as (i + 1) % 6 places them in the released model).
# Every bound is set where the tiny model's values reach it: the released thresholds (q/k 22.6, rel 8, gate cap 4,
# up cap 25, logit cap 30, n_floor 128000) are never reached at head_dim 8/16, d_rel 4 and 100 positions.
def _cfg_inkling2_text():
    from transformers import Inkling2TextConfig

    common = {k: v for k, v in COMMON.items() if k not in ("intermediate_size", "num_attention_heads", "num_key_value_heads")}
    return Inkling2TextConfig(
        **common,
        unpadded_vocab_size=250,  # the head keeps 256 rows, the logits their first 250 columns
        num_hidden_layers=4,
        layer_types=["hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid"],
        n_layers_per_attn_res_block=2,  # block boundaries at layers 0 and 2
        num_attention_heads=4,  # full ("hybrid") layers: 4q/2kv, head_dim 16
        num_key_value_heads=2,
        head_dim=16,
        swa_num_attention_heads=2,  # sliding ("hybrid_sliding") layers: 2q/1kv, head_dim 8
        swa_num_key_value_heads=1,
        swa_head_dim=8,
        sliding_window_size=8,  # below every prompt but the 5-token one
        d_rel=4,
        rel_extent=24,  # the full layers' bias stops at distance 24, inside the 80-token prompt
        log_scaling_n_floor=16,  # tau > 1 from position 16 on (full layers only)
        log_scaling_alpha=0.3,
        qk_l2_clip_threshold=4.0,  # about the median |q| (after its scale) and |k|: about half the heads are clipped
        rel_l2_clip_threshold=2.0,  # about the median |r| (after its scale)
        moe_intermediate_size=16,
        n_routed_experts=4,
        num_experts_per_tok=2,
        route_scale=1.5,
        mlp_gate_softcap=2.0,  # |gate| and |up| reach 2x the caps
        mlp_up_softcap=2.0,
        final_logit_softcapping=20.0,  # bends the large logits (tanh(x / 20)) without flattening the top-1/top-2 margins
        conv_kernel_size=4,
        rms_norm_eps=1e-6,
    )


# The learned scales of the clips around 1 (the sliding layers' q scale at 1.3: their heads are half as wide), k_proj
# wider (the short conv's 1/sqrt(5) and 1/sqrt(9) output scales shrink k), the static and dynamic conv taps and the
# attention-residual queries (all zero in _init_weights: a uniform mean over the sources) large enough to matter, a
# decisive sigmoid router (saturated, ordered by the correction bias; wider than inkling_text's, which left router gaps
# below 0.01 over 4 MoE layers), 1/sqrt(16) for the experts' down projections, a wider head (std 0.5) for the cap.
# Seed: the best of 7200-7599 (margin 0.070, router gap 0.039 logit-equivalent; 48 of the 400 clear 0.01).
INKLING2_SEED = 7406
INKLING2_ATOL = 1e-3
INKLING2_INIT_RULES = [
    (r"mlp\.gate\.weight$", 0.0, 3.0),
    (r"rel_logits_proj\.proj$", 0.0, 0.5),
    (r"\.conv1d\.weight$", 0.0, 0.3),  # the static short convs (k/v on sliding layers, post-attention, post-MLP)
    (r"sconv\.static_weight$", 0.0, 0.3),
    (r"sconv\.weight_proj\.weight$", 0.0, 0.05),
    (r"layers\.[02]\.self_attn\.q_l2_clip\.scale$", 1.3, 0.3),
    (r"l2_clip\.scale$", 1.0, 0.3),
    (r"self_attn\.k_proj\.weight$", 0.0, 0.3),
    (r"(attention_input|mlp_input|final_input)\.query$", 0.0, 1.0),
    (r"self_attn\.sink_proj\.weight$", 0.0, 0.25),
    (r"experts\.down_proj$", 0.0, 0.25),
    (r"^lm_head\.weight$", 0.0, 0.5),
]


# GLM-5.3-Flash (glm5_next, SEMANTICS_GLM5_NEXT.md): the text decoder of Glm5NextForConditionalGeneration, served
# text-only (there is no CausalLM class; AutoModelForCausalLM refuses both glm5_next and glm5_next_text). 4 layers
# [KDA, indexed (full), indexed (shared), KDA]: a shared layer must come right after a full indexed layer (KDA layers
# and shared layers hand no selection on), so the KDA layers sit outside the pair. mHC with 3 streams (with 2 a
# converged Sinkhorn matrix is symmetric and comb's transposition would not show), Sinkhorn 20 (the default).
# k-pooled indexer: 16 heads x 16 (fewer heads tie at ReLU zeros, families_5_23.md section 4.2), pools of 4 keys,
# index_topk 8 = 2 pools per query plus the raw tail of up to 3 keys; prompts 5, 23, 80 (+15 generated): every prompt
# has queries with more complete pools than 2. MLA: 2 heads (num_key_value_heads must equal num_attention_heads),
# q-LoRA 16, kv_lora 32, nope 16 (no rope: qk_rope_head_dim must be 0), v 16. MoE on layers 1 and 3 (4 experts
# top-2, n_group 1 as released, one shared expert, width 16), dense SwiGLU 16 on 0 and 2; swiglu_limit 1.5 (the
# released 10 never bites here). The vision tower (1 block, 16 wide, 2x2x2 patches) never runs; it is in the
# checkpoint because save_pretrained writes the composite (make_model builds Glm5NextForConditionalGeneration).
def _cfg_glm5_next():
    from transformers import Glm5NextConfig

    text = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=16,  # the dense layers' SwiGLU
        moe_intermediate_size=16,
        num_hidden_layers=4,
        layer_types=["linear_attention", "indexed_attention", "indexed_attention", "linear_attention"],
        indexer_types=["full", "full", "shared", "full"],  # only layers 1 (full) and 2 (shared) read theirs
        mlp_layer_types=["dense", "sparse", "dense", "sparse"],
        num_attention_heads=2,
        num_key_value_heads=2,
        q_lora_rank=16,
        kv_lora_rank=32,
        qk_nope_head_dim=16,
        qk_rope_head_dim=0,
        v_head_dim=16,
        index_n_heads=16,
        index_head_dim=16,
        index_kpool=4,
        index_topk=8,  # 2 pools
        index_kpool_always_select_tail=True,
        linear_num_heads=2,
        linear_head_dim=16,
        linear_conv_kernel_dim=4,
        linear_lower_bound=-5.0,
        hc_mult=3,
        hc_sinkhorn_iters=20,
        hc_eps=1e-6,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_group=1,
        topk_group=1,
        n_shared_experts=1,
        norm_topk_prob=True,
        routed_scaling_factor=2.5,
        swiglu_limit=1.5,
        rms_norm_eps=1e-5,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    vision = dict(  # never run text-only; 1 block, 16 wide, a 2x2x2 patch
        depth=1,
        hidden_size=16,
        num_heads=2,
        intermediate_size=16,
        out_hidden_size=16,
        projection_intermediate_size=16,
        patch_size=2,
        image_size=8,
        spatial_merge_size=2,
        temporal_patch_size=2,
    )
    return Glm5NextConfig(text_config=text, vision_config=vision, tie_word_embeddings=False)


# 1/sqrt(fan_in) where the fan-in is not 64 (q_b / wq_b 16, kv_b 32, o_proj 32, f_b / g_b 16, the experts', shared
# expert's and dense MLP's down projections 16). What _init_weights or a generic draw would hide at this size, and
# the fixture's draw instead:
# - pool gate ones, ape zeros (_init_weights): every feature of a token gets the same pool logit (the sum of its
#   hidden state), so the per-feature softmax is untested -> gate N(0, 0.125) (logits ~N(0, 1)), ape N(0, 1);
# - hc fn N(0, 0.02), base 0, scale 1: narrow gates (pre 0.28-0.71, post 0.58-1.46, comb 0.17-0.52) -> fn
#   N(0, 1/sqrt(192)) on the 3 x 64 normalised streams, scale N(0.5, 0.2), base N(-0.5, 0.75) (hy_v4's): pre
#   0.04-0.88, post 0.10-1.67, comb 0.02-0.91 (80-token prompt);
# - a generic draw of dt_bias (~0) puts the bounded KDA gate at -5 sigmoid(0) = -2.5 (each channel keeps 8% a token)
#   -> bailing_hybrid's bounded-gate draw, A_log N(0.5, 0.5), dt_bias N(-2, 1) (decay 0.06-0.99 a token, 5th-95th
#   percentile, median 0.70), conv taps N(0, 0.5);
# - eps: q_a_layernorm and kv_a_layernorm use rms_norm_eps (1e-5; DeepSeek-V3's MLA fixes 1e-6) and so does the mHC
#   input norm, but at O(1) inputs 1e-6 instead moves the rows by < atol. q_a_proj and kv_a_proj_with_mqa are scaled
#   by 1/32 after the draw (row_scale, as latent_eps_row_scale) and the input embedding drawn at 2^-7 (hy_v4's; the
#   streams start as copies of it), so each of these eps moves the rows by >= 0.1 (section 13 of the document).
GLM5_NEXT_INIT_RULES = [
    (r"embed_tokens\.weight$", 0.0, 2**-7),
    (r"self_attn\.conv1d\.weight$", 0.0, 0.5),
    (r"forget_gate\.A_log$", 0.5, 0.5),
    (r"forget_gate\.dt_bias$", -2.0, 1.0),
    (r"forget_gate\.f_b_proj\.weight$", 0.0, 0.25),
    (r"self_attn\.g_b_proj\.weight$", 0.0, 0.25),
    (r"(attn_hc|ffn_hc)\.fn$", 0.0, 0.072),
    (r"(attn_hc|ffn_hc)\.scale$", 0.5, 0.2),
    (r"(attn_hc|ffn_hc)\.base$", -0.5, 0.75),
    (r"indexer\.index_kpool_compress_ape$", 0.0, 1.0),
    (r"indexer\.index_kpool_compress_gate$", 0.0, 0.125),
    (r"indexer\.wq_b\.weight$", 0.0, 0.25),
    (r"indexer\.k_norm\.bias$", 0.0, 0.3),
    (r"self_attn\.q_b_proj\.weight$", 0.0, 0.25),
    (r"self_attn\.kv_b_proj\.weight$", 0.0, 0.1768),
    (r"language_model\.layers\.\d+\.self_attn\.o_proj\.weight$", 0.0, 0.1768),
    (r"mlp\.experts\.down_proj$", 0.0, 0.25),
    (r"mlp\.shared_experts\.down_proj\.weight$", 0.0, 0.25),
    (r"layers\.\d+\.mlp\.down_proj\.weight$", 0.0, 0.25),
]
GLM5_NEXT_ROW_SCALE = [(r"q_a_proj\.weight$", None, 1 / 32), (r"kv_a_proj_with_mqa\.weight$", None, 1 / 32)]
# Seed: the best min(margin, router gap) of 13000-13199 (`--search-seeds 13000 200 --floor 0`) among the seeds with a
# k-th vs next pool-score cut >= 1e-3 and >= 6 distinct tokens: 13181 (margin 0.034, router gap 0.014
# logit-equivalent, pool-score cut 1.3e-3). Router gaps are small in this family (median 0.0017 over the 200).
GLM5_NEXT_SEED = 13181
GLM5_NEXT_ATOL = 5e-4


# 1/sqrt(fan_in) for the weights whose fan-in is not 64 (as mla_init_rules), and the Llama 4 router (not matched
# by the shared table's mlp.gate / mlp.router names) at BASE_STD["router"]. The RoPE layers' q/k_proj (layers 0-2)
# are scaled by 1/32 after the draw (row_scale): their weightless RMS ("L2") norm is scale-invariant, so only its
# eps (rms_norm_eps 1e-5) sees the scale, at ~1% of the mean square (as latent_eps_row_scale does for MLA).
LLAMA4_INIT_RULES = [
    (r"feed_forward\.router\.weight$", 0.0, 0.3),
    (r"feed_forward\.experts\.down_proj$", 0.0, 0.25),  # [E, I=16, H]
    (r"feed_forward\.shared_expert\.down_proj\.weight$", 0.0, 0.25),
    (r"feed_forward\.down_proj\.weight$", 0.0, round(32**-0.5, 4)),  # dense, intermediate_size_mlp 32
]
LLAMA4_ROW_SCALE = [(r"layers\.[012]\.self_attn\.[qk]_proj\.weight$", None, 1 / 32)]
MINIMAX_M2_INIT_RULES = [(r"mlp\.experts\.down_proj$", 0.0, 0.25)]
LLAMA4_ATOL_NOTE = (
    "Routing: top-1 on the raw router logits (the gap reported is the raw top-1/top-2 logit gap), weight "
    "sigmoid(logit) scaling the expert input, smooth once the choice is made; the weightless qk norm renormalises."
)
LLAMA4_FEATURES = [
    "layer schedule from the defaults, written out: no_rope_layers [1, 1, 1, 0] (1 = RoPE) -> layer_types "
    "[chunked, chunked, chunked, full]; moe_layers [1, 3] (interleave_moe_layer_step 2)",
    "chunked attention on layers 0-2: attention_chunk_size 8, key k visible to query q iff k <= q and "
    "k // 8 == q // 8 (no padding offset); prompts 5, 13, 29 prefill 1, 2, 4 chunks, decoding reaches position 43 "
    "(chunk 5)",
    "RoPE layers: complex-pair RoPE on (2i, 2i+1), llama3 scaling (factor 8, low 1, high 4, original 64, theta 5e5: "
    "pair 0 kept, pair 1 smoothed, pairs 2-7 / 8), then the weightless RMS ('L2') norm per head on q and k with eps "
    "rms_norm_eps 1e-5 (q/k_proj scaled 1/32 so the eps shows)",
    "NoPE layer 3 (full attention, no RoPE, no qk norm): attn_temperature_tuning, q x 1 + 0.1*log1p(floor((p+1)/6)) "
    "for absolute position p (steps at p = 5, 11, 17, 23, 29, 35, 41)",
    "softmax scale head_dim^-0.5 on every layer; GQA 4q/2kv, head_dim 16",
    "MoE layers 1, 3: Llama4Router top-1 of 4 on the raw logits, score sigmoid(logit) multiplies the expert INPUT; "
    "fused experts gate_up_proj [E, H, 2I] (x @ W, gate = first I columns), down_proj [E, I, H], I = 16; plus the "
    "shared expert (SwiGLU, width 16) on the unscaled input",
    "dense layers 0, 2: SwiGLU of width intermediate_size_mlp 32 (!= intermediate_size 16)",
    "untied lm_head",
]

FAMILIES = {
    # ---- Llama 4 and MiniMax-M2 (see LLAMA4_CHUNK and the *_INIT_RULES above; SEMANTICS_LLAMA4_MINIMAX.md) ----
    "llama4_text": dict(
        seed=9825,
        build=_cfg_llama4_text,
        zero_centred_norms=False,
        init_rules=LLAMA4_INIT_RULES,
        row_scale=LLAMA4_ROW_SCALE,
        feature_effects="llama4",
        atol_note=LLAMA4_ATOL_NOTE,
        features=LLAMA4_FEATURES
        + [
            "checkpoint names model.layers.N.feed_forward.{router.weight, experts.gate_up_proj, experts.down_proj, "
            "shared_expert.*} (fused experts without .weight, no conversion mapping), dense feed_forward.{gate,up,down}_proj",
        ],
    ),
    "llama4": dict(
        seed=10047,
        build=_cfg_llama4,
        zero_centred_norms=False,
        init_rules=LLAMA4_INIT_RULES,
        row_scale=LLAMA4_ROW_SCALE,
        feature_effects="llama4",
        composite_checkpoint="llama4",
        atol_note=LLAMA4_ATOL_NOTE,
        features=[
            "composite Llama4Config (model_type llama4) with the text config nested under text_config (model_type "
            "llama4_text; llama4_text's config and features) and a tiny vision_config; served text-only",
            "AutoModelForCausalLM maps llama4 to Llama4ForCausalLM (modeling_auto.py:870) built from "
            "config.get_text_config() (auto_factory.py:235-242): the reference model is that Llama4ForCausalLM",
            "checkpoint as Llama4ForConditionalGeneration.save_pretrained writes it (the hub layout): config.json is the "
            "composite (architectures [Llama4ForConditionalGeneration]); text tensors language_model.model.layers.N.*, "
            "language_model.model.{embed_tokens,norm}.weight, language_model.lm_head.weight; plus vision_model.* and "
            "multi_modal_projector.linear_1.weight (a 1-layer 16-wide vision tower, never run) that a text-only "
            "engine skips",
        ]
        + LLAMA4_FEATURES,
    ),
    "minimax_m2": dict(
        seed=10490,
        build=_cfg_minimax_m2,
        zero_centred_norms=False,
        init_rules=MINIMAX_M2_INIT_RULES,
        buffer_init=[(r"mlp\.e_score_correction_bias$", 0.0, 0.15)],
        feature_effects="minimax_m2",
        atol_note="Routing uses sigmoid(logits) + e_score_correction_bias for the choice and the renormalised unbiased "
        "sigmoids as weights (smooth once the choice is made); the router gap reported is logit-equivalent: 2 x the "
        "smallest k-th/(k+1)-th gap of the biased scores (a logit error e moves a sigmoid by at most e/4).",
        features=[
            "3 layers, every one MoE (no dense layer, no shared expert), full causal attention on every layer (the family "
            "has no sliding window)",
            "q_norm / k_norm: weighted RMSNorm over the WHOLE projection (q [64] = 4 heads x 16, k [32]), eps 1e-6, "
            "before the head reshape and before RoPE",
            "partial RoPE: legacy rotary_dim 8 -> partial_rotary_factor 0.5; rotate-half on the FIRST 8 dims of each "
            "head (pairs (i, i+4)), inv_freq theta^(-2i/8) with theta 1e4; dims 8-15 unrotated",
            "router: sigmoid(fp32 logits); top-2 of 4 chosen on sigmoid + e_score_correction_bias (buffer on the MoE "
            "block, N(0,0.15)); weights = unbiased sigmoids renormalised (no epsilon); no routed scaling factor",
            "experts SwiGLU, width 16; GQA 4q/2kv, head_dim 16, softmax scale 16^-0.5 (fp32 softmax)",
            "checkpoint names block_sparse_moe.gate.weight, block_sparse_moe.e_score_correction_bias, "
            "block_sparse_moe.experts.N.{w1,w3,w2}.weight (save_pretrained reverts the mixtral-style mapping), "
            "self_attn.q_norm.weight [64], self_attn.k_norm.weight [32]",
        ],
    ),
    "inkling_text": dict(
        seed=INKLING_SEED,
        build=_cfg_inkling_text,
        zero_centred_norms=False,
        init_rules=INKLING_INIT_RULES,
        buffer_init=[(r"mlp\.gate\.e_score_correction_bias$", 0.0, 0.6)],
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        atol=2.5e-4,
        atol_note="Routing ranks sigmoid(logits) + e_score_correction_bias; the router gap reported is logit-equivalent "
        "(2 x the smallest k-th/(k+1)-th gap of the biased scores). The weights (sigmoid over the sum of the chosen and "
        "the shared experts' sigmoids) are smooth once the choice is made.",
        features=[
            "InklingForCausalLM (model_type inkling_text), 3 layers: layer_types [hybrid_sliding, hybrid_sliding, hybrid], "
            "mlp_layer_types [dense, sparse, sparse]",
            "no RoPE; per-head q_norm/k_norm (RMSNorm, eps 1e-6); softmax scale 1/head_dim (not 1/sqrt)",
            "sliding layers have their own heads: swa 2q/1kv, swa_head_dim 8; full layer 4q/2kv, head_dim 16; window 8",
            "relative bias: r_proj(x) [heads x d_rel 4] . rel_logits_proj.proj [4, extent] per backward distance, added "
            "after the scale; extent = window 8 on sliding layers, rel_extent 24 on the full layer (0 beyond)",
            "log scaling on the full layer: tau = 1 + 0.3 log(max((p + 1) / 16, 1)) multiplies q (after q_norm) and the bias",
            "four residual short convs per layer, h + depthwise_conv4(h), no bias, no activation: k_sconv and v_sconv on "
            "k/v (before k_norm), attn_sconv on the attention output, mlp_sconv on the MLP output (conv states 0-3)",
            "embed_tokens.embed_norm RMSNorm after the embedding; logits = lm_head(norm(h) / logits_mup_width_multiplier 2)",
            "dense layer 0: SwiGLU MLP times mlp.global_scale (learned scalar)",
            "MoE layers 1-2: router mlp.gate.weight [E+S=6, 64]; top-2 of 4 on sigmoid + e_score_correction_bias; weights "
            "= sigmoid of the 2 chosen and the 2 shared logits over their sum (the shared experts are softmax sinks), "
            "x route_scale 1.5 x mlp.gate.global_scale; fused experts.gate_up_proj [4, 32, 64] (chunk: gate then up), "
            "experts.down_proj [4, 64, 16]; shared_experts.{gate,up,down}_proj [2, ...] each scaled by its weight",
        ],
    ),
    "inkling2_text": dict(
        seed=INKLING2_SEED,
        build=_cfg_inkling2_text,
        zero_centred_norms=False,
        init_rules=INKLING2_INIT_RULES,
        buffer_init=[(r"mlp\.gate\.e_score_correction_bias$", 0.0, 0.6)],
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        atol=INKLING2_ATOL,
        atol_note="Routing ranks sigmoid(logits) + e_score_correction_bias; the router gap reported is logit-equivalent "
        "(2 x the smallest k-th/(k+1)-th gap of the biased scores); the weights (the chosen sigmoids over their sum) are "
        "smooth once the choice is made. The L2 clips are continuous (a kink at the threshold), the softcaps smooth. "
        "fp32 noise is larger than inkling_text's: this random stack amplifies early rounding (a 6e-8 relative perturbation "
        "of the weights moves row 10 of prompt 1 by up to 1.9e-4, nearly all of it from layers 0-1), so an independent fp32 "
        "reimplementation lands at ~2e-4 (reference_inkling2.py: 1.7e-4 in fp32, 2.0e-4 in fp64), not at the 5e-5 of "
        "torch's own cached/uncached paths; atol 1e-3 leaves 5x over that.",
        features=[
            "Inkling2ForCausalLM (model_type inkling2_text), 4 layers: layer_types [hybrid_sliding, hybrid, hybrid_sliding, "
            "hybrid], every layer MoE (no dense MLP, no shared experts), n_layers_per_attn_res_block 2",
            "checkpoint as save_pretrained writes it: the hub names of conversion_mapping's inkling2_text entry, reversed "
            "(model.llm.layers.N.attn.{wq_du,wk_dv,wv_dv,wr_du,wo_ud,gate_attn,attn_sink_proj}.weight, attn.{q,rel}_l2_clip.scale, "
            "attn.{k,v}_sconv.weight (sliding) / .static_w + .weight_proj (full), attn_sconv / mlp_sconv.weight, attn_norm / "
            "{q,k,v}_input_norm / mlp_norm.weight, mlp.gate.{weight,bias}, mlp.experts.w13_weight (gate/up rows interleaved) "
            "and w2_weight, model.llm.attn_res.{attn_queries.(N-1), mlp_queries.N, output_query}, model.llm.{embed, embed_norm, "
            "norm, unembed}.weight)",
            "attention: no RoPE, no q/k RMSNorm; q = ScaledL2Clip(q_proj x) (per-head learned scale, then the norm clipped to "
            "qk_l2_clip_threshold 4: x * min(1, 4 / (|x| + 1e-6))), k = L2Clip(sconv(k_proj x)) (no scale), v = unweighted "
            "RMSNorm(sconv(v_proj x)) (eps rms_norm_eps), relative states r = ScaledL2Clip(r_proj x) with rel_l2_clip_threshold 2; "
            "softmax scale head_dim^-0.5",
            "per-token attention sinks: sink_proj(x) [heads] is one extra logit per query and head in the softmax (zero value); "
            "output gate: o_proj(attn * sigmoid(gate_proj(x)))",
            "sliding layers: swa 2q/1kv, swa_head_dim 8, window 8 (key j visible iff 0 <= p - j < 8), relative bias extent 8; "
            "full layers: 4q/2kv x 16, relative bias extent rel_extent 24, log scaling tau = 1 + 0.3 log(max((p + 1) / 16, 1)) "
            "multiplying q and r after their clips",
            "short convs: static depthwise conv (weight [C, 1, 4], tap 3 the current token) with output (x + conv(x)) / sqrt(5) "
            "on k/v of the sliding layers and on every layer's attention and MLP outputs; the full layers' k/v use the dynamic "
            "conv: taps static_weight [4, C] (row 0 the current token) + weight_proj(k or v input) [kv_heads x 4] shared "
            "within a kv head, output (x + conv(x)) / sqrt(9)",
            "block attention residuals: each layer's attention input (layer > 0; 3 queries q/k/v on the full layers, each "
            "through its own q/k/v_input_layernorm) and MLP input, and the final norm's input, are softmax(query . rms(s) / "
            "sqrt(64)) averages of the RMS-normalised (no weight, eps 1e-6) sources [embedding, finished block sums..., the "
            "current partial block sum]; a block-boundary layer (index % 2 == 0) pushes its input onto the sources and "
            "restarts the partial sum at its attention output",
            "MoE: router mlp.gate.weight [4, 64] fp32, sigmoid scores, top-2 on scores + e_score_correction_bias, weights = "
            "chosen scores / (their sum + 1e-20) x route_scale 1.5; experts SoftcappedSwiGLU: down(2 tanh(g / 2) sigmoid(g) "
            "x 2 tanh(u / 2)) with mlp_gate_softcap 2, mlp_up_softcap 2, gate_up_proj [4, 32, 64] (gate rows first at run time)",
            "embed_tokens.embed_norm RMSNorm after the embedding; logits = 20 tanh(lm_head(norm(h)) / 20) "
            "(final_logit_softcapping 20), then the first unpadded_vocab_size 250 of 256 columns",
        ],
    ),
    "glm5_next": dict(
        seed=GLM5_NEXT_SEED,
        build=_cfg_glm5_next,
        model_class="Glm5NextForConditionalGeneration",
        zero_centred_norms=False,
        init_rules=GLM5_NEXT_INIT_RULES,
        row_scale=GLM5_NEXT_ROW_SCALE,
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        dsa=True,
        atol=GLM5_NEXT_ATOL,
        atol_note="Routing: sigmoid(logits) + e_score_correction_bias chooses the top-2 of 4 (n_group 1: no group mask); "
        "weights are the unbiased sigmoids renormalised x routed_scaling_factor, smooth once the choice is made. The "
        "pool selection is a discrete choice too (checks.indexer: its k-th vs next pool-score cut); the SwiGLU clamps "
        "are continuous. fp32 noise: perturbing the weights by 6e-8 (relative) moves the rows by up to 4.2e-5 and "
        "transformers' own chunked prefill (pieces of 1, 7, 16) lands within 5.6e-5 of the uncached rows, so a correct "
        "fp32 reimplementation lands near 3e-5 (reference_glm5_next.py: 2.7e-5 in fp32, 2.2e-5 in fp64); atol 5e-4 (the "
        "KDA families') leaves 9x over the worst of those.",
        features=[
            "Glm5NextForConditionalGeneration (model_type glm5_next, text_config model_type glm5_next_text) served "
            "text-only (input_ids only); there is no CausalLM class and AutoModelForCausalLM refuses both config classes. "
            "4 layers: layer_types [linear_attention, indexed_attention, indexed_attention, linear_attention], "
            "indexer_types [full, full, shared, full] (read on layers 1 and 2 only), mlp_layer_types [dense, sparse, "
            "dense, sparse]",
            "checkpoint as save_pretrained writes it (conversion_mapping's glm5_next entry reversed): "
            "model.language_model.layers.N.hc_{attn,ffn}_{fn [15, 192], base [15], scale [3]}; KDA "
            "self_attn.{q,k,v}_proj, {q,k,v}_conv1d.weight [32, 1, 4], f_a_proj, f_b_proj, dt_bias [32], A_log [2], "
            "b_proj, g_a_proj, g_b_proj, o_norm, o_proj; MLA self_attn.{q_a_proj, q_a_layernorm, q_b_proj, "
            "kv_a_proj_with_mqa [32, 64] (no rope rows), kv_a_layernorm, kv_b_proj, o_proj}; layer 1 "
            "self_attn.indexer.{wq_b [256, 16], wk, k_norm.{weight,bias}, weights_proj [16, 64], "
            "index_kpool_compress_gate [16, 64], index_kpool_compress_ape [4, 16]}; mlp.experts.E.{gate,up,down}_proj, "
            "mlp.gate.{weight, e_score_correction_bias}, mlp.shared_experts.*; untied lm_head.weight; plus a one-block "
            "model.visual.* tower that text-only never runs",
            "mHC, hc_mult 3: the streams start as 3 copies of the embedding; at each block site m = fn . (the 3 x 64 "
            "streams flattened and RMS-normalised without weight, eps rms_norm_eps); pre = sigmoid(m[0:3] scale0 + "
            "base) + hc_eps, post = 2 sigmoid(m[3:6] scale1 + base), comb = softmax over k of (m[6:15] viewed [j, k] "
            "scale2 + base) + hc_eps, then Sinkhorn (column sums first, then 19 x row and column sums, + hc_eps in each "
            "denominator); block input input_layernorm / post_attention_layernorm (sum_n pre_n h_n); update h'_k = "
            "post_k y + sum_j comb[j, k] h_j (comb transposed); head: the mean of the streams, norm, lm_head",
            "KDA layers 0 and 3 (2 heads x 16, short conv 4): SiLU(causal depthwise conv of q|k|v_proj), q and k "
            "l2-normalised (x / sqrt(sum x^2 + 1e-6)), q x 16^-0.5, beta = sigmoid(b_proj x), the bounded per-channel "
            "decay g = -5 sigmoid(exp(A_log[h]) (f_b(f_a x) + dt_bias)), S <- diag(exp g) S + k (beta (v - S^T k))^T, "
            "o = S^T q; output o_proj(RMSNorm(o) per head (eps rms_norm_eps) x o_norm.weight x sigmoid(g_b(g_a x))); "
            "decay per token 0.06-0.99 (median 0.70)",
            "NoPE MLA on layers 1 and 2 (2 heads): q = q_b(q_a_layernorm(q_a x)) [2 x 16], cached latent = "
            "kv_a_layernorm(kv_a_proj_with_mqa x) [32], k | v = kv_b(latent) [2 x (16 | 16)], scale 16^-0.5, no rotary "
            "anywhere; q_a_layernorm and kv_a_layernorm use rms_norm_eps 1e-5 (not DeepSeek-V3's 1e-6): q_a_proj and "
            "kv_a_proj_with_mqa drawn 1/32 smaller so the eps shows (1e-6 moves the rows by 0.06 / 0.15)",
            "k-pooled DSA indexer on layer 1 (16 heads x 16): per token it caches k = LayerNorm(wk x) (eps 1e-6, weight "
            "+ bias), gate = index_kpool_compress_gate x and a valid flag; pools of index_kpool 4 consecutive valid "
            "tokens counted from the first non-pad token; pool key = sum_j softmax_j(gate_j + ape_j) k_j per feature "
            "(ape = index_kpool_compress_ape [4, 16]); score(t, pool) = sum_h weights_proj(x_t)_h / 4 x ReLU(q_h . "
            "pool key / 4) with q = wq_b(q_resid); a pool is eligible once its last token is <= t; each query keeps "
            "its best index_topk / index_kpool = 2 eligible pools (all of them if <= 2) plus the raw tail, tokens "
            "4 floor((t + 1) / 4) .. t; the MLA softmax runs over those keys only (finfo.min elsewhere), so a query "
            "that ends a pool it did not choose does not attend to itself (24 of the 153 uncached positions)",
            "layer 2 is 'shared': no indexer weights; it attends to layer 1's selection (transformers hands a selection "
            "only from a full indexed layer to the layer right after it)",
            "MoE on layers 1 and 3: DeepSeek-V3 router (fp32 sigmoid, e_score_correction_bias N(0, 0.3) added for the "
            "choice, n_group 1, top-2 of 4, renormalised + 1e-20, x routed_scaling_factor 2.5) plus one shared expert "
            "(16); every SwiGLU (routed and shared experts, the dense layers' 16-wide MLP) clamps gate <= 1.5 and up to "
            "[-1.5, 1.5] before silu(gate) x up (checks.swiglu_clamp counts the routed experts')",
            "prompts 5, 23, 80 (+15 generated): queries from position 11 on have more than 2 complete pools "
            "(checks.indexer, checks.top_k_vs_full_attention); the KDA states are carried across multi-token "
            "continuations (checks.continuation)",
        ],
    ),
}
