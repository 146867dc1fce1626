"""Gemma 4 text decoders, two fixtures of one 6-layer recipe, and Gemma 3n's text decoder on the same schedule
(gemma3n_text, the last section; the attention families' prompts 5, 13, 29; positions reach 43):

- gemma4_text (Gemma4TextConfig, Gemma4ForCausalLM): per-layer embeddings (PLE), KV sharing across layers, K = V
  full-attention layers with their own head size, proportional partial RoPE and the per-layer layer_scalar;
- gemma4_unified_text (Gemma4UnifiedTextConfig, Gemma4UnifiedForCausalLM, models/gemma4_unified/): the same decoder
  without PLE or an MoE block (the class has neither, so its config.json carries no hidden_size_per_layer_input,
  vocab_size_per_layer_input or enable_moe_block keys), sliding_window 8 written explicitly (the class default is
  1024) and use_bidirectional_attention left at the class default "vision" (text tokens causal), as
  google/gemma-4-12B's text_config has it. make_fixtures needs nothing special for it: the model_type equals the
  family name, AutoModelForCausalLM maps gemma4_unified_text to Gemma4UnifiedForCausalLM, and the layer summary
  finds model.model.layers (each with a dense .mlp) and config.layer_types.

Schedule (both): layer_types [sliding, sliding, full, sliding, sliding, full] (written out; sliding_window 8) and
num_kv_shared_layers 2, so layers 4 (sliding) and 5 (full) are KV consumers: they have no k_proj / v_proj / k_norm
and attend over the K/V of the last non-shared layer of their type (layer 3 for 4, layer 2 for 5), which transformers
hands over in `shared_kv_states` (the cache holds K/V for layers 0-3 only). use_double_wide_mlp gives the two
consumer layers an MLP twice as wide. The full layers take global_head_dim 32 and, with attention_k_eq_v,
num_global_key_value_heads 1 (one KV head of 32, no v_proj: V is the raw k_proj output through the weightless
v_norm); the sliding layers keep head_dim 16 and 4 q / 2 kv heads with their own v_proj.

Size: hidden 36 and intermediate 32 (double-wide 64), hidden_size_per_layer_input 4. The sizes follow the
exact-square-root rule: transformers' Gemma4TextScaledWordEmbedding multiplies by embed_scale cast to the weight dtype
(in the fp32 oracle: the fp32 sqrt), cbc by the scale rounded to bf16, as a real bf16 checkpoint needs; so
sqrt(hidden_size) and the PLE table's sqrt(hidden_size_per_layer_input) must be exact in bf16, i.e. small integers,
or the fixture cannot pass (the earlier hidden 32 / PLE 8 gave sqrt 5.656854 and 2.828427, whose bf16 roundings moved
cbc's rows by 0.9-1.9e-3, up to 7x atol). hidden 36 (sqrt 6) and PLE 4 (sqrt 2) qualify (_bf16_exact_sqrt asserts
it); hidden 64 (sqrt 8) does not fit: six layers at 64 are ~510 kB of bf16 weights with COMMON's MLP (~490 kB in the
unified class, ~390 kB at intermediate 64), against the 260 kB asked of a fixture directory, and hidden 16 would leave
the residual stream narrower than every q_proj by 4x. At 36 / 32 / 4 the gemma4_text directory is 257.9 kB
(model.safetensors 194 kB, expected.safetensors alone 50 kB) and gemma4_unified_text's 237.1 kB. The head geometry
(4 x 16 sliding, 4 x 32 full, 2 / 1 KV heads) is as asked, so q_proj is wider than hidden on every layer. (The other
scales stay fp32 Python floats in transformers, per_layer_model_projection's 36^-0.5 and the 2^-0.5 of the PLE
average, and need no rule.)

Init (constants below, shared). Gemma4RMSNorm multiplies by the plain weight (not 1 + w), so zero_centred_norms is
False and the norm weights are drawn around their effective scale. The head is tied, and a random tied Gemma echoes
its input (dense.py's TIED_GEMMA_* comment); the same cure in plain-weight form: the token table at N(0, 0.0625)
(x sqrt(36) = 6: rows of std 0.375), the post-attention and post-feedforward norms at N(2, 0.1) and the final norm at
N(4, 0.1), which keeps the logit std ~1.5 (|logit| <= 6.4) while the layers decide the argmax. Gemma 4 scores are
q.k with scaling 1.0 after the per-head q_norm / k_norm, so unit-mean q/k norm weights give score stds of ~4
(head_dim 16) and ~5.7 (32); q_norm is drawn at N(0.5, 0.1), which halves them (measured: std 1.7-3.2 per layer,
|score| <= 12 in both fixtures), as classic.py keeps its scores moderate for the bf16 SIMT test (its worst
instruction error is 0.45 / 0.53 of the tolerance, at cbc.kv.attention). gemma4_text's PLE table
embed_tokens_per_layer is drawn at N(0, 0.35) (x sqrt(4) = 2: std 0.7, what the old N(0, 0.25) x sqrt(8) gave), so
the token-identity half of each per-layer input is as large as the RMS-normalised context projection it is averaged
with (zeroing the table moves the rows by 4.7). Every layer_scalar buffer (ones in transformers' init) is redrawn
N(1, 0.25) from the seed after the parameters and saved in the checkpoint; the seed must make the six values
distinct, in [0.5, 1.5] and >= 0.05 from 1. Setting one of layers 0-4's scalars to 1 moves the rows by 0.4-4.9;
layer 5's scalar only rescales the stream the final RMSNorm normalises, so it moves them by ~2e-6 (eps) and the
fixtures cannot see it. Everything else is the shared table (matrices N(0, 0.125), other norms N(1, 0.1)); the
sandwich norms make the matrix scales matter little.

Seeds: by dense.py's criteria (every greedy top-1/top-2 margin >= 0.018, >= 6 distinct greedy ids per prompt) plus
the layer_scalar condition above, ranked by margin over torch's cached/uncached noise (max |d| of the cached greedy
rows against one uncached forward).
- gemma4_text: 25656 of 25600-25799 (6 of the 200 passed): margins 0.058 / 0.023 / 0.027 (min 0.0232), 15 / 13 /
  15 distinct ids, noise 2.1e-5; layer_scalar 0.848, 0.605, 1.500, 1.281, 1.211, 1.312.
- gemma4_unified_text: 25927 of 25800-25999 (12 of 200 passed): margins 0.046 / 0.057 / 0.044 (min 0.0441), 14 /
  13 / 14 distinct ids, noise 1.0e-5; layer_scalar 1.305, 0.797, 1.078, 1.141, 1.344, 1.438.
Checked outside make_fixtures (transformers 5.23.0, these seeds): generate() reproduces the greedy tokens and rows
(to 1.2e-6, its prefill slicing the KV-shared layers to the last position), and prefilling prompt + tokens[:-1] in
pieces on one DynamicCache (1-token steps from position 0, blocks of 4, and cuts such as [7, 1, 9, 12, 15] across the
sliding window) matches one uncached forward to <= 4.0e-5 (gemma4_text) and 1.8e-5 (unified): the KV consumers see
the same K/V cached or not (a sliding producer returns its cached window plus the new tokens, and the consumer's
sliding mask is sized to that). Feature effects (max |dlogit| over one uncached forward per prompt; gemma4_text /
unified): sliding window off 7.0 / 7.6, default RoPE over all 32 dims of the full layers 2.1 / 1.1, the proportional
frequencies over the rotary dim 8 instead of 32 4.6 / 3.6, v_norm off 4.9 / 4.3, the softcap off 0.087 / 0.098.

gemma3n_text (Gemma3nTextConfig, Gemma3nForCausalLM, models/gemma3n/): the Gemma 4 attention (scaling 1.0, per-head
q_norm / k_norm, weightless v_norm, plain-weight RMSNorms) and the same KV-sharing rule on the same schedule
(layer_types written out, sliding_window 8, num_kv_shared_layers 2: layers 4 and 5 read layers 3 and 2's K/V),
head_dim 16 with 4 q / 2 kv heads on every layer, RoPE per layer type over the whole head (sliding default theta 1e4,
full linear factor 4 theta 1e6), under AltUp's four residual streams (active stream 0, correct_output_scale on), with
LAuReL (rank 4) beside the attention, per-layer inputs (hidden_size_per_layer_input 16 from a table of
vocab_size_per_layer_input 160 < 256 rows: ids past it read row 0, and every prompt holds some: 1, 3 and 17 of them),
intermediate_size as the per-layer list [64, 64, 96, 64, 64, 96] and Gaussian top-k activation sparsity on layers 0, 2
and 4. No layer_scalar.

Multipliers in the model dtype. Beyond the embedding scale, gemma3n keeps sqrt(hidden_size_per_layer_input) (the PLE
table's scale), per_layer_projection_scale hidden^-0.5, per_layer_input_scale 2^-0.5, each layer's router_input_scale
1/hidden and the sparsity quantile Phi^-1(target) as tensors cast to the model dtype (bf16 in a bf16 model); cbc
rounds the same five to the dtype it builds for (StepBuilder::toWeightDtype: the --dtype of the build, bf16 in the
parity test, not config.json's dtype, which stays "bfloat16" here as save_pretrained writes it for the bf16 copy). The
fp32 oracle rounds none, so each must be exact in bf16 or cancelled: sqrt(16) = 4 twice, 1/16 and 16^-0.5 = 0.25 are
exact; 2^-0.5 (bf16 0.70703125) scales the per-layer input, which enters each layer's branch linearly before
post_per_layer_input_norm, and 16^-0.5 is followed by per_layer_projection_norm, so their rounding cancels (setting
2^-0.5 to its bf16 value moves the rows by 6.9e-6, the fp32 noise); and the sparsity targets are Phi(0.5), Phi(1),
Phi(0.25), whose quantiles are exact (torch's fp32 icdf gives them to 1.2e-7). A target of 0.95 (quantile 1.6448536,
bf16 1.6484375) would not do: moving the three quantiles by one bf16 ulp moves the rows by 0.033, 130x atol. The
fixture passes either way: the parity test's bf16 build (rounding) and the SIMT test's fp32 build (not rounding) both
match these rows to 1e-5.

Size: hidden 16. The router's 1/hidden reaches a tanh, not a norm, so hidden must be a power of two as well as a
square: 16 or 64. 64 does not fit: the attention alone is 65k parameters (131 kB of bf16) at 4 x 16 heads, the six
[64, 64] AltUp projections another 49 kB, against the 260 kB of a fixture directory; 36 (sqrt 6) fails the router
scale (bf16(1/36) = 0.02783). So the residual stream is narrower than every q_proj by 4x; the MLP widths (64 and 96, 4
and 6x hidden) and the per-layer-input width 16 are chosen for the fp32 noise: at widths 32 / 48 with a quantile of
1.5 only ~2 gates of 32 survive, and the tiny MLP outputs, renormalised by post_feedforward_layernorm, amplified fp32
rounding (cached/uncached up to 7.4e-4 over 8 seeds, median 1.3e-4; at 64 / 96, width 16 and quantiles <= 1: up to
8.9e-5, median 4.7e-5, before the init below). The directory is 212.6 kB (model.safetensors 148 kB,
expected.safetensors 50 kB).

Init. Tied head, plain-weight norms (zero_centred_norms False). The norms on what a layer adds to the streams
(input_layernorm, whose output LAuReL adds back, post_attention_layernorm, post_feedforward_layernorm,
post_laurel_norm, post_per_layer_input_norm) are drawn at N(0.25, 0.025). The reason is the SIMT test: AltUp's
innovation y - P_0 subtracts two stream-sized rows, each rounded to bf16 relative to the streams, while the test
allows 0.03 (|x| + 1) or 1% of the row's largest |x| per element; with those norms at 1 the worst instruction error
was 0.79-1.49 of the tolerance over 9 seeds (4 failing), at 0.5 0.67-0.89 over 3, and at 0.25 (|P_0| <= 3.9 here) it
is 0.34. Every branch reads through a norm, so this scale changes only the embedding's share of the streams and the
per-layer gate's input: the token table is N(0, 0.05) (x 4: rows of std 0.2), correct_output_scale N(1, 0.5) (zeros in
transformers' init, which would leave the per-layer branch dead), per_layer_input_gate N(0, 0.5), and the final norm
N(8, 0.1) for a logit std of ~1.6 (|logit| <= 5.9). AltUp: modality_router N(0, 1) (its input is RMSNorm(x) / 16, so
the modalities are tanh(~N(0, 0.25))), prediction_coefs and correction_coefs N(0, 0.25), the projections at the shared
N(0, 0.125) (their scale is renormalised away, their direction is not). q_norm N(0.35, 0.1) (scores q.k at scaling
1.0) and the PLE table N(0, 0.175) (x 4: std 0.7). These scales also keep torch's fp32 noise at ~1e-5 (Gemma 4's
post-norms at 2, q_norm at 0.5 and the router at N(0, 2) gave the median 4.7e-5 above).

Seed 26121 of 26000-26199 (35 of the 200 passed dense.py's criteria), the best margin, with noise in the range of the
leading eight (4.3e-6 to 1.6e-5): margins 0.083 / 0.090 / 0.074 (min 0.0744), 9 / 8 / 8 distinct ids, noise 9.7e-6,
SIMT worst 0.34 of the tolerance (26013, 26146 and 26181 also pass everything, at margins 0.052 / 0.054 / 0.046).
Checked outside make_fixtures (transformers 5.23.0, this seed): generate() reproduces the greedy tokens and rows (to
1.4e-6), and prefilling prompt + tokens[:-1] in pieces on one DynamicCache (1-token steps, blocks of 4, cuts 7, 1, 9,
12, 15) matches one uncached forward to <= 1.1e-5. Feature effects (max |dlogit| over one uncached forward per
prompt): correct_output_scale at 1 3.8, prediction_coefs 0 8.0, correction_coefs 0 3.7, modality_router 0 8.5, router
scale 1 instead of 1/16 9.4, altup_projections identity 8.2, altup_unembed_projections identity 7.3, LAuReL's low-rank
term off 7.4, post_laurel_norm skipped 6.2, activation sparsity off 4.1, the per-layer branch off 5.4, ids >= 160
reading row id % 160 instead of row 0 4.3, sliding window off 6.7, the full layers' linear factor off 3.5, the softcap
off 0.079."""

from oracle_common import *  # noqa: F401,F403


GEMMA4_LAYER_TYPES = [
    "sliding_attention",
    "sliding_attention",
    "full_attention",
    "sliding_attention",
    "sliding_attention",
    "full_attention",
]
GEMMA4_SLIDING_WINDOW = 8
GEMMA4_HIDDEN = 36  # sqrt 6: the embedding scale is bf16-exact (module docstring)
GEMMA4_INTERMEDIATE = 32
GEMMA4_PLE_DIM = 4  # hidden_size_per_layer_input; sqrt 2: the PLE scale is bf16-exact


def _bf16_exact_sqrt(n: int) -> float:
    """sqrt(n), asserted to be a small integer (so bf16-exact): transformers multiplies the embedding by its scale
    cast to the weight dtype, cbc by the scale rounded to bf16; only an exact scale makes the fp32 oracle agree."""
    root = math.isqrt(n)
    assert root * root == n and float(torch.tensor(float(root)).to(torch.bfloat16)) == root, n
    return float(root)


# Tied head, plain-weight norms (see the module docstring).
GEMMA4_STD = {"embed": 0.0625}
GEMMA4_NORM_MEAN = {
    "post_attention_layernorm": 2.0,
    "post_feedforward_layernorm": 2.0,
    "model.norm.": 4.0,
    "self_attn.q_norm": 0.5,  # scores q.k at scaling 1.0: std ~2-3 rather than ~4-6
}
GEMMA4_INIT = [(r"embed_tokens_per_layer\.weight$", 0.0, 0.35)]
GEMMA4_BUFFER_INIT = [(r"\.layer_scalar$", 1.0, 0.25)]

# Seeds (module docstring) and the layer_scalar values they draw (rounded, for the features list).
GEMMA4_TEXT_SEED = 25656
GEMMA4_TEXT_LAYER_SCALARS = (0.848, 0.605, 1.5, 1.281, 1.211, 1.312)
GEMMA4_UNIFIED_SEED = 25927
GEMMA4_UNIFIED_LAYER_SCALARS = (1.305, 0.797, 1.078, 1.141, 1.344, 1.438)


def _gemma4_decoder_kwargs() -> dict:
    """What gemma4_text and gemma4_unified_text share: the schedule, the head geometry, KV sharing, RoPE, softcap."""
    _bf16_exact_sqrt(GEMMA4_HIDDEN)
    return dict(
        **{**COMMON, "hidden_size": GEMMA4_HIDDEN, "intermediate_size": GEMMA4_INTERMEDIATE},
        num_hidden_layers=len(GEMMA4_LAYER_TYPES),
        layer_types=list(GEMMA4_LAYER_TYPES),
        sliding_window=GEMMA4_SLIDING_WINDOW,
        head_dim=16,
        global_head_dim=32,  # popped by __post_init__ into per_layer_config for the full layers
        num_global_key_value_heads=1,  # likewise (only with attention_k_eq_v)
        attention_k_eq_v=True,
        hidden_activation="gelu_pytorch_tanh",
        num_kv_shared_layers=2,
        use_double_wide_mlp=True,
        rms_norm_eps=1e-6,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
        },
        final_logit_softcapping=30.0,
        tie_word_embeddings=True,
        attention_bias=False,
    )


def _cfg_gemma4_text():
    from transformers import Gemma4TextConfig

    _bf16_exact_sqrt(GEMMA4_PLE_DIM)
    return Gemma4TextConfig(
        **_gemma4_decoder_kwargs(),
        hidden_size_per_layer_input=GEMMA4_PLE_DIM,
        vocab_size_per_layer_input=COMMON["vocab_size"],
        enable_moe_block=False,
    )


def _cfg_gemma4_unified_text():
    from transformers import Gemma4UnifiedTextConfig

    # No PLE / MoE keys: the class has neither. use_bidirectional_attention stays the class default "vision"
    # (text tokens causal), as in google/gemma-4-12B's text_config.
    return Gemma4UnifiedTextConfig(**_gemma4_decoder_kwargs())


GEMMA4_SHARED_FEATURES = [
    "layer_types [sliding, sliding, full, sliding, sliding, full] (written out), sliding_window 8: a query at "
    "p sees keys p-7..p (prompts 13 and 29 cross it)",
    "per-layer-type head geometry: sliding layers head_dim 16, 4 q / 2 kv heads (q_proj [64, 36], k_proj and "
    "v_proj [32, 36], o_proj [36, 64]); full layers global_head_dim 32 with attention_k_eq_v and "
    "num_global_key_value_heads 1 (q_proj [128, 36], k_proj [32, 36] = one KV head of 32, no v_proj, o_proj "
    "[36, 128]); config.json carries them as per_layer_config overrides {head_dim 32, num_key_value_heads 1} "
    "of layers 2 and 5",
    "attention_k_eq_v: on the full layers V = v_norm(k_proj(x)), the raw K projection (before k_norm and RoPE) "
    "through the weightless v_norm; K = rope(k_norm(k_proj(x)))",
    "attention scaling 1.0 (no 1/sqrt(head_dim)): q_norm / k_norm are per-head RMSNorms (plain weight, [16] or "
    "[32]) before RoPE; v_norm is an RMSNorm without weight on every V; fp32 softmax",
    "RoPE per layer type, rotate-half: sliding default theta 1e4 over all 16 dims; full proportional, "
    "partial_rotary_factor 0.25, theta 1e6: 4 rotated frequency pairs inv_freq = theta^(-2i/32) for i < 4 "
    "(denominator the whole head_dim 32, not the rotary dim 8) and 12 zero frequencies (identity), pairs "
    "(i, i + 16) over the whole 32-dim head",
    "num_kv_shared_layers 2: layers 4 (sliding) and 5 (full) have no k_proj / v_proj / k_norm and attend over "
    "the K/V of the last non-shared layer of their type (layer 3 for 4, layer 2 for 5), with their own "
    "q_proj, q_norm, RoPE and mask; the KV cache holds layers 0-3 only",
    "use_double_wide_mlp: the KV-shared layers 4 and 5 have MLP width 2 x 32 = 64 (gate/up [64, 36], down "
    "[36, 64]); layers 0-3 width 32; gelu_pytorch_tanh",
    "sandwich norms (input, post_attention, pre_feedforward, post_feedforward), RMSNorm x w (not 1 + w), eps 1e-6",
    "final_logit_softcapping 30 (tanh(x / 30) x 30); no attention bias",
]


def _layer_scalar_feature(values) -> str:
    return (
        "layer_scalar buffer [1] per layer (model.layers.N.layer_scalar in the checkpoint), multiplying the whole "
        "hidden state (residual included) at the end of the layer: " + ", ".join(f"{v:.3f}" for v in values)
        + " (layer 5's is cancelled by the final RMSNorm, so only layers 0-4's are tested)"
    )



# gemma3n_text (module docstring). Every multiplier transformers holds as a tensor of the model dtype is bf16-exact or
# followed by an RMSNorm that cancels it, so the fp32 oracle and a bf16 (rounding) or fp32 cbc build agree.
GEMMA3N_HIDDEN = 16  # sqrt 4, 16^-0.5 = 0.25 and the router's 1/16 are exact in bf16
GEMMA3N_INTERMEDIATE = [64, 64, 96, 64, 64, 96]  # a per-layer list: the full layers are wider
GEMMA3N_PLE_DIM = 16  # hidden_size_per_layer_input; sqrt 4
GEMMA3N_PLE_VOCAB = 160  # vocab_size_per_layer_input < 256: every prompt holds ids past it, which read row 0


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


# Sparsity targets Phi(z) whose quantiles z are bf16-exact: transformers casts Phi^-1(target) to the model dtype, cbc
# rounds it to its build dtype, so only such a target gives the fp32 oracle and a bf16 build the same cutoff.
GEMMA3N_SPARSITY_Z = [0.5, 0.0, 1.0, 0.0, 0.25, 0.0]
GEMMA3N_SPARSITY = [_normal_cdf(z) if z else 0.0 for z in GEMMA3N_SPARSITY_Z]

GEMMA3N_STD = {"embed": 0.05}  # x sqrt(16) = 4: token rows of std 0.2
GEMMA3N_BRANCH_NORM = 0.25  # the norms on what each layer adds to the streams (module docstring)
GEMMA3N_INIT = [
    (r"embed_tokens_per_layer\.weight$", 0.0, 0.175),  # x sqrt(16) = 4: std 0.7
    (
        r"(input_layernorm|post_attention_layernorm|post_feedforward_layernorm|post_laurel_norm|"
        r"post_per_layer_input_norm)\.weight$",
        GEMMA3N_BRANCH_NORM,
        GEMMA3N_BRANCH_NORM / 10,
    ),
    (r"altup\.correct_output_scale$", 1.0, 0.5),  # zeros in transformers' init (the per-layer branch would be dead)
    (r"per_layer_input_gate\.weight$", 0.0, 0.5),
    (r"altup\.modality_router\.weight$", 0.0, 1.0),  # its input is RMSNorm(x) / 16: modalities tanh(~N(0, 0.25))
    (r"altup\.prediction_coefs\.weight$", 0.0, 0.25),
    (r"altup\.correction_coefs\.weight$", 0.0, 0.25),
]
GEMMA3N_NORM_MEAN = {**GEMMA4_NORM_MEAN, "self_attn.q_norm": 0.35, "model.norm.": 8.0}
GEMMA3N_SEED = 26121


def _cfg_gemma3n_text():
    from transformers import Gemma3nTextConfig

    _bf16_exact_sqrt(GEMMA3N_HIDDEN)
    _bf16_exact_sqrt(GEMMA3N_PLE_DIM)
    assert GEMMA3N_HIDDEN & (GEMMA3N_HIDDEN - 1) == 0  # router_input_scale 1/hidden exact
    for z in GEMMA3N_SPARSITY_Z:
        assert float(torch.tensor(z).to(torch.bfloat16)) == z, z
    return Gemma3nTextConfig(
        **{**COMMON, "hidden_size": GEMMA3N_HIDDEN, "intermediate_size": list(GEMMA3N_INTERMEDIATE)},
        num_hidden_layers=len(GEMMA4_LAYER_TYPES),
        layer_types=list(GEMMA4_LAYER_TYPES),
        sliding_window=GEMMA4_SLIDING_WINDOW,
        head_dim=16,
        hidden_activation="gelu_pytorch_tanh",
        num_kv_shared_layers=2,
        rms_norm_eps=1e-6,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
        },
        final_logit_softcapping=30.0,
        tie_word_embeddings=True,
        attention_bias=False,
        hidden_size_per_layer_input=GEMMA3N_PLE_DIM,
        vocab_size_per_layer_input=GEMMA3N_PLE_VOCAB,
        altup_num_inputs=4,
        altup_active_idx=0,
        altup_correct_scale=True,
        laurel_rank=4,
        activation_sparsity_pattern=list(GEMMA3N_SPARSITY),
    )


FAMILIES = {
    "gemma4_text": dict(
        atol_note="Six layers with post-norm weights ~2 and a final norm ~4 put torch's fp32 cached/uncached noise at "
        "~1e-5, hence atol 2.5e-4. The final softcap is tanh (1-Lipschitz). KV-shared layers 4 and 5 attend over "
        "layers 3 and 2's K/V; transformers gives the same rows cached or uncached, in generate() and with the "
        "prefill cut into pieces (checked when the fixture was made). hidden_size 36 and hidden_size_per_layer_input "
        "4 have integer square roots (6, 2), so the embedding scales are bf16-exact and the bf16 rounding "
        "transformers (and cbc) apply to them changes nothing.",
        seed=GEMMA4_TEXT_SEED,
        atol=2.5e-4,
        build=_cfg_gemma4_text,
        zero_centred_norms=False,
        std=GEMMA4_STD,
        norm_mean=GEMMA4_NORM_MEAN,
        init_rules=GEMMA4_INIT,
        buffer_init=GEMMA4_BUFFER_INIT,
        features=[
            GEMMA4_SHARED_FEATURES[0],
            "hidden 36, intermediate 32 (the fixture size; see the module docstring); tied lm_head, embed scale "
            "sqrt(36) = 6, exact in bf16",
            *GEMMA4_SHARED_FEATURES[1:7],
            "per-layer embeddings (hidden_size_per_layer_input 4): embed_tokens_per_layer [256, 6 x 4] x sqrt(4) = 2 "
            "(exact in bf16) and per_layer_model_projection [24, 36] of the scaled token embedding x 36^-0.5, "
            "reshaped [6, 4] and RMS-normed by per_layer_projection_norm [4]; layer i's input = (normed projection "
            "+ table row) x 2^-0.5",
            "PLE in layer i, after the MLP residual: h += post_per_layer_input_norm(per_layer_projection("
            "gelu_tanh(per_layer_input_gate(h)) * per_layer_input_i)), gate [4, 36], projection [36, 4]",
            _layer_scalar_feature(GEMMA4_TEXT_LAYER_SCALARS),
            *GEMMA4_SHARED_FEATURES[7:-1],
            "final_logit_softcapping 30 (tanh(x / 30) x 30); no attention bias, no MoE block",
        ],
    ),
    "gemma4_unified_text": dict(
        atol_note="Six layers with post-norm weights ~2 and a final norm ~4 put torch's fp32 cached/uncached noise at "
        "~1e-5, hence atol 2.5e-4. The final softcap is tanh (1-Lipschitz). KV-shared layers 4 and 5 attend over "
        "layers 3 and 2's K/V; transformers gives the same rows cached or uncached (checked when the fixture was "
        "made). hidden_size 36 has the integer square root 6, so the embedding scale is bf16-exact.",
        seed=GEMMA4_UNIFIED_SEED,
        atol=2.5e-4,
        build=_cfg_gemma4_unified_text,
        zero_centred_norms=False,
        std=GEMMA4_STD,
        norm_mean=GEMMA4_NORM_MEAN,
        buffer_init=GEMMA4_BUFFER_INIT,
        features=[
            "Gemma4UnifiedForCausalLM (gemma4_unified_text): the Gemma 4 decoder without per-layer embeddings or "
            "an MoE block (the class has neither; config.json carries no such keys); use_bidirectional_attention "
            "\"vision\" (the class default: text tokens are causal)",
            GEMMA4_SHARED_FEATURES[0] + " (set explicitly: the class default is 1024)",
            "hidden 36, intermediate 32 (the fixture size; see the module docstring); tied lm_head, embed scale "
            "sqrt(36) = 6, exact in bf16",
            *GEMMA4_SHARED_FEATURES[1:7],
            _layer_scalar_feature(GEMMA4_UNIFIED_LAYER_SCALARS),
            *GEMMA4_SHARED_FEATURES[7:],
        ],
    ),
    "gemma3n_text": dict(
        atol_note="Six layers under AltUp's four streams put torch's fp32 cached/uncached noise at ~1e-5, hence atol "
        "2.5e-4. The final softcap is tanh (1-Lipschitz). KV-shared layers 4 and 5 attend over layers 3 and 2's K/V; "
        "transformers gives the same rows cached or uncached, in generate() and with the prefill cut into pieces "
        "(checked when the fixture was made). Every multiplier transformers keeps as a tensor of the model dtype is "
        "bf16-exact (sqrt(16) twice, 1/16, 16^-0.5, the sparsity quantiles 0.5, 1.0, 0.25) or cancelled by the RMSNorm "
        "after it (2^-0.5), so these rows hold for a build that rounds them to bf16 as for one that does not.",
        seed=GEMMA3N_SEED,
        atol=2.5e-4,
        build=_cfg_gemma3n_text,
        zero_centred_norms=False,
        std=GEMMA3N_STD,
        norm_mean=GEMMA3N_NORM_MEAN,
        init_rules=GEMMA3N_INIT,
        features=[
            "Gemma3nForCausalLM (gemma3n_text): " + GEMMA4_SHARED_FEATURES[0]
            + " (set explicitly: the class default is every fifth layer full, window 512)",
            "hidden 16 (the fixture size; see the module docstring), 4 q / 2 kv heads of head_dim 16 on every layer "
            "(q_proj [64, 16], k_proj and v_proj [32, 16], o_proj [16, 64]); tied lm_head, embed scale sqrt(16) = 4, "
            "exact in bf16",
            "intermediate_size a per-layer list [64, 64, 96, 64, 64, 96] (the full layers wider); gelu_pytorch_tanh",
            "activation sparsity, activation_sparsity_pattern [Phi(0.5), 0, Phi(1), 0, Phi(0.25), 0] = [0.6915, 0, "
            "0.8413, 0, 0.5987, 0]: on layers 0, 2 and 4 the gate projection g becomes relu(g - (mean(g) + std(g) "
            "* z)) per token before gelu (mean and population std over the layer's width, z = Phi^-1(target) = 0.5, "
            "1.0, 0.25, exact in bf16)",
            "attention scaling 1.0 (no 1/sqrt(head_dim); query_pre_attn_scalar is not read): q_norm / k_norm are "
            "per-head RMSNorms (plain weight [16]) before RoPE, v_norm a weightless RMSNorm on every V; fp32 softmax; "
            "no attention softcap",
            "RoPE per layer type, rotate-half over all 16 dims: sliding default theta 1e4; full linear factor 4, "
            "theta 1e6",
            GEMMA4_SHARED_FEATURES[5],
            "AltUp, altup_num_inputs 4, altup_active_idx 0: streams X_0 = the scaled embedding e and X_i = "
            "altup_projections.{i-1}(e) [16, 16] brought to e's RMS (mean square clamped at 1e-5); per layer the "
            "modalities m = tanh(modality_router(router_norm(X_0) / 16)), prediction P_j = X_j + sum_i C[j, i] X_i "
            "with C = prediction_coefs(m) [16, 4] as [4, 4], the blocks on P_0, correction Q_j = P_j + (1 + "
            "correction_coefs(m'))_j (y - P_0) with m' the modalities of the blocks' output y (the same router); no "
            "coefficient clipping at inference",
            "AltUp collapse before the final norm: the mean of Q_0 and altup_unembed_projections.{i-1}(Q_i) [16, 16] "
            "each brought to Q_0's RMS",
            "LAuReL, laurel_rank 4, beside the attention on its normed input xn: laurel = xn + post_laurel_norm("
            "linear_right [16, 4](linear_left [4, 16](xn))); the layer's residual is (P_0 + post_attention_layernorm("
            "attn) + laurel) / sqrt(2), then + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(.)))",
            "per-layer inputs (hidden_size_per_layer_input 16): embed_tokens_per_layer [160, 6 x 16] x sqrt(16) = 4 "
            "(exact in bf16), vocab_size_per_layer_input 160 < vocab 256, so ids >= 160 read row 0 (prompt ids: 1, 3 "
            "and 17 of the three prompts, generated ids more); per_layer_model_projection [96, 16] of the scaled "
            "embedding x 16^-0.5, reshaped [6, 16] and RMS-normed by per_layer_projection_norm [16]; layer i's input = "
            "(normed projection + table row) x 2^-0.5",
            "per-layer branch after the AltUp correction: s = Q_0 * correct_output_scale [16] (altup_correct_scale), "
            "b = post_per_layer_input_norm(per_layer_projection [16, 16](gelu_tanh(per_layer_input_gate [16, 16](s)) "
            "* input_i)), added to streams 1-3 only (not to Q_0)",
            "sandwich norms (input, post_attention, pre_feedforward, post_feedforward), RMSNorm x w (not 1 + w), "
            "eps 1e-6; final_logit_softcapping 30 (tanh(x / 30) x 30); no attention bias",
        ],
    ),
}
