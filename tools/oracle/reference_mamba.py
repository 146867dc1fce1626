#!/usr/bin/env python3
"""Independent token-loop reimplementation of the 10 Mamba-family fixtures (a check of SEMANTICS_MAMBA.md).

Written from SEMANTICS_MAMBA.md, not from transformers: it reads only each fixture's config.json and
model.safetensors (HF tensor names as save_pretrained writes them), runs every SSM as a plain per-token
recurrence (no chunking) and every attention as full causal softmax attention over the sequence, and
compares the logits at the fixture rows with expected.safetensors. Never imports transformers.

Usage:
  python tools/oracle/reference_mamba.py                 # all 10 families, fp32
  python tools/oracle/reference_mamba.py --f64 jamba     # one family, in float64
  python tools/oracle/reference_mamba.py --root DIR      # fixtures somewhere else
Exit status 1 if any family misses its meta.json atol or a greedy token.
"""

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

DT = torch.float64 if "--f64" in sys.argv else torch.float32
DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "test" / "parity" / "fixtures"


def rms(x, w=None, eps=1e-6):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * w if w is not None else y


def lin(x, w, b=None):
    y = x @ w.T
    return y + b if b is not None else y


def silu(x):
    return x * torch.sigmoid(x)


def softplus(x):
    return torch.where(x > 20, x, torch.log1p(torch.exp(x)))


def causal_conv(x, w, b):
    """x [T, C], w [C, 1, K]; tap K-1 multiplies the current token."""
    T, C = x.shape
    K = w.shape[-1]
    xp = torch.cat([torch.zeros(K - 1, C, dtype=x.dtype), x], 0)
    y = torch.zeros(T, C, dtype=x.dtype)
    for j in range(K):
        y = y + w[:, 0, j] * xp[j : j + T]
    return y + b if b is not None else y


def rope(x, pos, theta, rot):
    """x [T, nh, D]; rotate_half on the leading `rot` dims."""
    inv = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=DT) / rot))
    f = pos[:, None].to(DT) * inv[None]
    emb = torch.cat([f, f], -1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    xr, xp = x[..., :rot], x[..., rot:]
    x1, x2 = xr[..., : rot // 2], xr[..., rot // 2 :]
    rh = torch.cat([-x2, x1], -1)
    return torch.cat([xr * cos + rh * sin, xp], -1)


def attention(q, k, v, scale):
    """q [T, Hq, D], k/v [T, Hkv, D]; causal softmax attention, GQA head h reads kv head h // (Hq/Hkv)."""
    T, Hq, D = q.shape
    r = Hq // k.shape[1]
    k = k.repeat_interleave(r, 1)
    v = v.repeat_interleave(r, 1)
    s = torch.einsum("thd,shd->hts", q, k) * scale
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    s = s.masked_fill(mask, float("-inf"))
    p = torch.softmax(s, -1)
    return torch.einsum("hts,shd->thd", p, v).reshape(T, -1)


# ---------------------------------------------------------------------------------------------
# Mixers
# ---------------------------------------------------------------------------------------------


def mamba2_mixer(u, W, p, *, I, H, P, G, N, norm, eps, lim=(0.0, math.inf), ssm_in=1.0, mup=None):
    """norm: 'group' (w*rms(y*silu(z)) per group of I/G), 'falcon_pre' (rms(y)*w*silu(z) per group),
    'none_gate' (y*silu(z))."""
    zx = lin(u * ssm_in, W[p + "in_proj.weight"], W.get(p + "in_proj.bias"))
    if mup is not None:
        zx = zx * mup
    conv_dim = I + 2 * G * N
    z, xbc, dt = zx[:, :I], zx[:, I : I + conv_dim], zx[:, I + conv_dim :]
    assert dt.shape[1] == H
    xbc = silu(causal_conv(xbc, W[p + "conv1d.weight"], W.get(p + "conv1d.bias")))
    x = xbc[:, :I].reshape(-1, H, P)
    Bm = xbc[:, I : I + G * N].reshape(-1, G, N)
    Cm = xbc[:, I + G * N :].reshape(-1, G, N)
    dt = softplus(dt + W[p + "dt_bias"]).clamp(lim[0], lim[1])
    A = -torch.exp(W[p + "A_log"])
    D = W[p + "D"]
    g_of_h = torch.arange(H) // (H // G)
    h = torch.zeros(H, P, N, dtype=DT)
    ys = []
    for t in range(u.shape[0]):
        Bt, Ct = Bm[t, g_of_h], Cm[t, g_of_h]  # [H, N]
        h = torch.exp(dt[t] * A)[:, None, None] * h + (dt[t][:, None] * x[t])[:, :, None] * Bt[:, None, :]
        ys.append(torch.einsum("hpn,hn->hp", h, Ct) + D[:, None] * x[t])
    y = torch.stack(ys).reshape(-1, I)
    w = W.get(p + "norm.weight")
    if norm == "group":
        y = rms((y * silu(z)).reshape(-1, G, I // G), eps=eps).reshape(-1, I) * w
    elif norm == "falcon_pre":
        y = (rms(y.reshape(-1, G, I // G), eps=eps).reshape(-1, I) * w) * silu(z)
    elif norm == "none_gate":
        y = y * silu(z)
    return lin(y, W[p + "out_proj.weight"], W.get(p + "out_proj.bias"))


def mamba1_mixer(u, W, p, *, I, N, R, bcdt_norm=None, eps=1e-6, heads=1):
    """bcdt_norm: None, 'weighted' (jamba: *_layernorm.weight), 'weightless' (falcon_mamba).
    heads > 1: zamba's multi-head layout (interleaved in_proj rows, per-head x_proj/dt_proj/A/D)."""
    xz = lin(u, W[p + "in_proj.weight"], W.get(p + "in_proj.bias"))
    if heads == 1:
        x, z = xz[:, :I], xz[:, I:]
    else:
        x, z = xz[:, 0::2], xz[:, 1::2]
    x = silu(causal_conv(x, W[p + "conv1d.weight"], W.get(p + "conv1d.bias")))
    T = u.shape[0]
    hd = I // heads
    if heads == 1:
        xp = {"w": W[p + "x_proj.weight"][None], "dtw": W[p + "dt_proj.weight"][None],
              "dtb": W[p + "dt_proj.bias"][None], "A": W[p + "A_log"][None], "D": W[p + "D"][None]}
    else:
        xp = {"w": W[p + "x_proj_weight"], "dtw": W[p + "dt_proj_weight"], "dtb": W[p + "dt_proj_bias"],
              "A": W[p + "A_log"], "D": W[p + "D"]}
    ys = []
    for hh in range(heads):
        xh = x[:, hh * hd : (hh + 1) * hd]
        dbc = xh @ xp["w"][hh].T
        dtr, Bm, Cm = dbc[:, :R], dbc[:, R : R + N], dbc[:, R + N :]
        if bcdt_norm == "weighted":
            dtr = rms(dtr, W[p + "dt_layernorm.weight"], eps)
            Bm = rms(Bm, W[p + "b_layernorm.weight"], eps)
            Cm = rms(Cm, W[p + "c_layernorm.weight"], eps)
        elif bcdt_norm == "weightless":
            dtr, Bm, Cm = rms(dtr, eps=eps), rms(Bm, eps=eps), rms(Cm, eps=eps)
        dt = softplus(dtr @ xp["dtw"][hh].T + xp["dtb"][hh])  # [T, hd]
        A = -torch.exp(xp["A"][hh])  # [hd, N]
        h = torch.zeros(hd, N, dtype=DT)
        out = []
        for t in range(T):
            h = torch.exp(dt[t][:, None] * A) * h + (dt[t] * xh[t])[:, None] * Bm[t][None, :]
            out.append(h @ Cm[t] + xp["D"][hh] * xh[t])
        ys.append(torch.stack(out))
    y = torch.cat(ys, 1) * silu(z)
    return lin(y, W[p + "out_proj.weight"], W.get(p + "out_proj.bias"))


def swiglu(x, W, p, gate="gate_proj", up="up_proj", down="down_proj", act=silu):
    return lin(act(lin(x, W[p + gate + ".weight"])) * lin(x, W[p + up + ".weight"]), W[p + down + ".weight"])


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


# ---------------------------------------------------------------------------------------------
# Families: each returns logits [T, V] for the token ids
# ---------------------------------------------------------------------------------------------


def f_mamba2(c, W, ids):
    I = c["expand"] * c["hidden_size"]
    h = W["backbone.embeddings.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"backbone.layers.{i}."
        h = h + mamba2_mixer(rms(h, W[p + "norm.weight"], c["layer_norm_epsilon"]), W, p + "mixer.", I=I,
                             H=c["num_heads"], P=c["head_dim"], G=c["n_groups"], N=c["state_size"], norm="group",
                             eps=c["layer_norm_epsilon"], lim=tl(c))
    h = rms(h, W["backbone.norm_f.weight"], c["layer_norm_epsilon"])
    return lin(h, W.get("lm_head.weight", W["backbone.embeddings.weight"]))


def tl(c):
    v = c.get("time_step_limit", [0.0, math.inf])
    return [x if not isinstance(x, dict) else float(x["__float__"].replace("Infinity", "inf")) for x in v]


def f_bamba(c, W, ids):
    H, eps = c["hidden_size"], c["rms_norm_eps"]
    I = c["mamba_expand"] * H
    nh = c["mamba_n_heads"]
    hd = c.get("head_dim") or H // c["num_attention_heads"]
    rot = int(hd * c["rope_parameters"]["partial_rotary_factor"])
    attn = set(c["attn_layer_indices"] or [])
    h = W["model.embed_tokens.weight"][ids]
    pos = torch.arange(len(ids))
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms(h, W[p + "input_layernorm.weight"], eps)
        if i in attn:
            q = lin(x, W[p + "self_attn.q_proj.weight"]).reshape(len(ids), -1, hd)
            k = lin(x, W[p + "self_attn.k_proj.weight"]).reshape(len(ids), -1, hd)
            v = lin(x, W[p + "self_attn.v_proj.weight"]).reshape(len(ids), -1, hd)
            th = c["rope_parameters"]["rope_theta"]
            o = attention(rope(q, pos, th, rot), rope(k, pos, th, rot), v, hd**-0.5)
            y = lin(o, W[p + "self_attn.o_proj.weight"])
        else:
            y = mamba2_mixer(x, W, p + "mamba.", I=I, H=nh, P=c["mamba_d_head"], G=c["mamba_n_groups"],
                             N=c["mamba_d_state"], norm="group", eps=eps, lim=tl(c))
        h = h + y
        h = h + swiglu(rms(h, W[p + "pre_ff_layernorm.weight"], eps), W, p + "feed_forward.")
    h = rms(h, W["model.final_layernorm.weight"], eps)
    return lin(h, W["lm_head.weight"])


def f_granitemoehybrid(c, W, ids, gaps):
    H, eps = c["hidden_size"], c["rms_norm_eps"]
    I = c["mamba_expand"] * H
    hd = H // c["num_attention_heads"]
    rm = c["residual_multiplier"]
    h = W["model.embed_tokens.weight"][ids] * c["embedding_multiplier"]
    assert c.get("position_embedding_type") != "rope"
    for i, lt in enumerate(c["layer_types"]):
        p = f"model.layers.{i}."
        x = rms(h, W[p + "input_layernorm.weight"], eps)
        if lt in ("full_attention", "attention"):
            q = lin(x, W[p + "self_attn.q_proj.weight"]).reshape(len(ids), -1, hd)
            k = lin(x, W[p + "self_attn.k_proj.weight"]).reshape(len(ids), -1, hd)
            v = lin(x, W[p + "self_attn.v_proj.weight"]).reshape(len(ids), -1, hd)
            y = lin(attention(q, k, v, c["attention_multiplier"]), W[p + "self_attn.o_proj.weight"])
        else:
            y = mamba2_mixer(x, W, p + "mamba.", I=I, H=c["mamba_n_heads"], P=c["mamba_d_head"],
                             G=c["mamba_n_groups"], N=c["mamba_d_state"], norm="group", eps=eps, lim=tl(c))
        h = h + y * rm
        x = rms(h, W[p + "post_attention_layernorm.weight"], eps)
        # MoE: top-k of router logits, softmax over the k
        logits = lin(x, W[p + "block_sparse_moe.router.layer.weight"])
        top = torch.topk(logits, c["num_experts_per_tok"] + 1, -1)
        gaps.append(float((top.values[:, -2] - top.values[:, -1]).min()))
        tv, ti = top.values[:, :-1], top.indices[:, :-1]
        wts = torch.softmax(tv, -1)
        gu = W[p + "block_sparse_moe.input_linear.weight"]  # [E, 2I, H]
        dn = W[p + "block_sparse_moe.output_linear.weight"]  # [E, H, I]
        moe = torch.zeros_like(x)
        for t in range(x.shape[0]):
            for j in range(ti.shape[1]):
                e = int(ti[t, j])
                g, u_ = (gu[e] @ x[t]).chunk(2)
                moe[t] += wts[t, j] * (dn[e] @ (silu(g) * u_))
        g, u_ = lin(x, W[p + "shared_mlp.input_linear.weight"]).chunk(2, -1)
        sh = lin(silu(g) * u_, W[p + "shared_mlp.output_linear.weight"])
        h = h + (moe + sh) * rm
    h = rms(h, W["model.norm.weight"], eps)
    return lin(h, W.get("lm_head.weight", W["model.embed_tokens.weight"])) / c["logits_scaling"]


def f_nemotron_h(c, W, ids, gaps):
    eps = c["layer_norm_epsilon"]
    hd = c["head_dim"]
    relu2 = lambda x: F.relu(x) ** 2  # noqa: E731
    h = W["backbone.embeddings.weight"][ids]
    I = c["mamba_num_heads"] * c["mamba_head_dim"]
    for i, lt in enumerate(c["layers_block_type"]):
        p = f"backbone.layers.{i}."
        x = rms(h, W[p + "norm.weight"], eps)
        m = p + "mixer."
        if lt == "linear_attention":
            y = mamba2_mixer(x, W, m, I=I, H=c["mamba_num_heads"], P=c["mamba_head_dim"], G=c["n_groups"],
                             N=c["ssm_state_size"], norm="group", eps=eps, lim=(c["time_step_min"], math.inf))
        elif lt == "full_attention":
            q = lin(x, W[m + "q_proj.weight"]).reshape(len(ids), -1, hd)
            k = lin(x, W[m + "k_proj.weight"]).reshape(len(ids), -1, hd)
            v = lin(x, W[m + "v_proj.weight"]).reshape(len(ids), -1, hd)
            y = lin(attention(q, k, v, hd**-0.5), W[m + "o_proj.weight"])
        elif lt == "mlp":
            y = lin(relu2(lin(x, W[m + "up_proj.weight"])), W[m + "down_proj.weight"])
        else:  # moe
            s = torch.sigmoid(lin(x, W[m + "gate.weight"]))
            choice = s + W[m + "gate.e_score_correction_bias"]
            top = torch.topk(choice, c["num_experts_per_tok"] + 1, -1)
            gaps.append(2 * float((top.values[:, -2] - top.values[:, -1]).min()))
            ti = top.indices[:, :-1]
            wts = s.gather(1, ti)
            wts = wts / (wts.sum(-1, keepdim=True) + 1e-20) * c["routed_scaling_factor"]
            y = torch.zeros_like(x)
            for t in range(x.shape[0]):
                for j in range(ti.shape[1]):
                    e = int(ti[t, j])
                    ep = m + f"experts.{e}."
                    y[t] += wts[t, j] * (W[ep + "down_proj.weight"] @ relu2(W[ep + "up_proj.weight"] @ x[t]))
            y = y + lin(relu2(lin(x, W[m + "shared_experts.up_proj.weight"])), W[m + "shared_experts.down_proj.weight"])
        h = h + y
    h = rms(h, W["backbone.norm_f.weight"], eps)
    return lin(h, W["lm_head.weight"])


def f_falcon_h1(c, W, ids):
    H, eps = c["hidden_size"], c["rms_norm_eps"]
    I = c["mamba_d_ssm"] or c["mamba_expand"] * H
    G, N, nh = c["mamba_n_groups"], c["mamba_d_state"], c["mamba_n_heads"]
    hd = c.get("head_dim") or H // c["num_attention_heads"]
    sm = c["ssm_multipliers"]
    mup = torch.cat([torch.full((I,), sm[0]), torch.full((I,), sm[1]), torch.full((G * N,), sm[2]),
                     torch.full((G * N,), sm[3]), torch.full((nh,), sm[4])]).to(DT)
    assert c["mamba_rms_norm"] and not c["mamba_norm_before_gate"]
    h = W["model.embed_tokens.weight"][ids] * c["embedding_multiplier"]
    pos = torch.arange(len(ids))
    th = c["rope_parameters"]["rope_theta"]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms(h, W[p + "input_layernorm.weight"], eps)
        ym = mamba2_mixer(x, W, p + "mamba.", I=I, H=nh, P=c["mamba_d_head"], G=G, N=N, norm="group", eps=eps,
                          lim=tl(c), ssm_in=c["ssm_in_multiplier"], mup=mup) * c["ssm_out_multiplier"]
        xa = x * c["attention_in_multiplier"]
        q = lin(xa, W[p + "self_attn.q_proj.weight"]).reshape(len(ids), -1, hd)
        k = lin(xa, W[p + "self_attn.k_proj.weight"]).reshape(len(ids), -1, hd) * c["key_multiplier"]
        v = lin(xa, W[p + "self_attn.v_proj.weight"]).reshape(len(ids), -1, hd)
        ya = lin(attention(rope(q, pos, th, hd), rope(k, pos, th, hd), v, hd**-0.5), W[p + "self_attn.o_proj.weight"])
        h = h + ym + ya * c["attention_out_multiplier"]
        x = rms(h, W[p + "pre_ff_layernorm.weight"], eps)
        gm, dm = c["mlp_multipliers"]
        f = p + "feed_forward."
        y = lin(x, W[f + "up_proj.weight"]) * silu(lin(x, W[f + "gate_proj.weight"]) * gm)
        h = h + lin(y, W[f + "down_proj.weight"]) * dm
    h = rms(h, W["model.final_layernorm.weight"], eps)
    return lin(h, W["lm_head.weight"]) * c["lm_head_multiplier"]


def f_zamba2(c, W, ids):
    H, eps = c["hidden_size"], c["rms_norm_eps"]
    I = c["mamba_expand"] * H
    nh = c["n_mamba_heads"]
    heads = c["num_attention_heads"]
    ahd = 2 * H // heads
    emb = W["model.embed_tokens.weight"][ids]
    h = emb
    pos = torch.arange(len(ids))
    hybrid = [i for i, t in enumerate(c["layers_block_type"]) if t == "hybrid"]
    # shared block j (j = hybrid_index % num_mem_blocks) is stored under the first hybrid layer using it
    owner = {}
    for n, i in enumerate(hybrid):
        owner.setdefault(n % c["num_mem_blocks"], i)
    for i, t in enumerate(c["layers_block_type"]):
        p = f"model.layers.{i}."
        if t == "hybrid":
            n = hybrid.index(i)
            s = f"model.layers.{owner[n % c['num_mem_blocks']]}.shared_transformer."
            x = rms(torch.cat([h, emb], -1), W[s + "input_layernorm.weight"], eps)
            qkv = []
            for nm in "qkv":
                y = lin(x, W[s + f"self_attn.{nm}_proj.weight"])
                if c["use_shared_attention_adapter"]:
                    a = s + f"self_attn.linear_{nm}_adapter_list.{n}."
                    y = y + lin(lin(x, W[a + "0.weight"]), W[a + "1.weight"])
                qkv.append(y.reshape(len(ids), -1, ahd))
            q, k, v = qkv
            if c["use_mem_rope"]:
                th = c["rope_parameters"]["rope_theta"]
                q, k = rope(q, pos, th, ahd), rope(k, pos, th, ahd)
            o = lin(attention(q, k, v, (ahd / 2) ** -0.5), W[s + "self_attn.o_proj.weight"])
            x = rms(o, W[s + "pre_ff_layernorm.weight"], eps)
            a = s + f"feed_forward.gate_up_proj_adapter_list.{n}."
            gu = lin(x, W[s + "feed_forward.gate_up_proj.weight"]) + lin(lin(x, W[a + "0.weight"]), W[a + "1.weight"])
            g, u_ = gu.chunk(2, -1)
            tr = lin(lin(gelu(g) * u_, W[s + "feed_forward.down_proj.weight"]), W[p + "linear.weight"])
            mp = p + "mamba_decoder."
            x = rms(h + tr, W[mp + "input_layernorm.weight"], eps)
        else:
            mp = p
            x = rms(h, W[mp + "input_layernorm.weight"], eps)
        h = h + mamba2_mixer(x, W, mp + "mamba.", I=I, H=nh, P=I // nh, G=c["mamba_ngroups"], N=c["mamba_d_state"],
                             norm="group", eps=1e-5, lim=(c["time_step_min"], math.inf))
    h = rms(h, W["model.final_layernorm.weight"], eps)
    return lin(h, W.get("lm_head.weight", W["model.embed_tokens.weight"]))


def f_mamba(c, W, ids, falcon=False):
    H = c["hidden_size"]
    I = c["expand"] * H
    R = c["time_step_rank"] if c["time_step_rank"] != "auto" else math.ceil(H / 16)
    h = W["backbone.embeddings.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"backbone.layers.{i}."
        h = h + mamba1_mixer(rms(h, W[p + "norm.weight"], c["layer_norm_epsilon"]), W, p + "mixer.", I=I,
                             N=c["state_size"], R=R, bcdt_norm="weightless" if falcon else None,
                             eps=c.get("mixer_rms_eps", 1e-6))
    h = rms(h, W["backbone.norm_f.weight"], c["layer_norm_epsilon"])
    return lin(h, W.get("lm_head.weight", W["backbone.embeddings.weight"]))


def f_jamba(c, W, ids, gaps):
    H, eps = c["hidden_size"], c["rms_norm_eps"]
    I = c["mamba_expand"] * H
    R = c["mamba_dt_rank"]
    hd = H // c["num_attention_heads"]
    h = W["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms(h, W[p + "input_layernorm.weight"], eps)
        if i % c["attn_layer_period"] == c["attn_layer_offset"]:
            q = lin(x, W[p + "self_attn.q_proj.weight"]).reshape(len(ids), -1, hd)
            k = lin(x, W[p + "self_attn.k_proj.weight"]).reshape(len(ids), -1, hd)
            v = lin(x, W[p + "self_attn.v_proj.weight"]).reshape(len(ids), -1, hd)
            y = lin(attention(q, k, v, hd**-0.5), W[p + "self_attn.o_proj.weight"])
        else:
            y = mamba1_mixer(x, W, p + "mamba.", I=I, N=c["mamba_d_state"], R=R, bcdt_norm="weighted", eps=eps)
        h = h + y
        x = rms(h, W[p + "pre_ff_layernorm.weight"], eps)
        f = p + "feed_forward."
        if i % c["expert_layer_period"] == c["expert_layer_offset"]:
            logits = lin(x, W[f + "router.weight"])
            top = torch.topk(logits, c["num_experts_per_tok"] + 1, -1)
            gaps.append(float((top.values[:, -2] - top.values[:, -1]).min()))
            prob = torch.softmax(logits, -1)
            ti = top.indices[:, :-1]
            y = torch.zeros_like(x)
            for t in range(x.shape[0]):
                for j in range(ti.shape[1]):
                    e = int(ti[t, j])
                    y[t] += prob[t, e] * swiglu(x[t : t + 1], W, f + f"experts.{e}.")[0]
        else:
            y = swiglu(x, W, f)
        h = h + y
    h = rms(h, W["model.final_layernorm.weight"], eps)
    return lin(h, W["lm_head.weight"])


def f_zamba(c, W, ids):
    H, eps = c["hidden_size"], c["rms_norm_eps"]
    I = c["mamba_expand"] * H
    R = c["mamba_dt_rank"]
    ahd = c["attention_head_dim"]
    emb = W["model.embed_tokens.weight"][ids]
    h = emb
    hybrid = [i for i, t in enumerate(c["layers_block_type"]) if t == "hybrid"]
    s = f"model.layers.{hybrid[0]}.shared_transf."  # one shared block, stored under the first hybrid layer
    for i, t in enumerate(c["layers_block_type"]):
        p = f"model.layers.{i}."
        if t == "hybrid":
            x = rms(torch.cat([h, emb], -1), W[s + "input_layernorm.weight"], eps)
            q = lin(x, W[s + "self_attn.q_proj.weight"]).reshape(len(ids), -1, ahd)
            k = lin(x, W[s + "self_attn.k_proj.weight"]).reshape(len(ids), -1, ahd)
            v = lin(x, W[s + "self_attn.v_proj.weight"]).reshape(len(ids), -1, ahd)
            o = lin(attention(q, k, v, (ahd / 2) ** -0.5), W[s + "self_attn.o_proj.weight"])
            x = rms(o, W[s + "pre_ff_layernorm.weight"], eps)
            tr = lin(swiglu(x, W, s + "feed_forward.", act=gelu), W[p + "linear.weight"])
            mp = p + "mamba_decoder."
            x = rms(h + tr, W[mp + "input_layernorm.weight"], eps)
        else:
            mp = p
            x = rms(h, W[mp + "input_layernorm.weight"], eps)
        h = h + mamba1_mixer(x, W, mp + "mamba.", I=I, N=c["mamba_d_state"], R=R, heads=c["n_mamba_heads"])
    h = rms(h, W["model.final_layernorm.weight"], eps)
    return lin(h, W.get("lm_head.weight", W["model.embed_tokens.weight"]))


FAMS = {
    "mamba2": lambda c, W, ids, g: f_mamba2(c, W, ids),
    "bamba": lambda c, W, ids, g: f_bamba(c, W, ids),
    "granitemoehybrid": f_granitemoehybrid,
    "nemotron_h": f_nemotron_h,
    "falcon_h1": lambda c, W, ids, g: f_falcon_h1(c, W, ids),
    "zamba2": lambda c, W, ids, g: f_zamba2(c, W, ids),
    "mamba": lambda c, W, ids, g: f_mamba(c, W, ids),
    "falcon_mamba": lambda c, W, ids, g: f_mamba(c, W, ids, falcon=True),
    "jamba": f_jamba,
    "zamba": lambda c, W, ids, g: f_zamba(c, W, ids),
}


def main() -> int:
    args = sys.argv[1:]
    root = DEFAULT_ROOT
    if "--root" in args:
        i = args.index("--root")
        root = Path(args[i + 1])
        del args[i : i + 2]
    fams = [a for a in args if not a.startswith("--")] or list(FAMS)
    worst_all, failed = 0.0, []
    for fam in fams:
        d = root / fam
        c = json.loads((d / "config.json").read_text())
        W = {k: v.to(DT) for k, v in load_file(str(d / "model.safetensors")).items()}
        E = load_file(str(d / "expected.safetensors"))
        meta = json.loads((d / "meta.json").read_text())
        worst, ok, gaps = 0.0, True, []
        for i in range(3):
            prompt, toks, rows = E[f"prompt_{i}"].tolist(), E[f"tokens_{i}"].tolist(), E[f"logits_{i}"]
            seq = prompt + toks[:-1]
            with torch.no_grad():
                lg = FAMS[fam](c, W, torch.tensor(seq), gaps)[len(prompt) - 1 :]
            worst = max(worst, float((lg - rows.to(DT)).abs().max()))
            ok &= lg.argmax(-1).tolist() == toks
        worst_all = max(worst_all, worst)
        if worst > meta["atol"] or not ok:
            failed.append(fam)
        print(
            f"{fam:18s} max|d| {worst:.3g} (atol {meta['atol']:g}) tokens {'match' if ok else 'DIFFER'}"
            + (f", min router gap {min(gaps):.3g}" if gaps else "")
        )
    print(f"worst {worst_all:.3g} ({'float64' if DT == torch.float64 else 'float32'})" + (f"; FAILED: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
