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

import torch
import transformers
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


TABLES = {"sinusoidal_position": sinusoidal_position}


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
