#!/usr/bin/env python3
"""The CPU backend against its roofline (issue 19, scope 4), on the issue's Llama-shaped model.

Measures the machine's ceilings with `cbc-bench-runtime roofline T` (streaming-read bandwidth,
OpenBLAS's sgemm peak, cbc's own GEMM peak on packed bf16 weights), works out from the artefact
(`cbc dump --weights`, `--cache-plan`) what a step must do, runs `cbc run` on the random bf16
checkpoint of bench/cpu_workloads.py (the CPU backend keeps its matrices in bf16) N times and
prints cbc's fraction of each bound for the fastest run:
  decode  batch-1: the bytes a step reads (every weight but the embedding, matrices as bf16
          and the rest as float32, one embedding row, and the kv of the tokens so far as
          float32) over the bandwidth (the faster of the 1 GiB sweep and cbc's matrix-vector
          kernel on a 1 GiB weight), against cbc's ms per token;
  batch   64 requests (batched decode and prefill): the FLOPs (2 per weight per computed
          token, plus attention's 4 x context x q width per layer) over the sgemm peak and over
          cbc's own GEMM peak, against cbc's time.
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
    """Bytes/s and FLOP/s: read bandwidth, sgemm peak, cbc's GEMM peak (and its kernel's name)."""
    out = subprocess.run([bench, "roofline", str(threads)], capture_output=True, text=True, check=True).stdout
    bw = float(re.search(r"read bandwidth ([0-9.]+) GB/s", out)[1])
    peak = float(re.search(r"sgemm peak ([0-9.]+) GFLOP/s", out)[1])
    m = re.search(r"cbc gemm peak ([0-9.]+) GFLOP/s \((\w+)", out)
    gemv = float(re.search(r"cbc gemv bandwidth ([0-9.]+) GB/s", out)[1])
    return bw * 1e9, peak * 1e9, float(m[1]) * 1e9, m[2], gemv * 1e9


def model_figures(cbc, artefact):
    """(matrix elements outside the embedding, other weight elements, embedding width, kv
    elements per token, q width x layers). Matrices (rank 2 and up) are what the CPU backend
    keeps in bf16; vectors (norms, biases) stay float32."""
    weights = subprocess.run([cbc, "dump", artefact, "--weights"], capture_output=True, text=True, check=True).stdout
    matrices, vectors, embed_width = 0, 0, 0
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
        elif len(dims) >= 2:
            matrices += n
        else:
            vectors += n
    plan = subprocess.run([cbc, "dump", artefact, "--cache-plan"], capture_output=True, text=True, check=True).stdout
    kv = sum(int(a) + int(b) for a, b in re.findall(r"k (\d+) v (\d+) elements/token", plan))
    c = w.load_config()
    qwidth = c["num_attention_heads"] * c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
    return matrices, vectors, embed_width, kv, qwidth * c["num_hidden_layers"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cbc", default=os.path.join(w.ROOT, "build", "bin", "cbc"))
    ap.add_argument("--bench", default=os.path.join(w.ROOT, "build", "bench", "cbc-bench-runtime"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3, help="runs of each workload; the fastest counts (default 3)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "cbc-cpu-bench"),
                    help="where the checkpoint, artefact and prompts are kept between runs (shared with "
                         "bench/cpu_vs_transformers.py)")
    ap.add_argument("--workloads", default="decode,batch")
    args = ap.parse_args()
    if args.runs < 1 or args.threads < 1:
        ap.error("--runs and --threads must be at least 1")
    for tool in (args.cbc, args.bench):
        if not os.access(tool, os.X_OK):
            ap.error(f"no {tool} (build it, or give --cbc / --bench)")
    todo = args.workloads.split(",")
    for name in todo:
        if name not in w.WORKLOADS:
            ap.error(f"unknown workload '{name}' (decode, batch)")
    os.makedirs(args.workdir, exist_ok=True)
    ckpt = os.path.join(args.workdir, "ckpt")
    w.write_checkpoint(ckpt)
    artefact = w.compile_artefact(args.cbc, os.path.join(args.workdir, "model.fb"))
    sweep_bw, peak, cbc_peak, gemm_kernel, gemv_bw = ceilings(args.bench, args.threads)
    # The ceiling is the fastest streaming read seen: the matrix-vector kernel, which streams four
    # panels at once, can read a little faster than the one-stream sweep.
    bw = max(sweep_bw, gemv_bw)
    matrices, vectors, embed_width, kv, qlayers = model_figures(args.cbc, artefact)
    print(f"# {args.threads} threads, load average {os.getloadavg()[0]:.1f}: read bandwidth {bw / 1e9:.2f} GB/s "
          f"(sweep {sweep_bw / 1e9:.2f}), "
          f"sgemm peak {peak / 1e9:.1f} GFLOP/s, cbc GEMM peak {cbc_peak / 1e9:.1f} GFLOP/s ({gemm_kernel}), "
          f"cbc matrix-vector kernel {gemv_bw / 1e9:.2f} GB/s; {matrices} matrix weights outside the embedding "
          f"held as bf16, {vectors} others as f32; fastest of {args.runs} runs")
    vocab = w.load_config()["vocab_size"]
    for name in todo:
        prompts = w.prompts(name, vocab)
        n = w.new_tokens(name)
        path = os.path.join(args.workdir, f"{name}.jsonl")
        w.write_prompts(path, name, vocab)
        runs = [w.cbc_run(args.cbc, artefact, path, os.path.join(args.workdir, f"{name}.out.jsonl"), args.threads,
                          weights=ckpt) for _ in range(args.runs)]
        r = min(runs, key=lambda x: x["seconds"])
        if name == "decode":
            # The mean context over the decode steps; kv held as float32 by the CPU backend.
            ctx = len(prompts[0]) + n / 2
            step_bytes = matrices * 2 + vectors * 4 + embed_width * 4 + kv * 4 * ctx
            bound = step_bytes / bw
            got = r["seconds"] / n
            print(f"decode: {step_bytes / 1e6:.1f} MB a step / {bw / 1e9:.2f} GB/s = {bound * 1e3:.1f} ms/token "
                  f"roofline; cbc {got * 1e3:.1f} ms/token: {100 * bound / got:.0f} % of the memory roofline "
                  f"({step_bytes / got / 1e9:.2f} GB/s)")
        else:
            # Every prompt token and every generated token but the last goes through the model once.
            flops = 0.0
            for p in prompts:
                for t in range(len(p) + n - 1):
                    flops += 2 * matrices + 4 * (t + 1) * qlayers
            print(f"batch: {flops / 1e12:.2f} TFLOP: roofline {flops / peak:.1f} s at the sgemm peak, "
                  f"{flops / cbc_peak:.1f} s at cbc's GEMM peak; cbc {r['seconds']:.1f} s "
                  f"({r['generated'] / r['seconds']:.1f} generated tok/s, cache {r['cache_mib']} MiB, "
                  f"{r['step_tokens']} tokens a step, {r['preemptions']} preemptions): "
                  f"{100 * flops / peak / r['seconds']:.0f} % of the sgemm roofline, "
                  f"{100 * flops / cbc_peak / r['seconds']:.0f} % of cbc's GEMM roofline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
