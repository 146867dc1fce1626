"""Checks that every emitOpError message of the named verifiers has an expected-error case.

  python3 verifier-coverage.py CbcOps.cpp OP=FUNCTION... -- FILE.mlir...

OP is the op name as diagnostics print it (cbc.state.scan), FUNCTION the verifier's name in
CbcOps.cpp (StateScanOp::verifySsd). A message counts as covered when some
`expected-error @+1 {{'OP' op MESSAGE...}}` in the files starts with the message's first string
literal (the part before any streamed value). Prints one line per message and exits 1 if any
has no case.
"""
import re
import sys

args = sys.argv[1:]
split = args.index("--")
src = open(args[0]).read()
verifiers = [a.split("=", 1) for a in args[1:split]]
expected = []
for path in args[split + 1:]:
    expected += re.findall(r"expected-error @[+-]?\d* \{\{(.*?)\}\}", open(path).read())

missing = 0
for op, function in verifiers:
    start = src.find(f"LogicalResult {function}()")
    if start < 0:
        print(f"MISSING VERIFIER {function}")
        missing += 1
        continue
    body = src[start:src.index("\n}\n", start)]
    messages = ["".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
                for m in re.finditer(r'emitOpError\(((?:\s*"(?:[^"\\]|\\.)*")+)', body)]
    if not messages:
        print(f"NO MESSAGES IN {function}")
        missing += 1
    for msg in messages:
        prefix = f"'{op}' op {msg}"
        n = sum(e.startswith(prefix) for e in expected)
        print(f"{'covered' if n else 'NOT COVERED'} ({n}) {function}: {msg}")
        missing += n == 0
sys.exit(1 if missing else 0)
