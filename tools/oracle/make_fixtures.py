#!/usr/bin/env python3
"""Generate the transformers parity fixtures under test/parity/fixtures/<family>/.

Each family gets a tiny random model whose config exercises that family's non-default
features, stored the way transformers itself stores it (config.json + bf16
model.safetensors via save_pretrained), plus the oracle's float32 expectations:

  expected.safetensors  prompt_<i> int32 [len], tokens_<i> int32 [16],
                        logits_<i> float32 [16, vocab]   (i = 0, 1, 2)
  meta.json             family, seed, versions, tolerance, features, self-checks

Row 0 of logits_<i> is the logit vector at the last prompt position (its argmax is
tokens_<i>[0]); row j is the logit vector after feeding tokens_<i>[j-1] through the
DynamicCache. Greedy, 16 tokens, no EOS stop.

Every parameter is redrawn from a fixed-seed generator and rounded to bf16, so the
bf16 checkpoint holds the exact weights the float32 expectations were computed with.
The run is single-threaded so that the bytes are reproducible on one machine.

Usage:
  python tools/oracle/make_fixtures.py                  # (re)generate all families
  python tools/oracle/make_fixtures.py --family gemma2  # one family (repeatable)
  python tools/oracle/make_fixtures.py --check          # regenerate in a temp dir, compare bytes
  python tools/oracle/make_fixtures.py --out DIR
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

import safetensors
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, DynamicCache

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "test" / "parity" / "fixtures"

PINNED_TRANSFORMERS = "5.23.0"
FIXTURE_FORMAT = 1
NEW_TOKENS = 16
PROMPT_LENGTHS = (5, 13, 29)
VOCAB = 256
PROMPT_SEED = 20240611  # prompts: token ids drawn from [3, VOCAB) so bos/eos/pad (1/2/0) stay out
FILES = ("config.json", "model.safetensors", "expected.safetensors", "meta.json")

# Shared shape of every tiny config. Token ids are valid inside the vocab.
COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)

DEFAULT_ATOL = 1e-4


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


PHI3_ORIGINAL_MAX = 24


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


# --------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------

BASE_STD = {
    "weight": 0.125,  # ~1/sqrt(fan_in=64): keeps activations O(1)
    "embed": 0.25,  # lm_head/embeddings: logits std ~ 8*0.25 = 2
    "bias": 0.05,
    "norm": 0.1,
    "router": 0.3,  # router logits std ~ 2.4: routing is decisive but mixed
    "router_bias": 0.3,
    "shared_gate": 0.2,
    "sinks": 0.5,
}


def _param_stats(name: str, p, zero_centred: bool, std: dict, norm_mean: dict) -> tuple[float, float]:
    leaf = name.rsplit(".", 1)[-1]
    if leaf == "sinks":
        return 0.0, std["sinks"]
    if name.endswith("mlp.router.bias"):
        return 0.0, std["router_bias"]
    if leaf == "bias" or leaf.endswith("_bias"):
        return 0.0, std["bias"]
    if name.endswith(("mlp.gate.weight", "mlp.router.weight")):
        return 0.0, std["router"]
    if name.endswith("shared_expert_gate.weight"):
        return 0.0, std["shared_gate"]
    if p.ndim == 1 and "norm" in name:
        for key, mean in norm_mean.items():
            if key in name:
                return mean, std["norm"]
        return (0.0 if zero_centred else 1.0), std["norm"]
    if "embed_tokens" in name or name.startswith("lm_head"):
        return 0.0, std["embed"]
    return 0.0, std["weight"]


def reinit_(model, seed: int, zero_centred: bool, std_overrides: dict | None, norm_mean: dict | None) -> dict:
    """Redraw every parameter from one generator (name order), rounded to bf16."""
    std = dict(BASE_STD)
    std.update(std_overrides or {})
    norm_mean = norm_mean or {}
    gen = torch.Generator().manual_seed(seed)
    table = {}
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            mean, s = _param_stats(name, p, zero_centred, std, norm_mean)
            noise = torch.randn(tuple(p.shape), generator=gen, dtype=torch.float32)
            p.copy_((noise * s + mean).to(torch.bfloat16).to(torch.float32))
            table[name] = [mean, s]
    return table


# --------------------------------------------------------------------------------------
# Oracle runs
# --------------------------------------------------------------------------------------


def make_prompts() -> list[list[int]]:
    gen = torch.Generator().manual_seed(PROMPT_SEED)
    prompts = []
    for n in PROMPT_LENGTHS:
        ids = torch.randint(3, VOCAB, (n,), generator=gen, dtype=torch.int64)
        prompts.append([int(x) for x in ids])
    return prompts


class RouterProbe:
    """Records the smallest gap between the k-th and (k+1)-th router logit.

    Every router in these families ranks experts by its raw logits (softmax is monotone), so
    this gap says how far a reimplementation's logits may drift before an expert choice flips.
    """

    def __init__(self, model):
        self.min_gap = math.inf
        self.handles = []
        for _, mod in model.named_modules():
            if type(mod).__name__.endswith("TopKRouter"):
                self.handles.append(mod.register_forward_hook(self._hook))

    def _hook(self, mod, args, out):
        logits = out[0].detach().float().reshape(-1, out[0].shape[-1])
        top = torch.topk(logits, mod.top_k + 1, dim=-1).values
        gap = float((top[:, mod.top_k - 1] - top[:, mod.top_k]).min())
        self.min_gap = min(self.min_gap, gap)

    def close(self):
        for h in self.handles:
            h.remove()


class ClampProbe:
    """gpt_oss: fraction of gate (above) / up (either side) pre-activations the clamp changes."""

    def __init__(self, model):
        self.clamped = 0
        self.total = 0
        self.handles = []
        for _, mod in model.named_modules():
            if type(mod).__name__ == "GptOssExperts":
                self.handles.append(mod.register_forward_hook(self._hook))

    def _hook(self, mod, args, out):
        hs, idx = args[0], args[1]
        for t in range(hs.shape[0]):
            for e in idx[t].tolist():
                gu = hs[t] @ mod.gate_up_proj[e] + mod.gate_up_proj_bias[e]
                gate, up = gu[::2], gu[1::2]
                self.clamped += int((gate > mod.limit).sum()) + int((up.abs() > mod.limit).sum())
                self.total += gate.numel() + up.numel()

    def close(self):
        for h in self.handles:
            h.remove()


@torch.no_grad()
def greedy(model, prompt: list[int]):
    """Prefill with a fresh DynamicCache, then 15 one-token cached steps. Returns (rows, tokens)."""
    cache = DynamicCache(config=model.config)
    out = model(input_ids=torch.tensor([prompt]), past_key_values=cache, use_cache=True)
    rows = [out.logits[0, -1].float().clone()]
    tokens = [int(torch.argmax(rows[-1]))]
    cache = out.past_key_values
    for _ in range(1, NEW_TOKENS):
        out = model(input_ids=torch.tensor([[tokens[-1]]]), past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        rows.append(out.logits[0, -1].float().clone())
        tokens.append(int(torch.argmax(rows[-1])))
    return torch.stack(rows), tokens


@torch.no_grad()
def uncached_rows(model, prompt: list[int], tokens: list[int]):
    """One full forward over prompt + tokens[:-1] without a cache; rows aligned with greedy()."""
    seq = prompt + tokens[:-1]
    out = model(input_ids=torch.tensor([seq]), use_cache=False)
    return out.logits[0, len(prompt) - 1 :].float()


def top2_margin(rows) -> float:
    top = torch.topk(rows, 2, dim=-1).values
    return float((top[:, 0] - top[:, 1]).min())


def longrope_regime(prompt_len: int, original_max: int) -> str:
    # HF picks the factor set per forward from max(position_ids)+1 (dynamic_rope_update).
    prefill = "long" if prompt_len > original_max else "short"
    last_step_len = prompt_len + NEW_TOKENS - 1  # seq len seen by the last cached step
    if prefill == "long":
        return "long throughout (prompt already longer than original_max_position_embeddings)"
    if last_step_len > original_max:
        first_long = original_max + 1 - prompt_len  # decode step j (1-based row) whose forward sees len > orig
        return (
            f"mixed: prefill and rows 0..{first_long - 1} use short_factor; rows {first_long}..15 "
            "use long_factor for the new token while cached K keep the short-factor rotation"
        )
    return "short throughout"


# --------------------------------------------------------------------------------------
# One family
# --------------------------------------------------------------------------------------


def _json_dump(obj, path: Path):
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def _layer_summary(model, cfg) -> dict:
    text_cfg = cfg.get_text_config(decoder=True)
    layer_types = getattr(text_cfg, "layer_types", None)
    if layer_types is None:
        sw = getattr(text_cfg, "sliding_window", None)
        layer_types = ["sliding_attention" if sw else "full_attention"] * text_cfg.num_hidden_layers
    mlp_kinds = []
    for layer in model.model.layers:
        mlp = getattr(layer, "mlp", None)
        if mlp is None:
            mlp = getattr(layer, "block_sparse_moe")
        mlp_kinds.append("moe" if hasattr(mlp, "experts") else "dense")
    return {"layer_types": list(layer_types), "mlp_kinds": mlp_kinds}


def build_family(family: str, out_dir: Path, verbose: bool = True) -> dict:
    spec = FAMILIES[family]
    seed = spec["seed"]
    torch.manual_seed(seed)
    cfg = spec["build"]()
    assert cfg.model_type == family, (cfg.model_type, family)
    model = AutoModelForCausalLM.from_config(
        cfg, attn_implementation="eager", experts_implementation="eager", dtype=torch.float32
    )
    model.eval()
    reinit_(model, seed, spec["zero_centred_norms"], spec.get("std"), spec.get("norm_mean"))

    fam_dir = out_dir / family
    if fam_dir.exists():
        shutil.rmtree(fam_dir)
    fam_dir.mkdir(parents=True)

    # Checkpoint: HF's own names and layout, bf16 (lossless: weights are bf16-exact).
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    bf16.save_pretrained(fam_dir, safe_serialization=True)
    del bf16
    for extra in sorted(os.listdir(fam_dir)):
        if extra not in ("config.json", "model.safetensors"):
            os.remove(fam_dir / extra)

    prompts = make_prompts()
    router = RouterProbe(model)
    clamp = ClampProbe(model)
    tensors = {}
    per_prompt = []
    for i, prompt in enumerate(prompts):
        rows, tokens = greedy(model, prompt)
        nc = uncached_rows(model, prompt, tokens)
        delta = (nc - rows).abs()
        tensors[f"prompt_{i}"] = torch.tensor(prompt, dtype=torch.int32)
        tensors[f"tokens_{i}"] = torch.tensor(tokens, dtype=torch.int32)
        tensors[f"logits_{i}"] = rows.contiguous()
        entry = {
            "prompt_len": len(prompt),
            "tokens": tokens,
            "cached_vs_uncached_max_abs_all_rows": float(delta.max()),
            "cached_vs_uncached_max_abs_final_step": float(delta[-1].max()),
            "uncached_greedy_tokens_agree": bool(torch.equal(nc.argmax(-1), rows.argmax(-1))),
            "min_top1_top2_margin": top2_margin(rows),
            "logit_std": float(rows.std()),
            "logit_max_abs": float(rows.abs().max()),
        }
        if family == "phi3":
            entry["longrope_regime"] = longrope_regime(len(prompt), PHI3_ORIGINAL_MAX)
        per_prompt.append(entry)
    router.close()
    clamp.close()
    save_file(tensors, str(fam_dir / "expected.safetensors"), metadata={"format": "pt"})

    # Round trip: the saved checkpoint, loaded back in fp32, must reproduce row 0 bit for bit.
    reloaded = AutoModelForCausalLM.from_pretrained(
        fam_dir, attn_implementation="eager", experts_implementation="eager", dtype=torch.float32
    )
    reloaded.eval()
    reload_delta = 0.0
    for i, prompt in enumerate(prompts):
        with torch.no_grad():
            r0 = reloaded(input_ids=torch.tensor([prompt]), use_cache=False).logits[0, -1].float()
        reload_delta = max(reload_delta, float((r0 - tensors[f"logits_{i}"][0]).abs().max()))
    del reloaded

    atol = spec.get("atol", DEFAULT_ATOL)
    disagreements = [
        i for i, p in enumerate(per_prompt) if p["cached_vs_uncached_max_abs_all_rows"] > atol / 10
    ]
    agreeing = [p for i, p in enumerate(per_prompt) if i not in disagreements]
    max_delta = max(p["cached_vs_uncached_max_abs_all_rows"] for p in per_prompt)
    noise = max(p["cached_vs_uncached_max_abs_all_rows"] for p in agreeing)
    margin = min(p["min_top1_top2_margin"] for p in per_prompt)
    logit_max = max(p["logit_max_abs"] for p in per_prompt)
    guard = f"min top-1/top-2 logit margin {margin:.3g}"
    if not math.isinf(router.min_gap):
        guard += f" and min router k-th/(k+1)-th logit gap {router.min_gap:.3g}"
    notes = [
        f"Tolerance: atol {atol:g} on max |dlogit| over every row, tokens exact. The oracle is fp32 with "
        f"bf16-exact weights and |logit| <= {logit_max:.3g}; torch's own cached and uncached paths (different "
        f"kernel shapes, so different reduction orders) differ by at most {noise:.2g} here, which is the size "
        f"a correct fp32 reimplementation should land at, so atol leaves >= {atol / noise:.0f}x headroom while "
        f"a semantic slip (mask off by one, rope pairing, norm placement, wrong scale) moves logits by >1e-2. "
        f"The {guard} {'are' if ' and ' in guard else 'is'} >= {min(margin, router.min_gap) / atol:.0f}x atol, "
        f"so no token or expert choice can "
        f"flip inside the tolerance."
    ]
    if spec.get("atol_note"):
        notes.append(spec["atol_note"])
    if disagreements:
        notes.append(
            "cached vs uncached paths DISAGREE beyond atol/10 for prompt(s) "
            + ", ".join(str(i) for i in disagreements)
            + "; the expected logits are the cached greedy path (prefill in one forward, then one token per forward)."
        )
    else:
        notes.append(
            f"cached greedy path agrees with one uncached forward over prompt+tokens[:-1] on all 16 rows "
            f"of every prompt (max |d| {max_delta:.3g})."
        )
    if family == "phi3":
        notes.append(
            "longrope: transformers chooses long_factor iff max(position_ids)+1 of the CURRENT forward > "
            f"original_max_position_embeddings ({PHI3_ORIGINAL_MAX}); attention_factor "
            "sqrt(1+ln(256/24)/ln(24)) is the same for both sets. Keys already in the cache are not re-rotated. "
            "Prompt 0 stays short, prompt 1 switches mid-decode (cached/uncached disagree by design), prompt 2 "
            "is long from the prefill on. An engine reproduces these rows if each forward uses the set chosen "
            "by that forward's max position+1 and the prompt is prefilled in one forward; with chunked prefill "
            "the rule 'use max(prompt_len, position+1)' reproduces them too."
        )
    if family == "gemma3_text":
        notes.append(
            "Gemma3 ignores attn_logit_softcapping in attention (not passed to the attention function); "
            "final_logit_softcapping is None here."
        )

    meta = {
        "fixture_format": FIXTURE_FORMAT,
        "family": family,
        "model_type": cfg.model_type,
        "architecture": type(model).__name__,
        "seed": seed,
        "prompt_seed": PROMPT_SEED,
        "versions": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "safetensors": safetensors.__version__,
        },
        "dtype": {"checkpoint": "bfloat16 (bf16-exact weights)", "expectations": "float32"},
        "attn_implementation": "eager",
        "atol": atol,
        "tolerance_metric": "max |logit - expected| over every row of logits_<i>; tokens must match exactly",
        "notes": " ".join(notes),
        "prompt_lengths": [len(p) for p in prompts],
        "new_tokens": NEW_TOKENS,
        "rows": "row 0 = logits at the last prompt position; row j = logits after feeding tokens[j-1]",
        "features": spec["features"],
        **_layer_summary(model, cfg),
        "init": {
            "generator": "torch.Generator().manual_seed(seed); params in name order; N(mean, std) then bf16",
            "std": {**BASE_STD, **spec.get("std", {})},
            "zero_centred_norms": spec["zero_centred_norms"],
            "norm_mean_overrides": spec.get("norm_mean", {}),
        },
        "checks": {
            "per_prompt": per_prompt,
            "cached_vs_uncached_max_abs": max_delta,
            "reload_row0_max_abs": reload_delta,
            "min_router_top_k_gap": None if math.isinf(router.min_gap) else router.min_gap,
        },
    }
    if clamp.total:
        meta["checks"]["swiglu_clamped_fraction"] = clamp.clamped / clamp.total
    _json_dump(meta, fam_dir / "meta.json")
    assert sorted(os.listdir(fam_dir)) == sorted(FILES), sorted(os.listdir(fam_dir))

    if verbose:
        print(
            f"{family:12s} cached/uncached max|d| per prompt "
            + " ".join(f"{p['cached_vs_uncached_max_abs_all_rows']:.2e}" for p in per_prompt)
            + f", reload {reload_delta:.1e}, min margin "
            + f"{min(p['min_top1_top2_margin'] for p in per_prompt):.3f}"
            + (f", router gap {router.min_gap:.3f}" if not math.isinf(router.min_gap) else ""),
            file=sys.stderr,
        )
    return meta


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def compare_dirs(expected_root: Path, got_root: Path, families: list[str]) -> list[str]:
    problems = []
    for fam in families:
        a, b = expected_root / fam, got_root / fam
        if not a.is_dir():
            problems.append(f"{fam}: missing committed directory {a}")
            continue
        names_a = sorted(os.listdir(a))
        names_b = sorted(os.listdir(b))
        if names_a != names_b:
            problems.append(f"{fam}: file set differs: committed {names_a} vs regenerated {names_b}")
        for name in sorted(set(names_a) & set(names_b)):
            if (a / name).read_bytes() != (b / name).read_bytes():
                detail = ""
                if name == "expected.safetensors":
                    detail = _tensor_diff(a / name, b / name)
                problems.append(f"{fam}/{name}: bytes differ{detail}")
    return problems


def _tensor_diff(pa: Path, pb: Path) -> str:
    try:
        with safe_open(str(pa), "pt") as fa, safe_open(str(pb), "pt") as fb:
            worst = 0.0
            for k in fa.keys():
                ta, tb = fa.get_tensor(k), fb.get_tensor(k)
                if ta.shape != tb.shape:
                    return f" ({k}: shape {tuple(ta.shape)} vs {tuple(tb.shape)})"
                worst = max(worst, float((ta.double() - tb.double()).abs().max()))
        return f" (max |d| over tensors {worst:.3g})"
    except Exception as exc:  # diagnostic only
        return f" ({exc})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", action="append", help="only this family (repeatable)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output root (default {DEFAULT_OUT})")
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare bytes with --out")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    families = args.family or list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown family {unknown}; known: {', '.join(FAMILIES)}")

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    if transformers.__version__ != PINNED_TRANSFORMERS:
        print(
            f"error: transformers {transformers.__version__} found, fixtures are pinned to {PINNED_TRANSFORMERS}",
            file=sys.stderr,
        )
        return 2

    if args.check:
        with tempfile.TemporaryDirectory(prefix="cbc-fixtures-") as tmp:
            for fam in families:
                build_family(fam, Path(tmp), verbose=not args.quiet)
            problems = compare_dirs(args.out, Path(tmp), families)
        if problems:
            print("fixture check FAILED:", file=sys.stderr)
            for p in problems:
                print("  " + p, file=sys.stderr)
            return 1
        print(f"fixture check ok: {len(families)} families identical", file=sys.stderr)
        return 0

    args.out.mkdir(parents=True, exist_ok=True)
    for fam in families:
        build_family(fam, args.out, verbose=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
