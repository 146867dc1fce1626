"""Dense attention decoders: Llama and its relatives (norm placement, q/k norms, activations, biases,
multipliers, sliding patterns, NoPE layers, ternary and differential attention).

Each FAMILIES entry: a seed, a config builder, whether the norms are zero-centred and the features
the fixture exercises (make_fixtures.py reads them)."""

from oracle_common import *  # noqa: F401,F403


# Seeds were picked once (the best of each family's block of 100) so that every greedy step has
# a top-1/top-2 logit margin >= 0.018 and every router a k-th/(k+1)-th logit gap >= 0.018, three
# orders of magnitude above fp32 reordering noise, so no token or expert choice is a coin flip;
# and so that each prompt's 16 greedy tokens hold >= 6 distinct ids (>= 4 for tied gemma).
# --------------------------------------------------------------------------------------
# Family table. Each entry: seed, config builder, whether norms are zero-centred (1+w),
# the features the config exercises, an optional std override table, and notes.
# --------------------------------------------------------------------------------------


def _cfg_llama():
    from transformers import LlamaConfig

    return LlamaConfig(
        **COMMON,
        num_hidden_layers=2,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    )


def _cfg_mistral():
    from transformers import MistralConfig

    return MistralConfig(
        **COMMON,
        num_hidden_layers=2,
        rms_norm_eps=1e-5,
        sliding_window=8,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )


def _cfg_qwen2():
    from transformers import Qwen2Config

    return Qwen2Config(
        **COMMON,
        num_hidden_layers=2,
        rms_norm_eps=1e-6,
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=1,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )


def _cfg_qwen3():
    from transformers import Qwen3Config

    return Qwen3Config(
        **COMMON,
        num_hidden_layers=2,
        head_dim=32,
        rms_norm_eps=1e-6,
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=1,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )


def _cfg_gemma2():
    from transformers import Gemma2Config

    return Gemma2Config(
        **COMMON,
        num_hidden_layers=2,
        head_dim=32,
        rms_norm_eps=1e-6,
        sliding_window=8,
        query_pre_attn_scalar=24,
        attn_logit_softcapping=4.0,
        final_logit_softcapping=6.0,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )


def _cfg_gemma3_text():
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(
        **COMMON,
        num_hidden_layers=3,
        head_dim=32,
        rms_norm_eps=1e-6,
        sliding_window=8,
        sliding_window_pattern=3,  # -> layer_types [sliding, sliding, full]
        query_pre_attn_scalar=24,
        tie_word_embeddings=True,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
        },
    )


def _cfg_phi3():
    from transformers import Phi3Config

    return Phi3Config(
        **COMMON,
        num_hidden_layers=2,
        rms_norm_eps=1e-5,
        # Phi3 gives the top-level key priority over rope_parameters' own copy.
        original_max_position_embeddings=PHI3_ORIGINAL_MAX,
        rope_parameters={
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5,
            "short_factor": [1.0, 1.25, 1.5, 2.0],
            "long_factor": [1.5, 3.0, 6.0, 12.0],
        },
    )


# Tied Gemma models: the input embedding (x sqrt(hidden)) rides the residual stream straight to
# the tied lm_head, so with O(1) layer outputs every prompt's greedy answer is "repeat the last
# token". Smaller embeddings, post-norms with effective scale ~2 and a final norm with effective
# scale ~4 keep the logit spread ~2 while letting the layers decide the argmax.
TIED_GEMMA_STD = {"embed": 0.0625}
TIED_GEMMA_NORM_MEAN = {
    "post_attention_layernorm": 1.0,
    "post_feedforward_layernorm": 1.0,
    "model.norm.": 3.0,
}

FAMILIES = {
    "llama": dict(
        seed=1110,
        build=_cfg_llama,
        zero_centred_norms=False,
        features=[
            "rope llama3 (rope_parameters.rope_type=llama3; freqs in all three bands: kept, smoothed, /factor)",
            "untied lm_head (tie_word_embeddings=false)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "mistral": dict(
        seed=1282,
        build=_cfg_mistral,
        zero_centred_norms=False,
        features=[
            "sliding_window=8 on every layer (no layer_types; prompts 13 and 29 cross it)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "qwen2": dict(
        seed=1329,
        build=_cfg_qwen2,
        zero_centred_norms=False,
        features=[
            "q/k/v bias, no o bias",
            "use_sliding_window=true, max_window_layers=1 -> layer_types [full, sliding], window 8",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "qwen3": dict(
        seed=1419,
        build=_cfg_qwen3,
        zero_centred_norms=False,
        features=[
            "per-head q_norm/k_norm (RMSNorm over head_dim, before rope)",
            "use_sliding_window=true, max_window_layers=1 -> layer_types [full, sliding], window 8",
            "decoupled head_dim=32 (q_proj 64->128, o_proj 128->64)",
        ],
    ),
    "olmo2": dict(
        seed=14028,
        build=_config(
            "Olmo2Config",
            num_hidden_layers=2,
            rms_norm_eps=1e-6,
            attention_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        ),
        zero_centred_norms=False,
        features=[
            "post-norm layers: x + norm(attn(x)), then x + norm(mlp(x)); no input norm",
            "q_norm/k_norm: RMSNorm over the whole q and k projections (64 and 32 wide), before rope",
            "attention_bias=true: q/k/v and o biases",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "olmo3": dict(
        seed=14626,
        build=_config(
            "Olmo3Config",
            num_hidden_layers=3,
            rms_norm_eps=1e-6,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
            rope_theta=10000.0,  # legacy key: Olmo3Config gives it to the full layers only (sliding: 500000)
            tie_word_embeddings=False,
        ),
        zero_centred_norms=False,
        features=[
            "layer_types [sliding, full, sliding], sliding_window=8",
            "legacy rope_theta=10000 reaches the full layer only; the sliding layers get the class's 500000",
            "post-norm layers and whole-projection q/k RMSNorm (as olmo2)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "glm": dict(
        seed=14733,
        build=_config(
            "GlmConfig",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
        ),
        zero_centred_norms=False,
        features=[
            "rope on interleaved pairs of the first half of each head (partial_rotary_factor 0.5: 8 of 16)",
            "attention_bias default true: q/k/v biases, no o bias",
            "fused gate_up_proj (Phi-3's MLP)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "glm4": dict(
        seed=14826,
        build=_config(
            "Glm4Config",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
        ),
        zero_centred_norms=False,
        features=[
            "as glm, with sandwich norms: post_self_attn_layernorm, post_attention_layernorm (pre-MLP), post_mlp_layernorm",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "ernie4_5": dict(
        seed=14903,
        build=_config(
            "Ernie4_5Config",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-5,
            use_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        ),
        zero_centred_norms=False,
        features=[
            "rope on interleaved pairs (cos/sin repeat_interleave, rotated in fp32)",
            "use_bias=true: q/k/v/o and gate/up/down biases",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "hunyuan_v1_dense": dict(
        seed=15625,
        build=_config(
            "HunYuanDenseV1Config",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            attention_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "dynamic", "factor": 1.0, "alpha": 50.0, "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "per-head q/k RMS norms (query_layernorm, key_layernorm) after RoPE",
            "attention_bias: q/k/v and o biases",
            "RoPE 'dynamic' with alpha 50: static NTK base 10000 x 50^(16/14)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "iquestcoder": dict(
        seed=15929,
        build=_config(
            "IQuestCoderConfig",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            attention_bias=True,
            mlp_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        ),
        zero_centred_norms=False,
        features=[
            "run by transformers as LlamaForCausalLM (iquestcoder has no modeling file)",
            "attention_bias (q/k/v and o) and mlp_bias",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "arcee": dict(
        seed=16015,
        build=_config(
            "ArceeConfig",
            num_hidden_layers=2,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "ungated ReLU^2 MLP: down(relu(up x)^2), no gate_proj (hidden_act relu2, the class default)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "cwm": dict(
        seed=16111,
        build=_config(
            "CwmConfig",
            num_hidden_layers=5,
            head_dim=16,
            rms_norm_eps=1e-6,
            sliding_window=8,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        ),
        zero_centred_norms=False,
        features=[
            "layers 0 and 4 full, 1-3 sliding (window 8; the prompts of 13 and 29 tokens cross it): the class's i % 4 rule",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "exaone4": dict(
        seed=16206,
        build=_config(
            "Exaone4Config",
            num_hidden_layers=4,
            num_key_value_heads=2,
            rms_norm_eps=1e-6,
            sliding_window=8,
            sliding_window_pattern=2,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        ),
        zero_centred_norms=False,
        features=[
            "post-norm layers: x + norm(attn(x)), then x + norm(mlp(x)); no input norm",
            "sliding_window_pattern 2: layers 0, 2 sliding (window 8, RoPE), layers 1, 3 full and NoPE",
            "per-head q/k RMS norms before RoPE",
        ],
    ),
    "olmo": dict(
        seed=16422,
        build=_config(
            "OlmoConfig",
            num_hidden_layers=2,
            attention_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "LayerNorms without weight or bias (eps 1e-5, fixed) before attention, MLP and head",
            "attention_bias: q/k/v and o biases",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "cohere": dict(
        seed=16500,
        build=_config(
            "CohereConfig",
            num_hidden_layers=2,
            layer_norm_eps=1e-5,
            logit_scale=0.5,
            attention_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "parallel block: x + attn(LN(x)) + mlp(LN(x)), one LayerNorm (weight, no bias) per layer",
            "RoPE on interleaved pairs; logits x logit_scale 0.5; attention_bias on q/k/v and o",
            "an untied head (the class ties by default)",
        ],
    ),
    "cohere2": dict(
        seed=16623,
        build=_config(
            "Cohere2Config",
            num_hidden_layers=4,
            layer_norm_eps=1e-5,
            logit_scale=0.5,
            sliding_window=8,
            sliding_window_pattern=2,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "parallel block over one bias-free LayerNorm; logits x logit_scale 0.5",
            "sliding_window_pattern 2: layers 0, 2 sliding (window 8) with interleaved RoPE, layers 1, 3 full and NoPE",
            "an untied head (the class ties by default)",
        ],
    ),
    "ministral3": dict(
        seed=16924,
        build=_config(
            "Ministral3Config",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            rope_parameters={
                "rope_type": "yarn",
                "rope_theta": 1000000.0,
                "factor": 4.0,
                "original_max_position_embeddings": 16,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
                "llama_4_scaling_beta": 0.5,
            },
        ),
        zero_centred_norms=False,
        features=[
            "YaRN RoPE (factor 4 over 16 positions, mscale = mscale_all_dim = 1)",
            "roped queries x 1 + 0.5 log(1 + floor(p / 16)): the prompts of 29 and 64+ tokens cross 16, 32, 48",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "jais2": dict(
        seed=17000,
        build=_config(
            "Jais2Config",
            num_hidden_layers=2,
            layer_norm_eps=1e-5,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "LayerNorms with weight and bias (layer_norm_eps 1e-5) before attention, MLP and head",
            "ungated ReLU^2 MLP with biases; q/k/v/o biases (attention_bias, mlp_bias default true)",
        ],
    ),
    "hyperclovax": dict(
        seed=17125,
        build=_config(
            "HyperCLOVAXConfig",
            num_hidden_layers=2,
            rms_norm_eps=1e-6,
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            logits_scaling=0.5,
            use_post_norm=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "peri-norms: x + post_norm1(attn(norm(x))) x0.5, x + post_norm2(mlp(norm(x))) x0.5",
            "embeddings x2; logits MULTIPLIED by logits_scaling 0.5; attention scale 1/sqrt(head_dim) (attention_multiplier None)",
        ],
    ),
    "nanochat": dict(
        atol_note="The final softcap is tanh (1-Lipschitz).",
        seed=17209,
        build=_config(
            "NanoChatConfig",
            num_hidden_layers=2,
            rms_norm_eps=1e-6,
            final_logit_softcapping=6.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "RMS norms without weights (embeddings, layers, final); q/k weightless RMS norms after RoPE",
            "RoPE with rotate_half's signs flipped (rotation by -angle)",
            "ungated ReLU^2 MLP (fc1, fc2); final_logit_softcapping 6 (small so tanh bends)",
        ],
    ),
    "internlm3": dict(
        seed=15117,
        build=_config(
            "InternLM3Config",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-5,
            attention_bias=True,
            mlp_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 50000000.0},
        ),
        zero_centred_norms=False,
        features=[
            "run by transformers as LlamaForCausalLM: attention_bias (q/k/v and o) and mlp_bias, equal as InternLM3Config requires",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "seed_oss": dict(
        seed=15019,
        build=_config(
            "SeedOssConfig",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            attention_bias=True,
            attention_out_bias=True,
            mlp_bias=True,
            attention_dropout=0.0,
            residual_dropout=0.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000000.0},
        ),
        zero_centred_norms=False,
        features=[
            "attention_bias: q/k/v biases; attention_out_bias: the o bias, a key of its own",
            "mlp_bias=true (gate/up/down biases)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "smollm3": dict(
        seed=14207,
        build=_config(
            "SmolLM3Config",
            num_hidden_layers=3,
            rms_norm_eps=1e-6,
            mlp_bias=True,
            use_sliding_window=True,
            sliding_window=8,
            no_rope_layer_interval=3,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
        ),
        zero_centred_norms=False,
        features=[
            "no_rope_layer_interval=3 -> no_rope_layers [1, 1, 0]: layer 2 is NoPE",
            "use_sliding_window + sliding_window=8 without layer_types -> the NoPE layer slides: [full, full, sliding]",
            "mlp_bias=true (gate/up/down biases)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "helium": dict(
        seed=14324,
        build=_config(
            "HeliumConfig",
            num_hidden_layers=2,
            head_dim=16,
            rms_norm_eps=1e-6,
            attention_bias=True,
            mlp_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 20000.0},
        ),
        zero_centred_norms=False,
        features=[
            "rope over interleaved pairs (2i, 2i+1) (cos/sin repeat_interleave, rotate_half on x[0::2], x[1::2])",
            "attention_bias=true: q/k/v biases, o_proj never has one",
            "mlp_bias=true (gate/up/down biases)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "granite": dict(
        seed=14427,
        build=_config(
            "GraniteConfig",
            num_hidden_layers=2,
            rms_norm_eps=1e-6,
            embedding_multiplier=4.0,  # all four != 1 (and attention_multiplier != head_dim^-0.5) so each one shows
            residual_multiplier=0.5,
            attention_multiplier=0.2,
            logits_scaling=0.5,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "embedding_multiplier=4.0 (embeddings x 4)",
            "residual_multiplier=0.5 (each attention and MLP output x 0.5 before the residual add)",
            "attention_multiplier=0.2 as the softmax scale (not 16^-0.5 = 0.25)",
            "logits_scaling=0.5 (logits / 0.5)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "ministral": dict(
        seed=14537,
        build=_config(
            "MinistralConfig",
            num_hidden_layers=2,
            head_dim=16,  # transformers 5.23's MinistralAttention cannot size its heads without it
            rms_norm_eps=1e-5,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention"],
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 100000000.0},
        ),
        zero_centred_norms=False,
        features=[
            "layer_types [sliding, full] with sliding_window=8 (prompts 13 and 29 cross it)",
            "rope_theta 1e8 (Ministral-8B's)",
            "GQA 4q/2kv, head_dim 16",
        ],
    ),
    "gemma": dict(
        seed=14143,
        build=_config(
            "GemmaConfig",
            num_key_value_heads=1,
            num_hidden_layers=2,
            head_dim=32,
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=True,
        std=TIED_GEMMA_STD,
        norm_mean=TIED_GEMMA_NORM_MEAN,
        features=[
            "multi-query attention: 4 heads, 1 kv head",
            "decoupled head_dim=32 (q_proj 64->128, o_proj 128->64), scale 32^-0.5",
            "tied embeddings, embed scale sqrt(64)=8",
            "(1+w) RMSNorm, pre-norm only, gelu_pytorch_tanh MLP",
        ],
    ),
    "gemma2": dict(
        atol_note="Softcaps are tanh (1-Lipschitz) and do not amplify error; the final norm's effective scale ~4 (init) scales hidden-state error by ~4, already inside the measured noise.",
        seed=1547,
        build=_cfg_gemma2,
        zero_centred_norms=True,
        std=TIED_GEMMA_STD,
        norm_mean=TIED_GEMMA_NORM_MEAN,
        features=[
            "attn_logit_softcapping=4.0 (small so tanh bends)",
            "final_logit_softcapping=6.0 (small so tanh bends)",
            "layer_types default (i+1)%2 -> [sliding, full], window 8",
            "query_pre_attn_scalar=24 != head_dim=32 (scale 24^-0.5)",
            "tied embeddings, embed scale sqrt(64)=8",
            "sandwich norms, (1+w) RMSNorm, gelu_pytorch_tanh MLP",
        ],
    ),
    "vaultgemma": dict(
        atol_note="Softcaps are tanh (1-Lipschitz) and do not amplify error.",
        seed=16321,
        build=_config(
            "VaultGemmaConfig",
            num_hidden_layers=2,
            head_dim=32,
            rms_norm_eps=1e-6,
            sliding_window=8,
            query_pre_attn_scalar=24,
            attn_logit_softcapping=4.0,
            final_logit_softcapping=6.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=True,
        features=[
            "Gemma 2 without post norms: input_layernorm and pre_feedforward_layernorm only, (1+w) RMSNorm",
            "layer_types default (i+1)%2 -> [sliding, full], window 8; softcaps 4 (attention) and 6 (logits)",
            "query_pre_attn_scalar=24 != head_dim=32; embed scale sqrt(64)=8; an untied head (tied, the random embeddings echo the input)",
        ],
    ),
    "gemma3_text": dict(
        atol_note="The final norm's effective scale ~4 (init) scales hidden-state error by ~4, already inside the measured noise.",
        seed=1602,
        build=_cfg_gemma3_text,
        zero_centred_norms=True,
        std=TIED_GEMMA_STD,
        norm_mean=TIED_GEMMA_NORM_MEAN,
        features=[
            "sliding_window_pattern=3 -> layer_types [sliding, sliding, full], window 8",
            "per-layer-type rope: sliding default theta 1e4; full linear factor 4 theta 1e6",
            "q_norm/k_norm (1+w) before rope",
            "sandwich norms, (1+w) RMSNorm, gelu_pytorch_tanh MLP",
            "query_pre_attn_scalar=24 != head_dim=32",
            "tied embeddings, embed scale sqrt(64)=8",
        ],
    ),
    "phi3": dict(
        atol_note="Prompt 1 is excluded from the noise estimate: its cached and uncached paths differ by design (longrope switch, see below).",
        seed=1860,
        build=_cfg_phi3,
        zero_centred_norms=False,
        features=[
            "longrope short/long factors, original_max_position_embeddings=24 (top level)",
            "partial_rotary_factor=0.5 (rotary dim 8 of head_dim 16, leading slice)",
            "fused qkv_proj and gate_up_proj",
        ],
    ),
    "granite_swa": dict(
        seed=17808,
        build=_config(
            "GraniteSWAConfig",
            num_hidden_layers=3,
            rms_norm_eps=1e-6,
            sliding_window=8,
            layer_rope_theta=[10000.0, 0.0, 500000.0],
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            attention_multiplier=0.125,
            logits_scaling=2.0,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        init_rules=[(r"self_attn\.sinks$", 0.0, 1.0)],
        zero_centred_norms=False,
        features=[
            "layer 0 full (the class's i % 4 rule), layers 1-2 sliding (window 8)",
            "layer_rope_theta [1e4, 0, 5e5]: layer 1 NoPE, layer 2 its own base",
            "learned attention sinks per head (N(0, 1)); Granite multipliers",
        ],
    ),
    "cohere_compass_text": dict(
        seed=18319,
        build=_config(
            "CohereCompassTextConfig",
            num_hidden_layers=4,
            layer_norm_eps=1e-5,
            logit_scale=0.5,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
            tie_word_embeddings=False,
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": None},
        ),
        zero_centred_norms=False,
        features=[
            "parallel block over one bias-free LayerNorm; logits x logit_scale 0.5",
            "RoPE by layer type: sliding layers 0, 2 (window 8) rotate half-split pairs, full layers 1, 3 NoPE (null)",
            "head_dim derived from hidden_size / num_attention_heads; an untied head (the class ties by default)",
        ],
    ),
    "apertus": dict(
        seed=18604,
        build=_config(
            "ApertusConfig",
            num_hidden_layers=2,
            tie_word_embeddings=False,
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": 12000000.0,
                "factor": 8.0,
                "original_max_position_embeddings": 32,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
            },
        ),
        init_rules=[
            (r"act_fn\.alpha_p$", 0.2, 0.3),  # around the class's softplus^-1(0.8), different per layer
            (r"act_fn\.alpha_n$", -1.0, 0.3),  # around softplus^-1(0.8 - beta)
        ],
        zero_centred_norms=False,
        features=[
            "ungated MLP with xIELU (hidden_act default): alpha_p, alpha_n learned per layer, beta 0.5 and eps -1e-6 stored beside them",
            "per-head q/k RMS norms before RoPE; norms named attention_layernorm / feedforward_layernorm",
            "Llama 3 RoPE scaling (factor 8 over 32 positions) at theta 1.2e7",
        ],
    ),
    "bitnet": dict(
        seed=19009,
        build=_config(
            "BitNetConfig",
            num_hidden_layers=2,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        ),
        zero_centred_norms=False,
        features=[
            "RMS sub-norms inside both blocks: attn_sub_norm over the attention output before o_proj, "
            "ffn_sub_norm over relu2(gate) * up before down_proj",
            "gated ReLU^2 MLP (hidden_act relu2, the class default)",
            "GQA 4q/2kv, head_dim 16; unquantised linears (no quantization_config)",
        ],
    ),
    "hrm_text": dict(
        seed=19203,
        build=_config(
            "HrmTextConfig",
            num_hidden_layers=2,
            head_dim=16,
            H_cycles=2,
            L_cycles=2,
            attention_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "two weight-shared stacks (L_module, H_module) of 2 layers in HRM's loop: for each of H_cycles 2, "
            "L_cycles 2 calls of the L stack on z_L + z_H (z_L from the learned z_L_init), then the H stack on "
            "z_H + z_L; 2 x (2 + 1) = 6 stack calls, 12 cache layers (the class rewrites num_hidden_layers 2 to 12 "
            "and saves num_layers_per_stack 2)",
            "weightless RMS norms everywhere (each stack ends in one); MHA 4 heads of 16 with a sigmoid output gate "
            "from self_attn.gate_proj; attention_bias on q/k/v/gate/o",
            "embeddings times embedding_scale = 1 / initializer_range = 50 (derived by the class, saved)",
        ],
    ),
    "diffllama": dict(
        seed=19406,
        build=_config(
            "DiffLlamaConfig",
            num_hidden_layers=2,
            attention_bias=True,
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        zero_centred_norms=False,
        features=[
            "differential attention: two attention calls sharing q and k over the two halves of v (2 KV heads: head 0 "
            "and head 1), concatenated per head; heads 0-1 minus lambda x heads 2-3, lambda = exp(lambda_q1 . "
            "lambda_k1) - exp(lambda_q2 . lambda_k2) + lambda_init (0.2, then 0.8 - 0.6 exp(-0.3)); a weightless RMS "
            "norm over each 32 wide head, times 1 - lambda_init",
            "GQA 4q/2kv, head_dim 16; attention_bias on q/k/v/o",
        ],
    ),
}
