#!/usr/bin/env python3
"""Independent reimplementation of the minimax (MiniMax-Text-01) fixture, written from
SEMANTICS_LIGHTNING.md.

Reads only test/parity/fixtures/minimax/{config.json, model.safetensors, expected.safetensors} (no
transformers; the saved decay buffers are ignored and the rates recomputed from the formula), runs one
full forward over prompt + tokens[:-1] per prompt in fp32 and compares every row with logits_<i>. The
lightning layers run the TOKEN recurrence S = exp(-s) S + k^T v, o = q S throughout (transformers'
fixture rows prefill with its block form), so agreement also checks that the two forms are the same sum.
It checks the document, not cbc: the layer schedule, the per-head q|k|v split of qkv_proj, silu on q|k|v,
the decay rates, the eps-1e-6 norm over all heads, the sigmoid output gate, the normed residual with its
alpha/beta factors, full-head rotate-half RoPE and the Mixtral router.

Usage: python tools/oracle/reference_lightning.py   (exit 1 if the fixture misses its atol)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

FIXTURE = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures" / "minimax"


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def decay_rates(nh: int, layer: int, layers: int) -> torch.Tensor:
    """Section 2: (2^(-8/H))^(h+1) * (1 - l/(L-1+1e-5) + 1e-5), in fp32 as torch computes it."""
    base = torch.tensor(1 / (2 ** (8 / nh)), dtype=torch.float32)
    factor = torch.tensor(1 - layer / (layers - 1 + 1e-5) + 1e-5, dtype=torch.float32)
    return base ** torch.arange(1, nh + 1, dtype=torch.float32) * factor


def lightning(cfg, w, a, x, layer):
    """Section 2, token by token."""
    T, nh = x.shape[0], cfg["num_attention_heads"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // nh
    qkv = F.silu(x @ w[a + "qkv_proj.weight"].T).view(T, nh, 3, d)  # per head [q | k | v]
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    r = torch.exp(-decay_rates(nh, layer, cfg["num_hidden_layers"]))[:, None, None]
    S = torch.zeros(nh, d, d)
    out = []
    for t in range(T):
        S = r * S + k[t][:, :, None] * v[t][:, None, :]
        out.append(torch.einsum("hi,hij->hj", q[t], S))
    o = rms(torch.stack(out).reshape(T, nh * d), w[a + "norm.weight"], 1e-6)
    return (torch.sigmoid(x @ w[a + "output_gate.weight"].T) * o) @ w[a + "out_proj.weight"].T


def attention(cfg, w, a, x):
    """Section 5: GQA, rotate-half RoPE over the whole head, scale d^-1/2."""
    T, nh, nkv = x.shape[0], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // nh
    p = torch.arange(T)
    inv = 1.0 / cfg["rope_parameters"]["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    ang = p[:, None].float() * inv[None, :]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]

    def rope(y):
        y1, y2 = y[..., : d // 2], y[..., d // 2 :]
        return torch.cat([y1 * cos - y2 * sin, y2 * cos + y1 * sin], dim=-1)

    q = rope((x @ w[a + "q_proj.weight"].T).view(T, nh, d))
    k = rope((x @ w[a + "k_proj.weight"].T).view(T, nkv, d)).repeat_interleave(nh // nkv, dim=1)
    v = (x @ w[a + "v_proj.weight"].T).view(T, nkv, d).repeat_interleave(nh // nkv, dim=1)
    s = torch.einsum("qhd,khd->hqk", q, k) * d**-0.5
    s = s.masked_fill(~(p[None, :] <= p[:, None]), -math.inf).softmax(-1)
    return torch.einsum("hqk,khd->qhd", s, v).reshape(T, nh * d) @ w[a + "o_proj.weight"].T


def moe(cfg, w, m, x):
    """Section 5: softmax over the fp32 logits, top-k, renormalised; SwiGLU experts w1/w3/w2."""
    prob = (x @ w[m + "gate.weight"].T).softmax(-1)
    wt, idx = prob.topk(cfg["num_experts_per_tok"], dim=-1)
    wt = wt / wt.sum(-1, keepdim=True)
    y = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for e, we in zip(idx[t].tolist(), wt[t].tolist()):
            ex = f"{m}experts.{e}."
            xt = x[t : t + 1]
            y[t] += we * ((F.silu(xt @ w[ex + "w1.weight"].T) * (xt @ w[ex + "w3.weight"].T)) @ w[ex + "w2.weight"].T)[0]
    return y


def forward(cfg, w, ids):
    """Section 4: h = norm(x); h = alpha h + beta mixer(h); h2 = norm2(h); out = alpha' h2 + beta' MoE(h2)."""
    eps = cfg["rms_norm_eps"]
    types = cfg.get("layer_types") or [
        "full_attention" if i % 2 == 0 else "linear_attention" for i in range(cfg["num_hidden_layers"])
    ]
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]
    for i, kind in enumerate(types):
        pre = f"model.layers.{i}."
        h = rms(x, w[pre + "input_layernorm.weight"], eps)
        if kind == "linear_attention":
            mix, a, b = lightning(cfg, w, pre + "self_attn.", h, i), cfg["linear_attn_alpha_factor"], cfg["linear_attn_beta_factor"]
        else:
            mix, a, b = attention(cfg, w, pre + "self_attn.", h), cfg["full_attn_alpha_factor"], cfg["full_attn_beta_factor"]
        h = a * h + b * mix
        h2 = rms(h, w[pre + "post_attention_layernorm.weight"], eps)
        x = cfg["mlp_alpha_factor"] * h2 + cfg["mlp_beta_factor"] * moe(cfg, w, pre + "block_sparse_moe.", h2)
    return rms(x, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


def main() -> int:
    torch.set_num_threads(1)
    cfg = json.loads((FIXTURE / "config.json").read_text())
    w = {k: v.float() for k, v in load_file(str(FIXTURE / "model.safetensors")).items()}
    exp = load_file(str(FIXTURE / "expected.safetensors"))
    atol = json.loads((FIXTURE / "meta.json").read_text())["atol"]
    worst, ok = 0.0, True
    for i in range(3):
        prompt, tokens = exp[f"prompt_{i}"].tolist(), exp[f"tokens_{i}"].tolist()
        with torch.no_grad():
            logits = forward(cfg, w, prompt + tokens[:-1])[len(prompt) - 1 :]
        delta = float((logits - exp[f"logits_{i}"]).abs().max())
        worst = max(worst, delta)
        ok &= logits.argmax(-1).tolist() == tokens and delta <= atol
    print(f"minimax        max |dlogit| {worst:.3g} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
