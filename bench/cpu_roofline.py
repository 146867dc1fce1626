#!/usr/bin/env python3
"""The CPU backend against its roofline (issue 19, scope 4), on the issue's Llama-shaped model.

Measures the machine's ceilings with `cbc-bench-runtime roofline T` (streaming-read bandwidth,
OpenBLAS sgemm peak), works out from the artefact (`cbc dump --weights`, `--cache-plan`) what a
step must do, runs `cbc run --random-weights` on the workloads of bench/cpu_workloads.py and
prints cbc's fraction of each bound:
  decode  batch-1: the bytes a step reads (every weight but the embedding, held as
          --weight-dtype, one embedding row, and the kv of the tokens so far as float32) over
          the bandwidth, against cbc's ms per token;
  batch   64 requests (batched decode and prefill): the FLOPs (2 per weight per computed
          token, plus attention's 4 x context x q width per layer) over the sgemm peak, against
          cbc's time.
A loaded machine lowers every figure, the ceilings included: say so with the figures."""

import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_workloads as w  # noqa: E402


def ceilings(bench, threads):
    out = subprocess.run([bench, "roofline", str(threads)], capture_output=True, text=True, check=True).stdout
    bw = float(re.search(r"read bandwidth ([0-9.]+) GB/s", out)[1])
    peak = float(re.search(r"sgemm peak ([0-9.]+) GFLOP/s", out)[1])
    return bw * 1e9, peak * 1e9


def model_figures(cbc, artefact):
    """(parameters outside the embedding, embedding width, kv elements per token, q width x layers)."""
    weights = subprocess.run([cbc, "dump", artefact, "--weights"], capture_output=True, text=True, check=True).stdout
    dense, embed_width = 0, 0
    for line in weights.splitlines():
        m = re.match(r"(\S+)\s+\S+\s+\[([0-9x]+)\]", line)
        if not m:
            continue
        dims = [int(d) for d in m[2].split("x")]
        n = 1
        for d in dims:
            n *= d
        if "embed" in m[1]:
            embed_width = dims[-1]  # a step gathers one row per token
        else:
            dense += n
    plan = subprocess.run([cbc, "dump", artefact, "--cache-plan"], capture_output=True, text=True, check=True).stdout
    kv = sum(int(a) + int(b) for a, b in re.findall(r"k (\d+) v (\d+) elements/token", plan))
    c = w.load_config()
    qwidth = c["num_attention_heads"] * c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
    return dense, embed_width, kv, qwidth * c["num_hidden_layers"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cbc", default=os.path.join(w.ROOT, "build", "bin", "cbc"))
    ap.add_argument("--bench", default=os.path.join(w.ROOT, "build", "bench", "cbc-bench-runtime"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--weight-dtype", choices=("f32", "bf16"), default="f32",
                    help="how the CPU backend holds the weights (f32 today; bf16 once weights stay bf16)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "cbc-cpu-roofline"))
    ap.add_argument("--workloads", default="decode,batch")
    args = ap.parse_args()
    for tool in (args.cbc, args.bench):
        if not os.access(tool, os.X_OK):
            ap.error(f"no {tool} (build it, or give --cbc / --bench)")
    os.makedirs(args.workdir, exist_ok=True)
    artefact = w.compile_artefact(args.cbc, os.path.join(args.workdir, "model.fb"))
    bw, peak = ceilings(args.bench, args.threads)
    dense, embed_width, kv, qlayers = model_figures(args.cbc, artefact)
    wbytes = 4 if args.weight_dtype == "f32" else 2
    print(f"# {args.threads} threads, load average {os.getloadavg()[0]:.1f}: read bandwidth {bw / 1e9:.2f} GB/s, "
          f"sgemm peak {peak / 1e9:.1f} GFLOP/s; {dense} weights outside the embedding held as {args.weight_dtype}")
    vocab = w.load_config()["vocab_size"]
    for name in args.workloads.split(","):
        if name not in w.WORKLOADS:
            ap.error(f"unknown workload '{name}' (decode, batch)")
        prompts = w.prompts(name, vocab)
        n = w.new_tokens(name)
        path = os.path.join(args.workdir, f"{name}.jsonl")
        w.write_prompts(path, name, vocab)
        r = w.cbc_run(args.cbc, artefact, path, os.path.join(args.workdir, f"{name}.out.jsonl"), args.threads)
        if name == "decode":
            # The mean context over the decode steps; kv held as float32 by the CPU backend.
            ctx = len(prompts[0]) + n / 2
            step_bytes = dense * wbytes + embed_width * 4 + kv * 4 * ctx
            bound = step_bytes / bw
            got = r["seconds"] / n
            print(f"decode: {step_bytes / 1e6:.1f} MB a step / {bw / 1e9:.2f} GB/s = {bound * 1e3:.1f} ms/token "
                  f"roofline; cbc {got * 1e3:.1f} ms/token: {100 * bound / got:.0f} % of the memory roofline")
        else:
            # Every prompt token and every generated token but the last goes through the model once.
            flops = 0.0
            for p in prompts:
                for t in range(len(p) + n - 1):
                    flops += 2 * dense + 4 * (t + 1) * qlayers
            bound = flops / peak
            print(f"batch: {flops / 1e12:.2f} TFLOP / {peak / 1e9:.1f} GFLOP/s = {bound:.1f} s roofline; cbc "
                  f"{r['seconds']:.1f} s ({r['generated'] / r['seconds']:.1f} generated tok/s, cache "
                  f"{r['cache_mib']} MiB, {r['step_tokens']} tokens a step, {r['preemptions']} preemptions): "
                  f"{100 * bound / r['seconds']:.0f} % of the GEMM roofline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
