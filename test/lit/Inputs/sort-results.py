# Reads `cbc run` output (results in completion order) and prints the result lines sorted by
# "index" (then "sequence"), keys sorted, so that a test can check them in input order. Token lines (--stream)
# are dropped.
import json
import sys

rows = [json.loads(l) for l in sys.stdin if l.strip()]
results = sorted((r for r in rows if "finish_reason" in r), key=lambda r: (r["index"], r.get("sequence", 0)))
for r in results:
    for volatile in ("ttft_ms", "latency_ms"):
        r.pop(volatile, None)
    print(json.dumps(r, sort_keys=True))
