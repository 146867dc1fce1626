# Reads a transformers greedy fixture (tools/oracle/make_example_fixture.py writes one) and
#   prompts FIXTURE            prints its prompts as `cbc run` JSONL lines, in fixture order
#   compare FIXTURE RESULTS    checks `cbc run`'s results (any completion order) against it:
#                              the same tokens and finish reason for every case, or exit 1
#                              naming the first case that differs and where; where the
#                              results carry logprobs (--logprobs), each within LOGPROB_ATOL
import json
import sys

# float32 on both sides from the same bf16 weights; measured differences are about 1e-6.
LOGPROB_ATOL = 1e-4


def load(path):
    with open(path) as f:
        fixture = json.load(f)
    if not fixture["cases"]:
        sys.exit(f"{path}: no cases")
    return fixture


def prompts(fixture):
    for case in fixture["cases"]:
        print(json.dumps({"prompt": case["prompt_ids"], "max_new_tokens": fixture["max_new_tokens"]}))


def compare(fixture, results_path):
    with open(results_path) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    results = {r["index"]: r for r in rows if "finish_reason" in r}
    cases = fixture["cases"]
    if sorted(results) != list(range(len(cases))):
        sys.exit(f"expected results for indices 0..{len(cases) - 1}, got {sorted(results)}")
    for i, case in enumerate(cases):
        got, want = results[i]["tokens"], case["tokens"]
        if got != want:
            at = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            sys.exit(f"case {i} ({case['prompt']!r}): cbc {got} vs transformers {want}, first difference at "
                     f"token {at} (transformers' margin there: {case['margins'][min(at, len(want) - 1)]})")
        if results[i]["finish_reason"] != case["finish_reason"]:
            sys.exit(f"case {i}: finish_reason {results[i]['finish_reason']} vs {case['finish_reason']}")
    worst = check_logprobs(cases, results)
    tokens = sum(len(c["tokens"]) for c in cases)
    print(f"{len(cases)} of {len(cases)} continuations equal transformers' ({tokens} tokens)"
          + ("" if worst is None else f"; logprobs within {LOGPROB_ATOL}"))


def check_logprobs(cases, results):
    """The largest logprob difference, or None when the results carry none."""
    if not all("logprobs" in results[i] for i in range(len(cases))):
        return None
    worst = 0.0
    for i, case in enumerate(cases):
        for k, (a, b) in enumerate(zip(results[i]["logprobs"], case["logprobs"])):
            if abs(a - b) > LOGPROB_ATOL:
                sys.exit(f"case {i} token {k}: cbc logprob {a} vs transformers {b}")
            worst = max(worst, abs(a - b))
    return worst


if __name__ == "__main__":
    fx = load(sys.argv[2])
    if sys.argv[1] == "prompts":
        prompts(fx)
    elif sys.argv[1] == "compare":
        compare(fx, sys.argv[3])
    else:
        sys.exit(f"unknown mode {sys.argv[1]}")
