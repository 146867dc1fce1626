"""Writes a copy of a config.json with keys set or removed, for error tests.

    python3 patch-config.py SRC OUT key=JSON ... -key ...

`a.b=JSON` sets a nested key; `key=@PATH` sets it to the JSON in PATH (a config nested whole in
another); `-key` removes one. SRC `{}` starts from an empty object.
"""
import json
import sys

src, out, *edits = sys.argv[1:]
cfg = {} if src == "{}" else json.load(open(src))
for edit in edits:
    if edit.startswith("-"):
        cfg.pop(edit[1:], None)
        continue
    path, value = edit.split("=", 1)
    *parents, leaf = path.split(".")
    node = cfg
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = json.load(open(value[1:])) if value.startswith("@") else json.loads(value)
json.dump(cfg, open(out, "w"), indent=2)
