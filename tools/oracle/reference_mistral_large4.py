#!/usr/bin/env python3
"""Independent reimplementation of the mistral_large4 fixture (the text decoder of
MistralLarge4ForConditionalGeneration, served text-only; text config mistral_large4_text), written from
SEMANTICS_MISTRAL_LARGE4.md.

Reads only <fixture>/{config.json, model.safetensors, expected.safetensors, meta.json} (no transformers; the checkpoint
under the Mistral-native names save_pretrained writes: tok_embeddings, layers.N.attention.{wq, wkv_a_with_mqa,
kv_a_norm, wkv_b, wo, ssmax_scaling.{s,b}, indexer.*}, layers.N.{attention_norm, ffn_norm},
layers.N.feed_forward.w1/w2/w3, layers.N.{gate, experts.E.w1/w2/w3, shared_experts.w1/w2/w3}, norm, output,
lerope.alpha), runs one full forward over
prompt + tokens[:-1] per prompt in fp32 and compares every row with logits_<i>. It checks the document, not cbc: MLA
without q-LoRA, NoPE layers with a qk_nope + qk_rope wide latent key, LeRoPE (yarn inv_freq x exp(alpha), interleaved
pairs), per-head log-position query scaling in the attentions and the indexers, the DSA indexer with LayerNorm'd
queries, shared indexer layers, latent-KV sharing by kv_source_layers, the grouped softmax router with always
renormalised weights, plain SwiGLU experts and the final logit softcap.

Usage:
  python tools/oracle/reference_mistral_large4.py [FIXTURE_DIR]            (default /tmp/ml4fx/mistral_large4;
                                                                           exit 1 on a miss)
  python tools/oracle/reference_mistral_large4.py [FIXTURE_DIR] --effects  (also: max |dlogit| per feature switched off)
  python tools/oracle/reference_mistral_large4.py [FIXTURE_DIR] --fp64     (the same in float64)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

DEFAULT_FIXTURE = Path("/tmp/ml4fx/mistral_large4")

# Feature switches for --effects (all at their default for the parity check). Each replaces one mechanism by the
# simpler thing a reimplementation might do instead.
ON = {
    "lerope_alpha": True,  # off: exp(alpha) = 1 (plain yarn frequencies)
    "yarn": True,  # off: default RoPE frequencies theta^(-2i/d) (still x exp(alpha))
    "explicit_attention_factor": True,  # off: cos/sin x yarn's derived mscale 0.1 ln(factor) + 1 instead of 1.0
    "attention_query_scaling": True,  # off: no log-position query scaling in the MLA
    "indexer_query_scaling": True,  # off: no log-position query scaling in the indexers
    "indexer_query_norm": True,  # off: indexer queries from x itself instead of LayerNorm(x)
    "indexer_rope": True,  # off: no RoPE in the indexers of the RoPE layers
    "indexer_head_weights": True,  # off: weights_proj ignored (every head weight 1 / sqrt(H_i))
    "mla_interleaved_pairs": True,  # off: rotate-half pairs (i, i + d/2) in the MLA
    "indexer_interleaved_pairs": True,  # off: rotate-half pairs (i, i + d/2) in the indexers
    "selection": True,  # off: every query attends to every causal key (dense MLA)
    "shared_reuse": True,  # off: shared indexer layers attend densely instead of reusing the previous selection
    "nope_layers": True,  # off: NoPE layers rotate the last qk_rope dims of q and k like a RoPE layer
    "nope_indexer_unroped": True,  # off: the indexers of NoPE layers rotate their first qk_rope dims too
    "kv_sharing_rotated_once": True,  # off: a reusing RoPE layer rotates the source's (already rotated) k_rope again
    "kv_a_norm_eps": True,  # off: kv_a_layernorm with DeepSeek-V3's fixed 1e-6 instead of rms_norm_eps
    "softcap": True,  # off: raw lm_head logits
    "group_mask": True,  # off: the router ignores n_group / topk_group
    "renormalise": True,  # off: routing weights are the chosen softmax probabilities (not renormalised)
    "routed_scaling": True,  # off: routed_scaling_factor 1
}
FLAGS = dict(ON)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) * torch.rsqrt(var + eps) * w + b


def swiglu(x, w1, w3, w2):  # w1 gate, w3 up, w2 down (Mistral names)
    return (F.silu(x @ w1.T) * (x @ w3.T)) @ w2.T


# ----------------------------------------------------------------------------------------------------------------
# Config defaults (section 1 of the document): a saved config carries every derived list, a hand-written one may not
# ----------------------------------------------------------------------------------------------------------------


def text_config(c: dict) -> dict:
    t = dict(c.get("text_config") or c)
    L = t["num_hidden_layers"]
    t.setdefault("rope_parameters", None)
    if t["rope_parameters"] is None:
        t["rope_parameters"] = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2048.0,
                                "original_max_position_embeddings": 512, "beta_fast": 32.0, "beta_slow": 1.0,
                                "attention_factor": 1.0}
    if t.get("no_rope_layers") is None:
        iv = t.get("no_rope_layer_interval", 4)
        t["no_rope_layers"] = [int((i + 1) % iv != 0) for i in range(L)]
    if t.get("kv_source_layers") is None:
        t["kv_source_layers"] = list(range(L))
    if t.get("indexer_types") is None:
        pat = t.get("index_topk_pattern")
        if pat is not None:
            t["indexer_types"] = [{"F": "full", "S": "shared"}[ch] for ch in pat] if isinstance(pat, str) else list(pat)
        else:
            freq, off = max(t.get("index_topk_freq", 1), 1), t.get("index_skip_topk_offset", 2)
            t["indexer_types"] = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(L)]
    if t.get("mlp_layer_types") is None:
        n = min(t.get("first_k_dense_replace", 1), L)
        t["mlp_layer_types"] = ["dense"] * n + ["sparse"] * (L - n)
    t.setdefault("final_logit_softcapping", 30.0)
    t.setdefault("routed_scaling_factor", 1.0)
    t.setdefault("n_group", 1)
    t.setdefault("topk_group", 1)
    t.setdefault("n_shared_experts", 1)
    return t


# ----------------------------------------------------------------------------------------------------------------
# LeRoPE: yarn inverse frequencies over qk_rope_head_dim, times exp(alpha)
# ----------------------------------------------------------------------------------------------------------------


def inv_freq(t: dict, alpha: torch.Tensor) -> tuple[torch.Tensor, float]:
    rp, d = t["rope_parameters"], t["qk_rope_head_dim"]
    base = rp["rope_theta"]
    pos_freq = base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    f = 1.0 / pos_freq
    attn_factor = 1.0
    if rp.get("rope_type", "default") == "yarn" and FLAGS["yarn"]:
        factor, orig = rp["factor"], rp["original_max_position_embeddings"]
        beta_fast, beta_slow = rp.get("beta_fast") or 32.0, rp.get("beta_slow") or 1.0

        def mscale(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        attn_factor = rp.get("attention_factor")
        if attn_factor is None or not FLAGS["explicit_attention_factor"]:
            ms, msa = rp.get("mscale"), rp.get("mscale_all_dim")
            attn_factor = mscale(factor, ms) / mscale(factor, msa) if ms and msa else mscale(factor)

        def corr(n):
            return d * math.log(orig / (n * 2 * math.pi)) / (2 * math.log(base))

        lo, hi = corr(beta_fast), corr(beta_slow)
        if rp.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, d - 1)
        if lo == hi:
            hi += 0.001
        ramp = ((torch.arange(d // 2, dtype=torch.float64) - lo) / (hi - lo)).clamp(0, 1)
        extra = 1 - ramp
        f = (1.0 / (factor * pos_freq)) * (1 - extra) + (1.0 / pos_freq) * extra
    f = f.to(torch.float32)  # transformers keeps inv_freq in fp32
    if FLAGS["lerope_alpha"]:
        f = f * alpha.float().exp()
    return f, float(attn_factor)


def rotate(x, cos, sin, interleaved):
    """Rotate the pairs of x [..., S, (heads,) d] with cos/sin [S, d/2] broadcast on the heads axis (if any)."""
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)  # output order is irrelevant as long as q, k agree


# ----------------------------------------------------------------------------------------------------------------
# The decoder
# ----------------------------------------------------------------------------------------------------------------


def query_scale(w, prefix, pos):
    """[S, heads]: s_h ln(p + 1) + b_h."""
    scale, bias = w[prefix + "ssmax_scaling.s"], w[prefix + "ssmax_scaling.b"]
    return scale[None, :] * torch.log(pos + 1.0)[:, None] + bias[None, :]


def indexer(t, w, i, x, pos, cos, sin, use_rope):
    p = f"layers.{i}.attention.indexer."
    Hi, di, dr = t["index_n_heads"], t["index_head_dim"], t["qk_rope_head_dim"]
    S = x.shape[0]
    xq = x
    if FLAGS["indexer_query_norm"]:
        xq = layer_norm(x, w[p + "q_input_norm.weight"], w[p + "q_input_norm.bias"], 1e-6)
    q = (xq @ w[p + "wq_b.weight"].T).view(S, Hi, di)
    if FLAGS["indexer_query_scaling"]:
        q = q * query_scale(w, p, pos)[:, :, None]
    k = layer_norm(x @ w[p + "wk.weight"].T, w[p + "k_norm.weight"], w[p + "k_norm.bias"], 1e-6)  # [S, di]
    if (use_rope and FLAGS["indexer_rope"]) or (not use_rope and not FLAGS["nope_indexer_unroped"]):
        il = FLAGS["indexer_interleaved_pairs"]
        q = torch.cat([rotate(q[..., :dr], cos[:, None], sin[:, None], il), q[..., dr:]], -1)
        k = torch.cat([rotate(k[..., :dr], cos, sin, il), k[..., dr:]], -1)
    s = torch.relu(torch.einsum("thd,sd->ths", q, k) * di**-0.5)
    wt = x @ w[p + "weights_proj.weight"].T * Hi**-0.5
    if not FLAGS["indexer_head_weights"]:
        wt = x.new_full((S, Hi), Hi**-0.5)
    score = torch.einsum("th,ths->ts", wt, s)
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    score = score.masked_fill(~causal, -math.inf)
    sel = torch.zeros(S, S, dtype=torch.bool)
    k_top = t["index_topk"]
    for q_i in range(S):
        if q_i + 1 <= k_top:
            sel[q_i, : q_i + 1] = True
        else:
            sel[q_i, score[q_i, : q_i + 1].topk(k_top).indices] = True
    return sel


def attention(t, w, i, x, pos, cos, sin, sources, prev_sel):
    p = f"layers.{i}.attention."
    H, dn, dr = t["num_attention_heads"], t["qk_nope_head_dim"], t["qk_rope_head_dim"]
    dv, r = t["v_head_dim"], t["kv_lora_rank"]
    S = x.shape[0]
    use_rope = bool(t["no_rope_layers"][i])
    dqk = dn + dr
    dn_l, dr_l = (dn, dr) if use_rope else (dqk, 0)  # a NoPE layer's whole query / latent key is "nope"
    src = t["kv_source_layers"][i]
    il = FLAGS["mla_interleaved_pairs"]
    q = (x @ w[p + "wq.weight"].T).view(S, H, dqk)
    if src == i:
        ckv = x @ w[p + "wkv_a_with_mqa.weight"].T
        eps = t["rms_norm_eps"] if FLAGS["kv_a_norm_eps"] else 1e-6
        latent = rms(ckv[:, :r], w[p + "kv_a_norm.weight"], eps)
        k_rot = ckv[:, r:]  # [S, dr_l]
        if use_rope:
            k_rot = rotate(k_rot, cos, sin, il)
        sources[i] = (latent, k_rot)
    else:
        latent, k_rot = sources[src]  # the source layer's normed latent and already rotated k_rope
        if use_rope and not FLAGS["kv_sharing_rotated_once"]:
            k_rot = rotate(k_rot, cos, sin, il)
    if use_rope:
        q = torch.cat([q[..., :dn_l], rotate(q[..., dn_l:], cos[:, None], sin[:, None], il)], -1)
    if FLAGS["attention_query_scaling"]:
        q = q * query_scale(w, p, pos)[:, :, None]
    kv = (latent @ w[p + "wkv_b.weight"].T).view(S, H, dn_l + dv)
    k = torch.cat([kv[..., :dn_l], k_rot[:, None, :].expand(S, H, dr_l)], -1)
    v = kv[..., dn_l:]
    if not use_rope and not FLAGS["nope_layers"]:
        q = torch.cat([q[..., :dn], rotate(q[..., dn:], cos[:, None], sin[:, None], il)], -1)
        k = torch.cat([k[..., :dn], rotate(k[..., dn:], cos[:, None], sin[:, None], il)], -1)
    if t["indexer_types"][i] == "full":
        sel = indexer(t, w, i, x, pos, cos, sin, use_rope)
    else:
        sel = prev_sel
        if not FLAGS["shared_reuse"]:
            sel = torch.ones(S, S, dtype=torch.bool).tril()
    if not FLAGS["selection"]:
        sel = torch.ones(S, S, dtype=torch.bool).tril()
    allowed = sel & torch.ones(S, S, dtype=torch.bool).tril()
    scores = torch.einsum("thd,shd->hts", q, k) * dqk**-0.5  # no mscale_all_dim in the rope parameters
    scores = scores.masked_fill(~allowed[None], -math.inf)
    o = torch.einsum("hts,shd->thd", scores.softmax(-1), v).reshape(S, H * dv)
    return o @ w[p + "wo.weight"].T, sel


def moe(t, w, i, x):
    p = f"layers.{i}."
    E, k, G, Gk = t["n_routed_experts"], t["num_experts_per_tok"], t["n_group"], t["topk_group"]
    logits = x.float() @ w[p + "gate.weight"].float().T
    s = logits.softmax(-1).to(x.dtype)
    if FLAGS["group_mask"] and G > 1:
        gs = s.view(-1, G, E // G).topk(2, dim=-1).values.sum(-1)
        keep = torch.zeros_like(gs, dtype=torch.bool).scatter_(1, gs.topk(Gk, dim=-1).indices, True)
        c = s.masked_fill(~keep.repeat_interleave(E // G, dim=1), 0.0)
    else:
        c = s
    idx = c.topk(k, dim=-1).indices
    wts = s.gather(1, idx)
    if FLAGS["renormalise"]:
        wts = wts / (wts.sum(-1, keepdim=True) + 1e-20)
    if FLAGS["routed_scaling"]:
        wts = wts * t["routed_scaling_factor"]
    out = torch.zeros_like(x)
    for e in range(E):
        tok, slot = (idx == e).nonzero(as_tuple=True)
        if len(tok):
            q = f"{p}experts.{e}."
            y = swiglu(x[tok], w[q + "w1.weight"], w[q + "w3.weight"], w[q + "w2.weight"])
            out.index_add_(0, tok, y * wts[tok, slot, None])
    q = f"{p}shared_experts."
    return out + swiglu(x, w[q + "w1.weight"], w[q + "w3.weight"], w[q + "w2.weight"])


def forward(t, w, ids):
    S = ids.shape[0]
    pos = torch.arange(S, dtype=torch.get_default_dtype())
    f, attn_factor = inv_freq(t, w["lerope.alpha"])
    ang = torch.arange(S, dtype=torch.float32)[:, None] * f[None, :]  # fp32 like transformers' rotary module
    cos, sin = (ang.cos() * attn_factor).to(pos.dtype), (ang.sin() * attn_factor).to(pos.dtype)
    h = w["tok_embeddings.weight"][ids]
    sources, sel = {}, None
    for i in range(t["num_hidden_layers"]):
        x = rms(h, w[f"layers.{i}.attention_norm.weight"], t["rms_norm_eps"])
        a, sel = attention(t, w, i, x, pos, cos, sin, sources, sel)
        h = h + a
        x = rms(h, w[f"layers.{i}.ffn_norm.weight"], t["rms_norm_eps"])
        if t["mlp_layer_types"][i] == "sparse":
            h = h + moe(t, w, i, x)
        else:
            p = f"layers.{i}.feed_forward."
            h = h + swiglu(x, w[p + "w1.weight"], w[p + "w3.weight"], w[p + "w2.weight"])
    logits = rms(h, w["norm.weight"], t["rms_norm_eps"]) @ w["output.weight"].T
    cap = t["final_logit_softcapping"]
    if FLAGS["softcap"] and cap:
        logits = cap * torch.tanh(logits / cap)
    return logits


def main() -> int:
    torch.set_num_threads(1)
    dtype = torch.float64 if "--fp64" in sys.argv[1:] else torch.float32
    torch.set_default_dtype(dtype)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    fixture = Path(args[0]) if args else DEFAULT_FIXTURE
    t = text_config(json.loads((fixture / "config.json").read_text()))
    skip = ("vision_encoder.", "vision_language_adapter.", "patch_merger.", "pre_mm_projector_norm.")
    w = {k: v.to(dtype) for k, v in load_file(str(fixture / "model.safetensors")).items() if not k.startswith(skip)}
    w.setdefault("lerope.alpha", torch.zeros(t["qk_rope_head_dim"] // 2))
    exp = load_file(str(fixture / "expected.safetensors"))
    meta = json.loads((fixture / "meta.json").read_text())
    atol = meta["atol"]
    n_prompts = len(meta["prompt_lengths"])

    def rows():
        out = []
        for i in range(n_prompts):
            prompt, tokens = exp[f"prompt_{i}"].tolist(), exp[f"tokens_{i}"].tolist()
            with torch.no_grad():
                out.append(forward(t, w, torch.tensor(prompt + tokens[:-1]))[len(prompt) - 1 :])
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
            print(f"  {'with' if not default else 'without'} {name:26s} max |dlogit| {d:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
