"""Checks bench/roofline.py's CSV against figures worked out here from config.json alone.

    check-roofline.py llama|moe CONFIG LAUNCHES_JSON ROOFLINE_CSV

The JSON (`cbc dump --launches`) is used only to find which instruction reads a named weight
and the device dtype of its activations; every byte and FLOP count below is computed from the
config's sizes. Exits 1 naming the first figure that differs.
"""
import csv
import json
import math
import sys

BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4}


def fail(msg):
    sys.exit(f"check-roofline: {msg}")


def rows_by_instr(path):
    """(workload, instruction) -> the CSV row of its group; workload -> the step row."""
    out, steps = {}, {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["op"] == "step":
                steps[r["workload"]] = r
                continue
            for i in r["instrs"].split():
                out[(r["workload"], int(i))] = r
    return out, steps


def instr_reading(doc, weight):
    for i, ins in enumerate(doc["instrs"]):
        for v in ins["inputs"]:
            if v >= 0 and doc["values"][v].get("name") == weight:
                return i, ins
    fail(f"no instruction reads {weight}")


def expect(row, what, got_key, want):
    got = float(row[got_key])
    if not math.isclose(got, want, rel_tol=1e-9, abs_tol=0.5):
        fail(f"{row['workload']} {row['op']} {what}: {got_key} {got:.0f}, expected {want:.0f}")


def act_bytes(doc, ins, rows):
    """The activation input and output of a GEMM (rows x width), in their device dtypes."""
    total = 0
    for v in [ins["inputs"][0]] + ins["outputs"]:
        val = doc["values"][v]
        total += rows * val["shape"][-1] * BYTES[val["device_dtype"]]
    return total


def check_llama(cfg, doc, rows, steps):
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    heads, kv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"] // cfg["num_attention_heads"]
    # The down projection of layer 0 at 64 requests: a [64, I] x [H, I]^T GEMM.
    i, ins = instr_reading(doc, "layers.0.mlp.down")
    r = rows[("decode-64x1024", i)]
    expect(r, "down_proj", "flops", 2 * 64 * H * I)
    expect(r, "down_proj", "bytes", H * I * 2 + act_bytes(doc, ins, 64))
    if r["unit"] != "tensor" or r["bound"] != "HBM":
        fail(f"down_proj at 64 requests: unit {r['unit']}, bound {r['bound']}; expected tensor, HBM")
    # The LM head at one request reads the whole [V, H] matrix for one row.
    i, ins = instr_reading(doc, "lm_head")
    expect(rows[("decode-1x1024", i)], "lm_head", "bytes", V * H * 2 + act_bytes(doc, ins, 1))
    # Attention in layer 0: 64 requests each read 1025 cached k and v rows of kv heads x hd (bf16)
    # and attend 1025 keys; the 2048-token prefill attends causally (2048 * 2049 / 2 pairs).
    att = [i for i, ins in enumerate(doc["instrs"]) if ins["op"] == "cbc.kv.attention"][0]
    r = rows[("decode-64x1024", att)]
    expect(r, "attention", "flops", 4 * heads * hd * 64 * 1025)
    # q, out and the step's arguments add about 1% (2% where activations are f32: no kernels).
    kv_bytes = 64 * 1025 * 2 * kv * hd * 2
    if not kv_bytes <= float(r["bytes"]) <= kv_bytes * 1.02:
        fail(f"decode-64x1024 attention bytes {r['bytes']}, expected the cache's {kv_bytes} plus q and out")
    r = rows[("prefill-2048", att)]
    expect(r, "prefill attention", "flops", 4 * heads * hd * 2048 * 2049 // 2)
    if r["unit"] != "tensor":
        fail(f"prefill attention on {r['unit']}, expected tensor")
    check_step(rows, steps)


def check_moe(cfg, doc, rows, steps):
    H, I, E, k = cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["num_experts"], cfg["num_experts_per_tok"]
    moe = [i for i, ins in enumerate(doc["instrs"]) if ins["op"] == "cbc.moe.experts"][0]
    per_expert = 3 * I * H * 2  # gate, up and down, bf16
    for work, T in (("decode-1x1024", 1), ("decode-64x1024", 64), ("decode-256x1024", 256), ("prefill-2048", 2048)):
        r = rows[(work, moe)]
        expect(r, "experts", "flops", 2 * T * k * 3 * I * H)
        # Each expert is missed by all T tokens with probability ((E-1 choose k) / (E choose k))^T.
        untouched = (math.comb(E - 1, k) / math.comb(E, k)) ** T
        weights = E * (1 - untouched) * per_expert
        if not weights <= float(r["bytes"]) <= weights + T * (H * 64 + k * (I + H) * 8 + 64):
            fail(f"{work} experts bytes {r['bytes']}, expected {weights:.0f} of touched experts plus rows")
    check_step(rows, steps)


def check_step(rows, steps):
    """Each workload's step time is the sum of its groups' count x time."""
    groups = {}
    for (work, _), r in rows.items():
        groups.setdefault(work, {})[id(r)] = r
    for work, rs in groups.items():
        total = sum(int(r["count"]) * float(r["predicted_us"]) for r in rs.values())
        if not math.isclose(total, float(steps[work]["predicted_us"]), rel_tol=1e-6, abs_tol=0.01):  # 4 decimals a row
            fail(f"{work}: step {steps[work]['predicted_us']} us, the groups sum to {total}")


def main():
    kind, config, launches, table = sys.argv[1:5]
    cfg = json.load(open(config))
    doc = json.load(open(launches))
    rows, steps = rows_by_instr(table)
    {"llama": check_llama, "moe": check_moe}[kind](cfg, doc, rows, steps)
    print(f"check-roofline: {kind} ok")


if __name__ == "__main__":
    main()
