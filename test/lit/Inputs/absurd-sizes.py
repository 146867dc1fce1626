"""Compiles fixture configs with one size (or a few) set far beyond runtime/schema/limits.h and
checks that each is refused as a bad config: status 2, exactly one line on stderr naming the key
(`<sizes>` where only the product of several sizes is too large), nothing on stdout, no artefact
and no std::bad_alloc.

    python3 absurd-sizes.py CBC FIXTURES CASES WORKDIR

CASES has one case a line: `family key value` sets `key` (a.b for a nested key) and expects it
named; `family <sizes> key=value ...` sets several and expects the product refused. Prints one
line per failing case and exits 1 if any fails.
"""
import concurrent.futures
import json
import os
import subprocess
import sys

cbc, fixtures, cases_path, work = sys.argv[1:]
os.makedirs(work, exist_ok=True)


def set_key(cfg, path, value):
    *parents, leaf = path.split(".")
    node = cfg
    for p in parents:
        node = node[p]
    node[leaf] = value


def run(n, line):
    family, expect, *rest = line.split()
    cfg = json.load(open(os.path.join(fixtures, family, "config.json")))
    edits = [(expect, int(rest[0]))] if expect != "<sizes>" else [
        (e.split("=")[0], int(e.split("=")[1])) for e in rest]
    for key, value in edits:
        set_key(cfg, key, value)
    src, out = os.path.join(work, f"case{n}.json"), os.path.join(work, f"case{n}.fb")
    json.dump(cfg, open(src, "w"))
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([cbc, "compile", src, "-o", out, "--no-cuda"], capture_output=True, text=True, timeout=120)
    err = p.stderr.splitlines()
    problems = []
    if p.returncode != 2:
        problems.append(f"exit {p.returncode}")
    if len(err) != 1 or f"config key '{expect}'" not in p.stderr:
        problems.append("stderr does not name the key in one line")
    if "bad_alloc" in p.stderr or p.stdout:
        problems.append("bad_alloc or stdout output")
    if os.path.exists(out):
        problems.append("an artefact was written")
    return f"FAIL {line}: {', '.join(problems)}: {p.stderr.strip()[:300]}" if problems else None


lines = [l.strip() for l in open(cases_path) if l.strip() and not l.startswith("#")]
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    failures = [f for f in pool.map(run, range(len(lines)), lines) if f]
for f in failures:
    print(f)
print(f"{len(lines) - len(failures)} of {len(lines)} cases refused as expected")
sys.exit(1 if failures else 0)
