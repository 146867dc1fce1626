"""Checks that every diagnostic the dialect's verifiers can emit has an expected-error case.

  python3 verifier-coverage.py SOURCE.cpp... -- FILE.mlir...

Collects the first string literal of every `emitOpError("...")` and `emitError() << "..."` in
the sources (the part before any streamed value), and every `return "...";` (the shape rules of
runtime/schema/shape_rules.h, which the verifiers emit), and counts it covered when some
`expected-error {{...}}` in the files contains it. Prints one line per message and exits 1 if
any message has no case.
"""
import re
import sys

args = sys.argv[1:]
split = args.index("--")
expected = []
for path in args[split + 1:]:
    expected += re.findall(r"expected-error @[+-]?\d* \{\{(.*?)\}\}", open(path).read())

LITERALS = r'((?:\s*"(?:[^"\\]|\\.)*")+)'
missing = total = 0
for path in args[:split]:
    src = open(path).read()
    found = re.findall(r'emitOpError\(' + LITERALS, src) + re.findall(r'emitError\(\)\s*<<' + LITERALS, src)
    found += re.findall(r'return' + LITERALS + r'\s*;', src)
    for literal in found:
        msg = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', literal)).replace('\\"', '"')
        n = sum(msg in e for e in expected)
        total += 1
        print(f"{'covered' if n else 'NOT COVERED'} ({n}) {msg}")
        missing += n == 0
print(f"{total} messages, {missing} not covered")
sys.exit(1 if missing or total == 0 else 0)
