#!/usr/bin/env python3
"""Independent reimplementation of the inkling2_text fixture, written from SEMANTICS_INKLING2.md.

Reads only test/parity/fixtures/inkling2_text/{config.json, model.safetensors, expected.safetensors, meta.json} (no
transformers; the checkpoint under the hub names save_pretrained writes, model.llm.*), runs one full forward over
prompt + tokens[:-1] per prompt in fp32 with explicit masks built from absolute positions, and compares every row
with logits_<i>. It checks the document, not cbc: the block attention residuals (sources, queries, restart at block
boundaries), the L2 clips with their learned scales, the unweighted v norm, the 1/sqrt(d) scale, the per-token sinks
and the sigmoid output gate, the relative bias inside its extent with the full layers' log scaling, the static and
dynamic short convs with their output scales, the softcapped SwiGLU experts behind the sigmoid router, the normed
embedding, the logit softcap and the unpadded vocabulary.

Usage:
  python tools/oracle/reference_inkling2.py             (exit 1 if the fixture misses its atol)
  python tools/oracle/reference_inkling2.py --effects   (also: max |dlogit| with each feature switched off)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

FIXTURE = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures" / "inkling2_text"
P = "model.llm."

# Feature switches for --effects (all on for the parity check).
ON = {
    "q_clip": True, "k_clip": True, "rel_clip": True, "clip_scales": True, "v_norm": True, "sinks": True,
    "output_gate": True, "relative_bias": True, "log_scaling": True, "dynamic_taps": True, "conv_output_scale": True,
    "attn_res_query": True, "attn_res_source_norm": True, "block_restart": True, "mlp_softcaps": True,
    "logit_softcap": True, "correction_bias": True, "route_scale": True, "embed_norm": True,
}
FLAGS = dict(ON)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rms0(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def clip(x, threshold, on, scale=None):
    """x [T, heads, d]: times its learned scale [heads, d], then scaled down to `threshold` where its L2 norm is larger."""
    if scale is not None and FLAGS["clip_scales"]:
        x = x * scale
    if not on:
        return x
    return x * (threshold / (x.norm(dim=-1, keepdim=True) + 1e-6)).clamp(max=1.0)


def static_conv(x, w):
    """(x + causal depthwise conv) / sqrt(K + 1); weight [C, 1, K], tap K - 1 the current token."""
    K = w.shape[-1]
    xp = F.pad(x.T, (K - 1, 0))  # [C, T + K - 1]
    y = torch.stack([(xp[:, t : t + K] * w[:, 0, :]).sum(-1) for t in range(x.shape[0])])
    return (x + y) / (math.sqrt(K + 1) if FLAGS["conv_output_scale"] else 1.0)


def dynamic_conv(x, inp, static_w, weight_proj, heads):
    """(x + sum_lag taps[t, c, lag] x[t - lag, c]) / sqrt(2K + 1), taps = static_w[lag, c] + (inp @ weight_proj^T)
    viewed [T, heads, K] for the channel's head; lag 0 the current token."""
    K, C = static_w.shape
    T = x.shape[0]
    dyn = (inp @ weight_proj.T).view(T, heads, K)
    if not FLAGS["dynamic_taps"]:
        dyn = torch.zeros_like(dyn)
    taps = static_w.T[None] + dyn.repeat_interleave(C // heads, 1)  # [T, C, K]
    y = torch.zeros_like(x)
    for lag in range(K):
        shifted = torch.cat([x.new_zeros(lag, C), x[: T - lag]]) if lag else x
        y = y + taps[:, :, lag] * shifted
    return (x + y) / (math.sqrt(2 * K + 1) if FLAGS["conv_output_scale"] else 1.0)


def attention(cfg, w, i, xq, xk, xv):
    sliding = cfg["layer_types"][i] == "hybrid_sliding"
    heads = cfg["swa_num_attention_heads"] if sliding else cfg["num_attention_heads"]
    kvh = cfg["swa_num_key_value_heads"] if sliding else cfg["num_key_value_heads"]
    d = cfg["swa_head_dim"] if sliding else cfg["head_dim"]
    window = cfg["sliding_window_size"]
    extent = window if sliding else cfg["rel_extent"]
    thr, rthr = cfg["qk_l2_clip_threshold"], cfg["rel_l2_clip_threshold"]
    T = xq.shape[0]
    a = f"{P}layers.{i}.attn."
    q = clip((xq @ w[a + "wq_du.weight"].T).view(T, heads, d), thr, FLAGS["q_clip"], w[a + "q_l2_clip.scale"])
    k_lin, v_lin = xk @ w[a + "wk_dv.weight"].T, xv @ w[a + "wv_dv.weight"].T
    if sliding:
        k, v = static_conv(k_lin, w[a + "k_sconv.weight"]), static_conv(v_lin, w[a + "v_sconv.weight"])
    else:
        k = dynamic_conv(k_lin, xk, w[a + "k_sconv.static_w"], w[a + "k_sconv.weight_proj"], kvh)
        v = dynamic_conv(v_lin, xv, w[a + "v_sconv.static_w"], w[a + "v_sconv.weight_proj"], kvh)
    k = clip(k.view(T, kvh, d), thr, FLAGS["k_clip"])
    v = v.view(T, kvh, d)
    if FLAGS["v_norm"]:
        v = rms0(v, cfg["rms_norm_eps"])
    r = clip((xq @ w[a + "wr_du.weight"].T).view(T, heads, cfg["d_rel"]), rthr, FLAGS["rel_clip"], w[a + "rel_l2_clip.scale"])
    pos = torch.arange(T)
    if not sliding and FLAGS["log_scaling"]:
        tau = 1 + cfg["log_scaling_alpha"] * torch.log(((pos + 1).float() / cfg["log_scaling_n_floor"]).clamp(min=1))
        q, r = q * tau[:, None, None], r * tau[:, None, None]
    table = r @ w[a + "rel_logits_proj.proj"]  # [T, heads, extent]
    dist = pos[:, None] - pos[None, :]
    bias = torch.where(
        ((dist >= 0) & (dist < extent))[:, None, :],
        table.gather(-1, dist.clamp(0, extent - 1)[:, None, :].expand(T, heads, T)),
        torch.zeros(()),
    ).permute(1, 0, 2)  # [heads, T, T]
    if not FLAGS["relative_bias"]:
        bias = torch.zeros_like(bias)
    allowed = (dist >= 0) & ((dist < window) if sliding else True)
    rep = heads // kvh
    ke, ve = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    s = torch.einsum("thd,shd->hts", q, ke) / math.sqrt(d) + bias
    s = s.masked_fill(~allowed, -math.inf)
    sink = (xq @ w[a + "attn_sink_proj.weight"].T).T[:, :, None]  # [heads, T, 1]
    if not FLAGS["sinks"]:
        sink = torch.full_like(sink, -math.inf)
    p = torch.cat([s, sink], -1).softmax(-1)[..., :-1]
    o = torch.einsum("hts,shd->thd", p, ve).reshape(T, heads * d)
    if FLAGS["output_gate"]:
        o = o * torch.sigmoid(xq @ w[a + "gate_attn.weight"].T)
    return o @ w[a + "wo_ud.weight"].T


def attn_res(sources, query):
    """sources [T, N, H], query [Q, H] -> [Q] x [T, H]: softmax over the N RMS-normalised (eps 1e-6) sources of
    query . source / sqrt(H), the weighted sum of the normalised sources."""
    H = sources.shape[-1]
    s = rms0(sources, 1e-6) if FLAGS["attn_res_source_norm"] else sources
    if not FLAGS["attn_res_query"]:
        query = torch.zeros_like(query)
    wts = torch.einsum("qh,tnh->tqn", query, s).div(math.sqrt(H)).softmax(-1)
    return torch.einsum("tqn,tnh->qth", wts, s)


def moe(cfg, w, i, x):
    m = f"{P}layers.{i}.mlp."
    k, E = cfg["num_experts_per_tok"], cfg["n_routed_experts"]
    scores = (x @ w[m + "gate.weight"].T).sigmoid()
    bias = w[m + "gate.bias"] if FLAGS["correction_bias"] else torch.zeros(E)
    chosen = (scores + bias).topk(k, -1).indices
    picked = scores.gather(-1, chosen)
    weights = picked / (picked.sum(-1, keepdim=True) + 1e-20) * (cfg["route_scale"] if FLAGS["route_scale"] else 1.0)
    w13, w2 = w[m + "experts.w13_weight"], w[m + "experts.w2_weight"]
    gc, uc = cfg["mlp_gate_softcap"], cfg["mlp_up_softcap"]
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(k):
            e = int(chosen[t, j])
            gu = w13[e] @ x[t]
            g, u = gu[0::2], gu[1::2]  # the hub layout interleaves gate and up rows
            if FLAGS["mlp_softcaps"]:
                h = gc * torch.tanh(g / gc) * torch.sigmoid(g) * uc * torch.tanh(u / uc)
            else:
                h = F.silu(g) * u
            out[t] += weights[t, j] * (w2[e] @ h)
    return out


def forward(cfg, w, ids):
    eps, n = cfg["rms_norm_eps"], cfg["n_layers_per_attn_res_block"]
    e = w[P + "embed.weight"][ids]
    h = rms(e, w[P + "embed_norm.weight"], eps) if FLAGS["embed_norm"] else e
    blocks = []  # finished sources: the embedding, then each finished block's sum
    for i, kind in enumerate(cfg["layer_types"]):
        L = f"{P}layers.{i}."
        boundary = i % n == 0 if FLAGS["block_restart"] else i == 0
        if i == 0:
            qin = kin = vin = h
        else:
            src = torch.stack(blocks + [h], 1)
            q_att = w[f"{P}attn_res.attn_queries.{i - 1}"].view(-1, h.shape[-1])
            outs = attn_res(src, q_att)
            qin, kin, vin = (outs[0], outs[0], outs[0]) if kind == "hybrid_sliding" else tuple(outs)
        if kind == "hybrid_sliding":
            xq = xk = xv = rms(qin, w[L + "attn_norm.weight"], eps)
        else:
            xq, xk, xv = (rms(t, w[L + f"{c}_input_norm.weight"], eps) for t, c in zip((qin, kin, vin), "qkv"))
        a = static_conv(attention(cfg, w, i, xq, xk, xv), w[L + "attn_sconv.weight"])
        if boundary:
            blocks.append(h)
            part = a
        else:
            part = h + a
        x = attn_res(torch.stack(blocks + [part], 1), w[f"{P}attn_res.mlp_queries.{i}"].view(1, -1))[0]
        y = moe(cfg, w, i, rms(x, w[L + "mlp_norm.weight"], eps))
        h = part + static_conv(y, w[L + "mlp_sconv.weight"])
    x = attn_res(torch.stack(blocks + [h], 1), w[P + "attn_res.output_query"].view(1, -1))[0]
    logits = rms(x, w[P + "norm.weight"], eps) @ w[P + "unembed.weight"].T
    if FLAGS["logit_softcap"]:
        cap = cfg["final_logit_softcapping"]
        logits = cap * torch.tanh(logits / cap)
    return logits[:, : cfg["unpadded_vocab_size"]]


def main() -> int:
    torch.set_num_threads(1)
    cfg = json.loads((FIXTURE / "config.json").read_text())
    w = {k: v.float() for k, v in load_file(str(FIXTURE / "model.safetensors")).items()}
    exp = load_file(str(FIXTURE / "expected.safetensors"))
    atol = json.loads((FIXTURE / "meta.json").read_text())["atol"]

    def rows():
        out = []
        for i in range(3):
            prompt, tokens = exp[f"prompt_{i}"].tolist(), exp[f"tokens_{i}"].tolist()
            with torch.no_grad():
                out.append(forward(cfg, w, torch.tensor(prompt + tokens[:-1]))[len(prompt) - 1 :])
        return out

    base = rows()
    worst, ok = 0.0, True
    for i, logits in enumerate(base):
        delta = float((logits - exp[f"logits_{i}"]).abs().max())
        worst = max(worst, delta)
        ok &= logits.argmax(-1).tolist() == exp[f"tokens_{i}"].tolist() and delta <= atol
    print(f"inkling2_text  max |dlogit| {worst:.3g} {'ok' if ok else 'FAIL'}")
    if "--effects" in sys.argv[1:]:
        for name in ON:
            FLAGS[name] = False
            d = max(float((a - b).abs().max()) for a, b in zip(base, rows()))
            FLAGS[name] = True
            print(f"  without {name:22s} max |dlogit| {d:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
