#!/usr/bin/env python3
"""Independent reimplementation of the xlstm (xLSTMForCausalLM) fixture, written from SEMANTICS_RECURRENT.md part B.

Reads only test/parity/fixtures/xlstm/{config.json, model.safetensors, expected.safetensors} (no transformers), runs
prompt + tokens[:-1] per prompt in float64 with the mLSTM cell in its pure recurrent form, one token at a time (B2.4),
and compares every row with logits_<i>. transformers' rows come from the chunkwise kernel (prefill, chunk_size 8), its
recurrent loop (the prefill's remainder) and its 1-step kernel (decode), so agreement also checks that the three are
the same recurrence. It checks the document, not cbc: the layer's int(hidden * factor) dims, contiguous head slices,
the soft-capped exponential input gate and logsigmoid forget gate, the stabiliser m starting at 0, the unscaled key,
the q scale dqk^-0.5, the max(|q.n|, exp(-m)) + eps denominator, the per-head LayerNorm with one [v_dim] weight, the
sigmoid output gate, the SwiGLU FFN width, plain-weight RMSNorms, and the output logit soft cap.

Usage: python tools/oracle/reference_xlstm.py   (exit 1 if the fixture misses its atol)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

FIXTURE = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures" / "xlstm"


def rms_norm(x, w, eps):
    """B2.2: plain weight, not 1 + w."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def soft_cap(x, cap):
    return cap * torch.tanh(x / cap)


def multihead_layer_norm(h, w, eps):
    """B2.2: LayerNorm over each head's dv (mean-centred, biased variance), then one weight over [NH * dv]."""
    mu = h.mean(-1, keepdim=True)
    var = (h - mu).pow(2).mean(-1, keepdim=True)
    return ((h - mu) / torch.sqrt(var + eps)).reshape(-1) * w


def mlstm_step(state, q, k, v, i_pre, f_pre, eps):
    """B2.4, one token, every head at once. q, k [NH, dqk]; v [NH, dv]; i_pre, f_pre [NH]. state (C, n, m)."""
    c, n, m = state
    dqk = q.shape[-1]
    lf = torch.nn.functional.logsigmoid(f_pre)
    m_new = torch.maximum(lf + m, i_pre)
    f_act = torch.exp(lf + m - m_new)
    i_act = torch.exp(i_pre - m_new)
    c = f_act[:, None, None] * c + i_act[:, None, None] * (k[:, :, None] * v[:, None, :])  # k (rows) x v (cols)
    n = f_act[:, None] * n + i_act[:, None] * k
    q = q * dqk**-0.5
    num = torch.einsum("hd,hde->he", q, c)
    den = torch.maximum((q * n).sum(-1).abs(), torch.exp(-m_new)) + eps
    return num / den[:, None], (c, n, m_new)


def forward(cfg, w, ids):
    H, NH = cfg["hidden_size"], cfg["num_heads"]
    L = cfg["num_hidden_layers"]
    assert cfg["embedding_dim"] == H and cfg["num_blocks"] == L
    assert cfg["weight_mode"] == "single" and not cfg["use_bias"]
    qk_dim, v_dim = int(H * cfg["qk_dim_factor"]), int(H * cfg["v_dim_factor"])  # the layer's, unrounded (B1)
    dqk, dv = qk_dim // NH, v_dim // NH
    mult = cfg["ffn_round_up_to_multiple_of"]
    ffn = int(math.ceil(H * cfg["ffn_proj_factor"] / mult) * mult)
    norm_eps, eps, gcap = cfg["norm_eps"], cfg["eps"], cfg["gate_soft_cap"]
    states = [
        (torch.zeros(NH, dqk, dv, dtype=torch.float64), torch.zeros(NH, dqk, dtype=torch.float64),
         torch.zeros(NH, dtype=torch.float64))
        for _ in range(L)
    ]
    rows = []
    for tok in ids:
        x = w["backbone.embeddings.weight"][tok]  # no embedding scale
        for b in range(L):
            p = f"backbone.blocks.{b}."
            a = p + "mlstm_layer."
            assert w[a + "q.weight"].shape == (qk_dim, H) and w[a + "v.weight"].shape == (v_dim, H)
            xn = rms_norm(x, w[p + "norm_mlstm.weight"], norm_eps)
            q = (w[a + "q.weight"] @ xn).reshape(NH, dqk)  # head h = the contiguous slice h*d:(h+1)*d
            k = (w[a + "k.weight"] @ xn).reshape(NH, dqk)
            v = (w[a + "v.weight"] @ xn).reshape(NH, dv)
            o = w[a + "ogate_preact.weight"] @ xn
            i_pre = soft_cap(w[a + "igate_preact.weight"] @ xn + w[a + "igate_preact.bias"], gcap)
            f_pre = soft_cap(w[a + "fgate_preact.weight"] @ xn + w[a + "fgate_preact.bias"], gcap)
            h, states[b] = mlstm_step(states[b], q, k, v, i_pre, f_pre, eps)
            h = multihead_layer_norm(h, w[a + "multihead_norm.weight"], norm_eps)
            x = x + w[a + "out_proj.weight"] @ (torch.sigmoid(o) * h)
            f = p + "ffn."
            assert w[f + "proj_up.weight"].shape == (ffn, H)
            xn = rms_norm(x, w[p + "norm_ffn.weight"], norm_eps)
            x = x + w[f + "proj_down.weight"] @ (
                torch.nn.functional.silu(w[f + "proj_up_gate.weight"] @ xn) * (w[f + "proj_up.weight"] @ xn)
            )
        x = rms_norm(x, w["backbone.out_norm.weight"], norm_eps)
        rows.append(soft_cap(w["lm_head.weight"] @ x, cfg["output_logit_soft_cap"]))
    return torch.stack(rows)


def main() -> int:
    torch.set_num_threads(1)
    cfg = json.loads((FIXTURE / "config.json").read_text())
    w = {k: v.double() for k, v in load_file(str(FIXTURE / "model.safetensors")).items()}
    exp = load_file(str(FIXTURE / "expected.safetensors"))
    atol = json.loads((FIXTURE / "meta.json").read_text())["atol"]
    worst, ok = 0.0, True
    for i in range(3):
        prompt, tokens = exp[f"prompt_{i}"].tolist(), exp[f"tokens_{i}"].tolist()
        with torch.no_grad():
            logits = forward(cfg, w, prompt + tokens[:-1])[len(prompt) - 1 :]
        delta = float((logits - exp[f"logits_{i}"].double()).abs().max())
        worst = max(worst, delta)
        ok &= logits.argmax(-1).tolist() == tokens and delta <= atol
    print(f"xlstm          max |dlogit| {worst:.3g} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
