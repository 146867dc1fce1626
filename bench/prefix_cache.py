#!/usr/bin/env python3
"""Prefix caching on the CPU backend: caching off and on side by side in one run, for a dense
model (the Llama of bench/cpu_workloads.py: hidden 1024, 16 layers) and a gated-delta hybrid
(test/configs/bench/olmo-hybrid-1024h-8layers.json: 6 gated-delta and 2 attention layers).

  system   --requests requests (64) sharing a --prefix-token system prompt (1000), each with
           its own --suffix tokens (32) and --new new tokens (64), all submitted at once:
           time to first token (mean, median, max) and generated tokens/s;
  chat     a multi-turn chat replay: --chats conversations (8) of --turns turns (4), each turn a
           64-token user message after the conversation so far (a 256-token opening, then the
           earlier turns and answers), 32 new tokens; a turn is sent when its conversation's
           previous answer is back: mean time to first token of the turns after the first, and
           the whole replay's time.

The warm time to first token should fall roughly in proportion to the cached share. The system
workload also runs through transformers' generate_batch (continuous batching, block sharing on:
its default) for the dense model when transformers is importable (e.g. run this with the oracle
venv's python), and the ratio is printed. cbc runs through the Python package (build/python on
PYTHONPATH, or installed). Random weights: the dense model's bf16 checkpoint is written once (for
transformers too); the hybrid uses cbc's own random weights. Greedy, EOS ignored.

Figures on a shared machine are noisy: run it when the machine is otherwise idle, or say so."""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_vs_transformers as cvt  # noqa: E402
import cpu_workloads as w  # noqa: E402

HYBRID = os.path.join(w.ROOT, "test", "configs", "bench", "olmo-hybrid-1024h-8layers.json")


def system_prompts(args, vocab):
    r = random.Random(7)
    prefix = [r.randrange(3, vocab) for _ in range(args.prefix)]
    return [prefix + [r.randrange(3, vocab) for _ in range(args.suffix)] for _ in range(args.requests)]


def run_system(engine, prompts, new):
    """(seconds, ttfts, tokens) of every prompt submitted at once."""
    t0 = time.perf_counter()
    ids = [engine.add_request(p, max_new_tokens=new, ignore_eos=True) for p in prompts]
    while not engine.idle():
        engine.step()
    seconds = time.perf_counter() - t0
    outs = {o.id: o for o in engine.take_finished()}
    return seconds, [outs[i].ttft_s for i in ids], [outs[i].tokens for i in ids]


def run_chat(engine, args, vocab):
    """(seconds, ttfts of the turns after the first): conversations replayed turn by turn."""
    r = random.Random(11)
    history = [[r.randrange(3, vocab) for _ in range(256)] for _ in range(args.chats)]
    turns_left = [args.turns] * args.chats
    live, ttfts = {}, []
    t0 = time.perf_counter()

    def send(c):
        history[c] = history[c] + [r.randrange(3, vocab) for _ in range(64)]
        live[engine.add_request(history[c], max_new_tokens=32, ignore_eos=True)] = c
        turns_left[c] -= 1

    for c in range(args.chats):
        send(c)
    while live:
        engine.step()
        for o in engine.take_finished():
            c = live.pop(o.id)
            if turns_left[c] < args.turns - 1:
                ttfts.append(o.ttft_s)
            history[c] = history[c] + o.tokens
            if turns_left[c] > 0:
                send(c)
    return time.perf_counter() - t0, ttfts


def transformers_system(ckpt, prompts, new, threads):
    """(seconds, tokens) of transformers' generate_batch, or None; and what ran (or why not)."""
    side, why = cvt.transformers_side(ckpt, threads)
    if side is None:
        return None, why
    try:
        return cvt.hf_generate_batch(side, prompts, new), why
    except RuntimeError as e:  # incomplete requests: no figure
        return None, str(e)


def ms(xs):
    return f"mean {statistics.mean(xs) * 1e3:8.1f} ms, median {statistics.median(xs) * 1e3:8.1f} ms, " \
           f"max {max(xs) * 1e3:8.1f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cbc", default=os.path.join(w.ROOT, "build", "bin", "cbc"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "cbc-prefix-bench"))
    ap.add_argument("--models", default="dense,hybrid")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--prefix", type=int, default=1000)
    ap.add_argument("--suffix", type=int, default=32)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--chats", type=int, default=8)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--no-transformers", action="store_true")
    args = ap.parse_args()
    if min(args.threads, args.requests, args.prefix, args.suffix, args.new, args.chats, args.turns) < 1:
        ap.error("every count must be at least 1")
    try:
        import cbc
    except ImportError:
        sys.path.insert(0, os.path.join(w.ROOT, "build", "python"))
        import cbc
    os.makedirs(args.workdir, exist_ok=True)
    ckpt = os.path.join(args.workdir, "dense-ckpt")
    w.write_checkpoint(ckpt)
    models = {"dense": (w.CONFIG, ckpt), "hybrid": (HYBRID, None)}
    print(f"# {args.threads} threads; load average {os.getloadavg()[0]:.1f} at the start (a loaded machine makes "
          f"every figure noisy)")
    for name in args.models.split(","):
        config, weights = models[name]
        artefact = os.path.join(args.workdir, f"{name}.fb")
        subprocess.run([args.cbc, "compile", config, "-o", artefact, "--no-cuda", "--quiet"], check=True)
        vocab = w.load_config()["vocab_size"]
        prompts = system_prompts(args, vocab)
        print(f"\n{name}: system prompt of {args.prefix} tokens, {args.requests} requests with {args.suffix}-token "
              f"suffixes, {args.new} new tokens; chat replay of {args.chats} x {args.turns} turns")
        results = {}
        for caching in (False, True):
            def engine():
                kw = dict(threads=args.threads, backend="cpu", prefix_caching=caching)
                return cbc.Engine(artefact, weights, **kw) if weights else \
                    cbc.Engine(artefact, random_weights=True, seed=3, **kw)
            e = engine()
            seconds, ttfts, toks = run_system(e, prompts, args.new)
            stats = e.stats
            chat_seconds, chat_ttfts = run_chat(engine(), args, vocab)
            results[caching] = (seconds, ttfts, toks)
            label = "cache on " if caching else "cache off"
            hits = f"{stats['prefix_hits']}/{stats['prefix_queries']} prompt tokens cached" if caching else ""
            print(f"  {label} system: {args.requests * args.new / seconds:8.1f} generated tok/s, {seconds:7.2f} s; "
                  f"ttft {ms(ttfts)}  {hits}")
            print(f"  {label} chat:   {chat_seconds:7.2f} s; ttft of later turns {ms(chat_ttfts)}")
        off, on = results[False], results[True]
        same = sum(a == b for a, b in zip(off[2], on[2]))
        print(f"  cache on / off: throughput {off[0] / on[0]:5.2f}x, mean ttft {statistics.mean(off[1]) / statistics.mean(on[1]):5.2f}x "
              f"lower; greedy tokens equal for {same}/{len(prompts)} requests")
        if name == "dense" and not args.no_transformers:
            got, why = transformers_system(ckpt, prompts, args.new, args.threads)
            print(f"  # {why}")
            if got:
                s, toks = got
                agree = sum(a == b for a, b in zip(on[2], toks))
                print(f"  transformers generate_batch system: {args.requests * args.new / s:8.1f} generated tok/s, "
                      f"{s:7.2f} s; cbc (cache on) {s / on[0]:5.2f}x faster; greedy tokens agree for "
                      f"{agree}/{len(prompts)} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
