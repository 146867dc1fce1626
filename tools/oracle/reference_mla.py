#!/usr/bin/env python3
"""Independent reimplementation of the 8 MLA fixtures, written from SEMANTICS_MLA.md.

Reads only test/parity/fixtures/<family>/{config.json, model.safetensors, expected.safetensors} (no
transformers), runs one full causal forward over prompt + tokens[:-1] per prompt in fp32 and compares
every row with logits_<i>. It checks the document, not cbc: every formula here (latent path, the
three RoPE layouts, yarn, mscale², mistral4's query scaling, longcat's sublayers, LoRA scales and
zero experts, the five routers, minicpm3's scalings, axk1's post-MoE norm, placement rules) is the
one SEMANTICS_MLA.md states. The interleaved families are rotated IN PLACE on pairs (2i, 2i+1)
(transformers writes them de-interleaved), which the document says leaves every logit unchanged.

Usage: python tools/oracle/reference_mla.py [--family F ...]   (exit 1 if a family misses its atol)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

FIXTURES = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures"
FAMILIES = ("deepseek_v3", "deepseek_v2", "glm4_moe_lite", "youtu", "minicpm3", "mistral4", "longcat_flash", "axk1")
LATENT_NORM_EPS = 1e-6  # q_a_layernorm / kv_a_layernorm: class default, not rms_norm_eps (section 1)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def swiglu(x, g, u, d):
    return (torch.nn.functional.silu(x @ g.T) * (x @ u.T)) @ d.T


def rope_tables(cfg, dr, positions):
    """inv_freq and attention factor (sections 3 and 4)."""
    rp = cfg.get("rope_parameters") or {}
    theta = rp.get("rope_theta", 10000.0)
    i = torch.arange(0, dr, 2, dtype=torch.float32)
    base = theta ** (i / dr)
    a = 1.0
    if rp.get("rope_type", "default") == "yarn":
        factor = rp["factor"]
        orig = rp["original_max_position_embeddings"]

        def mscale(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        if rp.get("attention_factor") is not None:
            a = rp["attention_factor"]
        elif rp.get("mscale") and rp.get("mscale_all_dim"):
            a = mscale(factor, rp["mscale"]) / mscale(factor, rp["mscale_all_dim"])
        else:
            a = mscale(factor)
        bf, bs = rp.get("beta_fast") or 32, rp.get("beta_slow") or 1

        def corr(n):
            return dr * math.log(orig / (n * 2 * math.pi)) / (2 * math.log(theta))

        lo, hi = corr(bf), corr(bs)
        if rp.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dr - 1)
        if lo == hi:
            hi += 0.001
        ramp = ((torch.arange(dr // 2, dtype=torch.float32) - lo) / (hi - lo)).clamp(0, 1)
        extra = 1 - ramp
        inv = (1.0 / (factor * base)) * (1 - extra) + (1.0 / base) * extra
    else:
        inv = 1.0 / base
    ang = positions[:, None].float() * inv[None, :]
    return ang.cos() * a, ang.sin() * a


def rotate(x, cos, sin, layout):
    """x [..., S, dr]; cos/sin [S, dr/2]."""
    h = x.shape[-1] // 2
    if layout == "half":
        x1, x2 = x[..., :h], x[..., h:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    # pairs (2i, 2i+1), result kept in place (complex layout; the interleaved families too, see the docstring)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x2 * cos + x1 * sin
    return out


def mla(cfg, w, p, x, cos, sin, layout, positions, lora_scales=False):
    S, H = x.shape
    nh = cfg["num_attention_heads"]
    dn, dr, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    rkv = cfg["kv_lora_rank"]
    if p + "q_proj.weight" in w:
        q = x @ w[p + "q_proj.weight"].T
    else:
        q = rms(x @ w[p + "q_a_proj.weight"].T, w[p + "q_a_layernorm.weight"], LATENT_NORM_EPS) @ w[p + "q_b_proj.weight"].T
    q = q.view(S, nh, dn + dr).transpose(0, 1)  # [nh, S, dqk], head-major
    q_nope, q_rope = q[..., :dn], q[..., dn:]
    ckv = x @ w[p + "kv_a_proj_with_mqa.weight"].T
    latent = rms(ckv[:, :rkv], w[p + "kv_a_layernorm.weight"], LATENT_NORM_EPS)
    k_rope = ckv[:, rkv:]
    if lora_scales:  # longcat (section 6)
        sq = (cfg["hidden_size"] / cfg["q_lora_rank"]) ** 0.5
        q_nope, q_rope = q_nope * sq, q_rope * sq
        latent = latent * (cfg["hidden_size"] / rkv) ** 0.5
    q_rope = rotate(q_rope, cos, sin, layout)
    k_rope = rotate(k_rope, cos, sin, layout)
    kvb = (latent @ w[p + "kv_b_proj.weight"].T).view(S, nh, dn + dv).transpose(0, 1)
    k = torch.cat([kvb[..., :dn], k_rope[None].expand(nh, S, dr)], -1)
    v = kvb[..., dn:]
    qf = torch.cat([q_nope, q_rope], -1)
    rp = cfg.get("rope_parameters") or {}
    scaling = (dn + dr) ** -0.5
    if rp.get("rope_type", "default") != "default" and rp.get("mscale_all_dim"):
        f = rp["factor"]
        m = 1.0 if f <= 1 else 0.1 * rp["mscale_all_dim"] * math.log(f) + 1.0
        scaling *= m * m
    if cfg["model_type"] == "mistral4":  # section 5: the whole query, after RoPE
        qs = 1 + rp["llama_4_scaling_beta"] * torch.log(1 + torch.floor(positions / rp["original_max_position_embeddings"]))
        qf = qf * qs[None, :, None]
    s = (qf @ k.transpose(1, 2)) * scaling
    s = s.masked_fill(torch.triu(torch.ones(S, S, dtype=torch.bool), 1), -math.inf)
    o = torch.softmax(s, -1) @ v  # [nh, S, dv]
    return o.transpose(0, 1).reshape(S, nh * dv) @ w[p + "o_proj.weight"].T


def experts_out(w, p, y, idx, wt, n_real, fused):
    out = torch.zeros_like(y)
    for t in range(y.shape[0]):
        for j in range(idx.shape[1]):
            e = int(idx[t, j])
            if e >= n_real:  # longcat identity expert
                out[t] += wt[t, j] * y[t]
                continue
            if fused:
                gu = w[p + "experts.gate_up_proj"][e]
                I = gu.shape[0] // 2
                h = swiglu(y[t : t + 1], gu[:I], gu[I:], w[p + "experts.down_proj"][e])[0]
            else:
                q = f"{p}experts.{e}."
                h = swiglu(y[t : t + 1], w[q + "gate_proj.weight"], w[q + "up_proj.weight"], w[q + "down_proj.weight"])[0]
            out[t] += wt[t, j] * h
    return out


def route(cfg, w, p, y):
    """Section 7. Returns (indices, weights)."""
    mt = cfg["model_type"]
    k = cfg.get("num_experts_per_tok") or cfg.get("moe_topk")
    if mt == "longcat_flash":
        logits = y @ w[p + "router.classifier.weight"].T
        s = torch.softmax(logits, -1)
        idx = torch.topk(s + w[p + "router.e_score_correction_bias"], k, -1).indices
        return idx, s.gather(1, idx) * cfg["routed_scaling_factor"]
    logits = y @ w[p + "gate.weight"].T
    E = logits.shape[-1]
    G, Gk = cfg["n_group"], cfg["topk_group"]
    if mt == "deepseek_v2":
        s = torch.softmax(logits, -1)
        gs = s.view(-1, G, E // G).max(-1).values
        c, fill = s, 0.0
    elif mt == "mistral4":
        s = torch.softmax(logits, -1)
        gs = s.view(-1, G, E // G).topk(2, -1).values.sum(-1)
        c, fill = s, 0.0
    else:
        s = torch.sigmoid(logits)
        c = s + w[p + "gate.e_score_correction_bias"]
        gs = c.view(-1, G, E // G).topk(2, -1).values.sum(-1)
        fill = -math.inf
    keep = torch.zeros_like(gs, dtype=torch.bool).scatter_(1, torch.topk(gs, Gk, -1).indices, True)
    mask = keep[:, :, None].expand(-1, G, E // G).reshape(-1, E)
    idx = torch.topk(c.masked_fill(~mask, fill), k, -1).indices
    wt = s.gather(1, idx)
    if mt != "deepseek_v2" and cfg.get("norm_topk_prob"):
        wt = wt / (wt.sum(-1, keepdim=True) + 1e-20)
    return idx, wt * cfg["routed_scaling_factor"]


def moe(cfg, w, p, y):
    idx, wt = route(cfg, w, p, y)
    n_real = cfg.get("n_routed_experts")
    out = experts_out(w, p, y, idx, wt, n_real, fused=p + "experts.gate_up_proj" in w)
    if p + "shared_experts.gate_proj.weight" in w:
        q = p + "shared_experts."
        out = out + swiglu(y, w[q + "gate_proj.weight"], w[q + "up_proj.weight"], w[q + "down_proj.weight"])
    return out


def is_moe(cfg, i):
    mt = cfg["model_type"]
    if mt in ("glm4_moe_lite", "axk1"):
        return cfg["mlp_layer_types"][i] == "sparse"
    if mt in ("deepseek_v3", "deepseek_v2", "mistral4"):
        return i >= cfg["first_k_dense_replace"]
    return False


def forward(cfg, w, ids):
    mt = cfg["model_type"]
    eps = cfg["rms_norm_eps"]
    S = len(ids)
    positions = torch.arange(S)
    cos, sin = rope_tables(cfg, cfg["qk_rope_head_dim"], positions)
    layout = "half" if mt == "minicpm3" or (mt != "deepseek_v2" and cfg.get("rope_interleave") is False) else "pairs"
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    if mt == "minicpm3":
        h = h * cfg["scale_emb"]
    res = cfg["scale_depth"] / math.sqrt(cfg["num_hidden_layers"]) if mt == "minicpm3" else 1.0
    n_layers = cfg["num_layers"] if mt == "longcat_flash" else cfg["num_hidden_layers"]
    for i in range(n_layers):
        L = f"model.layers.{i}."
        if mt == "longcat_flash":  # section 6
            r = h
            h = r + mla(cfg, w, L + "self_attn.0.", rms(h, w[L + "input_layernorm.0.weight"], eps), cos, sin, layout, positions, True)
            r = h
            y = rms(h, w[L + "post_attention_layernorm.0.weight"], eps)
            shortcut = moe(cfg, w, L + "mlp.", y)
            h = r + swiglu(y, w[L + "mlps.0.gate_proj.weight"], w[L + "mlps.0.up_proj.weight"], w[L + "mlps.0.down_proj.weight"])
            r = h
            h = r + mla(cfg, w, L + "self_attn.1.", rms(h, w[L + "input_layernorm.1.weight"], eps), cos, sin, layout, positions, True)
            r = h
            y = rms(h, w[L + "post_attention_layernorm.1.weight"], eps)
            h = r + swiglu(y, w[L + "mlps.1.gate_proj.weight"], w[L + "mlps.1.up_proj.weight"], w[L + "mlps.1.down_proj.weight"]) + shortcut
            continue
        h = h + res * mla(cfg, w, L + "self_attn.", rms(h, w[L + "input_layernorm.weight"], eps), cos, sin, layout, positions)
        y = rms(h, w[L + "post_attention_layernorm.weight"], eps)
        if is_moe(cfg, i):
            m = moe(cfg, w, L + "mlp.", y)
            if mt == "axk1":
                m = rms(m, w[L + "post_mlp_layernorm.weight"], eps)
        else:
            m = swiglu(y, w[L + "mlp.gate_proj.weight"], w[L + "mlp.up_proj.weight"], w[L + "mlp.down_proj.weight"])
        h = h + res * m
    h = rms(h, w["model.norm.weight"], eps)
    if mt == "minicpm3":
        h = h / (cfg["hidden_size"] / cfg["dim_model_base"])
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return h @ head.T


def check(family: str) -> tuple[bool, float]:
    d = FIXTURES / family
    cfg = json.loads((d / "config.json").read_text())
    w = {k: v.float() for k, v in load_file(str(d / "model.safetensors")).items()}
    exp = load_file(str(d / "expected.safetensors"))
    atol = json.loads((d / "meta.json").read_text())["atol"]
    worst, ok = 0.0, True
    for i in range(3):
        prompt, tokens = exp[f"prompt_{i}"].tolist(), exp[f"tokens_{i}"].tolist()
        with torch.no_grad():
            logits = forward(cfg, w, prompt + tokens[:-1])[len(prompt) - 1 :]
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
