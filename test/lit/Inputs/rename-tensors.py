"""Writes a copy of a .safetensors file with its tensors renamed (no torch: the header is JSON).

    python3 rename-tensors.py SRC OUT FROM=TO ...

Each FROM=TO is a regular expression and its replacement, applied in order to every name.
"""
import json
import re
import struct
import sys

src, out, *rules = sys.argv[1:]
data = open(src, "rb").read()
(size,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8 : 8 + size])
renamed = {}
for name, entry in header.items():
    for rule in rules:
        pattern, replacement = rule.split("=", 1)
        name = re.sub(pattern, replacement, name)
    renamed[name] = entry
text = json.dumps(renamed).encode()
text += b" " * (-len(text) % 8)
open(out, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + size :])
