#!/usr/bin/env python3
"""Roofline model of a cbc step on an H200, from the artefact's own step program.

For each instruction of the step (`cbc dump --launches`: the values with their device dtypes,
the instructions with their parameters, the launch table, the cache plan) it counts the bytes
that must cross HBM and the FLOPs, and predicts its time as max(bytes / 4.8 TB/s, FLOPs / peak)
with the peak of the unit its kernel runs on: 989 TFLOP/s for bf16 tensor-core work (cuBLASLt
GEMMs, expert GEMMs, prefill attention, chunked scans), 67 TFLOP/s for fp32 CUDA-core work
(everything else). The step's predicted time is the sum (kernels run one after another; launch
gaps and the device argmax the runtime adds are not modelled). Identical instructions (one per
layer) print as one row with their count.

What is counted (the minimum traffic, each byte once):
  * weights: read once per step, whole, except the embedding (the step's rows only) and routed
    experts (those the step's tokens touch: under uniform routing of T tokens choosing k of E
    experts, an expert is untouched with probability (1 - k/E)^T, so E * (1 - (1 - k/E)^T)
    experts are read); the experts' FLOPs are 2 * T * k * (gate_up + down elements per expert);
    their intermediate rows (T*k*I in the down projection's dtype and T*k*H fp32, the moe_act
    and moe_out workspaces) are written and read once;
  * activations and step arguments: each input read and each output written once, rows as the
    step has them (tokens, or logit rows), in the value's device dtype;
  * attention: each request's cached rows read once (min(length, window) of them), all the
    layer's rows (k and v, or latent and rope key); FLOPs 4 * heads * head_dim per (query, key)
    pair, causal in prefill; latent attention 2 * heads * (2 * latent + rope) per pair;
  * cache appends: the step's new rows written once;
  * per-request states (gated delta, SSD, conv, ...): read and written once per request (fp32);
    the scans' FLOPs per token and head are 6 * dk * dv (gated delta) or 6 * P * N (SSD) in
    decode, and with 64-token chunks in prefill 2 * (64 * (3 dk + 2 dv) + 3 dk dv) or
    2 * (64 * (N + P) + 2 N P) on tensor cores;
  * anything else: its operands' bytes and 2 FLOPs per output element on CUDA cores.

Workloads: `decode:R:C` is one decode step of R requests that each have C tokens cached (the
step appends one and attends to C + 1); `prefill:P` is one request's P-token prompt in one step.
With --measured CSV (written by cbc-gpu-check --launch-times) the measured mean time of each
instruction's launches (CUDA events around each launch, outside graphs) prints beside the
prediction.

    bench/roofline.py [MODEL ...] [--workload decode:64:1024 ...] [--measured CSV] [--csv]

MODEL is a config.json (compiled with `cbc compile` into a temporary directory) or an artefact;
the default is the published Llama-3.1-8B and Qwen3-30B-A3B configs.
"""

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import OrderedDict
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = [os.path.join(ROOT, "test/configs/published", n) for n in ("llama-3.1-8b.json", "qwen3-30b-a3b.json")]
DEFAULT_WORKLOADS = ["decode:1:1024", "decode:64:1024", "decode:256:1024", "prefill:2048"]
PEAK = {"hbm": 4.8e12, "tensor": 989e12, "fp32": 67e12}
DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4}
SCAN_CHUNK = 64  # tokens per chunk of the chunked scans in prefill


@dataclass
class Workload:
    kind: str  # decode or prefill
    requests: int
    tokens: int
    context: int  # tokens cached per request before the step

    @staticmethod
    def parse(text):
        parts = text.split(":")
        try:
            if parts[0] == "decode" and len(parts) == 3:
                r, c = int(parts[1]), int(parts[2])
                if r >= 1 and c >= 0:
                    return Workload("decode", r, r, c)
            if parts[0] == "prefill" and len(parts) == 2 and int(parts[1]) >= 1:
                return Workload("prefill", 1, int(parts[1]), 0)
        except ValueError:
            pass
        raise ValueError(f"bad workload {text!r}: expected decode:REQUESTS:CONTEXT or prefill:TOKENS")

    @property
    def name(self):
        return f"decode-{self.requests}x{self.context}" if self.kind == "decode" else f"prefill-{self.tokens}"

    @property
    def logit_rows(self):
        return self.requests

    def describe(self):
        if self.kind == "decode":
            if self.requests == 1:
                return f"decode, 1 request with {self.context} cached tokens (1 token in the step)"
            return (f"decode, {self.requests} requests with {self.context} cached tokens each "
                    f"({self.tokens} tokens in the step)")
        return f"prefill of one {self.tokens}-token prompt in one step"

    def kv_rows(self, window):
        """Cached rows read, each once: per request its length after the step, within the window."""
        if self.kind == "decode":
            return self.requests * min(self.context + 1, window)
        return min(self.tokens, window)

    def pairs(self, window):
        """(query, key) pairs attended: causal, within the window."""
        if self.kind == "decode":
            return self.requests * min(self.context + 1, window)
        p, w = self.tokens, min(self.tokens, window)
        return w * (w + 1) // 2 + (p - w) * w


class Step:
    """The artefact's step program (cbc dump --launches) under one workload."""

    def __init__(self, doc, work):
        self.doc, self.w = doc, work
        self.values = doc["values"]
        self.layer_elems = {l["layer"]: l["elems_per_token"] for l in doc["cache"]["layers"]}
        self.kv_bytes = DTYPE_BYTES[doc["cache"]["kv_dtype"]]
        self.block = doc["cache"]["block_size"]
        self.states = {(s["layer"], s["name"]): s["bytes"] for s in doc["cache"]["states"]}
        self.windows = {}
        for g in doc["cache"]["groups"]:
            for layer in g["layers"]:
                self.windows[layer] = g["tokens"] if g["retention"] != "all" else math.inf

    def rows(self, v):
        w = self.w
        if v["kind"] == "argument":
            per = {"tokens": w.tokens, "positions": w.tokens, "seq_ids": w.tokens, "cu_seqlens": w.requests + 1,
                   "logit_rows": w.logit_rows}.get(v["arg"], w.requests)
            if v["arg"] == "block_tables":
                per = w.requests * math.ceil((w.context + w.tokens) / self.block)
            return per
        return w.tokens if v.get("rows") == "tokens" else w.logit_rows

    def elements(self, vid):
        v = self.values[vid]
        n = 1
        for d in v["shape"]:
            n *= d if d >= 0 else 1
        if v["kind"] == "argument":
            return self.rows(v)  # one int32 per row (block tables: per block)
        if any(d < 0 for d in v["shape"]):
            n *= self.rows(v)
        return n

    def nbytes(self, vid):
        return self.elements(vid) * DTYPE_BYTES[self.values[vid]["device_dtype"]]

    def window(self, layer):
        return self.windows.get(layer, math.inf)


def operand_bytes(step, ins, skip=()):
    return sum(step.nbytes(v) for v in ins["inputs"] + ins["outputs"] if v >= 0 and v not in skip)


def state_bytes(step, p):
    """A per-request state read and written once per request."""
    if "layer" in p and "state" in p:
        return 2 * step.states.get((p["layer"], p["state"]), 0) * step.w.requests
    return 0


def cost_linear(step, ins, p):
    x, w = ins["inputs"][0], ins["inputs"][1]
    n, k = step.values[w]["shape"]
    return operand_bytes(step, ins), 2 * step.elements(x) // k * n * k, "tensor"


def cost_embed(step, ins, p):
    table = ins["inputs"][1]
    rows = step.w.tokens * step.values[table]["shape"][1] * DTYPE_BYTES[step.values[table]["device_dtype"]]
    return operand_bytes(step, ins, skip={table}) + rows, 0, "fp32"


def attention_unit(step):
    return "tensor" if step.w.kind == "prefill" else "fp32"


def cost_attention(step, ins, p):
    layer = p["site"]["layer"]
    win = step.window(layer)
    kv = step.w.kv_rows(win) * step.layer_elems[layer] * step.kv_bytes
    flops = 4 * p["num_heads"] * p["head_dim"] * step.w.pairs(win)
    return operand_bytes(step, ins) + kv, flops, attention_unit(step)


def cost_latent_attention(step, ins, p):
    layer = p["site"]["layer"]
    win = step.window(layer)
    kv = step.w.kv_rows(win) * step.layer_elems[layer] * step.kv_bytes
    flops = 2 * p["num_heads"] * (2 * p["latent_dim"] + p["rope_dim"]) * step.w.pairs(win)
    return operand_bytes(step, ins) + kv, flops, attention_unit(step)


def cost_append(step, ins, p):
    layer = p["site"]["layer"] if "site" in p else p["layer"]
    written = step.w.tokens * step.layer_elems.get(layer, 0) * step.kv_bytes
    return operand_bytes(step, ins) + written, 2 * sum(step.elements(v) for v in ins["outputs"]), "fp32"


def expected_experts(E, k, tokens):
    """Experts touched by `tokens` tokens each choosing k of E uniformly: E (1 - (1 - k/E)^T)."""
    return E * (1.0 - (1.0 - k / E) ** tokens)


def cost_moe(step, ins, p):
    x, ids, _, gate_up, down = ins["inputs"][:5]
    biases = [v for v in ins["inputs"][5:] if v >= 0]
    E = step.values[gate_up]["shape"][0]
    k = step.values[ids]["shape"][-1]
    T = step.w.tokens
    per_expert = sum(step.nbytes(v) for v in [gate_up, down] + biases) / E
    weights = expected_experts(E, k, T) * per_expert
    elems = (math.prod(step.values[gate_up]["shape"]) + math.prod(step.values[down]["shape"])) // E
    inter = step.values[down]["shape"][2]  # I
    hidden = step.values[down]["shape"][1]  # H
    # The act rows in the down projection's dtype (what its GEMM reads), the out rows in fp32.
    act_bytes = DTYPE_BYTES[step.values[down]["device_dtype"]]
    scratch = 2 * T * k * (inter * act_bytes + hidden * 4)
    acts = operand_bytes(step, ins, skip={gate_up, down, *biases})
    return acts + weights + scratch, 2 * T * k * elems, "tensor"


def cost_gated_delta(step, ins, p):
    dk, dv, heads = p["k_dim"], p["v_dim"], p["num_v_heads"]
    if step.w.kind == "prefill":
        flops, unit = 2 * (SCAN_CHUNK * (3 * dk + 2 * dv) + 3 * dk * dv), "tensor"
    else:
        flops, unit = 6 * dk * dv, "fp32"
    return operand_bytes(step, ins) + state_bytes(step, p), step.w.tokens * heads * flops, unit


def cost_ssd(step, ins, p):
    P, N, heads = p["head_dim"], p["state_size"], p["num_heads"]
    if step.w.kind == "prefill":
        flops, unit = 2 * (SCAN_CHUNK * (N + P) + 2 * N * P), "tensor"
    else:
        flops, unit = 6 * P * N, "fp32"
    return operand_bytes(step, ins) + state_bytes(step, p), step.w.tokens * heads * flops, unit


def cost_head_linear(step, ins, p):
    x, w = ins["inputs"][0], ins["inputs"][1]
    macs = math.prod(step.values[w]["shape"]) * step.w.tokens
    return operand_bytes(step, ins), 2 * macs, "fp32"


def cost_generic(step, ins, p):
    return operand_bytes(step, ins) + state_bytes(step, p), 2 * sum(step.elements(v) for v in ins["outputs"]), "fp32"


COSTS = {
    "cbc.math.linear": cost_linear,
    "cbc.math.embed": cost_embed,
    "cbc.math.head_linear": cost_head_linear,
    "cbc.kv.attention": cost_attention,
    "cbc.kv.latent_attention": cost_latent_attention,
    "cbc.kv.append": cost_append,
    "cbc.kv.rope_append": cost_append,
    "cbc.kv.index_append": cost_append,
    "cbc.moe.experts": cost_moe,
    "cbc.state.gated_delta": cost_gated_delta,
    "cbc.state.ssd": cost_ssd,
}


def launches_of(doc):
    """Per instruction, its launches' kernel names (a cuBLASLt GEMM is "gemm")."""
    out = {}
    for i, l in enumerate(doc["launches"]):
        out.setdefault(l["instr"], []).append((i, l["kernel"] or "gemm"))
    return out


def what(step, ins, p):
    """The weights an instruction reads (layer numbers as *), and an attention layer's window."""
    names = []
    for v in ins["inputs"]:
        name = step.values[v].get("name") if v >= 0 else None
        if name:
            names.append(re.sub(r"(^|\.)layers\.[0-9]+\.", r"\1layers.*.", name))
    if "site" in p and step.window(p["site"]["layer"]) != math.inf:
        names.append(f"window {step.window(p['site']['layer'])}")
    return ", ".join(names)


def model(doc, work, measured=None):
    """Rows (one per group of identical instructions) and the step's totals."""
    step = Step(doc, work)
    launches = launches_of(doc)
    groups = OrderedDict()
    for i, ins in enumerate(doc["instrs"]):
        p = ins["params"]
        nbytes, flops, unit = COSTS.get(ins["op"], cost_generic)(step, ins, p)
        kernels = tuple(k for _, k in launches.get(i, []))
        t_mem, t_math = nbytes / PEAK["hbm"], flops / PEAK[unit]
        label = what(step, ins, p)
        key = (ins["op"], label, kernels, round(nbytes), round(flops), unit)
        g = groups.setdefault(key, {"op": ins["op"], "what": label, "kernels": kernels, "count": 0,
                                    "bytes": nbytes, "flops": flops,
                                    "unit": unit, "t_mem": t_mem, "t_math": t_math,
                                    "time": max(t_mem, t_math), "bound": "HBM" if t_mem >= t_math else unit,
                                    "instrs": [], "measured": []})
        g["count"] += 1
        g["instrs"].append(i)
        if measured is not None and i in measured:
            g["measured"].append(measured[i])
    rows = list(groups.values())
    total = sum(r["time"] * r["count"] for r in rows)
    for r in rows:
        r["share"] = r["time"] * r["count"] / total if total else 0
    return rows, total


def load_measured(path, doc):
    """workload name -> instruction -> measured seconds (the sum of its launches' means)."""
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            li = int(row["launch"])
            if li >= len(doc["launches"]):
                sys.exit(f"roofline: {path}: launch {li} beyond the artefact's {len(doc['launches'])} launches")
            want = doc["launches"][li]["kernel"] or "gemm"
            if row["kernel"] != want or int(row["instr"]) != doc["launches"][li]["instr"]:
                sys.exit(f"roofline: {path}: launch {li} is {row['kernel']} (instruction {row['instr']}) there, "
                         f"{want} (instruction {doc['launches'][li]['instr']}) in the artefact: another artefact?")
            per = out.setdefault(row["workload"], {})
            per[int(row["instr"])] = per.get(int(row["instr"]), 0.0) + float(row["mean_us"]) * 1e-6
    return out


def short_kernels(kernels):
    names = OrderedDict()
    for k in kernels:
        names[k] = names.get(k, 0) + 1
    return " ".join(k if n == 1 else f"{k}×{n}" for k, n in names.items()) or "-"


def step_summary(work, rows, total):
    """The step's totals: time, tokens/s, bytes, FLOPs, the share of time in HBM-bound rows."""
    hbm = sum(r["time"] * r["count"] for r in rows if r["bound"] == "HBM")
    return {"ms": total * 1e3, "rate": (work.requests if work.kind == "decode" else work.tokens) / total,
            "gb": sum(r["bytes"] * r["count"] for r in rows) / 1e9,
            "tflop": sum(r["flops"] * r["count"] for r in rows) / 1e12, "hbm": hbm / total}


def print_markdown(title, doc, work, rows, total, with_measured):
    print(f"#### {title}: {work.describe()}\n")
    head = "| count | op | weights | kernels | MB each | GFLOP each | unit | µs each | bound | µs all | share |"
    rule = "|---:|---|---|---|---:|---:|---|---:|---|---:|---:|"
    if with_measured:
        head += " measured µs each | measured / predicted |"
        rule += "---:|---:|"
    print(head)
    print(rule)
    for r in sorted(rows, key=lambda r: -r["time"] * r["count"]):
        line = (f"| {r['count']} | {r['op'].removeprefix('cbc.')} | {r['what']} | {short_kernels(r['kernels'])} | "
                f"{r['bytes'] / 1e6:.3f} | {r['flops'] / 1e9:.3f} | {r['unit']} | {r['time'] * 1e6:.2f} | "
                f"{r['bound']} | {r['time'] * r['count'] * 1e6:.1f} | {100 * r['share']:.1f}% |")
        if with_measured:
            m = sum(r["measured"]) / len(r["measured"]) if r["measured"] else None
            line += (f" {m * 1e6:.2f} | {m / r['time']:.2f} |" if m is not None and r["time"] > 0 else " - | - |")
        print(line)
    t = step_summary(work, rows, total)
    print(f"\npredicted step: {t['ms']:.3f} ms, {t['rate']:,.0f} tokens/s "
          f"({'decode: one token per request' if work.kind == 'decode' else 'prompt tokens'}); "
          f"{t['gb']:.3f} GB and {t['tflop']:.3f} TFLOP a step; "
          f"{100 * t['hbm']:.0f}% of the time in HBM-bound kernels")
    if with_measured:
        ms = [sum(r["measured"]) / len(r["measured"]) * r["count"] for r in rows if r["measured"]]
        if ms:
            print(f"measured step (sum of the launches' mean times): {sum(ms) * 1e3:.3f} ms")
    print()


def print_csv(writer, title, work, rows, total):
    for r in rows:
        m = sum(r["measured"]) / len(r["measured"]) if r["measured"] else ""
        writer.writerow([title, work.name, r["op"], r["what"].replace(", ", " "), short_kernels(r["kernels"]), r["count"],
                         " ".join(map(str, r["instrs"])),
                         round(r["bytes"]), round(r["flops"]), r["unit"], f"{r['time'] * 1e6:.4f}", r["bound"],
                         f"{m * 1e6:.4f}" if m != "" else ""])
    ms = [sum(r["measured"]) / len(r["measured"]) * r["count"] for r in rows if r["measured"]]
    writer.writerow([title, work.name, "step", "", "", "", "", "", "", "", f"{total * 1e6:.4f}", "",
                     f"{sum(ms) * 1e6:.4f}" if ms else ""])


def load_doc(path, cbc, cache):
    """The artefact's `cbc dump --launches`, compiling a config first."""
    with tempfile.TemporaryDirectory() as tmp:
        artefact = path
        if not path.endswith(".fb"):
            artefact = os.path.join(tmp, "model.fb")
            cmd = [cbc, "compile", path, "-o", artefact, "--quiet"] + (["--kernel-cache", cache] if cache else [])
            subprocess.run(cmd, check=True)
        out = subprocess.run([cbc, "dump", artefact, "--launches"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="config.json or artefact (.fb); default: Llama-3.1-8B and Qwen3-30B-A3B")
    ap.add_argument("--workload", action="append", help="decode:REQUESTS:CONTEXT or prefill:TOKENS (repeatable)")
    ap.add_argument("--measured", help="per-launch times from cbc-gpu-check (one model only)")
    ap.add_argument("--csv", action="store_true", help="one CSV row per instruction group, and one per step")
    ap.add_argument("--cbc", default=os.path.join(ROOT, "build/bin/cbc"))
    ap.add_argument("--kernel-cache", help="passed to cbc compile")
    args = ap.parse_args()
    models = args.models or DEFAULT_MODELS
    if args.measured and len(models) != 1:
        ap.error("--measured goes with exactly one MODEL")
    try:
        works = [Workload.parse(w) for w in (args.workload or DEFAULT_WORKLOADS)]
    except ValueError as e:
        ap.error(str(e))
    writer = csv.writer(sys.stdout, lineterminator="\n") if args.csv else None
    if writer:
        writer.writerow(["model", "workload", "op", "weights", "kernels", "count", "instrs", "bytes", "flops", "unit",
                         "predicted_us", "bound", "measured_us"])
    summary = []
    for path in models:
        doc = load_doc(path, args.cbc, args.kernel_cache)
        title = os.path.basename(path).removesuffix(".json").removesuffix(".fb")
        measured = load_measured(args.measured, doc) if args.measured else {}
        if not writer:
            print(f"### {title} ({doc['model_type']}, {doc['num_layers']} layers)\n")
        for work in works:
            rows, total = model(doc, work, measured.get(work.name) if args.measured else None)
            if writer:
                print_csv(writer, title, work, rows, total)
            else:
                print_markdown(title, doc, work, rows, total, bool(args.measured))
                summary.append((title, work, step_summary(work, rows, total)))
    if len(summary) > 1:
        print("### Summary\n")
        print("| model | workload | predicted step ms | tokens/s | GB a step | TFLOP a step | time HBM-bound |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for title, work, t in summary:
            print(f"| {title} | {work.name} | {t['ms']:.3f} | {t['rate']:,.0f} | {t['gb']:.2f} | {t['tflop']:.3f} | "
                  f"{100 * t['hbm']:.0f}% |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
