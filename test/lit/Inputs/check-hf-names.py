"""Manual check (needs torch and transformers; not run by lit): for each config, build the
transformers model, save_pretrained it, and compare the saved tensor names and shapes with the
cbc.weight.ref sources of `cbc compile --emit-ir`. Every source must be a saved tensor of a
matching shape and every saved tensor must be used. Used for the Mamba-family front-end tests:

  CBC=build/bin/cbc /work/venv/oracle/bin/python test/lit/Inputs/check-hf-names.py \
      test/lit/Inputs/configs/{mamba2,mamba,falcon_mamba,bamba,granitemoehybrid,jamba}-small.json \
      test/parity/fixtures/{mamba2,mamba,falcon_mamba,bamba,granitemoehybrid,jamba}/config.json
"""
import json, os, re, subprocess, sys, tempfile, struct
import torch
from transformers import AutoConfig, AutoModelForCausalLM
CBC = os.environ.get("CBC", "cbc")
def saved(cfg_path):
    import shutil
    with tempfile.TemporaryDirectory() as c:
        shutil.copy(cfg_path, os.path.join(c, "config.json"))
        cfg = AutoConfig.from_pretrained(c)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(cfg)
    with tempfile.TemporaryDirectory() as t:
        m.save_pretrained(t)
        out = {}
        for f in os.listdir(t):
            if f.endswith(".safetensors"):
                b = open(os.path.join(t, f), "rb").read()
                n = struct.unpack("<Q", b[:8])[0]
                h = json.loads(b[8:8 + n])
                for k, v in h.items():
                    if k != "__metadata__":
                        out[k] = v["shape"]
        return out, cfg
def cbc_refs(cfg_path):
    ir = subprocess.run([CBC, "compile", cfg_path, "-o", os.path.join(tempfile.gettempdir(), "check-hf-names.fb"), "--no-cuda", "--no-fuse", "--emit-ir", "--quiet"],
                        capture_output=True, text=True, check=True).stdout
    refs = []
    for m in re.finditer(r'cbc\.weight\.ref "([^"]+)" \{(.*?)\} : tensor<([0-9x]+)x[a-z0-9]+>', ir):
        name, attrs, shape = m.group(1), m.group(2), [int(s) for s in m.group(3).split("x")]
        src = re.search(r'sources = (\[\[.*?\]\])', attrs).group(1)
        combine = re.search(r'combine = #cbc\.combine<(\w+)>', attrs)
        # Transforms that change the shape (checked by the unit tests, not here).
        reshaped = bool(re.search(r'\btranspose\b|block_diag|dequant', attrs))
        refs.append((name, json.loads(src), combine.group(1) if combine else "none", shape, reshaped))
    return refs
ok = True
for path in sys.argv[1:]:
    hf, cfg = saved(path)
    refs = cbc_refs(path)
    used = set()
    print("==", os.path.basename(path), f"({len(hf)} HF tensors, {len(refs)} weight refs)")
    for name, parts, combine, shape, reshaped in refs:
        for part in parts:
            for s in part:
                used.add(s)
                if s not in hf:
                    print("  NOT SAVED BY HF:", s, "for", name); ok = False
        # shape check
        if reshaped:
            continue
        if combine == "none":
            shapes = [hf.get(s) for s in parts[0]]
            if None in shapes: continue
            rows = sum(sh[0] for sh in shapes)
            rest = [d for d in shapes[0][1:] if d != 1]
            mine = [shape[0]] + [d for d in shape[1:] if d != 1]
            if [rows] + rest != mine:
                print("  SHAPE", name, shape, "vs HF", shapes); ok = False
        else:
            for part in parts:
                shapes = [hf.get(s) for s in part]
                if None in shapes: continue
                if sum(sh[0] for sh in shapes) != shape[1] or shapes[0][1:] != shape[2:]:
                    print("  SHAPE", name, shape, "vs HF", shapes); ok = False
            if len(parts) != shape[0]:
                print("  STACK COUNT", name, len(parts), shape[0]); ok = False
    for k in sorted(set(hf) - used):
        print("  UNUSED HF TENSOR:", k, hf[k]); ok = False
print("ALL OK" if ok else "MISMATCHES")
