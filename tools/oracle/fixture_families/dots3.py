"""dots3_note_text (Dots3NoteTextConfig, Dots3NoteForCausalLM; transformers models/dots3_note/): a DeepSeek-V3.2 /
GLM-5-style DSA decoder whose attention is MLA in two per-layer geometries (semantics: the dots3 memo, Part 1).

Schedule (4 layers, the class default pattern "i < 2 or i % 4 == 1"): layer_types [indexed_attention,
indexed_attention, sliding_attention, sliding_attention]; legacy first_k_dense_replace 1 with moe_layer_freq 2 gives
mlp_layer_types [dense, dense, sparse, dense] (only the derived list is written; the legacy keys are consumed).

Geometry (the config is built from the released checkpoint's legacy keys, swa_*, rope_theta / swa_rope_theta; the
saved config.json carries transformers 5.23's canonical form, per_layer_config + nested rope_parameters, and reloads
identically):
- indexed layers 0-1: 4 heads (= kv heads), q_lora 16, kv_lora 16, qk_nope 8, qk_rope 8, v 8 (qk_head_dim 16,
  softmax scale 16^-0.5), LoRA scales sqrt(64/16) = 2 on q_resid and on the normed latent; lightning indexer 16 heads
  x 16 (rope on its FIRST 8 dims, interleaved), index_topk 4, so every query from position 4 on attends to 4 chosen
  latents (320 of the fixture's 368 indexer queries select);
- sliding layers 2-3: 2 heads, kv_lora 24, qk_nope 12, qk_rope 8, v 8 (qk_head_dim 20, scale 20^-0.5), kv scale
  sqrt(64/24), no indexer, sliding_window 6 (the query plus its 5 previous keys: kv_idx > q_idx - 6);
- global head_dim 20 = the sliding qk_head_dim, as published configs have it (256 = swa head_dim there), so it differs
  from the indexed qk_head_dim 16: head_dim is read only as the RoPE-fraction denominator (partial_rotary_factor =
  8 / 20 = 0.4 for both types, int(20 x 0.4) = 8 rotated dims; an engine that took head_dim as the indexed qk width
  would mis-scale those layers). swa_head_dim 20 = global, so per_layer_config does not repeat it;
- RoPE interleaved everywhere; theta 8e5 on indexed layers, 5e3 on sliding layers (swapping them moves the rows by
  ~9);
- MoE (layer 2 only): 8 routed experts of width 8, top-2, sigmoid + e_score_correction_bias, n_group 1 (no groups),
  renormalised, routed_scaling_factor 1.0; one shared expert of width shared_experts_intermediate_size 12 (not
  moe_intermediate_size 8); the dense layers' intermediate_size is 6 (differs from both).

Size: the directory is <= 260 kB. At hidden 64 and vocab 256 the embedding and head are 65.5 kB and
expected.safetensors 50 kB; the geometry first asked for (q_lora 32, MoE on layers 1-3, dense width 32) is ~138k
parameters (~360 kB of directory), and even one MoE layer with q_lora 32 is ~300 kB. So q_lora_rank is 16 (the
indexer's wq_b, the biggest tensor, is 16 x 16 x q_lora), only layer 2 is routed (the MoE is the same on every
layer; one routed layer also keeps the router gaps clear, as for glm_moe_dsa) and the dense width is 6. With
q_lora 16 the indexed layers' q and kv scales are both 2; the sliding layers (q 2, kv 1.633) tell them apart
(swapping the two scales moves the rows by ~5).

Init (on top of make_fixtures' shared table: matrices N(0, 0.125), norm weights N(1, 0.1), router N(0, 0.3)):
q_b_proj and the indexer's wq_b N(0, 16^-0.5) (fan-in q_lora); kv_b_proj N(0, 16^-0.5) / N(0, 24^-0.5) per layer
type; o_proj N(0, 32^-0.5) / N(0, 16^-0.5) (fan-in heads x v); the experts', shared expert's and dense MLP's down_proj
N(0, width^-0.5); the indexer's k_norm bias N(0, 0.3) (zeroing it moves the rows by ~10); e_score_correction_bias
N(0, 0.3) (redrawn buffer; it changes the chosen expert pair for 68 of the 92 routed positions). After the draw
q_a_proj and kv_a_proj_with_mqa (all rows) are x 1/32: q_a_layernorm / kv_a_layernorm then see a mean square ~1e-3,
so their eps (rms_norm_eps 1e-5, not DeepSeek's fixed 1e-6) shows (1e-6 there moves the rows by 3.9), and the
shared k_rot reaches k_rope_only_layernorm at rms ~1/32, so skipping that norm moves the rows by ~9 (its weight
set to 1: 8.5; its eps at 1e-6: 0.91). g_proj keeps N(0, 0.125) (gate logits std ~1): a constant gate of 0.5 moves
the rows by 7.9, no gate (sigmoid 1) by 8.2. Attention scores have std ~2.8-3.3 per layer. Index top-k raised past
the context (dense MLA) changes every prompt's greedy tokens from step 0 (rows move by 13.0); index_topk 5 moves them
by 9.3.
All effects are max |dlogit| over one uncached forward of prompt + tokens[:-1], measured outside make_fixtures
(seed 26419).

Prompts: the attention families' (5, 13, 29) (positions reach 43), not the DSA families' (5, 23, 80):
make_fixtures' dsa=True continuation check only knows those three lengths, and at (5, 23, 80) only 2 of the 200
seeds kept the router gap >= 0.01 (none passed every criterion). Chunked prefill, checked outside make_fixtures
(pieces [1, 2, 2], [4, 1, 8], [3, 7, 19] then the 15 generated tokens at once, as state_family_checks), matches one
uncached forward to <= 1.4e-5: the indexer's top-k over the growing indexer-key cache and the sliding cache
(DynamicSlidingWindowLayer, 5 latents kept) agree with the uncached path.

Seed: 26419, from 26200-26599 (the first pick's block 26200-26399, then 26400-26599). Base criteria: every greedy
top-1/top-2 margin >= 0.018, router k-th/(k+1)-th gap >= 0.01 (logit units: 2 x the biased-sigmoid gap), fp32
index-score cut >= 1e-4 and >= 6 distinct greedy ids per prompt; 10 of the 400 passed (26235, 26239, 26283, 26333,
26365, 26419, 26446, 26459, 26571, 26593). On top of them, the index top-k must be stable under bf16, as
cbc-simt-tests checks it:
- KernelsMatchCpuInstructionByInstruction runs the GPU's cbc.kv.index_select on the CPU's q, weights and indexer
  keys rounded to bf16 and allows, per step and layer, 1 missing key per 20 selected. With its defaults (16-token
  steps, 3 new tokens) the prompts run in 6 steps: steps 0-2 (prefill, 52 / 58 / 64 selected positions) allow
  2 / 2 / 3 misses, steps 3-5 (prompt 1 at position 14 with prompt 2 at 27, 28; then prompt 2 at 29; then 30) allow
  none. (Seed 26239, index-score cut 0.0020, flipped a key of prompt 2's position 28 in step 3.)
- bf16 rounding of q, k and the head weights moves a row's 4th-vs-5th score difference by ~0.005 of the row's
  score std (rms over seeds 26400-26405; the largest per-row score error is ~0.013 of std). A cut >= 0.05 of std on
  every selecting (query, layer) row of the fixture (160 per run) is out of reach: ~15% of rows fall below it for
  any seed, and re-scaling the indexer's init (k_norm bias std 0.1 or 1.0, k_norm weight std 0.5, positive-mean
  weights_proj) leaves that ratio where it is (ReLU and the LayerNorm make the scores' relative error scale-free).
- So the criterion is on the rows the SIMT test runs: on the zero-allowance rows (the 5 positions above, both
  indexed layers) the 4th-vs-5th gap must be >= 0.025 of the row's score std (5x the rms bf16 error), and a bf16
  simulation (q, k and weights rounded, scores in fp32) must miss fewer keys than allowed in every step.
  Passing: 26333, 26419, 26446, 26459 (zero-allowance cut 0.033 / 0.027 / 0.026 / 0.036 of std); all four pass
  cbc-simt-tests, with the latent attention's worst error 0.805 / 0.670 / 0.813 / 0.655 of the tolerance. 26419
  has the best margin and router gap of them (26459's margin is 0.0183, 26333's router gap 0.0106) and keeps the
  latent attention's error below 0.8 of the tolerance.
26419: margins 0.0652 / 0.0784 / 0.0469, router gap 0.0220 (bf16-stable), distinct ids 13 / 15 / 15, cached vs
uncached 1.5e-5; index top-k: zero-allowance rows' smallest cut 0.027 of std (>= 3.8x the row's largest simulated
bf16 score error), every other SIMT row >= 0.0083 of std, at most 1 row below 0.02 of std in any step (1 simulated
miss, step 2 layer 1, allowance 3); over the whole fixture (16 greedy steps, cached + uncached) the index-score cut
is 0.0046 (0.0038 of the row's std; 26239: 0.0020 / 0.0027). cbc-simt-tests: latent attention worst 0.670 of the
tolerance (26239: 0.844).
"""

from oracle_common import *  # noqa: F401,F403

DOTS3 = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=6,  # the dense layers (0, 1, 3)
    num_hidden_layers=4,
    # indexed_attention geometry (the globals)
    num_attention_heads=4,
    num_key_value_heads=4,
    q_lora_rank=16,
    kv_lora_rank=16,
    qk_nope_head_dim=8,
    qk_rope_head_dim=8,
    v_head_dim=8,
    head_dim=20,  # RoPE fraction denominator only: partial_rotary_factor 8/20 on both types
    index_n_heads=16,
    index_head_dim=16,
    index_topk=4,
    # sliding_attention geometry (legacy swa_* keys -> per_layer_config; values equal to the globals are dropped)
    swa_num_attention_heads=2,
    swa_num_key_value_heads=2,
    swa_q_lora_rank=16,
    swa_kv_lora_rank=24,
    swa_head_dim=20,
    swa_qk_nope_head_dim=12,
    swa_qk_rope_head_dim=8,
    swa_v_head_dim=8,
    sliding_window=6,
    rope_theta=8e5,
    swa_rope_theta=5e3,
    # MoE: layer 2 only (i >= 1 and i % 2 == 0)
    first_k_dense_replace=1,
    moe_layer_freq=2,
    n_routed_experts=8,
    num_experts_per_tok=2,
    n_group=1,
    topk_group=1,
    n_shared_experts=1,
    moe_intermediate_size=8,
    shared_experts_intermediate_size=12,
    norm_topk_prob=True,
    routed_scaling_factor=1.0,
    attention_bias=False,
    tie_word_embeddings=False,
    rms_norm_eps=1e-5,
    max_position_embeddings=256,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)


def _cfg_dots3_note_text():
    from transformers import Dots3NoteTextConfig

    return Dots3NoteTextConfig(**DOTS3)


DOTS3_INIT_RULES = [
    (r"q_b_proj\.weight$", 0.0, round(DOTS3["q_lora_rank"] ** -0.5, 4)),
    (r"layers\.[01]\.self_attn\.kv_b_proj\.weight$", 0.0, round(DOTS3["kv_lora_rank"] ** -0.5, 4)),
    (r"layers\.[23]\.self_attn\.kv_b_proj\.weight$", 0.0, round(DOTS3["swa_kv_lora_rank"] ** -0.5, 4)),
    (r"layers\.[01]\.self_attn\.o_proj\.weight$", 0.0, round((4 * 8) ** -0.5, 4)),
    (r"layers\.[23]\.self_attn\.o_proj\.weight$", 0.0, round((2 * 8) ** -0.5, 4)),
    (r"indexer\.wq_b\.weight$", 0.0, round(DOTS3["q_lora_rank"] ** -0.5, 4)),
    (r"indexer\.k_norm\.bias$", 0.0, 0.3),
    (r"mlp\.experts\.down_proj$", 0.0, round(DOTS3["moe_intermediate_size"] ** -0.5, 4)),
    (r"mlp\.shared_experts\.down_proj\.weight$", 0.0, round(DOTS3["shared_experts_intermediate_size"] ** -0.5, 4)),
    (r"mlp\.down_proj\.weight$", 0.0, round(DOTS3["intermediate_size"] ** -0.5, 4)),
]

FAMILIES = {
    "dots3_note_text": dict(
        zero_centred_norms=False,
        atol=2.5e-4,
        seed=26419,
        build=_cfg_dots3_note_text,
        prompt_lengths=PROMPT_LENGTHS,
        init_rules=DOTS3_INIT_RULES,
        # all rows: the latent rows make the q_a/kv_a norm eps show, the k_rope rows make k_rope_only_layernorm matter
        row_scale=[(r"q_a_proj\.weight$", None, 1 / 32), (r"kv_a_proj_with_mqa\.weight$", None, 1 / 32)],
        buffer_init=[(r"gate\.e_score_correction_bias$", 0.0, 0.3)],
        atol_note=MLA_ATOL_NOTE
        + " Routing: sigmoid(fp32 logits) + e_score_correction_bias chooses the top-2 of 8 (n_group 1: no groups); "
        "weights are the unbiased sigmoids renormalised (+1e-20) x routed_scaling_factor 1.0, smooth once the choice "
        "is made. The router gap is 2 x the biased-score gap (a logit error e moves a sigmoid by <= e/4).",
        features=[
            "Dots3NoteForCausalLM, 4 layers: layer_types [indexed_attention, indexed_attention, sliding_attention, "
            "sliding_attention] (the class default pattern), mlp_layer_types [dense, dense, sparse, dense] (from legacy "
            "first_k_dense_replace 1 / moe_layer_freq 2, which are not written)",
            "MLA in two geometries: config.json's globals are the indexed layers' (4 heads, q_lora 16, kv_lora 16, "
            "qk_nope 8, qk_rope 8, v 8) and per_layer_config {\"2\", \"3\"} overrides the sliding layers' "
            "num_attention_heads 2, num_key_value_heads 2, kv_lora_rank 24, qk_nope_head_dim 12 (values equal to the "
            "globals are not repeated); softmax scale (nope + rope)^-0.5 per layer: 16^-0.5 / 20^-0.5, no mscale",
            "head_dim 20 is only the RoPE-fraction denominator: rope_parameters {indexed_attention: theta 8e5, "
            "sliding_attention: theta 5e3}, both partial_rotary_factor 0.4 -> 8 rotated dims = qk_rope_head_dim",
            "LongCat-style LoRA scales: q_resid = q_a_layernorm(q_a_proj x) x sqrt(64/16) (fed to q_b_proj AND the "
            "indexer's wq_b); cached latent = kv_a_layernorm(...) x sqrt(64/kv_lora) (2 / 1.633); q_a/kv_a_layernorm "
            "eps = rms_norm_eps 1e-5 (their inputs scaled x 1/32 so the eps shows)",
            "k_rope_only_layernorm: learned RMSNorm [8] (eps 1e-5) on the shared k_rot BEFORE interleaved RoPE; "
            "kv_a_proj_with_mqa's rope rows scaled x 1/32, so skipping it moves the rows by ~9",
            "per-head sigmoid output gate: attn_out[h] x sigmoid(g_proj(x))[h] before o_proj, x = the normed layer "
            "input; g_proj [heads, 64] without bias",
            "interleaved RoPE (pairs 2i, 2i+1, output de-interleaved) on q_rot (last 8 dims of each head), k_rot and "
            "the indexer's first 8 dims; indexed cos/sin in fp32",
            "lightning indexer on layers 0-1: q = wq_b(q_resid) [16 heads x 16], k = LayerNorm_eps1e-6(wk x) with "
            "weight and bias (bias N(0, 0.3)), rope on the FIRST 8 dims, score = sum_h (weights_proj(x)_h / 4) "
            "ReLU(q_h.k / 4), causal; top index_topk 4 per query, the others masked out of the MLA softmax "
            "(queries with <= 4 visible keys attend to all); full attention instead changes every prompt's tokens",
            "sliding layers 2-3: no indexer, sliding_window 6 (query + 5 previous keys), cache keeps 5 latents",
            "cache per token: indexed layers latent 16 + k_rope 8 + indexer key 16; sliding layers latent 24 + "
            "k_rope 8 (window-limited)",
            "MoE on layer 2: sigmoid + e_score_correction_bias (N(0, 0.3), changes the chosen pair for 68 of 92 "
            "positions), 8 experts, top-2, n_group 1, renormalised, x routed_scaling_factor 1.0; one shared expert of "
            "width shared_experts_intermediate_size 12 (moe_intermediate_size 8, dense intermediate_size 6)",
            "checkpoint names: mlp.experts.N.{gate,up,down}_proj.weight (save_pretrained splits the fused experts), "
            "mlp.gate.weight, mlp.gate.e_score_correction_bias (bf16 in the file, bf16-exact), "
            "mlp.shared_experts.*, self_attn.{q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, "
            "kv_b_proj, k_rope_only_layernorm, g_proj, o_proj}, self_attn.indexer.{wq_b, wk, k_norm.weight, "
            "k_norm.bias, weights_proj} on layers 0-1 only; untied lm_head",
        ],
    ),
}
