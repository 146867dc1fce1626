"""Attention decoders with routed experts (Mixtral and its relatives, DeepSeek-V3-style routers,
mixtures of attention heads).

Each FAMILIES entry: a seed, a config builder, whether the norms are zero-centred and the features
the fixture exercises (make_fixtures.py reads them)."""

from oracle_common import *  # noqa: F401,F403


def _cfg_gpt_oss():
    from transformers import GptOssConfig

    return GptOssConfig(
        **COMMON,
        num_hidden_layers=2,
        head_dim=16,
        rms_norm_eps=1e-5,
        sliding_window=8,
        num_local_experts=4,
        num_experts_per_tok=2,
        swiglu_limit=1.5,  # small on purpose so the clamps bite with O(1) activations
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 150000.0,
            "factor": 4.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 64,
        },
    )


def _cfg_mixtral():
    from transformers import MixtralConfig

    return MixtralConfig(
        **COMMON,
        num_hidden_layers=2,
        rms_norm_eps=1e-5,
        sliding_window=8,
        num_local_experts=4,
        num_experts_per_tok=2,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )


def _cfg_qwen2_moe():
    from transformers import Qwen2MoeConfig

    return Qwen2MoeConfig(
        **COMMON,
        num_hidden_layers=4,
        rms_norm_eps=1e-6,
        decoder_sparse_step=2,  # MoE where (i+1) % 2 == 0 -> layers 1, 3; dense 0, 2
        mlp_only_layers=[],
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=48,
        norm_topk_prob=False,
        qkv_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )


def _cfg_qwen3_moe():
    from transformers import Qwen3MoeConfig

    return Qwen3MoeConfig(
        **COMMON,
        num_hidden_layers=3,
        head_dim=32,  # not a declared field; modeling reads it with getattr, as real checkpoints do
        rms_norm_eps=1e-6,
        decoder_sparse_step=1,
        mlp_only_layers=[1],  # layers 0, 2 MoE; 1 dense
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        norm_topk_prob=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )

# Laguna's tiny shape, shared by its two fixtures.
LAGUNA_KWARGS = dict(
    num_hidden_layers=4,
    head_dim=16,
    num_attention_heads_per_layer=[4, 2, 6, 4],
    layer_types=["full_attention", "sliding_attention", "full_attention", "sliding_attention"],
    sliding_window=8,
    num_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=48,
    moe_routed_scaling_factor=2.0,
    tie_word_embeddings=False,
    rope_parameters={
        "full_attention": {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0},
    },
)


# minimax_m3_vl_text's tiny shape, shared by its two fixtures (all layers full attention, and with block-sparse layers).
MINIMAX_M3_TEXT_KWARGS = dict(
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    rotary_dim=4,
    intermediate_size=16,
    dense_intermediate_size=32,
    shared_intermediate_size=24,
    num_local_experts=4,
    num_experts_per_tok=2,
    routed_scaling_factor=2.0,
    swiglu_limit=1.5,
    mlp_layer_types=["dense", "sparse", "sparse"],
    tie_word_embeddings=False,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
)


# minimax_m3_vl_text_sparse's indexer norms: 1 + w with w ~ N(1, 0.1), a gain of about 2 on both the indexer query
# and key, so the block scores (|q . k| <= 16 x 4) spread over ~+-50 and the seed's selection cut is large in raw
# score units (the cut relative to the scores' spread is what a gain cannot change; checks.block_indexer has both).
MINIMAX_M3_INDEXER_INIT_RULES = [
    (r"self_attn\.indexer\.[qk]_norm\.weight$", 1.0, 0.1),
]


# ZAYA1 (model_type zaya)'s tiny shape. COMMON without intermediate_size: ZayaConfig has no dense MLP (every
# layer is MoE), and the key would only land unread in config.json.
ZAYA_KWARGS = dict(
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    num_experts=4,
    num_experts_per_tok=1,
    moe_intermediate_size=16,  # 32 would put the directory at ~415 kB, over the 400 kB limit; 16 gives 340 kB
    router_hidden_size=16,
    cca_time0=2,
    cca_time1=3,
    attention_bias=True,
    lm_head_bias=False,
    tie_word_embeddings=False,
    layer_types=["hybrid", "hybrid_sliding", "hybrid"],
    sliding_window=8,
    rope_parameters={
        "hybrid": {"rope_type": "default", "rope_theta": 5000000.0, "partial_rotary_factor": 0.5},
        "hybrid_sliding": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
    },
)


def _cfg_zaya():
    from transformers import ZayaConfig

    common = {k: v for k, v in COMMON.items() if k != "intermediate_size"}
    return ZayaConfig(**{**common, **ZAYA_KWARGS})


# ZAYA's upstream init leaves several vectors degenerate (qk_norm.temp 0, so every key is 0; the residual-scaling
# and input affine vectors at exactly 1 / 0; router_states_scale 1; balancing_biases 0 with the skip class at -1,
# so the skip class is never chosen). Every one is redrawn here (balancing_biases by the entry's buffer_init) so
# that a reimplementation that drops or misplaces it fails.
ZAYA_INIT_RULES = [
    (r"qk_norm\.temp$", 1.0, 0.3),  # the per-KV-head key temperature
    (r"input_hidden_states_scale$", 1.0, 0.2),
    (r"input_hidden_states_bias$", 0.0, 0.2),
    (r"_residual_scale\.(hidden_states|residual)_scale$", 1.0, 0.2),
    (r"_residual_scale\.(hidden_states|residual)_bias$", 0.0, 0.2),
    (r"gate\.router_states_scale$", 0.5, 0.3),  # EDA: how much of the previous layer's router state is added
    (r"conv_qk_depthwise\.weight$", 0.0, 0.5),  # 2 taps: fan-in 2
    (r"conv_qk_grouped\.weight$", 0.0, 0.15),  # 16 channels x 3 taps: fan-in 48
    (r"conv_qk_(depthwise|grouped)\.bias$", 0.0, 0.2),
    (r"qkv_proj\.(q_proj|k_proj|v_proj_current|v_proj_delayed)\.bias$", 0.0, 0.2),  # v_proj_delayed's is v at t=0
    (r"self_attn\.o_proj\.bias$", 0.0, 0.1),
    (r"router_mlp\.fc[12]\.weight$", 0.0, 0.5),  # fan-in 16
    (r"router_mlp\.fc[12]\.bias$", 0.0, 0.2),
    (r"router_mlp\.out_proj\.weight$", 0.0, 2.0),  # a decisive router over E+1 classes (logit std ~10-20)
    # token embeddings well above the input/residual biases, or every position's hidden state looks alike and the
    # router sends every token of a layer to one class
    (r"embed_tokens\.weight$", 0.0, 1.0),
]


FAMILIES = {
    "gpt_oss": dict(
        atol_note="The swiglu clamps are 1-Lipschitz; a value within ~1e-6 of the limit can only move its output by that much. Sinks only add to the softmax denominator.",
        seed=1706,
        build=_cfg_gpt_oss,
        zero_centred_norms=False,
        std={"sinks": 0.5, "router_bias": 0.3},
        features=[
            "per-head attention sinks (N(0,0.5))",
            "rope yarn factor 4, original_max_position_embeddings 64, truncate=false (fractional ramp)",
            "yarn attention_factor 0.1*ln(4)+1 multiplies cos and sin",
            "MoE 4 experts top-2, router with bias, softmax over the top-k logits",
            "clamped SwiGLU with swiglu_limit=1.5, alpha 1.702, (up+1), interleaved gate/up columns",
            "q/k/v/o biases, layer_types [sliding, full], window 8",
        ],
    ),
    "mixtral": dict(
        atol_note="Routing weights are renormalised top-2 softmax in fp32.",
        seed=1999,
        build=_cfg_mixtral,
        zero_centred_norms=False,
        features=[
            "MoE 4 experts top-2 on every layer, softmax (fp32) -> top-2 -> renormalise",
            "sliding_window=8 on every layer",
            "checkpoint names block_sparse_moe.experts.N.w1/w2/w3 (save_pretrained reverts the fused layout)",
        ],
    ),
    "olmoe": dict(
        atol_note="Routing weights are top-2 softmax probabilities in fp32, not renormalised.",
        seed=15210,
        build=_config(
            "OlmoeConfig",
            num_hidden_layers=2,
            rms_norm_eps=1e-6,
            num_experts=4,
            num_experts_per_tok=2,
            intermediate_size=32,
            norm_topk_prob=False,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "MoE 4 experts top-2 on every layer, softmax (fp32) -> top-2, not renormalised (norm_topk_prob=false)",
            "RMS q/k norms over the whole q and k projections (OLMo's), before RoPE",
            "checkpoint names mlp.gate and mlp.experts.N.{gate,up,down}_proj (save_pretrained reverts the fused layout)",
        ],
    ),
    "glm4_moe": dict(
        atol_note=SIGMOID_ROUTER_NOTE,
        seed=15339,
        build=_config(
            "Glm4MoeConfig",
            num_hidden_layers=2,
            head_dim=24,
            rms_norm_eps=1e-6,
            attention_bias=True,
            use_qk_norm=True,
            partial_rotary_factor=0.5,
            first_k_dense_replace=1,
            n_routed_experts=8,
            num_experts_per_tok=2,
            n_group=2,
            topk_group=1,
            moe_intermediate_size=16,
            n_shared_experts=1,
            norm_topk_prob=True,
            routed_scaling_factor=1.5,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.5},
        ),
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        zero_centred_norms=False,
        features=[
            "first_k_dense_replace=1: layer 0 dense, layer 1 MoE",
            "DeepSeek-V3 router: sigmoid(fp32) + e_score_correction_bias (N(0,0.3)) for the choice, 8 experts in n_group 2 groups of 4 (top-2-sum score), topk_group 1, top-2, renormalised (+1e-20) x routed_scaling_factor 1.5; one shared expert (16)",
            "q/k/v biases without an o bias; per-head q/k norms (use_qk_norm); decoupled head_dim 24",
            "rotate-half RoPE on the first half of each head (partial_rotary_factor 0.5)",
        ],
    ),
    "ernie4_5_moe": dict(
        atol_note="Routing: fp32 softmax, the correction bias added to the probabilities for the choice only, the chosen unbiased probabilities renormalised; smooth once the choice is made.",
        seed=15444,
        build=_config(
            "Ernie4_5_MoeConfig",
            num_hidden_layers=3,
            rms_norm_eps=1e-6,
            use_bias=True,
            moe_num_experts=4,
            moe_k=2,
            moe_intermediate_size=16,
            moe_num_shared_experts=1,
            moe_layer_start_index=2,
            moe_layer_end_index=-1,
            moe_layer_interval=1,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        ),
        # A decisive router: the choice ranks probabilities (gaps in probability units).
        init_rules=[(r"mlp\.gate\.weight$", 0.0, 2.0)],
        buffer_init=[(r"moe_statics\.e_score_correction_bias$", 0.0, 0.1)],
        zero_centred_norms=False,
        features=[
            "MoE on layer 2 only (moe_layer_start_index 2, end -1 = the last), layers 0-1 dense",
            "fp32 softmax router; the [1, E] correction bias (N(0, 0.1)) added to the probabilities for the top-2 choice only; always renormalised",
            "one shared expert (16) with biases; use_bias: q/k/v/o, dense MLP and LM head biases, none on the routed experts",
            "RoPE on interleaved pairs; an untied LM head with its own bias",
        ],
    ),
    "hunyuan_v1_moe": dict(
        atol_note="Routing weights are top-2 fp32 softmax probabilities renormalised; smooth once the choice is made.",
        seed=15512,
        build=_config(
            "HunYuanMoEV1Config",
            num_hidden_layers=2,
            head_dim=16,
            intermediate_size=32,
            rms_norm_eps=1e-6,
            attention_bias=False,
            num_experts=4,
            moe_topk=2,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "dynamic", "factor": 1.0, "alpha": 1000.0, "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "MoE on every layer: fp32 softmax router mlp.gate.wg, top-2 (moe_topk), always renormalised, + one shared MLP (shared_mlp) of intermediate_size",
            "per-head q/k RMS norms (query_layernorm, key_layernorm) after RoPE",
            "RoPE 'dynamic' with alpha 1000: static NTK base 10000 x 1000^(16/14)",
        ],
    ),
    "flex_olmo": dict(
        atol_note="Routing weights are top-2 softmax probabilities in fp32, renormalised.",
        seed=15700,
        build=_config(
            "FlexOlmoConfig",
            num_hidden_layers=2,
            rms_norm_eps=1e-6,
            num_experts=4,
            num_experts_per_tok=2,
            intermediate_size=32,
            norm_topk_prob=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        ),
        zero_centred_norms=False,
        features=[
            "OLMo-2 post-norm layers: x + norm(attn(x)), then x + norm(moe(x)); no input norm",
            "RMS q/k norms over the whole q and k projections, before RoPE",
            "MoE 4 experts top-2 on every layer, softmax (fp32), renormalised (norm_topk_prob=true)",
        ],
    ),
    "dots1": dict(
        atol_note=SIGMOID_ROUTER_NOTE,
        seed=15813,
        build=_config(
            "Dots1Config",
            num_hidden_layers=3,
            head_dim=16,
            rms_norm_eps=1e-6,
            attention_bias=True,
            sliding_window=8,
            max_window_layers=2,
            first_k_dense_replace=1,
            n_routed_experts=4,
            n_shared_experts=1,
            num_experts_per_tok=2,
            moe_intermediate_size=16,
            norm_topk_prob=True,
            routed_scaling_factor=2.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        zero_centred_norms=False,
        features=[
            "first_k_dense_replace=1: layer 0 dense, layers 1-2 MoE",
            "max_window_layers=2, sliding_window=8: layer 2 slides (the prompts of 13 and 29 tokens cross it)",
            "DeepSeek-V3 router: sigmoid(fp32) + e_score_correction_bias (N(0,0.3)) for the choice, top-2 of 4, renormalised x routed_scaling_factor 2.0; one shared expert (16)",
            "Qwen3 attention: per-head q/k norms before RoPE; attention_bias on q/k/v and o",
        ],
    ),
    "granitemoe": dict(
        atol_note="Routing weights are a softmax over the top-2 router logits; smooth once the choice is made.",
        init_rules=[(r"block_sparse_moe\.router\.weight$", 0.0, 1.0)],  # a decisive router
        seed=16714,
        build=_config(
            "GraniteMoeConfig",
            num_hidden_layers=2,
            intermediate_size=32,
            rms_norm_eps=1e-6,
            num_local_experts=4,
            num_experts_per_tok=2,
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            attention_multiplier=0.125,
            logits_scaling=2.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "MoE 4 experts top-2 on every layer: softmax over the top-2 logits; fused block_sparse_moe.input_linear / output_linear, router.layer",
            "Granite multipliers: embeddings x2, residual branches x0.5, attention scale 0.125, logits / 2",
        ],
    ),
    "granitemoeshared": dict(
        atol_note="Routing weights are a softmax over the top-2 router logits; smooth once the choice is made.",
        init_rules=[(r"block_sparse_moe\.router\.weight$", 0.0, 1.0)],  # a decisive router
        seed=16823,
        build=_config(
            "GraniteMoeSharedConfig",
            num_hidden_layers=2,
            intermediate_size=32,
            shared_intermediate_size=48,
            rms_norm_eps=1e-6,
            num_local_experts=4,
            num_experts_per_tok=2,
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            attention_multiplier=0.125,
            logits_scaling=2.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "as granitemoe, plus a shared MLP (shared_mlp.input_linear / output_linear, 48) on the same normed input, added to the experts'",
        ],
    ),
    "solar_open": dict(
        atol_note=SIGMOID_ROUTER_NOTE,
        seed=17308,
        build=_config(
            "SolarOpenConfig",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            attention_bias=True,
            n_routed_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=16,
            n_shared_experts=1,
            norm_topk_prob=True,
            routed_scaling_factor=1.5,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        ),
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        zero_centred_norms=False,
        features=[
            "MoE on every layer (no dense intermediate_size): DeepSeek-V3 router, sigmoid + correction bias (N(0,0.3)) for the choice, top-2 of 4, renormalised x 1.5; one shared expert (16)",
            "q/k/v biases without an o bias (attention_bias)",
        ],
    ),
    "mellum": dict(
        atol_note="Routing weights are top-2 softmax probabilities in fp32, renormalised.",
        seed=17427,
        build=_config(
            "MellumConfig",
            num_hidden_layers=3,
            head_dim=16,
            rms_norm_eps=1e-6,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
            mlp_layer_types=["sparse", "dense", "sparse"],
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=16,
            norm_topk_prob=True,
            tie_word_embeddings=False,
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            },
        ),
        zero_centred_norms=False,
        features=[
            "layer_types [sliding, full, sliding] (window 8) with RoPE theta per layer type (5e5 full, 1e4 sliding)",
            "mlp_layer_types [sparse, dense, sparse]: Qwen3-MoE router (fp32 softmax, top-2 of 4, renormalised), no shared expert",
            "per-head q/k norms",
        ],
    ),
    "hy_v3": dict(
        atol_note=SIGMOID_ROUTER_NOTE,
        seed=17509,
        build=_config(
            "HYV3Config",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            num_experts=4,
            num_experts_per_tok=2,
            num_shared_experts=1,
            moe_intermediate_size=16,
            router_scaling_factor=2.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        buffer_init=[(r"e_score_correction_bias$", 0.0, 0.3)],
        zero_centred_norms=False,
        features=[
            "mlp_layer_types default: layer 0 dense, layer 1 MoE",
            "sigmoid router (fp32) + correction bias (N(0,0.3), on the MoE block, mlp.expert_bias on disk) for the choice, top-2 of 4, renormalised (+1e-20) x router_scaling_factor 2.0; one shared expert (shared_mlp, 16)",
            "per-head q/k norms",
        ],
    ),
    "exaone_moe": dict(
        atol_note=SIGMOID_ROUTER_NOTE,
        seed=17638,
        build=_config(
            "ExaoneMoeConfig",
            num_hidden_layers=3,
            num_key_value_heads=2,
            rms_norm_eps=1e-6,
            sliding_window=8,
            sliding_window_pattern=2,
            first_k_dense_replace=2,
            num_experts=4,
            num_experts_per_tok=2,
            num_shared_experts=1,
            moe_intermediate_size=16,
            routed_scaling_factor=1.5,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        zero_centred_norms=False,
        features=[
            "pre-norm; sliding_window_pattern 2: layers 0, 2 sliding (window 8, RoPE), 1 full and NoPE; per-head q/k norms",
            "first_k_dense_replace 2: layers 0-1 dense, 2 MoE: sigmoid + correction bias (N(0,0.3)), top-2 of 4, renormalised x 1.5; one shared expert (16)",
        ],
    ),
    "cohere2_moe": dict(
        atol_note="Routing weights are a softmax over the top-2 router logits; smooth once the choice is made.",
        seed=17715,
        build=_config(
            "Cohere2MoeConfig",
            num_hidden_layers=3,
            head_dim=16,
            first_k_dense_replace=1,
            prefix_dense_intermediate_size=48,
            intermediate_size=32,
            sliding_window=8,
            sliding_window_pattern=2,
            num_experts=4,
            num_experts_per_tok=2,
            logit_scale=0.5,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "parallel blocks over one bias-free LayerNorm; logits x logit_scale 0.5; interleaved RoPE",
            "layer 0 dense (prefix, 48 wide, full, rotates: prefix pattern 1), layers 1-2 MoE: layer 1 sliding (window 8, RoPE), layer 2 full and NoPE",
            "router: the top-2 logits, then a softmax over them (expert_selection_fn softmax)",
        ],
    ),
    "granitemoe_swa": dict(
        atol_note="Routing weights are a softmax over the top-2 router logits; smooth once the choice is made.",
        seed=17905,
        build=_config(
            "GraniteMoeSWAConfig",
            num_hidden_layers=2,
            intermediate_size=32,
            shared_intermediate_size=48,
            rms_norm_eps=1e-6,
            sliding_window=8,
            num_local_experts=4,
            num_experts_per_tok=2,
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            attention_multiplier=0.125,
            logits_scaling=2.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        init_rules=[(r"block_sparse_moe\.router\.weight$", 0.0, 1.0), (r"self_attn\.sinks$", 0.0, 1.0)],
        zero_centred_norms=False,
        features=[
            "granitemoeshared with Granite-SWA's attention: layer 0 full, layer 1 sliding (window 8), sinks (N(0, 1))",
            "fused v5 names: block_sparse_moe.router, experts.gate_up_proj / down_proj (no conversion renames them)",
        ],
    ),
    "phimoe": dict(
        atol_note="Sparsemixer weights: each of the two experts' softmax among those within the relative "
        "threshold 2 * router_jitter_noise of its round's best; piecewise smooth, the seed keeps every "
        "logit >= 0.01 from a threshold crossing and from the top-2 cut.",
        seed=18003,
        build=_config(
            "PhimoeConfig",
            num_hidden_layers=2,
            intermediate_size=32,
            rms_norm_eps=1e-5,
            sliding_window=8,
            num_local_experts=4,
            num_experts_per_tok=2,
            router_jitter_noise=0.1,
            attention_bias=True,
            lm_head_bias=True,
            tie_word_embeddings=False,
            rope_parameters={
                "rope_type": "longrope",
                "rope_theta": 10000.0,
                "short_factor": [1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0],
                "long_factor": [2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0],
                "short_mscale": 1.25,
                "long_mscale": 1.25,
                "original_max_position_embeddings": 64,
            },
            max_position_embeddings=256,
        ),
        init_rules=[(r"mlp\.router\.weight$", 0.0, 1.0)],  # a decisive router
        zero_centred_norms=False,
        features=[
            "sparsemixer router over 4 experts: top-2 by logit, each weighted by a masked softmax "
            "(threshold 2 * router_jitter_noise = 0.2), unnormalised",
            "LayerNorm (weight and bias) everywhere, q/k/v/o biases, an LM-head bias",
            "longrope: short factors at every length, cos/sin scaled by short_mscale = long_mscale = 1.25",
            "sliding_window=8 on every layer; checkpoint names block_sparse_moe.experts.N.w1/w2/w3",
        ],
    ),
    "dbrx": dict(
        atol_note="Routing weights are top-2 softmax probabilities over their sum; the q/k/v clamp is "
        "1-Lipschitz.",
        seed=18199,
        build=_config(
            "DbrxConfig",
            d_model=64,
            n_heads=4,
            n_layers=2,
            max_seq_len=256,
            attn_config={"clip_qkv": 1.5, "kv_n_heads": 2, "rope_theta": 10000.0},
            ffn_config={"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2},
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        init_rules=[(r"ffn\.router\.layer\.weight$", 0.0, 1.0)],  # a decisive router
        zero_centred_norms=False,
        features=[
            "nested attn_config (kv_n_heads 2, clip_qkv 1.5 clamps about 13% of the fused Wqkv outputs) and ffn_config",
            "softmax router over 4 experts, top-2, divided by the L1 norm (moe_normalize_expert_weights 1)",
            "experts as row blocks transformer.blocks.N.ffn.experts.mlp.w1 / v1 / w2 of [4 * 32, 64]",
            "LayerNorms with a weight and no bias; names transformer.wte, blocks.N.norm_attn_norm.*, norm_f",
        ],
    ),
    "kolibri1": dict(
        atol_note="Routing weights are sigmoids of the chosen logits over their sum; smooth once the choice is made.",
        seed=18223,
        build=_config(
            "Kolibri1Config",
            num_hidden_layers=2,
            head_dim=16,
            layer_types=["sliding_attention", "full_attention"],
            sliding_window=8,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=48,
            norm_topk_prob=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        init_rules=[(r"mlp\.gate\.weight$", 0.0, 1.0)],  # a decisive router
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 3.0)],  # on the logits' scale: it steers choices
        zero_centred_norms=False,
        features=[
            "GLM-4 sandwich norms; EXAONE-4 attention: per-head q/k norms, layer 0 sliding (window 8, RoPE), layer 1 full and NoPE",
            "router: top-2 of 4 by logit + correction bias (N(0, 3)), weighted by sigmoid(logit), renormalised (norm_topk_prob)",
            "an ungated-by-router shared expert (48) on every layer; fused experts saved per expert",
        ],
    ),
    "aria_text": dict(
        atol_note="Routing weights are a softmax over the top-2 logits; smooth once the choice is made.",
        seed=18411,
        build=_config(
            "AriaTextConfig",
            num_hidden_layers=2,
            hidden_act="gelu_pytorch_tanh",
            moe_num_experts=4,
            moe_topk=2,
            moe_num_shared_experts=2,
            intermediate_size=32,
            mlp_bias=True,
            attention_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        init_rules=[(r"mlp\.router\.weight$", 0.0, 1.0)],  # a decisive router
        zero_centred_norms=False,
        features=[
            "MoE on every layer: top-2 of 4 logits, softmax over the chosen; experts fused and transposed (fc1 [E, H, 2I], fc2 [E, I, H]), SiLU-gated",
            "a shared expert 2 x 32 wide with biases (mlp_bias) following hidden_act gelu_pytorch_tanh, unlike the routed experts",
            "attention_bias: q/k/v and o biases",
        ],
    ),
    "flint": dict(
        atol_note="Routing weights are sigmoids of the chosen logits over their sum; smooth once the choice is made.",
        seed=18524,
        build=_config(
            "FlintConfig",
            num_hidden_layers=4,
            head_dim=16,
            sliding_window=8,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=48,
            mlp_only_layers=[0],
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        init_rules=[
            (r"mlp\.gate\.weight$", 0.0, 1.0),  # a decisive router
            (r"self_attn\.sinks$", 0.0, 1.0),  # sinks that weigh in the softmax
        ],
        zero_centred_norms=False,
        features=[
            "the class's layer pattern over 4 layers: 0, 1, 3 full and NoPE, 2 sliding (window 8) with RoPE; per-head q/k RMS norms; learned sinks (N(0, 1))",
            "layer 0 dense (mlp_only_layers), layers 1-3 MoE: top-2 of 4 by sigmoid(logit) in fp32, renormalised, plus an ungated shared expert (48)",
            "sinks stored as self_attn.softmax_offset; experts saved per expert",
        ],
    ),
    "afmoe": dict(
        atol_note="Routing weights are sigmoids of the chosen logits over their sum; smooth once the choice is made.",
        seed=18701,
        build=_config(
            "AfmoeConfig",
            num_hidden_layers=4,
            head_dim=16,
            global_attn_every_n_layers=2,
            sliding_window=8,
            num_dense_layers=1,
            num_experts=4,
            num_experts_per_tok=2,
            num_shared_experts=1,
            moe_intermediate_size=32,
            route_scale=1.5,
            mup_enabled=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        init_rules=[
            (r"mlp\.router\.gate\.weight$", 0.0, 1.0),  # a decisive router
            (r"mlp\.expert_bias$", 0.0, 0.3),  # on the sigmoid scores' scale: it steers choices
            (r"embed_tokens\.weight$", 0.0, 0.125),  # x sqrt(64) = 8 under mup_enabled: unit-scale inputs
        ],
        zero_centred_norms=False,
        features=[
            "four RMSNorms per layer; per-head q/k norms; o * sigmoid(gate_proj(x)) before o_proj",
            "global_attn_every_n_layers 2: layers 0, 2 sliding (window 8, RoPE), 1, 3 full and NoPE",
            "layer 0 dense, 1-3 MoE: top-2 of 4 by sigmoid + expert_bias, sigmoid weights renormalised x route_scale 1.5, a 32-wide shared expert",
            "mup_enabled: embeddings x sqrt(64)",
        ],
    ),
    "laguna": dict(
        atol_note="Softplus head gates and the routed sum x 2 put fp32 cached/uncached noise at ~1e-5 "
        "(transformers' own), so the bound is 2.5e-4; routing weights are smooth once the choice is made. The router "
        "gap is 0.013, under the usual 0.018: no seed of 18800..18999 reached 0.018 with routing that survives the "
        "SIMT test's bf16 activations (seed 18827 did, at 0.028, and flipped an expert there).",
        seed=18978,
        atol=2.5e-4,
        build=_config("LagunaConfig", **LAGUNA_KWARGS),
        init_rules=[
            (r"mlp\.gate\.weight$", 0.0, 0.5),  # a decisive router, its sigmoids not saturated
            (r"mlp\.gate\.e_score_correction_bias$", 0.0, 0.3),  # on the sigmoid scores' scale
            (r"self_attn\.g_proj\.weight$", 0.0, 0.3),  # softplus gates that vary by head and token
        ],
        zero_centred_norms=False,
        features=[
            "q heads per layer 4, 2, 6, 4 over 2 kv heads; per-head q/k norms; o x softplus(g_proj(x)) per head",
            "full layers 0, 2 rotate the first half of each head (theta 5e5), sliding 1, 3 (window 8) all of it (theta 1e4)",
            "layer 0 dense, 1-3 MoE: top-2 of 4 by sigmoid + correction bias, renormalised, x 2.0, plus a 48-wide shared expert",
        ],
    ),
    "laguna_router_cap": dict(
        atol_note="As laguna's: softplus head gates and the routed sum x 2 put fp32 cached/uncached noise at ~1e-5.",
        model_type="laguna",
        seed=19810,
        atol=2.5e-4,
        build=_config("LagunaConfig", **LAGUNA_KWARGS, moe_router_logit_softcapping=2.0),
        init_rules=[
            (r"mlp\.gate\.weight$", 0.0, 0.5),  # a decisive router, its sigmoids not saturated
            (r"mlp\.gate\.e_score_correction_bias$", 0.0, 0.3),  # on the sigmoid scores' scale
            (r"self_attn\.g_proj\.weight$", 0.0, 0.3),  # softplus gates that vary by head and token
        ],
        zero_centred_norms=False,
        features=[
            "laguna's tiny config (its features apply), with the router logits soft-capped first: "
            "2 tanh(l / 2) before the sigmoid scores (moe_router_logit_softcapping 2.0, where the logits reach ~4)",
        ],
    ),
    "mimo_v2_flash": dict(
        seed=19349,
        build=_config(
            "MiMoV2FlashConfig",
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=24,
            v_head_dim=16,
            sliding_window=8,
            attention_bias=True,
            n_routed_experts=6,
            num_experts_per_tok=2,
            moe_intermediate_size=16,
            n_group=2,
            topk_group=1,
            routed_scaling_factor=2.5,
            mlp_layer_types=["dense", "sparse", "dense"],
            tie_word_embeddings=False,
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 5000000.0, "partial_rotary_factor": 0.334},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            },
        ),
        zero_centred_norms=False,
        features=[
            "q/k heads of 24 and value heads of 16 (v_head_dim): the cache rows differ in width, o_proj reads 4 x 16; "
            "v scaled by attention_value_scale 0.707 before the cache",
            "layer 0 full (1 KV head, no sinks, theta 5e6), layers 1-2 sliding (window 8, 2 KV heads, per-head sinks "
            "attention_sink_bias, theta 1e4); RoPE on int(24 x 0.334) = 8 of 24 dims (the sliding dictionary "
            "omits the factor: the class's 0.334 fallback)",
            "q/k/v biases (attention_bias), no o_proj bias",
            "mlp_layer_types: layer 1 MoE, layers 0 and 2 dense: sigmoid router (std 0.6) with e_score_correction_bias (N(0, 0.3)), 6 experts in 2 groups (1 "
            "kept), top-2, renormalised, x 2.5; no shared expert; experts stored per expert",
        ],
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        std={"router": 0.6},
        atol_note=SIGMOID_ROUTER_NOTE,
    ),
    "beam": dict(
        atol_note=SIGMOID_ROUTER_NOTE,
        seed=19608,
        build=_config(
            "BeamConfig",
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            sliding_window=8,
            mlp_layer_types=["dense", "sparse", "dense", "sparse"],
            num_experts=8,
            num_experts_per_tok=2,
            n_group=2,
            topk_group=1,
            moe_intermediate_size=16,
            final_logit_softcapping=10.0,
        ),
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        std={"router": 1.0},
        zero_centred_norms=False,
        features=[
            "sandwich norms; per-head q/k norms; an output gate sigmoid(gate_proj(h) + gate_bias[head]) per element",
            "layers 0-2 sliding (window 8, RoPE theta 1e4 by default), layer 3 (the last) full and NoPE with its "
            "queries scaled by (1 + (p + 1) / 2048) ^ 0.1",
            "depth-scaled residual adds: x sqrt((n - 1) / n) + f / sqrt(n), n = 2(l + 1) after attention, +1 after the MLP",
            "mlp_layer_types dense, sparse, dense, sparse: DeepSeek-V3's router (sigmoid + correction bias N(0,0.3), "
            "2 groups keep 1, top-2 of 8, renormalised) x 2.5, no shared expert; per-expert checkpoint names",
            "final logits soft-capped at 10",
        ],
    ),
    "minimax_m3_vl_text": dict(
        atol_note=SIGMOID_ROUTER_NOTE,
        seed=19724,
        build=_config("MiniMaxM3VLTextConfig", **MINIMAX_M3_TEXT_KWARGS),
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        std={"router": 0.6},
        zero_centred_norms=True,
        features=[
            "1 + w RMS norms everywhere, per-head q/k norms before RoPE; RoPE on the first half of each head "
            "(partial_rotary_factor 0.5; rotary_dim 4 is never read)",
            "GPT-OSS's clamped SwiGLU (limit 1.5, so the clamps bite; alpha 1.702) with gate and up in halves: the "
            "dense MLP (32) on layer 0, the shared expert (24) and the routed experts (16) on layers 1-2",
            "sigmoid router + e_score_correction_bias (N(0,0.3)) for the choice, top-2 of 4, renormalised, x 2.0 on "
            "the routed sum only",
            "every layer full attention (the block-sparse minimax_m3_sparse layers are the minimax_m3_vl_text_sparse variant)",
        ],
    ),
    # minimax_m3_vl_text's fixture again, with layers 1 and 2 block-sparse (minimax_m3_sparse): the lightning indexer
    # picks, per query and indexer head, its own key block plus the best other block of 4 keys.
    "minimax_m3_vl_text_sparse": dict(
        atol_note=SIGMOID_ROUTER_NOTE
        + " Block selection: which key blocks a query attends to is decided by the ranking of block scores, a "
        "discontinuous choice like the router's; checks.block_indexer reports how far each choosing ranking is from a "
        "tie (raw score units, the scores reach ~50 here; both indexer norms carry a gain of about 2 so the cut is "
        "large in raw units, yet it is the gap over the scores' spread that a relative error has to beat). Once the "
        "blocks are chosen the attention is smooth.",
        model_type="minimax_m3_vl_text",
        seed=20292,
        build=_config(
            "MiniMaxM3VLTextConfig",
            **{
                **MINIMAX_M3_TEXT_KWARGS,
                "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse"],
                "index_n_heads": 2,
                "index_head_dim": 16,
                "index_block_size": 4,
                "index_topk_blocks": 2,
                "index_local_blocks": 1,
            },
        ),
        init_rules=MINIMAX_M3_INDEXER_INIT_RULES,
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        std={"router": 0.6},
        zero_centred_norms=True,
        features=[
            "minimax_m3_vl_text's tiny config (its features apply: 1 + w norms, per-head q/k norms, RoPE on the first "
            "8 of 16 dims, the clamped SwiGLU in halves, the biased sigmoid router, dense layer 0), with layer_types "
            "[full_attention, minimax_m3_sparse, minimax_m3_sparse]: layers 1-2 restrict attention to key blocks a "
            "lightning indexer selects",
            "indexer per sparse layer (self_attn.indexer.*): q_proj [2 x 16, 64] (index_n_heads 2, index_head_dim 16), "
            "k_proj [16, 64] (one key head shared by both indexer heads), 1 + w q_norm/k_norm [16] per head (w drawn "
            "N(1, 0.1), a gain of about 2), then RoPE on the first 8 dims with the main heads' cos/sin (pairs i, i + 4); "
            "the indexer key of every token is kept per sparse layer beside K/V and every cached one is scored",
            "block scores: s[h, t] = q_h . k_t in fp32 (no scale, weights or ReLU), -inf for t > the query's position; "
            "max over blocks of index_block_size 4 slots (the last block padded with -inf); the query's own block "
            "(position // 4, index_local_blocks 1) set to +inf; top-k of index_topk_blocks 2, a selected -inf block "
            "dropped (-1): each query sees its own block up to itself plus the best other visible block, <= 8 keys",
            "one selection per indexer head: query heads 0-1 use indexer head 0 and 2-3 head 1 (h // 2, the same "
            "grouping as their KV heads); the mask is the causal one restricted to the selected blocks. Every query "
            "at position p >= 8 chooses 1 of its p // 4 >= 2 earlier blocks, in prefill and decode alike: "
            "up to 10 candidates by prompt 29's last step (44 tokens, 11 blocks)",
        ],
    ),
    "zaya": dict(
        atol_note="Routing: top-1 over E+1 = 5 classes by softmax(router logits) + balancing_biases (the skip class "
        "last); the weight is the chosen class's unbiased softmax probability, not renormalised, and the skip class "
        "gives a zero MoE output. The router gap is in logit units: a logit error e moves each probability by at "
        "most e/2, so flipping two classes needs e >= their biased-probability gap, which is what is reported. The "
        "weights are smooth once the choice is made.",
        seed=20083,
        build=_cfg_zaya,
        init_rules=ZAYA_INIT_RULES,
        # transformers' from_pretrained sets balancing_biases[E] (the skip class) to -1.0 whatever the checkpoint holds
        # (ZayaPreTrainedModel._init_weights assigns it outside the initialised-tensor guard), so the checkpoint holds
        # -1.0 there too; the real experts' biases sit around -0.8 so that the skip class still wins when its
        # probability leads the best real expert's by about 0.2 (or trails it a little), where that expert's weight
        # would not be negligible
        buffer_init=[(r"mlp\.gate\.balancing_biases$", -0.8, 0.15)],
        buffer_set=[(r"mlp\.gate\.balancing_biases$", -1, -1.0)],
        zero_centred_norms=False,
        prompt_lengths=PROMPT_LENGTHS_STATE,
        state=True,
        feature_effects="zaya",
        features=[
            "ZayaForCausalLM, 3 layers, each CCA attention then a top-1 MoE: layer_types [hybrid, hybrid_sliding, "
            "hybrid] (layer 1 sliding, window 8: a query sees its last 8 keys); every layer carries a conv state and a "
            "delayed-value state besides K/V",
            "CCA projection: q_proj [64, 64] and k_proj [32, 64] with biases; residual q = (q + k[h // 2]) / 2, "
            "residual k = mean of the residual q over its 2-head group; [q | k] (96 channels) through a depthwise "
            "conv (kernel cca_time0 2) then a grouped conv (kernel cca_time1 3, 6 groups of 16 channels), both with "
            "biases, zero left padding (the biases still apply there), added to the residual q / k; conv state = the "
            "last (2 - 1) + (3 - 1) = 3 raw [q | k] projections, all 3 read (the two convs span 4 positions)",
            "delayed value: v = concat(v_proj_current(x_t), v_proj_delayed(x_{t-1})) [16 + 16] viewed as 2 KV heads "
            "of 16, so KV head 0 is all current token and head 1 all previous token; at position 0 the delayed half is "
            "v_proj_delayed's bias (N(0, 0.2)); state = the last v_proj_delayed output",
            "q/k L2-normalised per head to sqrt(16) (eps finfo(fp32).eps), keys x qk_norm.temp (N(1, 0.3); 0 "
            "upstream), then RoPE on the first 8 of 16 dims (rotate-half; theta 5e6 on hybrid, 1e4 on hybrid_sliding "
            "layers); GQA 4q/2kv, scale 16^-0.5, o_proj with bias, no output gate",
            "affine input (embed + input_hidden_states_bias) x input_hidden_states_scale; fp32 residual stream; after "
            "attention and after the MoE x = (f + hidden_states_bias) x hidden_states_scale + (x + residual_bias) x "
            "residual_scale (scales N(1, 0.2), biases N(0, 0.2))",
            "router: down_proj 64 -> 16 with bias, plus the previous layer's router state x router_states_scale on "
            "layers 1-2 (EDA, N(0.5, 0.3)); RMSNorm(16), fc1 and fc2 16 -> 16 with biases and exact GELU, out_proj "
            "16 -> 5 without bias; softmax over 4 experts + the skip class; top-1 on probabilities + balancing_biases "
            "(experts N(-0.8, 0.15), skip -1.0); weight = the unbiased probability, not renormalised; the skip class "
            "gives a zero MoE output (chosen for 80, 6 and 92 of 153 positions in layers 0-2; every expert is chosen in "
            "every layer)",
            "experts fused and stored fused: mlp.experts.gate_up_proj [4, 32, 64] (rows 0-15 gate, 16-31 up; "
            "SiLU(gate) x up) and mlp.experts.down_proj [4, 64, 16], no .weight suffix; mlp.gate.balancing_biases [5] "
            "is a checkpoint tensor",
            "untied lm_head without bias; prompts 5, 23, 80 and the piecewise continuations carry both states across "
            "forwards",
        ],
    ),
    "jetmoe": dict(
        atol_note="Routing weights (attention and MLP) are a softmax over the top-2 router logits; smooth once the choice is made.",
        init_rules=[(r"router\.layer\.weight$", 0.0, 1.0)],  # decisive routers
        seed=19505,
        build=_config(
            "JetMoeConfig",
            num_hidden_layers=2,
            num_attention_heads=6,
            num_key_value_heads=3,
            kv_channels=16,
            intermediate_size=32,
            num_local_experts=4,
            num_experts_per_tok=2,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "mixture of attention heads: per layer a router (top-2 of 4, softmax over the two logits) picks two "
            "experts whose input_linear [4, 48, 64] projects three query heads each over the shared kv_proj's 3 KV "
            "heads (query head c*3 + j reads KV head j: the regrouping is not its own inverse), and whose "
            "output_linear projects each choice's heads back, mixed by the routing weights, plus experts.bias",
            "MoE MLP under mlp: the same router form over input_linear [4, 64, 64] (gate first) and output_linear, "
            "plus mlp.bias",
            "the layers' RMS norms use eps 1e-6, the final norm rms_norm_eps 1e-5",
        ],
    ),
    "qwen2_moe": dict(
        atol_note="Routing weights are top-2 softmax probabilities (not renormalised); the shared expert's sigmoid gate is smooth.",
        seed=2024,
        build=_cfg_qwen2_moe,
        zero_centred_norms=False,
        features=[
            "decoder_sparse_step=2 -> MoE on layers 1,3, dense MLP (intermediate_size) on 0,2",
            "shared expert (48) gated by sigmoid(shared_expert_gate(x))",
            "norm_topk_prob=false (top-2 softmax probs used as is)",
            "q/k/v bias (qkv_bias)",
            "checkpoint names mlp.experts.N.{gate,up,down}_proj",
        ],
    ),
    "qwen3_moe": dict(
        atol_note="Routing weights are renormalised top-2 softmax.",
        seed=2199,
        build=_cfg_qwen3_moe,
        zero_centred_norms=False,
        features=[
            "mlp_only_layers=[1] -> MoE on layers 0,2, dense MLP on 1",
            "norm_topk_prob=true (top-2 renormalised)",
            "per-head q_norm/k_norm, decoupled head_dim=32 (extra config key)",
            "checkpoint names mlp.experts.N.{gate,up,down}_proj",
        ],
    ),
}
