"""Checkpoint-format variants of other families: MXFP4, ternary and block-scaled FP8 weights.

Each FAMILIES entry: a seed, a config builder, whether the norms are zero-centred and the features
the fixture exercises (make_fixtures.py reads them)."""

from oracle_common import *  # noqa: F401,F403

from fixture_families import dense, latent, moe


FAMILIES = {
    # gpt_oss's fixture again, with its experts stored as MXFP4 (its own seed: rounding moves margins).
    "gpt_oss_mxfp4": dict(
        moe.FAMILIES["gpt_oss"],
        model_type="gpt_oss",
        mxfp4=True,
        seed=1729,
        features=[
            "gpt_oss's tiny config, with the experts stored as MXFP4 the way released gpt-oss checkpoints are: "
            "<w>_blocks [E, out, in/32, 16] (two FP4 e2m1 values a byte, low nibble first) and <w>_scales "
            "[E, out, in/32] (biased power-of-two exponents), quantization_config.quant_method mxfp4",
            "expert weights rounded to MXFP4 before the reference runs; transformers dequantizes the checkpoint "
            "on load (Mxfp4Config(dequantize=True)) and the reload check holds bit for bit",
        ],
    ),

    # bitnet's fixture again, as BitNet b1.58 checkpoints are published: every decoder linear a BitLinear layer
    # (transformers' own class runs the reference), its weight ternary codes packed four to a byte with a
    # weight_scale, its input rows quantised to int8 per token (absmax); lm_head stays bf16.
    "bitnet_ternary": dict(
        dense.FAMILIES["bitnet"],
        model_type="bitnet",
        bitnet_ternary=True,
        seed=19106,
        features=[
            "bitnet's tiny config (its features apply: RMS sub-norms in both blocks, gated ReLU^2 MLP, GQA 4q/2kv), "
            "with quantization_config quant_method bitnet, linear_class bitlinear, quantization_mode offline: every "
            "decoder nn.Linear (q/k/v/o, gate/up/down) replaced by transformers' BitLinear",
            "BitLinear checkpoint format: <w>.weight U8 [out / 4, in], four ternary codes per byte (code + 1 in bits "
            "2i..2i+1 of row r for row i * out / 4 + r), <w>.weight_scale [1]; w = code / weight_scale",
            "ternary codes from each random weight by absmean rounding (round(W / mean|W|) clamped to [-1, 1]); "
            "weight_scale the power of two nearest 1 / mean|W| (so code / scale is bf16-exact), a different one per "
            "tensor",
            "activations: y = F.linear(round(x * s).clamp(-128, 127), w_codes) / (weight_scale * s), s = 127 / "
            "max|x| per row; BitLinear's torch.compile disabled for the reference (eager semantics)",
        ],
    ),

    # llama's fixture again, with its decoder linears stored as block-scaled FP8 (any family can take
    # `fp8_block`: every nn.Linear inside the decoder layers is quantised). Blocks of 40x48 on hidden 64 /
    # intermediate 96 leave partial blocks at the bottom and right edges, and k/v (32 rows) sit in one block
    # taller than themselves.
    "llama_fp8": dict(
        dense.FAMILIES["llama"],
        model_type="llama",
        fp8_block=(40, 48),
        seed=1110,
        features=[
            "llama's tiny config, with the decoder linears (q/k/v/o, gate/up/down) stored as block-scaled FP8 the way "
            "DeepSeek-V3 checkpoints are: <w>.weight F8_E4M3 (e4m3fn) and <w>.weight_scale_inv float32 "
            "[ceil(R/40), ceil(C/48)], w = fp8 * scale_inv per block; quantization_config quant_method fp8, fmt e4m3, "
            "activation_scheme dynamic, weight_block_size [40, 48]; embeddings, lm_head and norms stay bf16",
            "partial edge blocks: q/o [64, 64] -> scale grid [2, 2], gate/up [96, 64] -> [3, 2], down [64, 96] -> [2, 2], "
            "k/v [32, 64] -> [1, 2]",
            "linear weights rounded to FP8 (decoded by transformers' _dequantize_fp8_weight) before the reference runs",
        ],
    ),

    # deepseek_v3's fixture again, stored as DeepSeek-V3/R1 and Kimi K2 publish theirs: every decoder linear AND every
    # routed and shared expert in block-scaled FP8; the router (mlp.gate.weight, e_score_correction_bias), norms,
    # embeddings and lm_head stay bf16. The fused in-memory experts are quantised per expert as the checkpoint stores
    # them (fp8_round_linears_). Blocks of 6x5 (rows != cols, so a transposed block shows) divide none of the expert
    # shapes: gate/up [8, 64] -> scale grid [2, 13], down [64, 8] -> [11, 2], partial at the bottom and right edges.
    # FP8 rounding moves the routers' gaps, so it has its own seed: as for deepseek_v3, no seed of 800 (9000-9799, floor
    # 0.01) clears 0.01 for every router gap; 9593 is their best (margin 0.0106, router gap 0.0085, >= 34x atol).
    "deepseek_v3_fp8": dict(
        latent.FAMILIES["deepseek_v3"],
        model_type="deepseek_v3",
        fp8_block=(6, 5),
        seed=9593,
        features=[
            "deepseek_v3's tiny config (its features apply: MLA q-LoRA, yarn, dense layer 0, DSMoE sigmoid router with "
            "e_score_correction_bias, 12 experts in 4 groups, top-3, one shared expert), with the checkpoint stored in "
            "block-scaled FP8 as DeepSeek-V3/R1 and Kimi K2 publish theirs: <w>.weight F8_E4M3 (e4m3fn) and "
            "<w>.weight_scale_inv float32 [ceil(R/6), ceil(C/5)], w = fp8 * scale_inv per block; quantization_config "
            "quant_method fp8, fmt e4m3, activation_scheme dynamic, weight_block_size [6, 5]",
            "FP8: every decoder nn.Linear (q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj, layer 0's dense "
            "gate/up/down, mlp.shared_experts.{gate,up,down}_proj) and every routed expert, each "
            "mlp.experts.N.{gate,up,down}_proj.weight its own FP8 tensor with its own scale grid (quantised per expert "
            "and projection, not as the fused in-memory gate_up_proj [E, 2I, H] / down_proj [E, H, I]); bf16: "
            "mlp.gate.weight (the router), mlp.gate.e_score_correction_bias, the norms, embed_tokens and lm_head",
            "partial edge blocks everywhere: experts and shared expert gate/up [8, 64] -> scale grid [2, 13], down "
            "[64, 8] -> [11, 2]; q_a_proj [32, 64] -> [6, 13], q_b_proj [96, 32] -> [16, 7] (rows divide), "
            "kv_a_proj_with_mqa [40, 64] -> [7, 13], kv_b_proj [112, 32] -> [19, 7], o_proj [64, 48] -> [11, 10], "
            "dense gate/up/down [64, 64] -> [11, 13]",
            "weights rounded to FP8 (decoded by transformers' _dequantize_fp8_weight) before the reference runs",
        ],
    ),
}
