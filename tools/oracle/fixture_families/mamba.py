"""Mamba-mixer families (SSD and selective scan) and their hybrids.

Each FAMILIES entry: a seed, a config builder, whether the norms are zero-centred and the features
the fixture exercises (make_fixtures.py reads them)."""

from oracle_common import *  # noqa: F401,F403


# --------------------------------------------------------------------------------------
# Mamba-mixer families (Mamba2 / SSD: mamba2, bamba, granitemoehybrid, nemotron_h, falcon_h1,
# zamba2; Mamba1 selective scan: mamba, falcon_mamba, jamba, zamba). Same prompts as the other
# state families (5, 23, 80). Mamba2 families use chunk_size 16, so transformers' torch SSD kernel
# runs 2 chunks for the 23-token prompt and 5 for the 80-token one; ngroups 2 with several heads
# per group; conv kernel 4 everywhere. Every config mixes the layer kinds its family has.
# --------------------------------------------------------------------------------------

# Seeds: the best of each family's block of 100 by the criteria above (floor 0.01 for margins and router
# gaps, >= 6 distinct tokens): mamba2 5000-5099, bamba 5100-5199, granitemoehybrid 5200-5299, nemotron_h
# 5300-5399, falcon_h1 5400-5499, zamba2 5500-5599, mamba 5600-5699, falcon_mamba 5700-5799, jamba
# 5800-5899, zamba 5900-5999 (`--search-seeds` scores a block). Every forward passes explicit
# position_ids (see forward()). The hybrids other than mamba2/mamba/falcon_mamba are 32 wide
# (MAMBA_ATTN) so that all fixtures together stay under 10 MB.
# Mamba2 dims: inner width I = 2 * 64 = 128, 8 heads of 16 (mamba2; the 32-wide hybrids: I = 64, 8 heads
# of 8), 2 groups (4 heads each), state 16.
MAMBA2_CHUNK = 16
MAMBA_ATTN = dict(  # attention / MLP shape shared by the hybrids: half of COMMON's width, to keep fixtures small
    hidden_size=32,
    intermediate_size=48,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
)
TOKEN_IDS = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def _cfg_mamba2():
    from transformers import Mamba2Config

    return Mamba2Config(
        **TOKEN_IDS,
        hidden_size=64,
        num_hidden_layers=3,
        num_heads=8,
        head_dim=16,  # num_heads * head_dim must equal expand * hidden_size
        state_size=16,
        expand=2,
        n_groups=2,
        conv_kernel=4,
        chunk_size=MAMBA2_CHUNK,
        layer_norm_epsilon=1e-5,
    )


def _cfg_bamba():
    from transformers import BambaConfig

    return BambaConfig(
        **TOKEN_IDS,
        **MAMBA_ATTN,
        num_hidden_layers=4,
        attn_layer_indices=[2],  # -> [mamba, mamba, attention, mamba]
        mamba_n_heads=8,  # mamba_d_head "auto" -> 2*32/8 = 8
        mamba_n_groups=2,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        mamba_chunk_size=MAMBA2_CHUNK,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},  # partial_rotary_factor forced to 0.5
    )


def _cfg_granitemoehybrid():
    from transformers import GraniteMoeHybridConfig

    return GraniteMoeHybridConfig(
        **TOKEN_IDS,
        **{**MAMBA_ATTN, "intermediate_size": 16},  # per-expert width
        num_hidden_layers=4,
        layer_types=["mamba", "mamba", "attention", "mamba"],  # legacy names, remapped on load
        mamba_n_heads=8,
        mamba_n_groups=2,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        mamba_chunk_size=MAMBA2_CHUNK,
        rms_norm_eps=1e-5,
        num_local_experts=4,
        num_experts_per_tok=2,
        shared_intermediate_size=24,
        embedding_multiplier=4.0,  # all four != 1 (and attention_multiplier != head_dim^-0.5) so each one shows
        residual_multiplier=0.5,
        attention_multiplier=0.2,
        logits_scaling=0.5,
        position_embedding_type="nope",  # as the released granite-4.0-h configs: no RoPE
    )


def _cfg_nemotron_h():
    from transformers import NemotronHConfig

    return NemotronHConfig(
        **TOKEN_IDS,
        **MAMBA_ATTN,
        head_dim=8,
        hybrid_override_pattern="MEM*M-",  # legacy key -> layers_block_type [mamba, moe, mamba, attn, mamba, mlp]
        mamba_num_heads=8,
        mamba_head_dim=6,  # I = 8*6 = 48, deliberately != expand*hidden = 64
        n_groups=2,
        ssm_state_size=16,
        conv_kernel=4,
        chunk_size=MAMBA2_CHUNK,
        n_routed_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        moe_shared_expert_intermediate_size=24,
        routed_scaling_factor=1.5,
        layer_norm_epsilon=1e-5,
    )


def _cfg_falcon_h1():
    from transformers import FalconH1Config

    return FalconH1Config(
        **TOKEN_IDS,
        **MAMBA_ATTN,
        head_dim=12,  # not a declared field; LlamaAttention and the rotary read it (4*12 = 48 != hidden)
        num_hidden_layers=3,
        mamba_d_ssm=48,  # != mamba_expand*hidden = 64, as in released configs
        mamba_n_heads=6,  # mamba_d_head "auto" -> 48/6 = 8
        mamba_n_groups=2,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        mamba_chunk_size=MAMBA2_CHUNK,
        mamba_rms_norm=True,  # as released: grouped gated RMSNorm ...
        mamba_norm_before_gate=False,  # ... with the gate applied before the norm
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        # muP multipliers, all != 1 so that each one is exercised
        embedding_multiplier=2.0,
        lm_head_multiplier=0.5,
        mlp_multipliers=[0.75, 1.5],
        key_multiplier=0.5,
        attention_in_multiplier=1.5,
        attention_out_multiplier=0.75,
        ssm_multipliers=[0.5, 1.25, 0.75, 1.5, 0.8],
        ssm_in_multiplier=0.7,
        ssm_out_multiplier=1.3,
    )


def _cfg_zamba2():
    from transformers import Zamba2Config

    return Zamba2Config(
        **TOKEN_IDS,
        hidden_size=32,
        intermediate_size=48,
        num_attention_heads=4,  # attention on 2*hidden = 64, head_dim 16; kv heads = heads (adapters need it)
        max_position_embeddings=256,
        num_hidden_layers=5,
        layers_block_type=["mamba", "hybrid", "hybrid", "mamba", "hybrid"],
        num_mem_blocks=2,  # hybrid layers 1, 2, 4 use shared blocks 0, 1, 0
        use_shared_attention_adapter=True,
        adapter_rank=8,
        use_mem_rope=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        mamba_ngroups=2,
        n_mamba_heads=8,
        chunk_size=MAMBA2_CHUNK,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,  # the default; the shared blocks are only tied when this is true
    )


def _cfg_mamba():
    from transformers import MambaConfig

    return MambaConfig(
        **TOKEN_IDS,
        hidden_size=64,
        num_hidden_layers=3,
        state_size=16,
        expand=2,
        conv_kernel=4,
        layer_norm_epsilon=1e-5,
    )


def _cfg_falcon_mamba():
    from transformers import FalconMambaConfig

    return FalconMambaConfig(
        **TOKEN_IDS,
        hidden_size=64,
        num_hidden_layers=3,
        state_size=16,
        expand=2,
        conv_kernel=4,
        layer_norm_epsilon=1e-5,
        mixer_rms_eps=1e-6,
    )


def _cfg_jamba():
    from transformers import JambaConfig

    return JambaConfig(
        **TOKEN_IDS,
        **{**MAMBA_ATTN, "intermediate_size": 24},  # dense MLP and every expert
        num_hidden_layers=4,
        attn_layer_period=4,
        attn_layer_offset=2,  # -> [mamba, mamba, attention, mamba]
        expert_layer_period=2,
        expert_layer_offset=0,  # -> MoE on layers 0, 2 (mamba+MoE, attention+MoE), dense MLP on 1, 3
        num_experts=4,
        num_experts_per_tok=2,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        rms_norm_eps=1e-6,
    )


def _cfg_zamba():
    from transformers import ZambaConfig

    return ZambaConfig(
        **TOKEN_IDS,
        **MAMBA_ATTN,  # attention on 2*hidden = 64, head_dim 16, GQA 4q/2kv
        num_hidden_layers=5,
        layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "mamba"],
        n_mamba_heads=2,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,  # the default; the shared block is only tied when this is true
    )


# Mamba families. Mamba2 (A_log [H]) and Mamba1 (A_log [I, N]) alike: A = -exp(A_log) with A_log ~
# N(-3, 1) and dt = softplus(dt_raw + dt_bias) ~ 0.7 put the typical per-token decay exp(dt*A) near
# 0.97 (state kept across several 16-token chunks), the tail forgetting within a few tokens.
# D ~ N(1, 0.5) so the skip term is O(1) but differs per head/channel. Conv taps at std 0.5 and conv
# bias at std 0.2 make the depthwise conv an O(1) map with a visible bias. Mamba1's dt_proj (weight
# [I, R] with R = 4, bias [I]) at std 0.5 makes dt input-dependent with the same O(1) spread.
MAMBA_INIT_RULES = [
    (r"\.A_log$", -3.0, 1.0),
    (r"\.dt_bias$", 0.0, 0.5),
    (r"\.D$", 1.0, 0.5),
    (r"conv1d\.weight$", 0.0, 0.5),
    (r"conv1d\.bias$", 0.0, 0.2),
    (r"dt_proj(\.weight|_weight)$", 0.0, 0.5),
    (r"dt_proj(\.bias|_bias)$", 0.0, 0.5),
    (r"(^|\.)embeddings\.weight$", 0.0, 0.25),  # mamba/mamba2/nemotron_h name it embeddings, as BASE_STD["embed"]
    (r"(feed_forward\.router|block_sparse_moe\.router|mixer\.gate)\.weight$", 0.0, 0.3),  # routers
]
# What every Mamba-mixer family's spec shares; a family's own keys (granitemoehybrid's init_rules)
# override these.
MAMBA_FAMILY = dict(
    zero_centred_norms=False,
    init_rules=MAMBA_INIT_RULES,
    prompt_lengths=PROMPT_LENGTHS_STATE,
    state=True,
    mamba=True,
)

# granitemoehybrid routes on every layer, so with 3 x 108 tokens x 4 layers the smallest top-2/top-3
# gap of 0.3-std routers (hidden 32) is rarely >= 0.01: routers at std 0.6 and logits_scaling 0.5
# (logits x 2 rather than / 2, still != 1) give its seeds gaps and margins on the other families' scale.
GRANITE_INIT_RULES = [(r"block_sparse_moe\.router\.weight$", 0.0, 0.6)] + MAMBA_INIT_RULES

FAMILIES = {
    # ---- Mamba-mixer families (see MAMBA2_CHUNK and MAMBA_INIT_RULES above) ----
    "mamba2": dict(
        MAMBA_FAMILY,
        seed=5075,
        atol=2.5e-4,
        atol_note="The SSD recurrence is a contraction (decay exp(dt*A) in (0, 1)), so state error does not grow over the 96 positions; the chunked prefill kernel and the 1-token update differ by ~1e-5.",
        build=_cfg_mamba2,
        features=[
            "3 Mamba2 layers (the only layer kind of the family): x += mixer(RMSNorm(x)), residual_in_fp32, final norm_f",
            "in_proj [z (128) | xBC (128 + 2*2*16) | dt (8)], no bias; conv1d K=4 with bias over xBC + silu",
            "8 heads of 16, n_groups 2 (head h reads B/C group h // 4), state 16, chunk_size 16 (5 chunks for 80 tokens)",
            "dt = softplus(dt + dt_bias), time_step_limit (0, inf); A = -exp(A_log) per head; D skip per head",
            "gated RMSNorm: norm(y * silu(z)) per group of I/n_groups = 64 channels (MambaRMSNormGated), eps layer_norm_epsilon",
            "untied lm_head (mamba2 default), names backbone.embeddings / backbone.layers.N.mixer.* / backbone.norm_f",
        ],
    ),
    "bamba": dict(
        MAMBA_FAMILY,
        seed=5127,
        atol=2.5e-4,
        atol_note="The SSD recurrence is a contraction; the chunked prefill kernel and the 1-token update differ by ~1e-5. The rows use explicit position_ids (as generate() does): without them bamba's decode steps rotate the new query/key at position 0 and the cached path drifts by ~0.8.",
        build=_cfg_bamba,
        features=[
            "attn_layer_indices=[2] -> [mamba, mamba, attention, mamba]; every layer pre-norm + SwiGLU feed_forward",
            "BambaMixer = Mamba2 mixer: 8 heads of 8, n_groups 2, state 16, chunk_size 16, conv K=4 with bias",
            "gated RMSNorm per group of I/n_groups (group_size = 32), eps rms_norm_eps",
            "attention: Llama GQA 4q/2kv head_dim 8, partial RoPE forced to 0.5 (rotary dim 4, leading slice)",
            "positions passed explicitly: bamba's default position_ids ignore the cached length",
            "checkpoint names model.layers.N.mamba.* / self_attn.* / feed_forward.*, input_layernorm, pre_ff_layernorm, final_layernorm",
        ],
    ),
    "granitemoehybrid": dict(
        MAMBA_FAMILY,
        seed=5242,
        atol=2.5e-4,
        atol_note="The SSD recurrence is a contraction; routing is a softmax over the top-2 router logits (smooth once the choice is made). logits_scaling 0.5 doubles every logit difference.",
        build=_cfg_granitemoehybrid,
        init_rules=GRANITE_INIT_RULES,
        features=[
            "layer_types [mamba, mamba, attention, mamba] (legacy names, written out as linear_attention/full_attention)",
            "Mamba2 (BambaMixer) 8 heads of 8, n_groups 2, state 16, chunk_size 16, conv K=4",
            "MoE on every layer: 4 experts (16 wide) top-2, softmax over the top-2 router logits; plus shared_mlp (24) added",
            "multipliers: embedding x4, residual x0.5 on both branches, attention scale 0.2 (not head_dim^-0.5), logits / 0.5",
            "position_embedding_type 'nope': no RoPE (as the released granite-4.0-h)",
            "checkpoint names block_sparse_moe.input_linear/output_linear/router.layer (conversion_mapping granitemoe)",
        ],
    ),
    "nemotron_h": dict(
        MAMBA_FAMILY,
        seed=5352,
        atol=2.5e-4,
        atol_note="The SSD recurrence is a contraction. Routing uses sigmoid(logits) + e_score_correction_bias for the choice and renormalised unbiased sigmoid weights x routed_scaling_factor; the router gap reported is logit-equivalent (2 x the smallest k-th/(k+1)-th gap of the biased scores).",
        build=_cfg_nemotron_h,
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.15)],
        features=[
            "hybrid_override_pattern 'MEM*M-' -> [mamba, moe, mamba, attention, mamba, mlp]; one mixer per block, x += mixer(norm(x))",
            "Mamba2 with I = mamba_num_heads*mamba_head_dim = 8*6 = 48 (!= expand*hidden), n_groups 2, state 16, chunk 16",
            "gated RMSNorm per group (I/n_groups = 24), eps layer_norm_epsilon; dt clamp (time_step_min, inf) in the chunked kernel",
            "attention without RoPE, GQA 4q/2kv, head_dim 8 (explicit)",
            "MLP and experts non-gated: down(relu(up x)^2)",
            "MoE: sigmoid router + e_score_correction_bias (buffer, N(0,0.15)) for the choice, unbiased sigmoid weights renormalised x routed_scaling_factor 1.5, + shared expert (24)",
            "NemotronHRMSNorm multiplies the weight in fp32",
        ],
    ),
    "falcon_h1": dict(
        MAMBA_FAMILY,
        seed=5462,
        atol=2.5e-4,
        atol_note="The SSD recurrence is a contraction; the muP multipliers are exact scalings.",
        build=_cfg_falcon_h1,
        features=[
            "3 layers, each Mamba2 AND attention in parallel on the same input_layernorm output, then a SwiGLU MLP",
            "mamba_d_ssm 48 (!= expand*hidden), 6 heads of 8, n_groups 2, state 16, chunk 16, conv K=4",
            "mamba_rms_norm with mamba_norm_before_gate=false: w * rmsnorm_per_group(y * silu(z)), 2 groups of 24",
            "muP: embedding x2, lm_head x0.5, ssm_in x0.7, in_proj sections [z,x,B,C,dt] x [0.5,1.25,0.75,1.5,0.8], ssm_out x1.3",
            "attention_in x1.5, key x0.5 (before RoPE), attention_out x0.75, mlp gate x0.75 (before act) and down x1.5",
            "attention head_dim 12 (explicit, 4*12 != hidden), GQA 4q/2kv, full RoPE theta 1e4",
        ],
    ),
    "zamba2": dict(
        MAMBA_FAMILY,
        seed=5565,
        atol=2.5e-4,
        atol_note="The SSD recurrence is a contraction; the shared blocks and adapters are plain linear algebra. An fp64 recomputation of these rows (SEMANTICS_MAMBA.md section 11) differs from them by up to 1.2e-5.",
        build=_cfg_zamba2,
        features=[
            "layers [mamba, hybrid, hybrid, mamba, hybrid]; num_mem_blocks 2: hybrid layers 1, 2, 4 run shared blocks 0, 1, 0",
            "hybrid: shared block on concat(hidden, embeddings) (64) -> per-layer linear -> added to the mamba input only",
            "shared attention with per-hybrid-layer LoRA adapters on q/k/v (rank 8) and on the MLP gate_up (rank 8)",
            "attention scale (head_dim/2)^-0.5, head_dim 2*hidden/heads = 16, RoPE (use_mem_rope) over 16",
            "Mamba2 8 heads of 8, n_groups 2, chunk 16, gated norm eps 1e-5 (hard-coded), conv bias always on",
            "tied embeddings (required: the shared blocks are only tied when tie_word_embeddings is true)",
        ],
    ),
    "mamba": dict(
        MAMBA_FAMILY,
        seed=5628,
        atol=2.5e-4,
        atol_note="The selective scan is a contraction per channel (exp(dt*A) in (0, 1)). Mamba1 slow path: every multi-token forward starts its sequential selective scan from a zero SSM state (the conv state is carried), hence the failing continuation check below.",
        build=_cfg_mamba,
        features=[
            "3 Mamba1 layers: x += mixer(RMSNorm(x)), residual_in_fp32, final norm_f, tied embeddings",
            "in_proj -> [x (128) | z (128)]; conv1d K=4 with bias + silu on x; x_proj -> [dt (4) | B (16) | C (16)], no bias",
            "dt = softplus(dt_proj.weight @ dt + dt_proj.bias); A = -exp(A_log) [128, 16]; y = (C.h + D x) * silu(z)",
        ],
    ),
    "falcon_mamba": dict(
        MAMBA_FAMILY,
        seed=5753,
        atol=2.5e-4,
        atol_note="The selective scan is a contraction per channel; the weightless B/C/dt RMS norms are scale-invariant. Mamba1 slow path: every multi-token forward starts its sequential selective scan from a zero SSM state (the conv state is carried), hence the failing continuation check below.",
        build=_cfg_falcon_mamba,
        features=[
            "as mamba, plus weightless RMS norms (eps mixer_rms_eps 1e-6) on dt (before dt_proj), B and C",
            "the norm weights are non-persistent buffers: not in the checkpoint",
        ],
    ),
    "jamba": dict(
        MAMBA_FAMILY,
        seed=5818,
        atol=2.5e-4,
        atol_note="The selective scan is a contraction per channel. An fp64 recomputation of these rows (SEMANTICS_MAMBA.md section 11) differs from them by up to 1.3e-5. Routing weights are the top-2 softmax probabilities, not renormalised. Mamba1 slow path: every multi-token forward starts its sequential selective scan from a zero SSM state (the conv state is carried), hence the failing continuation check below.",
        build=_cfg_jamba,
        features=[
            "attn period 4 offset 2, expert period 2 offset 0 -> [mamba+moe, mamba+mlp, attention+moe, mamba+mlp]",
            "Mamba1 with weighted RMSNorms (eps rms_norm_eps) on dt (R=2), B and C before dt_proj / the scan",
            "attention without RoPE, GQA 4q/2kv, head_dim 8",
            "MoE 4 experts (24 wide) top-2: softmax over all logits, top-2 probabilities NOT renormalised; SwiGLU experts",
            "checkpoint names feed_forward.router.weight, feed_forward.experts.N.{gate,up,down}_proj.weight",
        ],
    ),
    "zamba": dict(
        MAMBA_FAMILY,
        seed=5983,
        atol=2.5e-4,
        atol_note="The selective scan is a contraction per channel. An fp64 recomputation of these rows (SEMANTICS_MAMBA.md section 11) differs from them by up to 8.7e-6. Mamba1 slow path: every multi-token forward starts its sequential selective scan from a zero SSM state (the conv state is carried), hence the failing continuation check below.",
        build=_cfg_zamba,
        features=[
            "layers [mamba, hybrid, mamba, hybrid, mamba]; both hybrid layers run the ONE shared attention block",
            "hybrid: shared block on concat(hidden, embeddings) -> linear -> added to the mamba input only",
            "multi-head Mamba1: 2 heads of 32; in_proj rows interleaved (x = even rows, z = odd rows)",
            "per-head x_proj [2, 2+2*16, 32], dt_proj [2, 32, 2] + bias [2, 32], A_log [2, 32, 16], D [2, 32]",
            "attention scale (head_dim/2)^-0.5, head_dim 16, no RoPE, GQA 4q/2kv; gated gelu MLP",
        ],
    ),
}
