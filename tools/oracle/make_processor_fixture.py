#!/usr/bin/env python3
"""Write the logits-processing oracle: test/parity/processors/llama.json.

transformers' own logits processors decide greedy tokens on the llama parity fixture (its committed
config.json and bf16 model.safetensors, loaded in float32, eager attention), for the request fields cbc
maps onto them:

  logit_bias          -> SequenceBiasLogitsProcessor (one-token sequences)
  repetition_penalty  -> RepetitionPenaltyLogitsProcessor (prompt and output tokens)
  bad_words           -> NoBadWordsLogitsProcessor (bad_words_ids: one-token and longer sequences)
  min_tokens          -> MinNewTokensLengthLogitsProcessor (the eos ids held back)

Each case is `generate(do_sample=False, max_new_tokens=N, ...)` on one prompt; the file records the
prompt, the request fields as cbc's `cbc run` spells them and transformers' tokens. Each case's tokens must
differ from plain greedy decoding (else the case tests nothing): the script asserts it. presence_penalty and
frequency_penalty have no transformers processor and are checked against their definition instead
(test/unit/logits_process_test.cpp).

Usage:
  python tools/oracle/make_processor_fixture.py            # writes the file
  python tools/oracle/make_processor_fixture.py --check    # regenerates and compares
"""
import argparse
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "test", "parity", "fixtures", "llama")
OUT = os.path.join(ROOT, "test", "parity", "processors", "llama.json")

PROMPTS = [[17, 200, 45, 45, 3, 99, 120, 7], [5, 9, 250, 31, 31, 31, 64, 88, 12, 140, 6, 77, 201]]
NEW_TOKENS = 12
EOS = 2
# The request fields of each case (cbc's spelling).
CASES = [
    {"repetition_penalty": 1.8},
    {"repetition_penalty": 0.6},
    {"logit_bias": {"45": 3.5, "31": -4.0, "120": 2.5}},
    {"logit_bias": {str(EOS): 60.0}, "min_tokens": 5},
    {"repetition_penalty": 1.5, "logit_bias": {"7": 2.0, "99": -1.5}},
    {"bad_words": [[10], [94, 45]]},
    {"bad_words": [[242, 58], [171, 94], [58, 176, 229]]},
]


def generate_kwargs(case):
    kw = {}
    if "repetition_penalty" in case:
        kw["repetition_penalty"] = case["repetition_penalty"]
    if "logit_bias" in case:
        kw["sequence_bias"] = {(int(k),): float(v) for k, v in case["logit_bias"].items()}
    if "min_tokens" in case:
        kw["min_new_tokens"] = case["min_tokens"]
    if "bad_words" in case:
        kw["bad_words_ids"] = case["bad_words"]
    return kw


def greedy(model, prompt, **kw):
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=NEW_TOKENS,
                         eos_token_id=EOS, pad_token_id=0, **kw)
    tokens = [int(t) for t in out[0, len(prompt):]]
    return tokens


def build():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(FIXTURE, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    cases = []
    with torch.no_grad():
        plain = [greedy(model, p) for p in PROMPTS]
        for case in CASES:
            for i, prompt in enumerate(PROMPTS):
                tokens = greedy(model, prompt, **generate_kwargs(case))
                assert tokens != plain[i], f"case {case} prompt {i} changes nothing: {tokens}"
                cases.append({"prompt": prompt, "fields": case, "max_new_tokens": NEW_TOKENS, "tokens": tokens})
    import transformers

    return {
        "about": "greedy tokens of transformers' logits processors on the llama parity fixture "
        "(tools/oracle/make_processor_fixture.py)",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0]},
        "eos_token_id": EOS,
        "plain": [{"prompt": p, "tokens": t} for p, t in zip(PROMPTS, plain)],
        "cases": cases,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regenerate and compare with the committed file")
    args = ap.parse_args()
    text = json.dumps(build(), indent=1) + "\n"
    if args.check:
        same = open(OUT).read() == text
        print("processor fixture " + ("identical" if same else "DIFFERS"))
        return 0 if same else 1
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    open(OUT, "w").write(text)
    print("wrote", OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
