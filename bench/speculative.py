#!/usr/bin/env python3
"""Speculative decoding on the CPU backend: off and n-gram (prompt lookup) side by side in one
run, same engine settings, each configuration timed --runs times (median), the configurations'
runs interleaved so that a slow spell of the shared machine falls on all of them.

Models:
  kjv      the trained example model (examples/kjv-llama, 3.4M parameters): its scripture is
           repetitive, as code and summaries are, so lookup finds what comes next;
  llama    the Llama-shaped model of cpu_workloads.py (hidden 1024, 16 layers, random bf16
           weights): batch-1 decode near the memory roofline, but random weights copy nothing,
           so lookup finds nothing (what speculation costs when it cannot help).

Workloads:
  repetitive  kjv's six prompts, greedy, --new new tokens (256), EOS ignored;
  random      prompts of random token ids, sampled at temperature 1 (seeded), --new tokens.
Each at batch 1 (the prompts one after another), and with 16 and 64 requests at once (the
prompts cycled). n-gram runs with the default back-off (no drafts once a step would pass 16
tokens) and, at 16 and 64 requests, also without it (--speculative-max-tokens 2^20), to show
what the back-off avoids.

Printed: generated tokens/s, the ratio to speculation off, drafts verified and accepted (in all
and per position). Greedy outputs are checked equal with speculation on and off. MTP and draft
models are not in cbc yet: no figures for them.

Figures on a shared machine are noisy: run it when the machine is otherwise idle, or say so."""

import argparse
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_workloads as w  # noqa: E402

KJV = os.path.join(w.ROOT, "examples", "kjv-llama")


def kjv_prompts():
    from cbc.text import Tokenizer
    tok = Tokenizer.from_dir(KJV)
    with open(os.path.join(KJV, "prompts.txt"), encoding="utf-8") as f:
        return [tok.encode(line.strip()) for line in f if line.strip()]


def random_prompts(vocab, n=6, length=32):
    r = random.Random(7)
    return [[r.randrange(3, vocab) for _ in range(length)] for _ in range(n)]


def engine(artefact, weights, threads, spec, k, max_tokens):
    import cbc
    kw = {}
    if spec:
        kw = dict(speculative="ngram", num_speculative_tokens=k, speculative_max_tokens=max_tokens)
    return cbc.Engine(artefact, weights, backend="cpu", threads=threads, **kw)


def run_once(eng, prompts, concurrency, new, sampled):
    """Generated tokens/s for the prompts, `concurrency` at once; and the outputs."""
    kw = dict(max_new_tokens=new, eos_token_id=[])
    if sampled:
        kw.update(do_sample=True, temperature=1.0, seed=11)
    t = time.perf_counter()
    outs = []
    if concurrency == 1:
        for p in prompts:
            outs += [o.generated_tokens for o in eng.generate_batch([p], **kw).values()]
    else:
        batch = [prompts[i % len(prompts)] for i in range(concurrency)]
        outs = [o.generated_tokens for o in eng.generate_batch(batch, **kw).values()]
    dt = time.perf_counter() - t
    return sum(len(o) for o in outs) / dt, outs


def measure(artefact, weights, threads, prompts, concurrency, new, sampled, modes, k, runs):
    """Each mode's median tokens/s, outputs and drafts by position; the modes' runs interleaved
    (off, on, off, on, ...) so that a slow spell of the shared machine falls on all of them."""
    engines = {label: engine(artefact, weights, threads, cap is not None, k, cap or 0) for label, cap in modes}
    before = {}
    for label, eng in engines.items():
        run_once(eng, prompts[:1], 1, 8, sampled)  # warm-up
        before[label] = dict(eng.stats)
    rates = {label: [] for label in engines}
    outs = {}
    for _ in range(runs):
        for label, eng in engines.items():
            r, outs[label] = run_once(eng, prompts, concurrency, new, sampled)
            rates[label].append(r)
    result = {}
    for label, eng in engines.items():
        s, b = eng.stats, before[label]
        drafted = [x - y for x, y in zip(s["drafted_at"], b["drafted_at"])] if s["drafted_at"] else []
        accepted = [x - y for x, y in zip(s["accepted_at"], b["accepted_at"])] if s["accepted_at"] else []
        result[label] = (statistics.median(rates[label]), outs[label], drafted, accepted)
    return result


def step_costs(artefact, weights, threads, vocab, reps=20):
    """Backend time of one step of T tokens (T = 1, 2, 4, 8) over a cached 64-token context:
    what verifying T - 1 guesses costs. Median over `reps` steps each, relative to T = 1."""
    import cbc
    eng = cbc.Engine(artefact, weights, backend="cpu", threads=threads)
    r = random.Random(3)
    context = [r.randrange(3, vocab) for _ in range(64)]
    eng.generate_batch([context], max_new_tokens=1)
    costs = {}
    for t in (1, 2, 4, 8):
        times = []
        for _ in range(reps):
            before = eng.stats["step_seconds"]
            # The context is found cached: the only step computes the T new tokens.
            eng.generate_batch([context + [r.randrange(3, vocab) for _ in range(t)]], max_new_tokens=1)
            times.append(eng.stats["step_seconds"] - before)
        costs[t] = statistics.median(times)
    return {t: c / costs[1] for t, c in costs.items()}, costs[1]


def row(label, rate, base, drafted, accepted):
    if not drafted:
        return f"| {label} | {rate:.1f} | 1.00 | - | - |"
    total_d, total_a = sum(drafted), sum(accepted)
    per = " / ".join(f"{100 * a / d:.0f}" if d else "-" for a, d in zip(accepted, drafted))
    acc = f"{100 * total_a / total_d:.0f}% of {total_d}" if total_d else "no drafts"
    return f"| {label} | {rate:.1f} | {rate / base:.2f} | {acc} | {per} |"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per configuration (median)")
    ap.add_argument("--new", type=int, default=256, help="new tokens per request")
    ap.add_argument("-k", type=int, default=3, help="--num-speculative-tokens")
    ap.add_argument("--models", default="kjv,llama", help="comma-separated: kjv, llama")
    ap.add_argument("--concurrency", default="1,16,64", help="comma-separated requests at once")
    args = ap.parse_args()
    cbc_bin = os.path.join(w.ROOT, "build", "bin", "cbc")
    tmp = os.environ.get("TMPDIR", "/tmp")
    models = {}
    if "kjv" in args.models:
        art = os.path.join(tmp, "cbc-bench-kjv.fb")
        subprocess.run([cbc_bin, "compile", os.path.join(KJV, "config.json"), "-o", art], check=True,
                       capture_output=True)
        models["kjv"] = (art, KJV, 2000)
    if "llama" in args.models:
        ckpt = os.path.join(tmp, "cbc-bench-llama")
        w.write_checkpoint(ckpt)
        art = os.path.join(tmp, "cbc-bench-llama.fb")
        subprocess.run([cbc_bin, "compile", os.path.join(ckpt, "config.json"), "-o", art], check=True,
                       capture_output=True)
        models["llama"] = (art, ckpt, w.load_config()["vocab_size"])
    print(f"threads {args.threads}, k {args.k}, {args.new} new tokens a request, median of {args.runs} runs\n")
    for name, (art, weights, vocab) in models.items():
        rel, one = step_costs(art, weights, args.threads, vocab)
        print(f"{name}: a step of T tokens over a cached 64-token context, relative to T = 1 ({one * 1e3:.2f} ms): " +
              ", ".join(f"T={t} {v:.2f}" for t, v in rel.items()))
    print()
    print("| model, workload, requests at once, speculation | tokens/s | / off | accepted | accepted by position (%) |")
    print("|---|---|---|---|---|")
    for name, (art, weights, vocab) in models.items():
        workloads = [("repetitive", kjv_prompts(), False)] if name == "kjv" else []
        workloads.append(("random", random_prompts(vocab), True))
        for wl, prompts, sampled in workloads:
            for conc in [int(c) for c in args.concurrency.split(",")]:
                new = args.new if conc == 1 else min(args.new, 64)
                modes = [("off", None), ("ngram", 16)] + ([("ngram, no back-off", 1 << 20)] if conc > 1 else [])
                res = measure(art, weights, args.threads, prompts, conc, new, sampled, modes, args.k, args.runs)
                base, plain = res["off"][0], res["off"][1]
                for label, (rate, outs, d, a) in res.items():
                    same = outs == plain
                    print(row(f"{name}, {wl}, {conc}, {label}" + ("" if same else " (OUTPUTS DIFFER)"), rate, base,
                              d, a), flush=True)


if __name__ == "__main__":
    main()
