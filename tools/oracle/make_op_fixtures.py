#!/usr/bin/env python3
"""Per-op oracle tables: what transformers' own modules compute for one op of the cbc dialect.

An op added for a family that has no fixture yet is checked against these before any family uses
it. Writes test/unit/oracle/<op>.json; the C++ tests read them (test/unit/op_oracle_test.cpp).

  python tools/oracle/make_op_fixtures.py            # write
  python tools/oracle/make_op_fixtures.py --check    # regenerate in memory and compare; exit 1 on a difference
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers import DeepseekV4Config
from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4HyperConnection, DeepseekV4HyperHead
from transformers.models.xglm.modeling_xglm import XGLMSinusoidalPositionalEmbedding

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "test" / "unit" / "oracle"


def sinusoidal_case(width, offset, padding_row, prompt_len, steps):
    """Rows of cbc.math.sinusoidal_position for the positions a request with a prompt of
    `prompt_len` tokens samples at over `steps` steps: prompt_len - 1, prompt_len, ...

    XGLM's module adds its offset (2) to the position ids and zeroes the padding row of its
    table; the table is built with `offset` rows ahead as the module itself does."""
    positions = list(range(prompt_len - 1, prompt_len - 1 + steps))
    table = XGLMSinusoidalPositionalEmbedding.get_embedding(max(positions) + offset + 1, width, padding_row)
    rows = table[torch.tensor(positions) + offset]
    return {
        "width": width,
        "offset": offset,
        "padding_row": padding_row,
        "prompt_len": prompt_len,
        "positions": positions,
        # float32 values, printed exactly (repr of the float32 as a double).
        "rows": [[float(v) for v in r] for r in rows.to(torch.float32)],
    }


def sinusoidal_position():
    return {
        "op": "cbc.math.sinusoidal_position",
        "source": "XGLMSinusoidalPositionalEmbedding.get_embedding (base 10000)",
        "cases": [
            # XGLM's own form: offset 2, padding row 1 (pad_token_id), which no position reaches.
            sinusoidal_case(64, 2, 1, 1, 6),
            # An odd width (a zero last column) and a padding row that position 3 reaches.
            sinusoidal_case(9, 0, 3, 2, 4),
            # Positions in the hundreds: the arguments of sin and cos grow large.
            sinusoidal_case(64, 2, 1, 700, 4),
        ],
    }


def _inputs(gen, shape, std):
    """Normal draws rounded to thousandths: the JSON holds them exactly as short decimals, and a
    reader parsing one as a double and narrowing it gets the float32 torch holds."""
    draws = torch.randn(shape, generator=gen, dtype=torch.float64) * std
    return (torch.round(draws * 1000) / 1000).tolist()


def _f32(values):
    return torch.tensor(values, dtype=torch.float32)


def _out(t):
    """float32 values, each printed as the shortest decimal that reads back as the same float32."""
    return [float(str(v)) for v in np.asarray(t.detach().to(torch.float32)).reshape(-1)]


def hyper_connection_case(x, y, inputs, hc_eps):
    """What the modules compute for the streams `x` [1, T, N, H] and the block output `y` [1, T, H]
    with the parameters `inputs`, under a config whose hc_eps is `hc_eps`."""
    N, T = x.shape[2], x.shape[1]
    config = DeepseekV4Config(hidden_size=x.shape[3], hc_mult=N, rms_norm_eps=1e-6, hc_eps=hc_eps,
                              hc_sinkhorn_iters=20)
    hc = DeepseekV4HyperConnection(config)
    head = DeepseekV4HyperHead(config)
    with torch.no_grad():
        hc.fn.copy_(_f32(inputs["fn"]))
        hc.base.copy_(_f32(inputs["base"]))
        hc.scale.copy_(_f32(inputs["scale"]))
        head.hc_fn.copy_(_f32(inputs["head_fn"]))
        head.hc_base.copy_(_f32(inputs["head_base"]))
        head.hc_scale.copy_(_f32(inputs["head_scale"]))
        post, comb, collapsed = hc(x)
        # DeepseekV4DecoderLayer.forward: post (x) block + comb^T . streams.
        dtype = x.dtype
        layer = post.to(dtype).unsqueeze(-1) * y.unsqueeze(-2) + torch.matmul(comb.to(dtype).transpose(-1, -2), x)
        # The module consumes pre; this is its expression, checked against `collapsed` below.
        mixes = F.linear(hc.input_norm(x.view(1, T, -1).float()), hc.fn.float())
        pre = torch.sigmoid(mixes[..., :N] * hc.scale[0] + hc.base[:N]) + hc.hc_eps
        assert torch.allclose((pre.unsqueeze(-1) * x).sum(dim=2), collapsed, rtol=1e-6, atol=1e-6)
        out = head(x)
        softmax = torch.softmax(mixes[..., 2 * N :].view(1, T, N, N) * hc.scale[2] + hc.base[2 * N :].view(N, N), -1)
    if hc_eps <= 1e-6:
        # Sinkhorn ends on the columns: they sum to 1, the rows (after 20 rounds from coefficients
        # this far from uniform) to within a few thousandths; the softmax alone left columns far
        # from 1.
        rows, cols = (comb.sum(-1) - 1).abs().max().item(), (comb.sum(-2) - 1).abs().max().item()
        assert cols < 1e-5 and rows < 1e-2 and (softmax.sum(-2) - 1).abs().max().item() > 0.5, (rows, cols)
    assert (comb.max() - comb.min()).item() > 0.3, "comb is near uniform"
    return {
        "hc_eps": hc_eps,
        # Flattened row-major: pre [T, N], post [T, N], comb [T, N, N], collapsed [T, H],
        # layer [T, N * H], head [T, H].
        "pre": _out(pre),
        "post": _out(post),
        "comb": _out(comb),
        "collapsed": _out(collapsed),
        "layer": _out(layer),
        "head": _out(out),
    }


def hyper_connection():
    """DeepSeek-V4's hyper-connections (cbc.stream.*): one mHC (DeepseekV4HyperConnection: pre,
    post and the Sinkhorn-normalised comb; kind manifold), the decoder layer's use of its post and
    comb around a block, and the final head (DeepseekV4HyperHead: pre only; kind collapse).

    The modules' own parameters are drawn far from their trained initialisation so that every
    coefficient is far from uniform. All rows are [T, ...] with the streams side by side as the
    dialect lays them out: streams [T, N * H] (stream n at columns n * H), comb [T, N * N] with
    comb[j, k] at column j * N + k (the module's [.., N, N] matrix, row-major).

    Two cases on the same inputs: hc_eps 1e-6 (the checkpoints'), and 1e-2, where every place
    the epsilon enters (pre, the softmax, each Sinkhorn division, the head's pre) moves the
    outputs by far more than the C++ test's tolerance."""
    N, H, T = 4, 16, 5
    gen = torch.Generator().manual_seed(4)
    # Streams of unequal magnitudes (the RMS norm over all N * H columns matters).
    streams = [[[round(x * (0.5 + 0.5 * n), 4) for x in row] for n, row in enumerate(tok)]
               for tok in _inputs(gen, (T, N, H), 1.0)]
    block = _inputs(gen, (T, H), 1.0)
    inputs = {
        "fn": _inputs(gen, ((2 + N) * N, N * H), 0.3),  # [(2 + N) * N, N * H]
        "base": _inputs(gen, ((2 + N) * N,), 1.0),
        "scale": [0.7, 0.9, 1.1],
        "head_fn": _inputs(gen, (N, N * H), 0.3),  # [N, N * H]
        "head_base": _inputs(gen, (N,), 1.0),
        "head_scale": [0.8],
    }
    x = _f32(streams).unsqueeze(0)  # [1, T, N, H]
    y = _f32(block).unsqueeze(0)  # [1, T, H]
    return {
        "op": "cbc.stream.hc_weights, cbc.stream.collapse, cbc.stream.expand",
        "source": "DeepseekV4HyperConnection, DeepseekV4DecoderLayer (post * block + comb^T streams), "
        "DeepseekV4HyperHead",
        "streams": N,
        "hidden": H,
        "tokens": T,
        "rms_norm_eps": 1e-6,
        "hc_sinkhorn_iters": 20,
        "magnitude": 2.0,
        # Inputs (float32 of these decimals): x [T, N * H], y [T, H].
        "x": [[v for row in tok for v in row] for tok in streams],
        "y": block,
        **inputs,
        "cases": [hyper_connection_case(x, y, inputs, eps) for eps in (1e-6, 1e-2)],
    }


TABLES = {"sinusoidal_position": sinusoidal_position, "hyper_connection": hyper_connection}


def render(table):
    table = dict(table, transformers=transformers.__version__, torch=torch.__version__)
    return json.dumps(table, separators=(",", ":")) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float32)
    failed = False
    for name, make in TABLES.items():
        path = OUT / f"{name}.json"
        text = render(make())
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"{path.relative_to(ROOT)} differs from what the oracle makes", file=sys.stderr)
                failed = True
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)} ({len(text)} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
