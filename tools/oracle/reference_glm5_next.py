#!/usr/bin/env python3
"""Independent reimplementation of the glm5_next fixture (the text decoder of Glm5NextForConditionalGeneration, served
text-only), written from SEMANTICS_GLM5_NEXT.md.

Reads only <fixture>/{config.json, model.safetensors, expected.safetensors, meta.json} (no transformers; the checkpoint
under the names save_pretrained writes: model.language_model.layers.N.hc_{attn,ffn}_{fn,base,scale}, the KDA layers'
self_attn.{q,k,v}_conv1d / f_a_proj / f_b_proj / dt_bias / A_log, per-expert mlp.experts.E.{gate,up,down}_proj), runs
one full forward over prompt + tokens[:-1] per prompt in fp32 and compares every row with logits_<i>. It checks the
document, not cbc: the mHC streams (normalised projection, sigmoid / 2 sigmoid / softmax + Sinkhorn gates, comb
consumed transposed, mean head), the KDA layers as the plain token recurrence (bounded "safe" gate, l2-normed q/k,
sigmoid-gated output norm), the NoPE latent attention restricted to the k-pooled indexer's selection (pools of
index_kpool tokens, softmax(gate + ape) per feature, eligible once complete, index_topk / index_kpool pools per query
plus the raw tail), the shared layer reusing the previous layer's selection, the DeepSeek-V3 router and the clamped
SwiGLU experts, dense MLP and shared expert.

Usage:
  python tools/oracle/reference_glm5_next.py [FIXTURE_DIR]            (default /tmp/glm5fx/glm5_next; exit 1 on a miss)
  python tools/oracle/reference_glm5_next.py [FIXTURE_DIR] --effects  (also: max |dlogit| with each feature switched off)
  python tools/oracle/reference_glm5_next.py [FIXTURE_DIR] --fp64     (the same in float64)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

DEFAULT_FIXTURE = Path("/tmp/glm5fx/glm5_next")
P = "model.language_model."

# Feature switches for --effects (all on for the parity check). Each replaces one mechanism by the simpler thing a
# reimplementation might do instead.
ON = {
    "pool_softmax": True,  # off: pool key = plain mean of its kpool keys
    "pool_ape": True,  # off: ape = 0 inside the pool softmax
    "pool_selection": True,  # off: every query attends to every causal key (dense MLA)
    "tail": True,  # off: no raw tail (a query with no selected pool attends to itself only)
    "own_pool_forced": False,  # on: the query's own complete pool is always kept (a plausible mistake)
    "shared_reuse": True,  # off: the shared layer attends to every causal key instead of the previous layer's picks
    "indexer_head_weights": True,  # off: weights_proj ignored (every head weight 1 / sqrt(H_i))
    "mhc": True,  # off: plain residual (pre = 1/N, post = 1, comb = identity)
    "sinkhorn": True,  # off: comb = softmax(...) + eps without the Sinkhorn normalisation
    "comb_transposed": True,  # off: comb consumed untransposed (h'_j = sum_k comb[j, k] h_k)
    "kda_decay": True,  # off: g = 0 (no forgetting)
    "kda_safe_gate": True,  # off: kimi's softplus gate -exp(A_log) softplus(x) instead of -5 sigmoid(exp(A_log) x)
    "kda_beta": True,  # off: beta = 1
    "kda_output_gate": True,  # off: sigmoid(gate) = 1 in the output norm
    "kda_conv": True,  # off: no short conv (SiLU of the projections)
    "swiglu_clamp": True,  # off: plain SiLU(gate) * up everywhere
    "correction_bias": True,  # off: the router chooses on sigmoid(logits) alone
}
FLAGS = dict(ON)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rms0(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def swiglu(x, wg, wu, wd, limit):
    g, u = x @ wg.T, x @ wu.T
    if FLAGS["swiglu_clamp"]:
        g, u = g.clamp(max=limit), u.clamp(-limit, limit)
    return (F.silu(g) * u) @ wd.T


# ----------------------------------------------------------------------------------------------------------------
# mHC
# ----------------------------------------------------------------------------------------------------------------


def hc_weights(c, w, site, X):
    """X [T, N, H] -> (pre [T, N], post [T, N], comb [T, N, N]) of one hyper-connection site (hc_attn / hc_ffn)."""
    T, N, H = X.shape
    eps, iters = c["hc_eps"], c["hc_sinkhorn_iters"]
    flat = rms0(X.reshape(T, N * H), c["rms_norm_eps"])
    m = flat @ w[site + "_fn"].T  # [T, (2 + N) N]
    b, s = w[site + "_base"], w[site + "_scale"]
    pre = torch.sigmoid(m[:, :N] * s[0] + b[:N]) + eps
    post = 2 * torch.sigmoid(m[:, N : 2 * N] * s[1] + b[N : 2 * N])
    comb = torch.softmax(m[:, 2 * N :].view(T, N, N) * s[2] + b[2 * N :].view(N, N), dim=-1) + eps
    if FLAGS["sinkhorn"]:
        comb = comb / (comb.sum(-2, keepdim=True) + eps)  # columns first
        for _ in range(iters - 1):
            comb = comb / (comb.sum(-1, keepdim=True) + eps)
            comb = comb / (comb.sum(-2, keepdim=True) + eps)
    if not FLAGS["mhc"]:
        pre = torch.full_like(pre, 1.0 / N)
        post = torch.ones_like(post)
        comb = torch.eye(N).expand(T, N, N)
    return pre, post, comb


def hc_update(X, y, post, comb):
    """h'_k = post_k y + sum_j comb[j, k] h_j (comb transposed)."""
    mixed = torch.einsum("tjk,tjh->tkh", comb, X) if FLAGS["comb_transposed"] else torch.einsum("tkj,tjh->tkh", comb, X)
    return post[..., None] * y[:, None, :] + mixed


# ----------------------------------------------------------------------------------------------------------------
# KDA (token recurrence)
# ----------------------------------------------------------------------------------------------------------------


def kda(c, w, a, x):
    T = x.shape[0]
    H, d, K = c["linear_num_heads"], c["linear_head_dim"], c["linear_conv_kernel_dim"]
    eps = c["rms_norm_eps"]
    pre = torch.cat([x @ w[a + "q_proj.weight"].T, x @ w[a + "k_proj.weight"].T, x @ w[a + "v_proj.weight"].T], -1)
    if FLAGS["kda_conv"]:
        cw = torch.cat([w[a + f"{n}_conv1d.weight"] for n in "qkv"])[:, 0, :]  # [3Hd, K], tap K-1 = current token
        xp = torch.cat([pre.new_zeros(K - 1, pre.shape[1]), pre])
        conv = torch.stack([(xp[t : t + K] * cw.T).sum(0) for t in range(T)])
    else:
        conv = pre
    q, k, v = F.silu(conv).split(H * d, -1)
    q, k, v = (z.view(T, H, d) for z in (q, k, v))
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * d**-0.5
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    beta = torch.sigmoid(x @ w[a + "b_proj.weight"].T) if FLAGS["kda_beta"] else torch.ones(T, H)
    f = (x @ w[a + "f_a_proj.weight"].T) @ w[a + "f_b_proj.weight"].T + w[a + "dt_bias"]
    f = f.view(T, H, d)
    A = torch.exp(w[a + "A_log"]).view(1, H, 1)
    if FLAGS["kda_safe_gate"]:
        g = c["linear_lower_bound"] * torch.sigmoid(A * f)
    else:
        g = -A * F.softplus(f)
    if not FLAGS["kda_decay"]:
        g = torch.zeros_like(g)
    S = torch.zeros(H, d, d)  # [head, key channel, value channel]
    out = []
    for t in range(T):
        S = S * g[t].exp()[:, :, None]
        u = beta[t][:, None] * (v[t] - torch.einsum("hkv,hk->hv", S, k[t]))
        S = S + k[t][:, :, None] * u[:, None, :]
        out.append(torch.einsum("hkv,hk->hv", S, q[t]))
    o = torch.stack(out)  # [T, H, d]
    gate = ((x @ w[a + "g_a_proj.weight"].T) @ w[a + "g_b_proj.weight"].T).view(T, H, d)
    o = rms(o, w[a + "o_norm.weight"], eps)
    if FLAGS["kda_output_gate"]:
        o = o * torch.sigmoid(gate)
    return o.reshape(T, H * d) @ w[a + "o_proj.weight"].T


# ----------------------------------------------------------------------------------------------------------------
# k-pooled indexer and sparse MLA
# ----------------------------------------------------------------------------------------------------------------


def indexer_selection(c, w, a, x, q_resid):
    """[T, T] bool: key s attended by query t. Unpadded single sequence: pools start at token 0."""
    T = x.shape[0]
    Hi, di, kp = c["index_n_heads"], c["index_head_dim"], c["index_kpool"]
    n_sel = c["index_topk"] // kp
    ix = a + "indexer."
    q = (q_resid @ w[ix + "wq_b.weight"].T).view(T, Hi, di)
    k = F.layer_norm(x @ w[ix + "wk.weight"].T, (di,), w[ix + "k_norm.weight"], w[ix + "k_norm.bias"], 1e-6)
    gate = x @ w[ix + "index_kpool_compress_gate"].T  # [T, di]
    hw = x @ w[ix + "weights_proj.weight"].T if FLAGS["indexer_head_weights"] else torch.ones(T, Hi)
    hw = hw * Hi**-0.5
    n_pools = T // kp  # complete pools only
    sel = torch.zeros(T, T, dtype=torch.bool)
    if n_pools:
        kk = k[: n_pools * kp].view(n_pools, kp, di)
        logits = gate[: n_pools * kp].view(n_pools, kp, di)
        if FLAGS["pool_ape"]:
            logits = logits + w[ix + "index_kpool_compress_ape"]
        prob = logits.softmax(1) if FLAGS["pool_softmax"] else torch.full_like(logits, 1.0 / kp)
        pool_key = (prob * kk).sum(1)  # [n_pools, di]
        score = torch.einsum("th,thp->tp", hw, F.relu(torch.einsum("thd,pd->thp", q, pool_key) * di**-0.5))
    for t in range(T):
        eligible = (t + 1) // kp  # pools 0 .. eligible-1 end at or before t
        if eligible:
            if eligible <= n_sel:
                chosen = list(range(eligible))
            else:
                chosen = score[t, :eligible].topk(n_sel).indices.tolist()
            if FLAGS["own_pool_forced"] and (t + 1) % kp == 0 and eligible - 1 not in chosen:
                chosen = chosen[:-1] + [eligible - 1]
            for p in chosen:
                sel[t, p * kp : (p + 1) * kp] = True
        tail_start = eligible * kp
        if FLAGS["tail"]:
            sel[t, tail_start : t + 1] = True
        elif not sel[t].any():
            sel[t, t] = True
    return sel


def mla(c, w, a, x, prev_sel, has_indexer):
    T = x.shape[0]
    nh, dn, dv = c["num_attention_heads"], c["qk_nope_head_dim"], c["v_head_dim"]
    eps = c["rms_norm_eps"]
    q_resid = rms(x @ w[a + "q_a_proj.weight"].T, w[a + "q_a_layernorm.weight"], eps)
    q = (q_resid @ w[a + "q_b_proj.weight"].T).view(T, nh, dn)
    latent = rms(x @ w[a + "kv_a_proj_with_mqa.weight"].T, w[a + "kv_a_layernorm.weight"], eps)  # the cached row
    kv = (latent @ w[a + "kv_b_proj.weight"].T).view(T, nh, dn + dv)
    k, v = kv[..., :dn], kv[..., dn:]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    if has_indexer:
        sel = indexer_selection(c, w, a, x, q_resid)
    else:
        sel = prev_sel if FLAGS["shared_reuse"] else causal
    allowed = sel if FLAGS["pool_selection"] else causal
    s = torch.einsum("thd,shd->hts", q, k) * dn**-0.5
    p = s.masked_fill(~allowed, -math.inf).softmax(-1)
    o = torch.einsum("hts,shd->thd", p, v).reshape(T, nh * dv)
    return o @ w[a + "o_proj.weight"].T, sel


# ----------------------------------------------------------------------------------------------------------------
# MoE
# ----------------------------------------------------------------------------------------------------------------


def moe(c, w, m, x):
    E, kx, G, Gk = c["n_routed_experts"], c["num_experts_per_tok"], c["n_group"], c["topk_group"]
    L = c["swiglu_limit"]
    s = torch.sigmoid(x @ w[m + "gate.weight"].T)
    choice = s + (w[m + "gate.e_score_correction_bias"] if FLAGS["correction_bias"] else 0.0)
    if G > 1:
        gs = choice.view(-1, G, E // G).topk(2, -1).values.sum(-1)
        keep = torch.zeros_like(gs, dtype=torch.bool).scatter_(1, gs.topk(Gk, -1).indices, True)
        choice = choice.masked_fill(~keep.repeat_interleave(E // G, 1), -math.inf)
    idx = choice.topk(kx, -1).indices
    wt = s.gather(-1, idx)
    if c["norm_topk_prob"]:
        wt = wt / (wt.sum(-1, keepdim=True) + 1e-20)
    wt = wt * c["routed_scaling_factor"]
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(kx):
            e = int(idx[t, j])
            ex = f"{m}experts.{e}."
            y = swiglu(x[t : t + 1], w[ex + "gate_proj.weight"], w[ex + "up_proj.weight"], w[ex + "down_proj.weight"], L)
            out[t] += wt[t, j] * y[0]
    sh = m + "shared_experts."
    return out + swiglu(x, w[sh + "gate_proj.weight"], w[sh + "up_proj.weight"], w[sh + "down_proj.weight"], L)


# ----------------------------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------------------------


def forward(c, w, ids):
    eps, N = c["rms_norm_eps"], c["hc_mult"]
    X = w[P + "embed_tokens.weight"][ids][:, None, :].repeat(1, N, 1)  # [T, N, H]
    sel = None
    for i, kind in enumerate(c["layer_types"]):
        L = f"{P}layers.{i}."
        pre, post, comb = hc_weights(c, w, L + "hc_attn", X)
        x = rms((pre[..., None] * X).sum(1), w[L + "input_layernorm.weight"], eps)
        if kind == "linear_attention":
            y = kda(c, w, L + "self_attn.", x)
            sel = None  # a KDA layer hands no selection on
        else:
            has_indexer = c["indexer_types"][i] == "full"
            if not has_indexer and sel is None:
                raise ValueError(f"layer {i}: a shared layer needs a full indexed layer right before it")
            y, own = mla(c, w, L + "self_attn.", x, sel, has_indexer)
            nxt = c["indexer_types"][min(i + 1, len(c["indexer_types"]) - 1)]
            sel = own if has_indexer and nxt == "shared" else None  # shared layers hand nothing on
        X = hc_update(X, y, post, comb)
        pre, post, comb = hc_weights(c, w, L + "hc_ffn", X)
        x = rms((pre[..., None] * X).sum(1), w[L + "post_attention_layernorm.weight"], eps)
        if c["mlp_layer_types"][i] == "sparse":
            y = moe(c, w, L + "mlp.", x)
        else:
            y = swiglu(x, w[L + "mlp.gate_proj.weight"], w[L + "mlp.up_proj.weight"], w[L + "mlp.down_proj.weight"],
                       c["swiglu_limit"])
        X = hc_update(X, y, post, comb)
    h = rms(X.mean(1), w[P + "norm.weight"], eps)
    return h @ w["lm_head.weight"].T


def main() -> int:
    torch.set_num_threads(1)
    dtype = torch.float64 if "--fp64" in sys.argv[1:] else torch.float32
    torch.set_default_dtype(dtype)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    fixture = Path(args[0]) if args else DEFAULT_FIXTURE
    c = json.loads((fixture / "config.json").read_text())["text_config"]
    w = {k: v.to(dtype) for k, v in load_file(str(fixture / "model.safetensors")).items() if not k.startswith("model.visual.")}
    exp = load_file(str(fixture / "expected.safetensors"))
    meta = json.loads((fixture / "meta.json").read_text())
    atol = meta["atol"]
    n_prompts = len(meta["prompt_lengths"])

    def rows():
        out = []
        for i in range(n_prompts):
            prompt, tokens = exp[f"prompt_{i}"].tolist(), exp[f"tokens_{i}"].tolist()
            with torch.no_grad():
                out.append(forward(c, w, torch.tensor(prompt + tokens[:-1]))[len(prompt) - 1 :])
        return out

    base = rows()
    worst, ok = 0.0, True
    for i, logits in enumerate(base):
        delta = float((logits.float() - exp[f"logits_{i}"]).abs().max())
        worst = max(worst, delta)
        ok &= logits.argmax(-1).tolist() == exp[f"tokens_{i}"].tolist() and delta <= atol
    print(f"{fixture.name}  max |dlogit| {worst:.3g} ({str(dtype)[6:]}, atol {atol:g}) {'ok' if ok else 'FAIL'}")
    if "--effects" in sys.argv[1:]:
        for name, default in ON.items():
            FLAGS[name] = not default
            d = max(float((a - b).abs().max()) for a, b in zip(base, rows()))
            FLAGS[name] = default
            print(f"  {'with' if not default else 'without'} {name:22s} max |dlogit| {d:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
