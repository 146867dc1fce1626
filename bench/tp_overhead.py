#!/usr/bin/env python3
"""Tensor parallelism on the CPU backend: the bench Llama (hidden 1024, 16 layers) served by one
process (2 threads) and by two ranks (mpiexec -n 2, 1 thread each) on this 2-core machine, side
by side, and the per-step bytes the plan predicts for GPU deployments (cbc dump --plan-memory).

Two ranks on two shared cores cannot be faster than one process on both: each rank computes
half of every GEMM and then waits for the other at every all-reduce. The figure to read is the
overhead: milliseconds a step the ranks add (collectives, the plan's broadcast, one thread a
rank). The tokens of both must be equal (greedy; the row-parallel sums differ by rounding only).

    python3 bench/tp_overhead.py [--cbc build/bin/cbc] [--repeats 3]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_workloads as cw  # noqa: E402

ROOT = cw.ROOT
DEPLOYMENTS = [("deepseek-v3", 16), ("kimi-k2-instruct", 8), ("qwen3.5-397b-a17b", 8)]


def run(cbc, artefact, prompts, weights, tmp, ranks):
    launcher = [shutil.which("mpiexec"), "-n", str(ranks)] if ranks > 1 else []
    threads = 2 if ranks == 1 else 1
    return cw.cbc_run(cbc, artefact, prompts, os.path.join(tmp, "out.jsonl"), threads, weights=weights,
                      launcher=launcher)


def plan(cbc, config, ranks, tmp):
    out = os.path.join(tmp, "plan.fb")
    subprocess.run([cbc, "compile", config, "--tp", str(ranks), "--ep", str(ranks), "--quiet", "-o", out], check=True)
    return subprocess.run([cbc, "dump", out, "--plan-memory"], capture_output=True, text=True, check=True).stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cbc", default=os.path.join(ROOT, "build", "bin", "cbc"))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "cbc-bench-llama"))
    a = p.parse_args()
    if not shutil.which("mpiexec"):
        sys.exit("tp_overhead: mpiexec not found (tools/setup.sh installs MPICH)")
    weights = a.workdir
    print("writing the random checkpoint (once) ...", flush=True)
    cw.write_checkpoint(weights)
    vocab = cw.load_config()["vocab_size"]
    with tempfile.TemporaryDirectory() as tmp:
        one = cw.compile_artefact(a.cbc, os.path.join(tmp, "tp1.fb"))
        two = cw.compile_artefact(a.cbc, os.path.join(tmp, "tp2.fb"), ["--tp", "2"])
        for workload in ("decode", "batch"):
            prompts = os.path.join(tmp, workload + ".jsonl")
            cw.write_prompts(prompts, workload, vocab)
            times = {1: [], 2: []}
            tokens = {}
            # Interleaved, so that the machine's noise falls on both alike.
            for _ in range(a.repeats):
                for ranks, art in ((1, one), (2, two)):
                    r = run(a.cbc, art, prompts, weights, tmp, ranks)
                    times[ranks].append(r)
                    tokens[ranks] = r["tokens"]
            t1, t2 = (cw.median([r["seconds"] for r in times[k]]) for k in (1, 2))
            steps = times[2][0]["steps"]
            gen = times[1][0]["generated"]
            print(f"{workload}: {gen} tokens in {steps} steps; 1 process {gen / t1:.1f} tok/s, 2 ranks "
                  f"{gen / t2:.1f} tok/s (x{t1 / t2:.2f}); the ranks add {1e3 * (t2 - t1) / steps:+.2f} ms a step; "
                  f"tokens {'equal' if tokens[1] == tokens[2] else 'DIFFER'}", flush=True)
        print("\nwhat one rank's collectives move per step at TP 2 (this model):")
        print("  " + plan(a.cbc, cw.CONFIG, 2, tmp).strip().splitlines()[-1])
        print("\nGPU deployments at TP/EP N on H200s (plans; not measured: no GPU has been lent):")
        for name, ranks in DEPLOYMENTS:
            text = plan(a.cbc, os.path.join(ROOT, "test", "configs", "published", name + ".json"), ranks, tmp)
            lines = text.strip().splitlines()
            m = re.search(r"moving (\d+) bytes per token", text)
            per64 = f"; a decode step of 64 tokens all-reduces {int(m[1]) * 64 / 1e6:.1f} MB" if m else ""
            print(f"  {name} TP/EP {ranks}: {lines[1]}; {lines[2]}{per64}")


if __name__ == "__main__":
    main()
