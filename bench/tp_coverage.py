#!/usr/bin/env python3
"""How much of each model `cbc compile --tp N` divides: one rank's weight elements over the
whole model's, per parity fixture (and the published configs given with --published). 1/N is
every weight divided; 1.0 is nothing divided (the layer kinds the shard passes do not know yet
stay whole on every rank, which is correct but costs memory). Prints a table and a summary.

    python3 bench/tp_coverage.py [--cbc build/bin/cbc] [--tp 2] [--ep] [--published]
"""
import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHAPE = re.compile(r"^\S+\s+\S+\s+\[([0-9x]*)\]\s+(?:.*?slice\(dim \d+ of \[([0-9x]*)\])?")


def elems(text):
    n = 1
    for d in text.split("x") if text else []:
        n *= int(d)
    return n


def coverage(cbc, config, tp, ep, out):
    cmd = [cbc, "compile", str(config), "--tp", str(tp), "--quiet", "-o", out]
    if ep:
        cmd += ["--ep", str(tp)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "compile failed"
    dump = subprocess.run([cbc, "dump", out, "--weights"], capture_output=True, text=True, check=True).stdout
    rank = whole = 0
    for line in dump.splitlines():
        m = SHAPE.match(line)
        if not m or "<-" not in line:
            continue
        rank += elems(m.group(1))
        whole += elems(m.group(2) if m.group(2) is not None else m.group(1))
    return rank / whole, None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cbc", default=str(ROOT / "build" / "bin" / "cbc"))
    p.add_argument("--tp", type=int, default=2)
    p.add_argument("--ep", action="store_true", help="divide MoE layers by experts (--ep N)")
    p.add_argument("--published", action="store_true", help="the published configs instead of the fixtures")
    a = p.parse_args()
    if a.published:
        configs = sorted((ROOT / "test" / "configs" / "published").glob("*.json"))
    else:
        configs = sorted((ROOT / "test" / "parity" / "fixtures").glob("*/config.json"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in configs:
            name = c.stem if a.published else c.parent.name
            share, why = coverage(a.cbc, c, a.tp, a.ep, f"{tmp}/m.fb")
            rows.append((name, share, why))
            print(f"{name:32s} " + (f"{share:6.3f}" if share is not None else f"  -    {why}"), flush=True)
    done = [s for _, s, _ in rows if s is not None]
    ideal = 1.0 / a.tp
    print(f"\n--tp {a.tp}{' --ep' if a.ep else ''}: {len(done)} of {len(rows)} compile; one rank holds "
          f"{sum(done) / max(1, len(done)):.3f} of the weights on average (ideal {ideal:.3f}); "
          f"{sum(1 for s in done if s <= ideal * 1.15)} within 15% of ideal, "
          f"{sum(1 for s in done if s >= 0.999)} not divided at all")


if __name__ == "__main__":
    sys.exit(main())
