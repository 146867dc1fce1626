"""The CPU benchmarks' shared pieces (bench/cpu_roofline.py, bench/cpu_vs_transformers.py): the
issue's Llama-shaped model (hidden 1024, 16 layers, GQA 16/4, vocab 32000), its two workloads,
a random bf16 checkpoint written without numpy or torch, and running `cbc run` on them.

Standard library only, so the cbc side runs on any machine that builds cbc."""

import json
import os
import random
import re
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "test", "configs", "bench", "llama-1024h-16layers.json")

# batch-1 decode: one 32-token prompt, 128 new tokens; batch: 64 requests with prompts of
# 32 to 256 tokens, 64 new tokens each. Greedy, EOS ignored. Fixed seeds: every run is the same.
WORKLOADS = {"decode": (1, 32, 32, 128), "batch": (64, 32, 256, 64)}


def prompts(workload, vocab):
    n, lo, hi, _ = WORKLOADS[workload]
    r = random.Random(1234 + len(workload))
    return [[r.randrange(3, vocab) for _ in range(r.randint(lo, hi))] for _ in range(n)]


def new_tokens(workload):
    return WORKLOADS[workload][3]


def write_prompts(path, workload, vocab):
    with open(path, "w") as f:
        for p in prompts(workload, vocab):
            f.write(json.dumps({"prompt": p, "max_new_tokens": new_tokens(workload), "ignore_eos": True}) + "\n")


def load_config():
    with open(CONFIG) as f:
        return json.load(f)


def _tensors(c):
    """(name, shape) of every tensor of the Llama checkpoint, in the transformers naming."""
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    d = c.get("head_dim", h // c["num_attention_heads"])
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    out = [("model.embed_tokens.weight", [v, h])]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", [h]), (p + "post_attention_layernorm.weight", [h]),
                (p + "self_attn.q_proj.weight", [q, h]), (p + "self_attn.k_proj.weight", [kv, h]),
                (p + "self_attn.v_proj.weight", [kv, h]), (p + "self_attn.o_proj.weight", [h, q]),
                (p + "mlp.gate_proj.weight", [i, h]), (p + "mlp.up_proj.weight", [i, h]),
                (p + "mlp.down_proj.weight", [h, i])]
    return out + [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]


def write_checkpoint(directory, seed=0):
    """A random bf16 safetensors checkpoint beside config.json; kept when already written.

    Random bytes with each value's sign and exponent byte mapped into +-[2^-7, 2^-3) keep every
    weight finite and small (about the scale of a trained model's init) at C speed: the mantissa
    byte stays random, the high byte keeps its sign bit and takes exponent 120-123. Norms are 1."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.safetensors")
    c = load_config()
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    if os.path.exists(path):
        return path
    high = bytes((b & 0x80) | 0x3C | ((b >> 1) & 0x01) for b in range(256))
    header, offset = {}, 0
    tensors = _tensors(c)
    for name, shape in tensors:
        n = 2
        for s in shape:
            n *= s
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    r = random.Random(seed)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for name, shape in tensors:
            n = 1
            for s in shape:
                n *= s
            if len(shape) == 1:
                f.write(b"\x80\x3f" * n)  # 1.0
                continue
            # In pieces of at most 64 MiB: randbytes cannot draw 2^28 bytes at once (an 8B model's
            # embedding is 1 GB), and smaller tensors get the bytes one draw gives.
            for start in range(0, 2 * n, 1 << 26):
                data = bytearray(r.randbytes(min(1 << 26, 2 * n - start)))
                data[1::2] = data[1::2].translate(high)
                f.write(data)
    os.replace(path + ".tmp", path)
    return path


SUMMARY = re.compile(r"cbc run: (\d+) requests \((\d+) rejected\), (\d+) prompt tokens, (\d+) generated tokens "
                     r"in ([0-9.]+) s: .*?(\d+) steps, (\d+) preemptions")


def cbc_run(cbc, artefact, prompts_path, out_path, threads, weights=None, extra=(), launcher=()):
    """Runs `cbc run` (under `launcher`, e.g. mpiexec -n 2) and returns its summary figures, its
    peak resident memory and the tokens of each request."""
    cmd = list(launcher) + [cbc, "run", artefact, "--prompts", prompts_path, "-o", out_path, "--backend", "cpu",
           "--threads", str(threads)] + (["--weights", weights] if weights else ["--random-weights"]) + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    stderr = p.stderr
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {stderr[-2000:]}")
    m = SUMMARY.search(stderr)
    if not m:
        raise RuntimeError("no summary line in cbc run's output: " + stderr[-2000:])
    chosen = re.search(r"cache memory (\d+) MiB.*?, (\d+) tokens a step", stderr)
    # cbc's own peak (VmHWM): a forked child's ru_maxrss would count this process's memory too.
    rss = re.search(r"peak RSS (\d+) MB", stderr)
    tokens = {}
    with open(out_path) as f:
        for line in f:
            r = json.loads(line)
            tokens[r["index"]] = r["tokens"]
    return {"requests": int(m[1]), "prompt_tokens": int(m[3]), "generated": int(m[4]), "seconds": float(m[5]),
            "steps": int(m[6]), "preemptions": int(m[7]), "peak_rss_mb": int(rss[1]) if rss else None,
            "cache_mib": int(chosen[1]) if chosen else None, "step_tokens": int(chosen[2]) if chosen else None,
            "tokens": [tokens[i] for i in sorted(tokens)]}


def compile_artefact(cbc, out, extra=()):
    subprocess.run([cbc, "compile", CONFIG, "-o", out, "--no-cuda", "--quiet"] + list(extra), check=True)
    return out


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
