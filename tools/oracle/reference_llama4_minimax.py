#!/usr/bin/env python3
"""Independent reimplementation of the llama4_text, llama4 and minimax_m2 fixtures, written from
SEMANTICS_LLAMA4_MINIMAX.md.

Reads only test/parity/fixtures/<family>/{config.json, model.safetensors, expected.safetensors} (no
transformers), runs one full forward over prompt + tokens[:-1] per prompt in fp32 with explicit masks
built from absolute positions, and compares every row with logits_<i>. It checks the document, not cbc:
the layer schedule (no_rope_layers, layer_types, moe_layers), the chunk mask p // C, complex-pair RoPE
with llama3 frequencies, the weightless RMS ("L2") qk norm after RoPE, the NoPE temperature
1 + attn_scale * log1p(floor((p + 1) / floor_scale)), the top-1 sigmoid router scaling the expert input
with the [E, H, 2I] fused experts, the shared expert; MiniMax-M2's whole-projection q/k norms,
rotate-half RoPE on the first rotary_dim dims and its biased sigmoid router. For the composite llama4 the
text config is read from text_config and the text tensors from language_model.*; the vision tensors are
skipped.

Usage: python tools/oracle/reference_llama4_minimax.py [--family F ...]   (exit 1 if a family misses its atol)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

FIXTURES = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures"
FAMILIES = ("llama4_text", "llama4", "minimax_m2")


def rms(x, w, eps):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else w * y


def swiglu(x, g, u, d):
    return (F.silu(x @ g.T) * (x @ u.T)) @ d.T


def llama3_inv_freq(rp, d):
    inv = 1.0 / rp["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    if rp.get("rope_type", "default") != "llama3":
        return inv
    factor, lo, hi, orig = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"], rp["original_max_position_embeddings"]
    out = []
    for f in inv.tolist():
        lam = 2 * math.pi / f
        if lam > orig / lo:
            out.append(f / factor)
        elif lam < orig / hi:
            out.append(f)
        else:
            s = (orig / lam - lo) / (hi - lo)
            out.append((1 - s) * f / factor + s * f)
    return torch.tensor(out, dtype=torch.float32)


def attention(q, k, v, allowed, scale):
    """q [T, nh, d], k/v [T, nkv, d], allowed [T, T] bool -> [T, nh * d]."""
    T, nh, d = q.shape
    rep = nh // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    s = s.masked_fill(~allowed, -math.inf).softmax(-1)
    return torch.einsum("hqk,khd->qhd", s, v).reshape(T, nh * d)


def llama4_forward(cfg, w, ids):
    """Sections L1-L6."""
    eps, d, nh, nkv = cfg["rms_norm_eps"], cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    T = len(ids)
    p = torch.arange(T)
    causal = p[None, :] <= p[:, None]  # [q, k]
    C = cfg["attention_chunk_size"]
    chunked = causal & ((p[None, :] // C) == (p[:, None] // C))
    ang = p[:, None].float() * llama3_inv_freq(cfg["rope_parameters"], d)[None, :]  # [T, d/2]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]

    def rope(x):  # complex pairs (2i, 2i+1), kept interleaved
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)

    temp = 1 + cfg["attn_scale"] * torch.log1p(torch.floor((p.float() + 1) / cfg["floor_scale"]))
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        use_rope = bool(cfg["no_rope_layers"][i])
        x = rms(h, w[pre + "input_layernorm.weight"], eps)
        q = (x @ w[pre + "self_attn.q_proj.weight"].T).view(T, nh, d)
        k = (x @ w[pre + "self_attn.k_proj.weight"].T).view(T, nkv, d)
        v = (x @ w[pre + "self_attn.v_proj.weight"].T).view(T, nkv, d)
        if use_rope:
            q, k = rope(q), rope(k)
            if cfg["use_qk_norm"]:
                q, k = rms(q, None, eps), rms(k, None, eps)
        elif cfg["attn_temperature_tuning"]:
            q = q * temp[:, None, None]
        allowed = chunked if cfg["layer_types"][i] == "chunked_attention" else causal
        h = h + attention(q, k, v, allowed, d**-0.5) @ w[pre + "self_attn.o_proj.weight"].T
        x = rms(h, w[pre + "post_attention_layernorm.weight"], eps)
        f = pre + "feed_forward."
        if i in cfg["moe_layers"]:
            logits = x @ w[f + "router.weight"].T
            top_v, top_i = logits.topk(cfg["num_experts_per_tok"], dim=-1)
            gate_up, down = w[f + "experts.gate_up_proj"], w[f + "experts.down_proj"]  # [E, H, 2I], [E, I, H]
            I = down.shape[1]
            y = swiglu(x, w[f + "shared_expert.gate_proj.weight"], w[f + "shared_expert.up_proj.weight"],
                       w[f + "shared_expert.down_proj.weight"])
            for t in range(T):
                for e, lv in zip(top_i[t].tolist(), top_v[t].tolist()):
                    gu = (x[t] * torch.sigmoid(torch.tensor(lv))) @ gate_up[e]  # the score scales the INPUT
                    y[t] += (gu[I:] * F.silu(gu[:I])) @ down[e]
        else:
            y = swiglu(x, w[f + "gate_proj.weight"], w[f + "up_proj.weight"], w[f + "down_proj.weight"])
        h = h + y
    return rms(h, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


def minimax_m2_forward(cfg, w, ids):
    """Sections M1-M2."""
    eps, d, nh, nkv = cfg["rms_norm_eps"], cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    T = len(ids)
    p = torch.arange(T)
    causal = p[None, :] <= p[:, None]
    rp = cfg["rope_parameters"]
    rd = int(d * rp.get("partial_rotary_factor", 1.0))
    assert rd == cfg.get("rotary_dim", rd)
    inv = 1.0 / rp["rope_theta"] ** (torch.arange(0, rd, 2, dtype=torch.float32) / rd)
    ang = p[:, None].float() * inv[None, :]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]

    def rope(x):  # rotate-half on the first rd dims: pairs (i, i + rd/2)
        x1, x2, rest = x[..., : rd // 2], x[..., rd // 2 : rd], x[..., rd:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)

    k_top = cfg["num_experts_per_tok"]
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        a = pre + "self_attn."
        x = rms(h, w[pre + "input_layernorm.weight"], eps)
        q = rms(x @ w[a + "q_proj.weight"].T, w[a + "q_norm.weight"], eps).view(T, nh, d)  # whole projection
        k = rms(x @ w[a + "k_proj.weight"].T, w[a + "k_norm.weight"], eps).view(T, nkv, d)
        v = (x @ w[a + "v_proj.weight"].T).view(T, nkv, d)
        h = h + attention(rope(q), rope(k), v, causal, d**-0.5) @ w[a + "o_proj.weight"].T
        x = rms(h, w[pre + "post_attention_layernorm.weight"], eps)
        m = pre + "block_sparse_moe."
        s = torch.sigmoid(x @ w[m + "gate.weight"].T)
        idx = (s + w[m + "e_score_correction_bias"]).topk(k_top, dim=-1).indices
        wt = s.gather(1, idx)
        wt = wt / wt.sum(-1, keepdim=True)
        y = torch.zeros_like(x)
        for t in range(T):
            for e, we in zip(idx[t].tolist(), wt[t].tolist()):
                ex = f"{m}experts.{e}."
                y[t] += we * swiglu(x[t : t + 1], w[ex + "w1.weight"], w[ex + "w3.weight"], w[ex + "w2.weight"])[0]
        h = h + y
    return rms(h, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


def check(family: str) -> tuple[bool, float]:
    d = FIXTURES / family
    cfg = json.loads((d / "config.json").read_text())
    w = {k: v.float() for k, v in load_file(str(d / "model.safetensors")).items()}
    if cfg["model_type"] == "llama4":  # composite: nested text config, text tensors under language_model.
        cfg = cfg["text_config"]
        w = {k[len("language_model."):]: v for k, v in w.items() if k.startswith("language_model.")}
    fwd = minimax_m2_forward if cfg["model_type"] == "minimax_m2" else llama4_forward
    exp = load_file(str(d / "expected.safetensors"))
    atol = json.loads((d / "meta.json").read_text())["atol"]
    worst, ok = 0.0, True
    for i in range(3):
        prompt, tokens = exp[f"prompt_{i}"].tolist(), exp[f"tokens_{i}"].tolist()
        with torch.no_grad():
            logits = fwd(cfg, w, prompt + tokens[:-1])[len(prompt) - 1 :]
        delta = float((logits - exp[f"logits_{i}"]).abs().max())
        worst = max(worst, delta)
        ok &= logits.argmax(-1).tolist() == tokens and delta <= atol
    return ok, worst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", action="append")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    bad = 0
    for fam in args.family or FAMILIES:
        ok, worst = check(fam)
        print(f"{fam:14s} max |dlogit| {worst:.3g} {'ok' if ok else 'FAIL'}")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
