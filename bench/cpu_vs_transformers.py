#!/usr/bin/env python3
"""cbc against transformers on the same cores, side by side in one run (issue 19's table).

Writes one random-weight bf16 checkpoint of the issue's Llama-shaped model (hidden 1024, 16
layers, GQA 16/4, vocab 32000; bench/cpu_workloads.py), then runs each workload N times:
  decode  batch-1 decode, a 32-token prompt, 128 new tokens: ms per token;
  batch   64 requests, prompts of 32-256 tokens, 64 new tokens each: generated tokens/s.
cbc: `cbc run --backend cpu --threads T` (its defaults otherwise, sized from the machine).
transformers (when importable, e.g. run with /tmp/oracle-pypi/bin/python): fp32 weights, sdpa
attention, torch.set_num_threads(T); `generate` for decode, and `generate_batch` (continuous
batching) and one left-padded `generate` for the batch. Greedy, EOS ignored everywhere. The
greedy tokens are compared, then the min and the median of the N runs and their ratios are
printed. Without transformers only cbc runs, and it says so.

Figures on a shared machine are noisy: run it when the machine is otherwise idle, or say so."""

import argparse
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_workloads as w  # noqa: E402


def transformers_side(ckpt, threads):
    """The transformers model, or None (with why) when torch or transformers is absent."""
    try:
        import torch
        import transformers
    except ImportError as e:
        return None, f"transformers is absent ({e.name} not importable): cbc only"
    torch.set_num_threads(threads)
    model = transformers.AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32, attn_implementation="sdpa")
    model.eval()
    return (torch, transformers, model), f"transformers {transformers.__version__}, torch {torch.__version__}"


def hf_config(tf, n):
    return tf.GenerationConfig(max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None,
                               pad_token_id=0)


def hf_generate(side, prompts, n):
    """Left-padded generate of every prompt at once: (seconds, tokens of each)."""
    torch, tf, model = side
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, generation_config=hf_config(tf, n))
    return time.perf_counter() - t0, [row[width:].tolist() for row in out]


def hf_generate_batch(side, prompts, n):
    torch, tf, model = side
    t0 = time.perf_counter()
    # no_grad, not inference_mode: generate_batch's loop runs in its own thread, where tensors
    # made under inference_mode here cannot be updated in place (every request failed so).
    with torch.no_grad():
        res = model.generate_batch(inputs=prompts, generation_config=hf_config(tf, n), progress_bar=False)
    seconds = time.perf_counter() - t0
    toks = [list(r.generated_tokens) for r in res.values()]
    # A failed request comes back short: a time without every token is no figure.
    if len(toks) != len(prompts) or any(len(t) != n for t in toks):
        raise RuntimeError(f"generate_batch returned {sum(len(t) == n for t in toks)} of {len(prompts)} "
                           f"complete requests: no figure")
    return seconds, toks


def agree(a, b):
    """Requests whose greedy tokens agree, and the first differing position of the others."""
    same = sum(1 for x, y in zip(a, b) if x == y)
    first = [next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
             for x, y in zip(a, b) if x != y]
    return f"{same}/{len(a)} requests agree" + (f" (first differences at {sorted(first)[:8]})" if first else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cbc", default=os.path.join(w.ROOT, "build", "bin", "cbc"))
    ap.add_argument("--runs", type=int, default=3, help="runs of each workload (default 3)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for both (default: all cores)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "cbc-cpu-bench"),
                    help="where the checkpoint, artefact and prompts are kept between runs")
    ap.add_argument("--workloads", default="decode,batch")
    ap.add_argument("--no-transformers", action="store_true", help="cbc only")
    args = ap.parse_args()
    if args.runs < 1 or args.threads < 1:
        ap.error("--runs and --threads must be at least 1")
    todo = args.workloads.split(",")
    for name in todo:
        if name not in w.WORKLOADS:
            ap.error(f"unknown workload '{name}' (decode, batch)")
    if not os.access(args.cbc, os.X_OK):
        ap.error(f"no cbc at {args.cbc} (build it, or give --cbc)")
    os.makedirs(args.workdir, exist_ok=True)
    ckpt = os.path.join(args.workdir, "ckpt")
    w.write_checkpoint(ckpt)
    artefact = w.compile_artefact(args.cbc, os.path.join(args.workdir, "model.fb"))
    vocab = w.load_config()["vocab_size"]
    side, why = (None, "transformers skipped (--no-transformers): cbc only") if args.no_transformers \
        else transformers_side(ckpt, args.threads)
    print(f"# {why}; {args.threads} threads, {args.runs} runs each; load average "
          f"{os.getloadavg()[0]:.1f} at the start (a loaded machine makes every figure noisy)")
    for name in todo:
        prompts = w.prompts(name, vocab)
        n = w.new_tokens(name)
        path = os.path.join(args.workdir, f"{name}.jsonl")
        w.write_prompts(path, name, vocab)
        times = {"cbc": []}
        tokens = {}
        for run in range(args.runs):
            r = w.cbc_run(args.cbc, artefact, path, os.path.join(args.workdir, f"{name}.out.jsonl"), args.threads,
                          weights=ckpt)
            times["cbc"].append(r["seconds"])
            tokens["cbc"] = r["tokens"]
            if run == 0:
                print(f"# {name}: cbc chose cache memory {r['cache_mib']} MiB, {r['step_tokens']} tokens a step; "
                      f"{r['steps']} steps, {r['preemptions']} preemptions; peak RSS {r['peak_rss_mb']} MB")
            if side:
                runs = [("generate", hf_generate)] if name == "decode" else \
                    [("generate_batch", hf_generate_batch), ("padded generate", hf_generate)]
                for label, fn in runs:
                    s, toks = fn(side, prompts, n)
                    times.setdefault(label, []).append(s)
                    tokens[label] = toks
        generated = len(prompts) * n
        unit = "ms/token" if name == "decode" else "generated tok/s"
        fig = (lambda s: s / generated * 1e3) if name == "decode" else (lambda s: generated / s)
        print(f"\n{name}: {len(prompts)} request(s), {n} new tokens each ({unit}; min and median of {args.runs})")
        for label, ts in times.items():
            best, med = fig(min(ts)), fig(w.median(ts))
            line = f"  {label:16s} best {best:9.2f}  median {med:9.2f}"
            if label != "cbc":
                # cbc's speed over theirs: > 1 when cbc is faster.
                cb, cm = min(times["cbc"]), w.median(times["cbc"])
                line += f"   cbc ratio {min(ts) / cb:5.2f}x (best), {w.median(ts) / cm:5.2f}x (median); "
                line += "greedy tokens: " + agree(tokens["cbc"], tokens[label])
            print(line)
    if side:
        # This process ran transformers (and nothing else large): its peak is transformers'.
        print(f"\n# transformers' peak RSS (this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
