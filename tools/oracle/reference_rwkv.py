#!/usr/bin/env python3
"""Independent reimplementation of the rwkv (RWKV-4) fixture, written from SEMANTICS_RWKV.md.

Reads only test/parity/fixtures/rwkv/{config.json, model.safetensors, expected.safetensors} (no
transformers), runs one full forward over prompt + tokens[:-1] per prompt in float64 and compares every
row with logits_<i>. The WKV is computed in its closed form (section 3): for each channel, the softmax over
the positions i <= t of the scores k_i - (t-1-i) exp(time_decay) (i < t) and time_first + k_t (i = t), applied
to the values; transformers' fixture rows run the running num/den/max recurrence, so agreement also checks
that the two are the same sum. It checks the document, not cbc: pre_ln on block 0 only, the token shift of
the LayerNorm outputs, the three / two interpolations, the sigmoid receptances, relu^2, the inference-time
rescaling (weights / 2^(b // rescale_every), hidden / 2 after every rescale_every-th block) and the
LayerNorm eps values.

Usage: python tools/oracle/reference_rwkv.py   (exit 1 if the fixture misses its atol)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

FIXTURE = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures" / "rwkv"


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)  # biased variance, as nn.LayerNorm
    return (x - mu) / torch.sqrt(var + eps) * w + b


def shift(h):
    """Section 2: the previous token's row, zeros before the first."""
    return torch.cat([torch.zeros_like(h[:1]), h[:-1]])


def mix(h, hp, m):
    return h * m + hp * (1 - m)


def wkv(time_decay, time_first, k, v):
    """Section 3, closed form: out[t, c] = sum_i softmax_i(s[t, i, c]) v[i, c]."""
    T = k.shape[0]
    rate = torch.exp(time_decay)  # the decay per token is exp(-rate)
    t = torch.arange(T)[:, None]
    i = torch.arange(T)[None, :]
    age = (t - 1 - i).to(k.dtype)[..., None]  # [T, T, 1]
    s = k[None, :, :] - age * rate  # i < t
    s = torch.where((i == t)[..., None], (time_first + k)[None, :, :], s)
    s = torch.where((i > t)[..., None], torch.full_like(s, -torch.inf), s)
    return torch.einsum("tic,ic->tc", torch.softmax(s, dim=1), v)


def forward(cfg, w, ids):
    L, R = cfg["num_hidden_layers"], cfg["rescale_every"]
    eps = cfg["layer_norm_epsilon"]
    x = w["rwkv.embeddings.weight"][ids]
    for b in range(L):
        p = f"rwkv.blocks.{b}."
        scale = 2.0 ** (b // R) if R > 0 else 1.0
        if b == 0:
            x = layer_norm(x, w[p + "pre_ln.weight"], w[p + "pre_ln.bias"], eps)
        # time mix
        a = p + "attention."
        h = layer_norm(x, w[p + "ln1.weight"], w[p + "ln1.bias"], eps)
        hp = shift(h)
        k = mix(h, hp, w[a + "time_mix_key"].reshape(-1)) @ w[a + "key.weight"].T
        v = mix(h, hp, w[a + "time_mix_value"].reshape(-1)) @ w[a + "value.weight"].T
        r = torch.sigmoid(mix(h, hp, w[a + "time_mix_receptance"].reshape(-1)) @ w[a + "receptance.weight"].T)
        out = wkv(w[a + "time_decay"], w[a + "time_first"], k, v)
        x = x + (r * out) @ (w[a + "output.weight"] / scale).T
        # channel mix
        f = p + "feed_forward."
        h = layer_norm(x, w[p + "ln2.weight"], w[p + "ln2.bias"], eps)
        hp = shift(h)
        kk = torch.relu(mix(h, hp, w[f + "time_mix_key"].reshape(-1)) @ w[f + "key.weight"].T).square()
        rr = torch.sigmoid(mix(h, hp, w[f + "time_mix_receptance"].reshape(-1)) @ w[f + "receptance.weight"].T)
        x = x + rr * (kk @ (w[f + "value.weight"] / scale).T)
        if R > 0 and (b + 1) % R == 0:
            x = x / 2
    x = layer_norm(x, w["rwkv.ln_out.weight"], w["rwkv.ln_out.bias"], 1e-5)  # nn.LayerNorm's default eps
    return x @ w["head.weight"].T


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
            logits = forward(cfg, w, torch.tensor(prompt + tokens[:-1]))[len(prompt) - 1 :]
        delta = float((logits - exp[f"logits_{i}"].double()).abs().max())
        worst = max(worst, delta)
        ok &= logits.argmax(-1).tolist() == tokens and delta <= atol
    print(f"rwkv           max |dlogit| {worst:.3g} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
