#!/usr/bin/env python3
"""Two cbc binaries side by side, in one run and interleaved (these machines are shared and
noisy, so only ratios measured together mean anything):

  compile      `cbc compile` of a config (default Llama-3.1-8B) with --no-cuda
  compile+nvrtc  the same with CUDA kernels compiled by NVRTC into a fresh (cold) kernel cache
  cpu-run      generated tokens per second of examples/tiny-llama (random weights, the CPU
               backend), each binary on its own artefact

Prints the median of each and the ratio new/old (time: below 1 is faster; throughput: above 1
is faster). Exits 2 on bad arguments. Not a test: it asserts nothing.

usage: bench/compare_builds.py OLD_CBC NEW_CBC [--rounds N] [--config CONFIG] [--threads T]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "tiny-llama")


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def throughput(cbc, artefact, threads):
    out = subprocess.run(
        [cbc, "run", artefact, "--random-weights", "--seed", "0", "--prompts",
         os.path.join(EXAMPLE, "prompts.jsonl"), "--max-new-tokens", "24", "--backend", "cpu",
         "--threads", str(threads)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    m = re.search(r"([0-9.]+) generated tok/s", out)
    if not m:
        sys.exit(f"compare_builds: no throughput in the summary of {cbc} run:\n{out}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--config", default=os.path.join(ROOT, "test", "configs", "published", "llama-3.1-8b.json"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    for b in (args.old, args.new):
        if not os.access(b, os.X_OK):
            ap.error(f"not an executable: {b}")
    if args.rounds < 1:
        ap.error("--rounds must be positive")
    bins = {"old": args.old, "new": args.new}
    samples = {(k, b): [] for k in ("compile", "compile+nvrtc", "cpu-run") for b in bins}
    with tempfile.TemporaryDirectory() as tmp:
        art = {}
        for b, cbc in bins.items():
            art[b] = os.path.join(tmp, f"example-{b}.fb")
            subprocess.run([cbc, "compile", os.path.join(EXAMPLE, "config.json"), "-o", art[b], "--no-cuda",
                            "--quiet"], check=True)
        for r in range(args.rounds):
            order = list(bins.items()) if r % 2 == 0 else list(reversed(bins.items()))
            for b, cbc in order:
                out = os.path.join(tmp, f"{b}.fb")
                for _ in range(4):  # tens of milliseconds each: more samples
                    samples[("compile", b)].append(timed([cbc, "compile", args.config, "-o", out, "--no-cuda", "--quiet"]))
                cache = tempfile.mkdtemp(dir=tmp)
                samples[("compile+nvrtc", b)].append(
                    timed([cbc, "compile", args.config, "-o", out, "--kernel-cache", cache, "--quiet"]))
                samples[("cpu-run", b)].append(throughput(cbc, art[b], args.threads))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"config {os.path.relpath(args.config, ROOT)}, {args.rounds} rounds, cpu-run with {args.threads} threads")
    print(f"{'measure':15s} {'old':>10s} {'new':>10s} {'new/old':>8s}  unit")
    for k, unit in (("compile", "s"), ("compile+nvrtc", "s"), ("cpu-run", "tok/s")):
        old, new = (statistics.median(samples[(k, b)]) for b in bins)
        print(f"{k:15s} {old:10.3f} {new:10.3f} {new / old:8.3f}  {unit}")


if __name__ == "__main__":
    main()
