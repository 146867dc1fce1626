#!/usr/bin/env python3
"""transformers' greedy continuations of the trained example model, as a committed fixture.

    PY=build/oracle-venv/bin/python        # torch + transformers==5.23.0 (see README.md)
    $PY tools/oracle/make_example_fixture.py [--model examples/kjv-llama] [--check]

Loads the bf16 checkpoint in float32 with eager attention (the CPU backend computes in float32
from the same bf16 weights), encodes each prompt with the model's tokenizer (<|bos|> first),
and runs `generate` greedily: stopping at <|eos|> or after --max-new-tokens. Per step it records
the gap between the best and the second-best logit, so a test that compares tokens exactly is
known not to sit on a near tie. It also runs transformers' continuous-batching `generate_batch`
on the same prompts and records its tokens; the script fails if the two disagree.

Writes MODEL/transformers_greedy.json; `lit test/lit/example/kjv-greedy.test` checks that
`cbc run` gives the same tokens.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PROMPTS = [
    "In the beginning",
    "And the LORD said unto Moses,",
    "Blessed are the",
    "The LORD is my shepherd;",
    "And Jesus answered and said unto them,",
    "For God so loved the world,",
]


def greedy(model, tok, prompt: str, max_new: int) -> dict:
    import torch

    ids = tok(prompt).input_ids
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=max_new,
                             output_logits=True, return_dict_in_generate=True)
    new = out.sequences[0, len(ids):].tolist()
    margins, logprobs = [], []
    for token, step_logits in zip(new, out.logits):
        row = step_logits[0].float()
        top = torch.topk(row, 2).values
        margins.append(float(top[0] - top[1]))
        logprobs.append(float(torch.log_softmax(row, -1)[token]))
    return {"prompt": prompt, "prompt_ids": ids, "tokens": new,
            "text": tok.decode(new, skip_special_tokens=True),
            "finish_reason": "eos" if new and new[-1] == tok.eos_token_id else "length",
            "min_margin": round(min(margins), 4), "margins": [round(m, 4) for m in margins],
            "logprobs": [round(l, 6) for l in logprobs]}


def batch(model, prompt_ids: list[list[int]], max_new: int) -> list[list[int]]:
    from transformers import GenerationConfig

    cfg = GenerationConfig(do_sample=False, max_new_tokens=max_new, eos_token_id=model.config.eos_token_id,
                           pad_token_id=model.config.pad_token_id)
    res = model.generate_batch(prompt_ids, generation_config=cfg)
    return [list(res[f"req_{i}"].generated_tokens) for i in range(len(prompt_ids))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="examples/kjv-llama")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--check", action="store_true", help="compare with the committed fixture, write nothing")
    args = ap.parse_args()

    import torch
    import transformers
    from transformers import AutoTokenizer, LlamaForCausalLM

    if transformers.__version__ != "5.23.0":
        sys.exit(f"make_example_fixture: needs transformers 5.23.0, found {transformers.__version__}")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    model_dir = Path(args.model)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    model.eval()

    cases = [greedy(model, tok, p, args.max_new_tokens) for p in PROMPTS]
    batched = batch(model, [c["prompt_ids"] for c in cases], args.max_new_tokens)
    for c, b in zip(cases, batched):
        if b != c["tokens"]:
            sys.exit(f"make_example_fixture: generate_batch gave {b} for {c['prompt']!r}, generate {c['tokens']}")
        c["generate_batch_tokens"] = b
    fixture = {
        "what": "transformers' greedy continuations of this model: generate (do_sample=False) and "
                "generate_batch agree token for token; margins are the best minus the second-best "
                "logit at each generated step, logprobs the log-softmax of the chosen token",
        "model": str(model_dir), "dtype": "float32 (from the bf16 checkpoint)", "attention": "eager",
        "max_new_tokens": args.max_new_tokens, "eos_token_id": tok.eos_token_id,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "min_margin": min(c["min_margin"] for c in cases),
        "cases": cases,
    }
    text = json.dumps(fixture, indent=1, ensure_ascii=False) + "\n"
    path = model_dir / "transformers_greedy.json"
    if args.check:
        old = json.loads(path.read_text())
        same = [o["tokens"] for o in old["cases"]] == [c["tokens"] for c in cases]
        print("tokens match the committed fixture" if same else "tokens DIFFER from the committed fixture")
        return 0 if same else 1
    path.write_text(text)
    for c in cases:
        print(f"{c['prompt']!r} -> {c['text']!r}  ({len(c['tokens'])} tokens, {c['finish_reason']}, "
              f"min margin {c['min_margin']})")
    print(f"wrote {path}; smallest margin {fixture['min_margin']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
