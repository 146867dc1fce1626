#!/usr/bin/env python3
"""What the Python package costs over `cbc run`: the same requests, the same engine settings,
generated tokens per second side by side (the best of --repeat runs each, after the model
is loaded).

    PYTHONPATH=build/python build/pyenv/bin/python bench/python_overhead.py [--build build]

Two models: the llama parity fixture (tiny: a step is microseconds, so this is the worst case
for per-token overhead) and a larger llama-shaped model compiled here from that config with
random weights (hidden 256, 4 layers, vocab 4096), where a step costs what a small real model's
does. Prints a Markdown table.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cbc

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "test" / "parity" / "fixtures" / "llama"


def requests(vocab, n, prompt_len, seed=0):
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab) for _ in range(prompt_len)] for _ in range(n)]


def cbc_run(exe, artefact, weights, prompts, new_tokens, threads):
    """Generated tokens per second as cbc run's summary reports it (load excluded)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
        path = f.name
    src = ["--weights", weights] if weights else ["--random-weights"]
    cmd = [exe, "run", artefact, *src, "--prompts", path, "--max-new-tokens", str(new_tokens),
           "--backend", "cpu", "--threads", str(threads), "-o", os.devnull]
    # ignore_eos through the JSON lines would change the requests; the random and fixture
    # models are run with the same lines in both, so finishing on eos is the same in both.
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    os.unlink(path)
    m = re.search(r"(\d+) generated tokens in ([0-9.]+) s", r.stderr)
    return int(m.group(1)), float(m.group(2))


def timed(fn):
    start = time.perf_counter()
    tokens = fn()
    return tokens, time.perf_counter() - start


def python_modes(load, prompts, new_tokens):
    """Each interface on a freshly loaded engine (load not timed), as each cbc run loads its own:
    both start with the cache and arenas untouched."""

    def batch(eng):
        outs = eng.generate_batch(prompts, max_new_tokens=new_tokens)
        return sum(len(o.generated_tokens) for o in outs.values())

    def stream(eng):
        return sum(1 for ev in eng.stream(prompts, max_new_tokens=new_tokens) if ev.token is not None)

    def loop(eng):
        for p in prompts:
            eng.add_request(p, max_new_tokens=new_tokens)
        n = 0
        while not eng.idle():
            n += len(eng.step())
        eng.take_finished()
        return n

    results = {}
    for mode, fn in (("generate_batch", batch), ("stream", stream), ("add_request/step", loop)):
        eng = load()
        results[mode] = timed(lambda: fn(eng))
        del eng
    return results


def bench(exe, name, artefact, weights, seed, prompts, new_tokens, threads, repeat):
    """Best of `repeat` runs of each interface, interleaved so that load from elsewhere on the
    machine falls on all of them alike."""
    kw = {"random_weights": True, "seed": seed} if weights is None else {}
    load = lambda: cbc.Engine(artefact, weights, threads=threads, backend="cpu", **kw)
    best = {}
    for _ in range(repeat):
        n, s = cbc_run(exe, artefact, weights, prompts, new_tokens, threads)
        best["cbc run"] = min(best.get("cbc run", (n, s)), (n, s), key=lambda x: x[1])
        for mode, (tokens, secs) in python_modes(load, prompts, new_tokens).items():
            assert tokens == n, (mode, tokens, n)
            best[mode] = min(best.get(mode, (tokens, secs)), (tokens, secs), key=lambda x: x[1])
    return [(name, mode, t, s) for mode, (t, s) in best.items()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(REPO / "build"), help="build tree with bin/cbc")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--requests", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each; the best is shown")
    args = ap.parse_args()
    exe = str(Path(args.build) / "bin" / "cbc")
    rows = []
    tiny = cbc.Engine(REPO / "test" / "artefacts" / "llama.fb", FIXTURE, threads=args.threads, backend="cpu")
    rows += bench(exe, "llama fixture (64 hidden, 2 layers)", str(REPO / "test" / "artefacts" / "llama.fb"),
                  str(FIXTURE), 0, requests(tiny.vocab_size, args.requests, 32), 64, args.threads, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        config = json.loads((FIXTURE / "config.json").read_text())
        config.update(hidden_size=256, intermediate_size=704, num_hidden_layers=4, num_attention_heads=8,
                      num_key_value_heads=4, head_dim=32, vocab_size=4096, max_position_embeddings=512)
        (Path(tmp) / "config.json").write_text(json.dumps(config))
        art = str(Path(tmp) / "medium.fb")
        cbc.compile(tmp, art, cuda=False)
        rows += bench(exe, "llama-shaped, random (256 hidden, 4 layers)", art, None, 0,
                      requests(4096, args.requests // 2, 32), 32, args.threads, args.repeat)
    print(f"| model | interface | generated tokens | seconds | tok/s | vs cbc run |")
    print(f"|---|---|---:|---:|---:|---:|")
    base = {}
    for name, mode, n, s in rows:
        if mode == "cbc run":
            base[name] = n / s
        print(f"| {name} | {mode} | {n} | {s:.3f} | {n / s:.0f} | {n / s / base[name]:.2f}x |")


if __name__ == "__main__":
    main()
