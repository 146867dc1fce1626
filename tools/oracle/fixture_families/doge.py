"""doge (DogeConfig, DogeForCausalLM; transformers models/doge/): SmallDoge's dense decoder with dynamic mask attention
(semantics memo: /work/scratch/sem_doge.md at the time of writing; the points below are the ones the fixture pins).

Model: 3 dense layers (is_moe False), hidden 64, 4 query / 2 KV heads of head_dim 16, SwiGLU MLP of width 64, silu,
rms_norm_eps 1e-6, tied head (tie_word_embeddings True, as every published recipe), RoPE default theta 1e4 (half-split,
full head), no biases (attention_bias False: q/k/v/o and dt_proj; mlp_bias False), sliding_window None and
keep_window_size left at the class default 2048.

What a Doge layer computes beyond Llama:
- per-head q_norm / k_norm (RMSNorm over head_dim 16, eps 1e-6, plain weight) before RoPE;
- a per-key, per-KV-head additive score bias: dt = dt_proj(v_j) with dt_proj [2, 32] reading ALL KV heads' value
  rows of key j (v before any RoPE), bias_j = exp(A * softplus(dt)) with A [2] one scalar per KV head, added to every
  allowed score of that key (query head h uses KV head h // 2); the bias does not depend on the query, so a cache can
  keep it per token;
- learned per-channel residual scales: x = input_residual * x + attn(input_layernorm(x)), then
  x = post_attention_residual * x + mlp(post_attention_layernorm(x)) (the vectors scale the residual, not the branch).
The keep-window top-k (keep the keep_window_size largest-bias visible keys) only runs when the key length exceeds
keep_window_size; the fixture's key lengths are <= 44, so it never runs (checked: torch.topk is never called, and every
call of prepare_dynamic_mask sees keep_window_size 2048 and <= 44 keys). Its tie-breaking (sem memo section 4) is
therefore irrelevant here, even though repeated tokens give bit-identical layer-0 biases.
The MoE variant (CDMoE) is not covered: transformers' router reinterprets [N, 2K] as [2, N, K] and mixes tokens across
the batch and positions, so its prefill logits are not a causal per-token oracle.

Size: at intermediate 96 (COMMON) the directory would be ~275 kB, at 80 ~260 kB, so the MLP is 64 wide (~245 kB).

Init (on top of make_fixtures' shared table: matrices N(0, 0.125), norm weights N(1, 0.1)):
- self_attn.A N(0, 0.5). transformers initialises A to zeros, which makes every bias 1 and cancels in the softmax;
- self_attn.dt_proj.weight N(0, 0.125) (dt std ~0.7, softplus(dt) ~0.2-2): with A the biases span ~0.4-2.6, so
  exp(A * softplus(dt)) varies clearly across keys without making the scores large (bf16 friendly);
- input_residual and post_attention_residual N(1, 0.25) (transformers: ones);
- q_norm / k_norm weights N(1, 0.2) (wider than the shared N(1, 0.1), so reading ones moves the rows clearly);
- tied head: embed_tokens N(0, 0.0625) and the final norm N(4, 0.1), as the other tied families (classic.py's
  TIED_EMBED_STD / TIED_FINAL_NORM_MEAN): with the shared N(0, 0.25) the embedding rides the residual stream to the
  tied head and most seeds repeat one or two ids (1-6 distinct per prompt in 10 probed seeds).

Feature effects (seed 26796; max |dlogit| over one uncached forward of prompt + tokens[:-1] per prompt, measured
outside make_fixtures): A = 0 in every layer (the transformers init) 2.88 (per layer 2.64 / 1.21 / 0.52); dt_proj = 0
(bias constant per head, cancels) the same 2.64 / 1.21 / 0.52; A's two entries swapped (KV head mapping) 2.97 / 1.88
/ 0.62; dt_proj block-diagonal (each head's bias from its own v only) 2.30; softplus dropped 2.72; input_residual = 1
0.92 / 2.43 / 2.09 (all 3.05); post_attention_residual = 1 3.15 / 3.20 / 2.02 (all 4.07); q_norm = 1 4.27 / 1.62 /
0.62; k_norm = 1 2.15 / 1.48 / 0.61; both q/k norms = 1 everywhere 4.10. All >= 0.5, i.e. >= 2000x atol.

Seed: 26796, the best min margin of 26600-26799 among those with every greedy top-1/top-2 margin >= 0.018 and >= 6
distinct greedy ids per prompt (19 of the 200 passed): margins min 0.0416, distinct ids 7 / 12 / 11, cached vs
uncached ~6e-6; A = [0.346, 0.155], [0.299, -0.469], [-0.21, 0.369] (layers 0-2).
"""

from oracle_common import *  # noqa: F401,F403

DOGE_SEED = 26796
DOGE_INTERMEDIATE = 64  # COMMON's 96 would put the directory over 260 kB (module docstring)

DOGE = dict(
    **{**COMMON, "intermediate_size": DOGE_INTERMEDIATE},
    num_hidden_layers=3,
    head_dim=16,
    hidden_act="silu",
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
    attention_bias=False,
    mlp_bias=False,
    sliding_window=None,
    is_moe=False,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
)


def _cfg_doge():
    from transformers import DogeConfig

    cfg = DogeConfig(**DOGE)
    assert cfg.keep_window_size == 2048 and not cfg.is_moe, cfg  # class default: the top-k never runs here
    return cfg


DOGE_INIT_RULES = [
    (r"self_attn\.A$", 0.0, 0.5),
    (r"self_attn\.dt_proj\.weight$", 0.0, 0.125),
    (r"\.(input|post_attention)_residual$", 1.0, 0.25),
    (r"self_attn\.[qk]_norm\.weight$", 1.0, 0.2),
    (r"embed_tokens\.weight$", 0.0, 0.0625),
    (r"^model\.norm\.weight$", 4.0, 0.1),
]

FAMILIES = {
    "doge": dict(
        seed=DOGE_SEED,
        build=_cfg_doge,
        zero_centred_norms=False,
        atol=2.5e-4,
        init_rules=DOGE_INIT_RULES,
        atol_note="The dynamic bias exp(A * softplus(dt)) is in ~[0.4, 2.6] and enters the scores additively; the "
        "final norm's effective scale ~4 (init) scales hidden-state error by ~4, inside the measured noise.",
        features=[
            "DogeForCausalLM, 3 dense layers (is_moe false), hidden 64, GQA 4q/2kv, head_dim 16, SwiGLU MLP 64 wide "
            "(silu, no biases), rms_norm_eps 1e-6, tied head (no lm_head.weight)",
            "per-head q_norm / k_norm: RMSNorm over head_dim 16 with plain weight (N(1, 0.2)), before RoPE",
            "RoPE default theta 1e4, half-split (rotate_half) over the full head_dim; v gets none",
            "dynamic mask attention: per key j and KV head g, bias = exp(A[g] * softplus(dt_proj(v_j))[g]), "
            "dt_proj [2, 32] reads both KV heads' raw value rows of key j (no bias); added to every causal score of "
            "key j for the query heads h // 2 == g, softmax in fp32; A [2] drawn N(0, 0.5) (transformers inits zeros: "
            "bias 1, cancels), dt_proj N(0, 0.125): biases span ~0.4-2.6",
            "keep_window_size 2048 (class default): the keep-window top-k is never entered (key length <= 44)",
            "learned per-channel residual scales: x = input_residual * x + attn(...), "
            "x = post_attention_residual * x + mlp(...); both [64], drawn N(1, 0.25) (transformers inits ones)",
            "checkpoint names: model.layers.N.{input_residual, post_attention_residual, input_layernorm.weight, "
            "post_attention_layernorm.weight, self_attn.{A, q_proj, k_proj, v_proj, dt_proj, o_proj, q_norm, k_norm}, "
            "mlp.{gate_proj, up_proj, down_proj}}; model.embed_tokens.weight, model.norm.weight",
        ],
    ),
}
