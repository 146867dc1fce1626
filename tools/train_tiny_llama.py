#!/usr/bin/env python3
"""Train the small llama-architecture model shipped in examples/kjv-llama/ on the CPU.

The text is the King James Bible as Debian's bible-kjv-text package ships it (public domain),
dumped verse by verse with the `bible` program of the bible-kjv package:

    apt-get install -y bible-kjv
    PY=/path/to/venv/bin/python      # torch (CPU is enough), transformers==5.23.0, tokenizers
    $PY tools/train_tiny_llama.py --out examples/kjv-llama

Steps: (1) a byte-level BPE tokenizer (tokenizers, 2048 entries, <|pad|> <|bos|> <|eos|> plus
ChatML's <|im_start|> <|im_end|>), saved as tokenizer.json and a tokenizer_config.json that
transformers' AutoTokenizer loads; (2) a LlamaForCausalLM of about 3.4M parameters trained with
fixed seeds on a few CPU threads for a few minutes; (3) config.json, generation_config.json and
model.safetensors (bf16) written with save_pretrained, and SOURCE.md's figures printed.

Each training row is <|bos|> followed by whole verses from a random verse on, every verse ended
by <|eos|>, so a prompt that starts a verse (after <|bos|>) is continued to the verse's end and
then stops. The last 2% of verses (the end of Revelation) are held out for the validation loss.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

SPECIALS = ["<|pad|>", "<|bos|>", "<|eos|>", "<|im_start|>", "<|im_end|>"]
PAD, BOS, EOS = 0, 1, 2

# ChatML: each message as <|im_start|>role\ncontent<|im_end|>\n, the reply opened by the
# generation prompt. The model was trained on plain verses, not on chats: this only gives the
# text API a template to render.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# "Ge1:1 In the beginning ..." -> the verse text; `bible -f` prefixes every verse with its reference.
REFERENCE = re.compile(r"^\S+?\d+:\d+ ")


def read_verses(text_file: str | None) -> tuple[list[str], str]:
    """The KJV verses in canonical order, and the SHA-256 of the raw dump they came from."""
    if text_file:
        raw = Path(text_file).read_bytes()
    else:
        try:
            raw = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], check=True,
                                 capture_output=True, stdin=subprocess.DEVNULL).stdout
        except FileNotFoundError:
            sys.exit("train_tiny_llama: the `bible` program is missing: apt-get install -y bible-kjv")
    verses = []
    for line in raw.decode("utf-8").splitlines():
        m = REFERENCE.match(line)
        if not m:
            sys.exit(f"train_tiny_llama: unexpected line in the dump: {line[:60]!r}")
        verses.append(line[m.end():].strip())
    return verses, hashlib.sha256(raw).hexdigest()


def train_tokenizer(verses: list[str], vocab: int, out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(verses, trainer)
    # encode() puts <|bos|> in front, as Llama's tokenizers do, so text in = what training saw.
    tok.post_processor = processors.TemplateProcessing(
        single="<|bos|> $A", pair="<|bos|> $A <|bos|> $B", special_tokens=[("<|bos|>", BOS)])
    assert [tok.token_to_id(s) for s in SPECIALS] == list(range(len(SPECIALS)))
    tok.save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|bos|>", "eos_token": "<|eos|>", "pad_token": "<|pad|>",
        "add_bos_token": True, "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 512,
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return tok


def encode_verses(tok, verses: list[str]) -> list[list[int]]:
    """Each verse's ids without <|bos|>, ended by <|eos|>."""
    encs = tok.encode_batch(verses, add_special_tokens=False)
    return [e.ids + [EOS] for e in encs]


def make_batch(rng: random.Random, stream: list[int], starts: list[int], batch: int, seq: int):
    """`batch` rows of <|bos|> + seq tokens, each from a random verse start."""
    import torch

    rows = []
    for _ in range(batch):
        s = starts[rng.randrange(len(starts))]
        chunk = stream[s:s + seq]
        chunk = chunk + [PAD] * (seq - len(chunk))
        rows.append([BOS] + chunk)
    x = torch.tensor(rows, dtype=torch.long)
    labels = x.clone()
    labels[x == PAD] = -100
    return x, labels


def flatten(encoded: list[list[int]]) -> tuple[list[int], list[int]]:
    stream, starts = [], []
    for ids in encoded:
        starts.append(len(stream))
        stream.extend(ids)
    return stream, starts


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def build_model(args):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=args.vocab, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=512,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True, hidden_act="silu",
        bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, attention_bias=False,
        mlp_bias=False, initializer_range=0.02)
    config._attn_implementation = "sdpa"  # training only; same math as eager
    return LlamaForCausalLM(config)


def evaluate(model, rng, stream, starts, args, batches: int) -> float:
    import torch

    model.eval()
    total = 0.0
    with torch.no_grad():
        for _ in range(batches):
            x, labels = make_batch(rng, stream, starts, args.batch, args.seq)
            total += model(input_ids=x, labels=labels).loss.item()
    model.train()
    return total / batches


def train(model, train_data, val_data, args) -> dict:
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    rng = random.Random(args.seed)
    t0 = time.time()
    losses = []
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, args.warmup)
        x, labels = make_batch(rng, *train_data, args.batch, args.seq)
        loss = model(input_ids=x, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == args.steps - 1:
            recent = sum(losses[-10:]) / len(losses[-10:])
            print(f"step {step:4d}/{args.steps}  loss {recent:.3f}  lr {opt.param_groups[0]['lr']:.2e}"
                  f"  {time.time() - t0:.0f}s", flush=True)
    train_s = time.time() - t0
    val = evaluate(model, random.Random(args.seed + 1), *val_data, args, batches=8)
    return {"train_seconds": round(train_s, 1), "final_train_loss": round(sum(losses[-20:]) / len(losses[-20:]), 3),
            "val_loss": round(val, 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="examples/kjv-llama")
    ap.add_argument("--text-file", help="a saved `bible -f gen1:1-rev22:21` dump instead of running bible")
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--batch", type=int, default=24)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    # Threads sleep between parallel regions instead of spinning: on a machine whose cores are
    # also busy with other work, spinning OpenMP threads made each step five times slower.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    verses, sha = read_verses(args.text_file)
    tok = train_tokenizer(verses, args.vocab, out)
    split = int(len(verses) * 0.98)
    train_data = flatten(encode_verses(tok, verses[:split]))
    val_data = flatten(encode_verses(tok, verses[split:]))
    print(f"{len(verses)} verses (sha256 of the dump {sha}), {len(train_data[0])} training tokens, "
          f"{len(val_data[0])} held out", flush=True)

    model = build_model(args)
    params = sum(p.numel() for p in model.parameters())
    print(f"LlamaForCausalLM with {params} parameters", flush=True)
    stats = train(model, train_data, val_data, args)

    model.to(torch.bfloat16)
    model.generation_config.do_sample = False
    model.generation_config.max_new_tokens = 64
    model.save_pretrained(out)
    stats.update(parameters=params, training_tokens=len(train_data[0]), dump_sha256=sha,
                 torch=torch.__version__, transformers=transformers.__version__,
                 args=vars(args))
    (out / "training.json").write_text(json.dumps(stats, indent=2) + "\n")
    print(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
