"""Writes variants of an FP8 fixture checkpoint for the CLI tests (standard library only).

  python3 fp8-checkpoints.py FIXTURE_DIR OUT_DIR

OUT_DIR/mtp        the checkpoint plus what DeepSeek-V3 ships beside its decoder: an MTP layer at
                   index num_hidden_layers (FP8 linears with their scales, one FP8 tensor without,
                   bf16 norms) and a tensor no model reads (model.rotary_emb.inv_freq)
OUT_DIR/no-scale   without model.layers.0.self_attn.q_proj.weight_scale_inv
OUT_DIR/bad-scale  with that scale grid [3, 2] instead of [2, 2]
OUT_DIR/e5m2       with model.layers.0.self_attn.q_proj.weight marked F8_E5M2
"""
import json
import os
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8 : 8 + n])
header.pop("__metadata__", None)
tensors = {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0] : 8 + n + v["data_offsets"][1]]) for k, v in header.items()}

Q = "model.layers.0.self_attn.q_proj.weight"


def write(name, ts):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    head, blobs, offset = {}, [], 0
    for k in sorted(ts):
        dtype, shape, data = ts[k]
        head[k] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(out, name, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


mtp = dict(tensors)
for k, v in tensors.items():
    if k.startswith("model.layers.0."):
        mtp[k.replace("model.layers.0.", "model.layers.2.")] = v
mtp["model.layers.2.eh_proj.weight"] = tensors["model.layers.0.mlp.down_proj.weight"]  # no scale beside it
mtp["model.layers.2.enorm.weight"] = tensors["model.norm.weight"]
mtp["model.rotary_emb.inv_freq"] = ("F32", [8], b"\0" * 32)
write("mtp", mtp)

write("no-scale", {k: v for k, v in tensors.items() if k != Q + "_scale_inv"})

bad = dict(tensors)
bad[Q + "_scale_inv"] = ("F32", [3, 2], b"\0\0\x80\x3f" * 6)
write("bad-scale", bad)

e5m2 = dict(tensors)
e5m2[Q] = ("F8_E5M2",) + tensors[Q][1:]
write("e5m2", e5m2)
