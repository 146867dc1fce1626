#!/usr/bin/env python3
"""Independent reimplementation of the inkling_text fixture, written from SEMANTICS_INKLING.md.

Reads only test/parity/fixtures/inkling_text/{config.json, model.safetensors, expected.safetensors} (no
transformers), runs one full forward over prompt + tokens[:-1] per prompt in fp32 with explicit masks
built from absolute positions, and compares every row with logits_<i>. It checks the document, not cbc:
the layer and MLP schedules, the sliding layers' own head counts, the 1/d scale, per-head q/k norms, the
relative bias r_h . proj[:, p - j] inside its extent (the window on sliding layers), the log scaling of q
and the bias on full layers, the four residual short convs, the normed embedding, the muP head and the
sink router (sigmoid over the chosen and the shared experts' logits, route_scale x global_scale).

Usage: python tools/oracle/reference_inkling.py   (exit 1 if the fixture misses its atol)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

FIXTURE = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures" / "inkling_text"


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def sconv(x, w):
    """x + causal depthwise conv of kernel K (weight [C, 1, K], tap K-1 the row itself)."""
    K = w.shape[-1]
    xp = F.pad(x.T, (K - 1, 0))  # [C, T + K - 1]
    y = torch.stack([(xp[:, t : t + K] * w[:, 0, :]).sum(-1) for t in range(x.shape[0])])
    return x + y


def attention_layer(cfg, w, p, x, sliding):
    heads = cfg["swa_num_attention_heads"] if sliding else cfg["num_attention_heads"]
    kvh = cfg["swa_num_key_value_heads"] if sliding else cfg["num_key_value_heads"]
    d = cfg["swa_head_dim"] if sliding else cfg["head_dim"]
    window = cfg["sliding_window_size"]
    extent = window if sliding else cfg["rel_extent"]
    eps, T = cfg["rms_norm_eps"], x.shape[0]
    a = p + "self_attn."
    q = (x @ w[a + "q_proj.weight"].T).view(T, heads, d)
    k = sconv(x @ w[a + "k_proj.weight"].T, w[a + "k_sconv.conv1d.weight"]).view(T, kvh, d)
    v = sconv(x @ w[a + "v_proj.weight"].T, w[a + "v_sconv.conv1d.weight"]).view(T, kvh, d)
    r = (x @ w[a + "r_proj.weight"].T).view(T, heads, cfg["d_rel"])
    q, k = rms(q, w[a + "q_norm.weight"], eps), rms(k, w[a + "k_norm.weight"], eps)
    table = r @ w[a + "rel_logits_proj.proj"]  # [T, heads, extent]
    pos = torch.arange(T)
    dist = pos[:, None] - pos[None, :]
    bias = torch.where(
        ((dist >= 0) & (dist < extent))[:, None, :],
        table.gather(-1, dist.clamp(0, extent - 1)[:, None, :].expand(T, heads, T)),
        torch.zeros(()),
    )  # [T, heads, T]
    if not sliding and cfg.get("log_scaling_n_floor"):
        tau = 1 + cfg["log_scaling_alpha"] * torch.log(((pos + 1).float() / cfg["log_scaling_n_floor"]).clamp(min=1))
        q, bias = q * tau[:, None, None], bias * tau[:, None, None]
    allowed = (dist >= 0) & ((dist < window) if sliding else True)
    rep = heads // kvh
    ke, ve = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    s = torch.einsum("thd,shd->hts", q, ke) / d + bias.permute(1, 0, 2)
    s = s.masked_fill(~allowed, -math.inf).softmax(-1)
    o = torch.einsum("hts,shd->thd", s, ve).reshape(T, heads * d)
    return o @ w[a + "o_proj.weight"].T


def moe(cfg, w, p, x):
    m = p + "mlp."
    E, S, k = cfg["n_routed_experts"], cfg["n_shared_experts"], cfg["num_experts_per_tok"]
    logits = x @ w[m + "gate.weight"].T  # [T, E + S]
    sig = logits.sigmoid()
    chosen = (sig[:, :E] + w[m + "gate.e_score_correction_bias"]).topk(k, -1).indices
    picked = torch.cat([sig[:, :E].gather(-1, chosen), sig[:, E:]], -1)
    weights = picked / picked.sum(-1, keepdim=True) * cfg["route_scale"] * w[m + "gate.global_scale"]
    out = torch.zeros_like(x)
    gu, dn = w[m + "experts.gate_up_proj"], w[m + "experts.down_proj"]
    for t in range(x.shape[0]):
        for j in range(k):
            e = int(chosen[t, j])
            g, u = (gu[e] @ x[t]).chunk(2)
            out[t] += weights[t, j] * (dn[e] @ (F.silu(g) * u))
        for i in range(S):
            sg, su, sd = (w[m + "shared_experts." + n][i] for n in ("gate_proj", "up_proj", "down_proj"))
            out[t] += sd @ (F.silu(sg @ x[t]) * (su @ x[t]) * weights[t, k + i])
    return out


def forward(cfg, w, ids):
    eps = cfg["rms_norm_eps"]
    h = rms(w["model.embed_tokens.weight"][ids], w["model.embed_tokens.embed_norm.weight"], eps)
    for i, (kind, mlp) in enumerate(zip(cfg["layer_types"], cfg["mlp_layer_types"])):
        p = f"model.layers.{i}."
        a = attention_layer(cfg, w, p, rms(h, w[p + "input_layernorm.weight"], eps), kind == "hybrid_sliding")
        h = h + sconv(a, w[p + "attn_sconv.conv1d.weight"])
        x = rms(h, w[p + "post_attention_layernorm.weight"], eps)
        if mlp == "sparse":
            y = moe(cfg, w, p, x)
        else:
            m = p + "mlp."
            y = (F.silu(x @ w[m + "gate_proj.weight"].T) * (x @ w[m + "up_proj.weight"].T)) @ w[m + "down_proj.weight"].T
            y = y * w[m + "global_scale"]
        h = h + sconv(y, w[p + "mlp_sconv.conv1d.weight"])
    h = rms(h, w["model.norm.weight"], eps) / cfg["logits_mup_width_multiplier"]
    return h @ w["lm_head.weight"].T


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
            logits = forward(cfg, w, torch.tensor(prompt + tokens[:-1]))[len(prompt) - 1 :]
        delta = float((logits - exp[f"logits_{i}"]).abs().max())
        worst = max(worst, delta)
        ok &= logits.argmax(-1).tolist() == tokens and delta <= atol
    print(f"inkling_text   max |dlogit| {worst:.3g} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
