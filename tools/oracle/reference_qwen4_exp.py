#!/usr/bin/env python3
"""Independent reimplementation of the qwen4_exp_text fixture (Qwen4ExpForCausalLM; the text decoder of qwen4_exp),
written from SEMANTICS_QWEN4_EXP.md.

Reads only <fixture>/{config.json, model.safetensors, expected.safetensors, meta.json} (no transformers; the checkpoint
under the names save_pretrained writes: model.layers.N.*, per-expert mlp.experts.E.{gate,up,down}_proj, the n-gram
tables as ple.ple_embedding.ngram_embedding.shard_S.weight; a composite checkpoint's model.language_model. prefix and
fused experts are read too), runs one full forward over prompt + tokens[:-1] per prompt in fp32 and compares every row
with logits_<i>. It checks the document, not cbc: the GatedResidual streams (per-stream (1 + w) RMSNorm, low-rank
sigmoid input gate, mean of the gated normed streams, 2 sigmoid inject, the final mixer in place of a norm), the PLE
hashed n-gram embeddings (splitmix64 multipliers, primes per head, EOS-delimited n-grams, sign-sqrt gate per stream,
dilated depthwise conv), the gated DeltaNet as the plain token recurrence, the gated attention restricted to the QSA
selection (mean-pooled raw keys per complete block, (1 + w) RMSNorm, RoPE at the block's first position, per-head ReLU
scores, indexer_budget / indexer_compress_ratio blocks plus the raw tail, AND causal), the Qwen MoE with its gated
shared expert. The hash multipliers, primes and offsets are computed here from the config and compared with the
checkpoint's buffers.

Usage:
  python tools/oracle/reference_qwen4_exp.py [FIXTURE_DIR]            (default /tmp/q4fx/qwen4_exp_text; exit 1 on a miss)
  python tools/oracle/reference_qwen4_exp.py [FIXTURE_DIR] --effects  (also: max |dlogit| with each feature switched off)
  python tools/oracle/reference_qwen4_exp.py [FIXTURE_DIR] --fp64     (the same in float64)
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

DEFAULT_FIXTURE = Path("/tmp/q4fx/qwen4_exp_text")

# Feature switches for --effects (all at their default for the parity check). Each replaces one mechanism by the
# simpler thing a reimplementation might do instead.
ON = {
    "qsa_selection": True,  # off: dense causal gated attention (no indexer)
    "qsa_tail": True,  # off: no raw tail (a query with no selected key attends to itself only)
    "qsa_own_block_forced": False,  # on: a query that completes a block always keeps it
    "qsa_norm_after_mean": True,  # off: k_layernorm on every raw key, then the mean
    "qsa_k_layernorm": True,  # off: the block key is the plain mean of the raw keys
    "qsa_q_layernorm": True,  # off: no q_layernorm on the indexer queries
    "qsa_rope": True,  # off: no RoPE on indexer queries and block keys
    "qsa_block_rope_first": True,  # off: block key rotated at the block's last position instead of its first
    "qsa_relu": True,  # off: plain sum of the head scores (no ReLU)
    "attn_output_gate": True,  # off: sigmoid(gate) = 1
    "attn_qk_norm": True,  # off: no q_norm / k_norm
    "hc_input_gate": True,  # off: block input = plain mean of the normed streams
    "hc_inject": True,  # off: inject weights 1
    "hc_norm_per_stream": True,  # off: one RMSNorm over all hc_count * hidden values
    "hc_divide_by_count": True,  # off: no / hc_count inside silu(down .) and sigmoid(inject .)
    "hc_final_mixer": True,  # off: the final hidden state is the plain mean of the raw streams
    "hc_mix_normed_streams": True,  # off: the block input mixes the raw streams (gates still from the normed ones)
    "ple": True,  # off: no PLE at all
    "ple_conv": True,  # off: no dilated conv term
    "ple_dilation": True,  # off: the PLE conv taps consecutive tokens (dilation 1)
    "ple_sign_sqrt": True,  # off: the stream gate is used as is
    "ple_eos_segments": True,  # off: n-grams run across EOS (history still EOS-padded at the start)
    "ple_layer_index": True,  # off: every PLE layer hashes as PLE layer 0 (same multipliers and primes)
    "ple_eos_history": True,  # off: the context before the first token is token 0 instead of EOS
    "ple_primes_from_base": True,  # off: the head primes start after ngram_vocab_size_base (> base, not >= base)
    "gdn_output_gate": True,  # off: act(z) = 1 in the gated norm
    "gdn_output_gate_type": True,  # off: hidden_act (silu) for the gated norm, ignoring output_gate_type
    "moe_shared_gate": True,  # off: sigmoid(shared_expert_gate) = 1
    "moe_renormalise": True,  # off: top-k softmax probabilities not renormalised
    "eps_1e-6": False,  # on: every (1 + w) RMSNorm at eps 1e-6 instead of rms_norm_eps
}
FLAGS = dict(ON)

# ----------------------------------------------------------------------------------------------------------------
# Norms, RoPE
# ----------------------------------------------------------------------------------------------------------------


def eps_of(c):
    return 1e-6 if FLAGS["eps_1e-6"] else c["rms_norm_eps"]


def rms1p(x, w, eps, group=None):
    """(1 + w) RMSNorm over the last dim, or over each group of `group` values (the streams)."""
    shape = x.shape
    if group is not None:
        x = x.reshape(*shape[:-1], -1, group)
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y.reshape(shape) * (1.0 + w)


def rope_tables(c, positions):
    """cos / sin [T, rot] of the partial rotate-half RoPE (text-only mRoPE: the three axes are equal)."""
    rp = c["rope_parameters"]
    rot = int(c["head_dim"] * rp.get("partial_rotary_factor", 1.0))
    inv = 1.0 / (rp["rope_theta"] ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    f = positions.to(torch.float64)[:, None] * inv[None, :]
    f = torch.cat([f, f], -1)
    return f.cos().to(torch.get_default_dtype()), f.sin().to(torch.get_default_dtype())


def rope(x, cos, sin):
    """x [..., T, n, d] (or [T, d] with cos [T, rot]): rotate-half on the first rot dims."""
    rot = cos.shape[-1]
    while cos.dim() < x.dim():
        cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    xr, xp = x[..., :rot], x[..., rot:]
    half = rot // 2
    rh = torch.cat([-xr[..., half:], xr[..., :half]], -1)
    return torch.cat([xr * cos + rh * sin, xp], -1)


# ----------------------------------------------------------------------------------------------------------------
# GatedResidual streams
# ----------------------------------------------------------------------------------------------------------------


def gated_residual(c, w, site, X, inject=True):
    """X [T, N, H] -> (block input [T, H], inject weights [T, N])."""
    T, N, H = X.shape
    eps = eps_of(c)
    wn = w[site + "hc_norm.weight"]
    if FLAGS["hc_norm_per_stream"]:
        u = rms1p(X.reshape(T, N * H), wn, eps, group=H).view(T, N, H)
    else:
        u = rms1p(X.reshape(T, N * H), wn, eps).view(T, N, H)
    flat = u.reshape(T, N * H)
    div = N if FLAGS["hc_divide_by_count"] else 1
    a = F.silu((flat @ w[site + "input_mix_weight_down.weight"].T) / div)
    g = torch.sigmoid(a @ w[site + "input_mix_weight_up.weight"].T).view(T, N, H)
    x = ((g if FLAGS["hc_input_gate"] else 1.0) * (u if FLAGS["hc_mix_normed_streams"] else X)).mean(1)
    if not inject:
        return x, None
    inj = 2 * torch.sigmoid((flat @ w[site + "block_inject_weight.weight"].T) / div)
    if not FLAGS["hc_inject"]:
        inj = torch.ones_like(inj)
    return x, inj


# ----------------------------------------------------------------------------------------------------------------
# PLE: hashed n-gram embeddings
# ----------------------------------------------------------------------------------------------------------------

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def splitmix64(v):
    v = (v + GAMMA) & MASK64
    v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & MASK64
    return (v ^ (v >> 31)) & MASK64


def multipliers(c, ple_index):
    half = max(1, (((1 << 63) - 1) // max(c["vocab_size"], 1)) // 2)
    base = c["seed"] + 10007 * ple_index
    return [2 * (splitmix64((base + GAMMA * (j + 1)) & MASK64) % half) + 1 for j in range(c["ngram_size"])]


def is_prime(n):
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def head_primes(c, ple_index):
    """Head g of PLE layer l (g over the ngram-major heads) takes the (l * heads + g + 1)-th prime >= base."""
    heads = (c["ngram_size"] - 1) * c["heads_per_ngram"]
    want = (ple_index + 1) * heads
    primes, n = [], c["ngram_vocab_size_base"] + (0 if FLAGS["ple_primes_from_base"] else 1)
    while len(primes) < want:
        if is_prime(n):
            primes.append(n)
        n += 1
    return primes[ple_index * heads :]


def ngram_ids(c, ids, ple_index):
    """[T, heads] rows of the layer's table (offsets included) for the token ids of one sequence (uncached)."""
    n_max, hpn, eos = c["ngram_size"], c["heads_per_ngram"], c["eos_token_id"]
    eos = eos[0] if isinstance(eos, list) else eos
    idx = ple_index if FLAGS["ple_layer_index"] else 0
    mult, primes = multipliers(c, idx), head_primes(c, idx)
    offsets = [sum(primes[:h]) for h in range(len(primes))]
    ids = [int(t) for t in ids]
    out = []
    for t in range(len(ids)):
        ctx = [ids[t]]  # ctx[s] = the token s back, EOS once the walk back crosses an EOS or the start
        for s in range(1, n_max):
            src = t - s
            crossed = src < 0 or (FLAGS["ple_eos_segments"] and any(ids[j] == eos for j in range(max(src, 0), t)))
            if src < 0 and not FLAGS["ple_eos_history"]:
                crossed = FLAGS["ple_eos_segments"] and any(ids[j] == eos for j in range(0, t))
                ctx.append(eos if crossed else 0)
                continue
            ctx.append(eos if crossed else ids[src])
        row = []
        for n in range(2, n_max + 1):
            mixed = 0
            for s in range(n):
                mixed ^= ctx[s] * mult[s]
            for h in range(hpn):
                g = (n - 2) * hpn + h
                row.append(mixed % primes[g] + offsets[g])
        out.append(row)
    return torch.tensor(out, dtype=torch.long)


def ple(c, w, p, X, ids, ple_index):
    T, N, H = X.shape
    eps = eps_of(c)
    table = w[p + "ple_embedding.ngram_embedding.weight"]
    rows = ngram_ids(c, ids, ple_index)
    if not FLAGS["ple_primes_from_base"]:
        rows = rows % table.shape[0]  # the wrong primes may run past the table
    e = table[rows].reshape(T, -1)  # [T, ple_embed_dim], heads ngram-major
    key = rms1p(e @ w[p + "key_proj.weight"].T, w[p + "norm_key.weight"], eps, group=H).view(T, N, H)
    value = e @ w[p + "value_proj.weight"].T  # [T, H]
    query = rms1p(X.reshape(T, N * H), w[p + "norm_query.weight"], eps, group=H).view(T, N, H)
    gate = (key * query).sum(-1) / math.sqrt(H)  # [T, N]
    if FLAGS["ple_sign_sqrt"]:
        gate = gate.abs().clamp_min(1e-6).sqrt() * gate.sign()
    gv = torch.sigmoid(gate)[..., None] * value[:, None, :]  # [T, N, H]
    out = gv
    if FLAGS["ple_conv"]:
        gvn = rms1p(gv.reshape(T, N * H), w[p + "norm_conv.weight"], eps, group=H)  # [T, N H]
        cw = w[p + "conv1d.weight"][:, 0, :]  # [N H, K]
        K = cw.shape[-1]
        dil = c["ngram_size"] if FLAGS["ple_dilation"] else 1
        conv = torch.zeros_like(gvn)
        for j in range(K):  # tap j reads the token (K - 1 - j) * dilation back; tap K - 1 the current one
            back = (K - 1 - j) * dil
            if back < T:
                conv[back:] += cw[:, j] * gvn[: T - back]
        out = gv + F.silu(conv).view(T, N, H)
    return out


# ----------------------------------------------------------------------------------------------------------------
# Gated DeltaNet (token recurrence)
# ----------------------------------------------------------------------------------------------------------------


def gdn(c, w, a, x):
    T = x.shape[0]
    nk, nv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    dk, dv, K = c["linear_key_head_dim"], c["linear_value_head_dim"], c["linear_conv_kernel_dim"]
    kd, vd = nk * dk, nv * dv
    qkv = x @ w[a + "in_proj_qkv.weight"].T  # [T, 2 kd + vd]
    cw = w[a + "conv1d.weight"][:, 0, :]
    conv = torch.zeros_like(qkv)
    for j in range(K):
        back = K - 1 - j
        if back < T:
            conv[back:] += cw[:, j] * qkv[: T - back]
    qkv = F.silu(conv)
    q, k, v = qkv[:, :kd].view(T, nk, dk), qkv[:, kd : 2 * kd].view(T, nk, dk), qkv[:, 2 * kd :].view(T, nv, dv)
    z = (x @ w[a + "in_proj_z.weight"].T).view(T, nv, dv)
    beta = torch.sigmoid(x @ w[a + "in_proj_b.weight"].T)
    g = -w[a + "A_log"].exp() * F.softplus(x @ w[a + "in_proj_a.weight"].T + w[a + "dt_bias"])
    q = q * torch.rsqrt(q.pow(2).sum(-1, keepdim=True) + 1e-6) * dk**-0.5
    k = k * torch.rsqrt(k.pow(2).sum(-1, keepdim=True) + 1e-6)
    r = nv // nk
    q, k = q.repeat_interleave(r, 1), k.repeat_interleave(r, 1)  # value head h reads key head h // r
    S = torch.zeros(nv, dk, dv)
    o = torch.zeros(T, nv, dv)
    for t in range(T):
        S = S * g[t].exp()[:, None, None]
        kv = torch.einsum("hkv,hk->hv", S, k[t])
        S = S + k[t][:, :, None] * ((v[t] - kv) * beta[t][:, None])[:, None, :]
        o[t] = torch.einsum("hkv,hk->hv", S, q[t])
    gate_type = (c.get("output_gate_type") or c["hidden_act"]) if FLAGS["gdn_output_gate_type"] else c["hidden_act"]
    act = {"silu": F.silu, "sigmoid": torch.sigmoid}[gate_type]
    on = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + c["rms_norm_eps"]) * w[a + "norm.weight"]
    if FLAGS["gdn_output_gate"]:
        on = on * act(z)
    return on.reshape(T, vd) @ w[a + "out_proj.weight"].T


# ----------------------------------------------------------------------------------------------------------------
# Gated attention with the QSA selection
# ----------------------------------------------------------------------------------------------------------------


def qsa_selection(c, w, a, x, cos, sin):
    """[T, T] bool: the keys each query keeps (before the causal AND, which it implies)."""
    T = x.shape[0]
    Hi, di, cr = c["indexer_n_heads"], c["indexer_head_dim"], c["indexer_compress_ratio"]
    n_keep = c["indexer_budget"] // cr
    eps = eps_of(c)
    qk = x @ w[a + "indexer.index_qk_proj.weight"].T
    q = qk[:, : Hi * di].view(T, Hi, di)
    raw = qk[:, Hi * di :]  # [T, di]: the cached raw key
    if FLAGS["qsa_q_layernorm"]:
        q = rms1p(q, w[a + "indexer.q_layernorm.weight"], eps)
    if FLAGS["qsa_rope"]:
        q = rope(q, cos, sin)
    nb = T // cr
    blocks = raw[: nb * cr].view(nb, cr, di)
    kw = w[a + "indexer.k_layernorm.weight"]
    if not FLAGS["qsa_k_layernorm"]:
        bk = blocks.mean(1)
    elif FLAGS["qsa_norm_after_mean"]:
        bk = rms1p(blocks.mean(1), kw, eps)
    else:
        bk = rms1p(blocks, kw, eps).mean(1)
    if FLAGS["qsa_rope"]:
        at = torch.arange(nb) * cr + (0 if FLAGS["qsa_block_rope_first"] else cr - 1)
        bk = rope(bk, cos[at], sin[at])
    s = torch.einsum("thd,bd->tbh", q, bk)
    score = (F.relu(s) if FLAGS["qsa_relu"] else s).sum(-1) / math.sqrt(di)  # [T, nb]
    sel = torch.zeros(T, T, dtype=torch.bool)
    for t in range(T):
        n = (t + 1) // cr  # complete blocks visible to t
        if n:
            chosen = score[t, :n].topk(min(n_keep, n)).indices.tolist()
            if FLAGS["qsa_own_block_forced"] and (t + 1) % cr == 0 and n - 1 not in chosen:
                chosen = chosen[:-1] + [n - 1]
            for b in chosen:
                sel[t, b * cr : (b + 1) * cr] = True
        if FLAGS["qsa_tail"]:
            sel[t, n * cr : t + 1] = True
        elif not sel[t].any():
            sel[t, t] = True
    return sel


def attention(c, w, a, x, cos, sin):
    T = x.shape[0]
    Hq, Hk, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    eps = eps_of(c)
    qg = (x @ w[a + "q_proj.weight"].T).view(T, Hq, 2 * d)
    q, gate = qg[..., :d], qg[..., d:].reshape(T, Hq * d)
    k = (x @ w[a + "k_proj.weight"].T).view(T, Hk, d)
    v = (x @ w[a + "v_proj.weight"].T).view(T, Hk, d)
    if FLAGS["attn_qk_norm"]:
        q, k = rms1p(q, w[a + "q_norm.weight"], eps), rms1p(k, w[a + "k_norm.weight"], eps)
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    allowed = causal & qsa_selection(c, w, a, x, cos, sin) if FLAGS["qsa_selection"] else causal
    r = Hq // Hk
    k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
    s = torch.einsum("thd,shd->hts", q, k) * d**-0.5
    p = s.masked_fill(~allowed, -math.inf).softmax(-1)
    o = torch.einsum("hts,shd->thd", p, v).reshape(T, Hq * d)
    if FLAGS["attn_output_gate"]:
        o = o * torch.sigmoid(gate)
    return o @ w[a + "o_proj.weight"].T


# ----------------------------------------------------------------------------------------------------------------
# MoE
# ----------------------------------------------------------------------------------------------------------------


def swiglu(x, wg, wu, wd):
    return (F.silu(x @ wg.T) * (x @ wu.T)) @ wd.T


def moe(c, w, m, x):
    E, kx = c["num_experts"], c["num_experts_per_tok"]
    p = (x @ w[m + "gate.weight"].T).softmax(-1)
    top = p.topk(kx, -1)
    wt, idx = top.values, top.indices
    if c.get("norm_topk_prob", True) and FLAGS["moe_renormalise"]:
        wt = wt / wt.sum(-1, keepdim=True)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(kx):
            e = int(idx[t, j])
            gu, dn = w[f"{m}experts.gate_up_proj"][e], w[f"{m}experts.down_proj"][e]
            I = dn.shape[-1]
            out[t] += wt[t, j] * swiglu(x[t : t + 1], gu[:I], gu[I:], dn)[0]
    sh = m + "shared_expert."
    shared = swiglu(x, w[sh + "gate_proj.weight"], w[sh + "up_proj.weight"], w[sh + "down_proj.weight"])
    if FLAGS["moe_shared_gate"]:
        shared = shared * torch.sigmoid(x @ w[m + "shared_expert_gate.weight"].T)
    return out + shared


# ----------------------------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------------------------


def forward(c, w, ids):
    T, N = ids.shape[0], c["hc_count"]
    X = w["model.embed_tokens.weight"][ids][:, None, :].repeat(1, N, 1)  # [T, N, H]: the streams start equal
    cos, sin = rope_tables(c, torch.arange(T))
    ple_ids = sorted(set(c.get("ple_layer_ids") or []))
    for i, kind in enumerate(c["layer_types"]):
        L = f"model.layers.{i}."
        if FLAGS["ple"] and i + 1 in ple_ids:
            X = X + ple(c, w, L + "ple.", X, ids, ple_ids.index(i + 1))
        x, inj = gated_residual(c, w, L + "attn_hyper_connection.", X)
        if kind == "linear_attention":
            y = gdn(c, w, L + "linear_attn.", x)
        else:
            y = attention(c, w, L + "self_attn.", x, cos, sin)
        X = X + inj[..., None] * y[:, None, :]
        x, inj = gated_residual(c, w, L + "mlp_hyper_connection.", X)
        X = X + inj[..., None] * moe(c, w, L + "mlp.", x)[:, None, :]
    if FLAGS["hc_final_mixer"]:
        h, _ = gated_residual(c, w, "model.hyper_connection_mixer.", X, inject=False)
    else:
        h = X.mean(1)
    return h @ w["lm_head.weight"].T


def load(fixture: Path, dtype):
    """config (the text config) and the tensors under the runtime names this file uses."""
    cfg = json.loads((fixture / "config.json").read_text())
    c = cfg.get("text_config", cfg)
    raw = load_file(str(fixture / "model.safetensors"))
    w, shards, buffers = {}, {}, {}
    for k, v in raw.items():
        if k.startswith("model.visual.") or k.startswith("mtp."):
            continue
        k = k.replace("model.language_model.", "model.")
        m = re.match(r"(.*ngram_embedding)\.shard_(\d+)\.weight$", k)
        if m:
            shards.setdefault(m.group(1) + ".weight", {})[int(m.group(2))] = v
            continue
        if v.dtype == torch.int64:
            buffers[k] = v
            continue
        w[k] = v.to(dtype)
    for k, parts in shards.items():  # shard_0, shard_1, ... in numeric order
        w[k] = torch.cat([parts[i] for i in sorted(parts)]).to(dtype)
    for k in [k for k in w if re.search(r"experts\.\d+\.gate_proj\.weight$", k)]:  # per-expert -> fused
        pre = k.rsplit("experts.", 1)[0] + "experts."
        if pre + "gate_up_proj" in w:
            continue
        n = 1 + max(int(m.group(1)) for m in (re.match(re.escape(pre) + r"(\d+)\.", q) for q in w) if m)
        w[pre + "gate_up_proj"] = torch.stack(
            [torch.cat([w[f"{pre}{e}.gate_proj.weight"], w[f"{pre}{e}.up_proj.weight"]]) for e in range(n)]
        )
        w[pre + "down_proj"] = torch.stack([w[f"{pre}{e}.down_proj.weight"] for e in range(n)])
    # the hash constants are derived from the config; the checkpoint's buffers must agree
    ple_ids = sorted(set(c.get("ple_layer_ids") or []))
    for li in ple_ids:
        p = f"model.layers.{li - 1}.ple.ple_embedding."
        idx = ple_ids.index(li)
        primes = head_primes(c, idx)
        expect = {
            "layer_multipliers": multipliers(c, idx),
            "ngram_heads_vocab_sizes": primes,
            "ngram_heads_offsets": [sum(primes[:h]) for h in range(len(primes))],
        }
        for name, val in expect.items():
            if p + name in buffers:
                assert buffers[p + name].tolist() == val, (p + name, buffers[p + name].tolist(), val)
        rows = w[p + "ngram_embedding.weight"].shape[0]
        div = c["make_ngram_vocab_size_divisible_by"]
        assert rows == -(-sum(primes) // div) * div, (rows, sum(primes))
    return c, w


def main() -> int:
    torch.set_num_threads(1)
    dtype = torch.float64 if "--fp64" in sys.argv[1:] else torch.float32
    torch.set_default_dtype(dtype)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    fixture = Path(args[0]) if args else DEFAULT_FIXTURE
    c, w = load(fixture, dtype)
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
