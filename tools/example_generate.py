#!/usr/bin/env python3
"""Text in, text out with `cbc run`: encodes prompts with a model's tokenizer.json, serves them
with `cbc run` (greedy unless --temperature says otherwise) and prints each prompt with its
continuation. `cbc run` itself reads and writes token ids; only this script knows about text.

    python tools/example_generate.py --cbc build/bin/cbc --artefact build/kjv-llama.fb \
        --model examples/kjv-llama --prompts examples/kjv-llama/prompts.txt
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cbc", required=True, help="the cbc binary")
    ap.add_argument("--artefact", required=True, help="what `cbc compile` wrote")
    ap.add_argument("--model", required=True, help="the model folder: weights and tokenizer.json")
    ap.add_argument("--prompts", required=True, help="a text file, one prompt a line")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(args.model) / "tokenizer.json"))
    prompts = [l.strip() for l in Path(args.prompts).read_text().splitlines() if l.strip()]
    if not prompts:
        sys.exit(f"example_generate: {args.prompts} holds no prompts")
    # encode() puts <|bos|> first (the tokenizer's post-processor), as in training.
    lines = "".join(json.dumps({"prompt": tok.encode(p).ids}) + "\n" for p in prompts)
    run = subprocess.run([args.cbc, "run", args.artefact, "--weights", args.model, "--backend", args.backend,
                          "--max-new-tokens", str(args.max_new_tokens), "--temperature", str(args.temperature),
                          "--quiet"], input=lines, capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stderr)
        return run.returncode
    results = sorted((json.loads(l) for l in run.stdout.splitlines() if l.strip()), key=lambda r: r["index"])
    for prompt, r in zip(prompts, results):
        if r["finish_reason"] == "rejected":
            print(f"{prompt!r}: rejected: {r.get('error')}")
            continue
        text = tok.decode(r["tokens"], skip_special_tokens=True)
        print(f"> {prompt}\n{prompt}{text}\n  ({len(r['tokens'])} tokens, {r['finish_reason']})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
