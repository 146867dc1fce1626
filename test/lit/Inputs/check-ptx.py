"""Checks `cbc dump --kernels` listings against the instructions each kind of kernel must issue.

    check-ptx.py DIR --targets sm_80,sm_90 --model NAME:KIND,KIND... [--model ...]

DIR holds one listing per model and target, DIR/NAME.TARGET.txt, of an artefact compiled for
that target alone (so the PTX it carries, which `cbc dump --kernels` counts, is that target's).
For every listing: the target's cubin is listed, every kernel spills 0 bytes and fits at least
one block on an SM (where `cbc dump` prints its occupancy), every kernel is in the PTX, every
kernel of a kind in REQUIRED issues that kind's instruction, and the model has at least one
kernel of each KIND given for it. Every failure is printed, naming the model,
target, kernel and the missing instruction; the exit status is 1 if there was any.
"""
import argparse
import os
import re
import sys

# Kernel kind (the name cbc gives the kernel, cbc_<kind>_<n>) -> the count it must have above 0
# in the listing's PTX rows, and why.
REQUIRED = {
    "attention_prefill": ("mma", "prefill attention runs QK^T and PV on tensor cores"),
    "latent_attention_prefill": ("mma", "latent prefill attention runs its products on tensor cores"),
    "attention": ("ld.global.128", "decode attention reads the cache with 128-bit loads"),
    "latent_attention": ("ld.global.128", "latent decode attention reads the cache with 128-bit loads"),
    "moe_gate_up": ("mma", "expert GEMMs run on tensor cores"),
    "moe_down": ("mma", "expert GEMMs run on tensor cores"),
    "gated_delta_chunked": ("mma", "the chunked scan's intra-chunk products run on tensor cores"),
    "ssd_chunked": ("mma", "the chunked scan's intra-chunk products run on tensor cores"),
}
INSTRUCTIONS = ("mma", "ldmatrix", "ld.global.128", "cp.async")

CUBIN = re.compile(r"^target (\S+): cubin (\d+) bytes$")
KERNEL = re.compile(r"^  (cbc_\S+) +regs +(-?\d+)  spills +(-?\d+)  smem +(-?\d+)(?:  threads +\d+  blocks/SM +(\d+))?")
PTX = re.compile(r"^ptx (\S+): \d+ bytes;")
PTX_ROW = re.compile(r"^  ptx (cbc_\S+) +(.*)$")
KIND = re.compile(r"^cbc_(.+)_[0-9]+$")


def parse(path):
    """The listing's cubin targets with their kernels' (spills, blocks per SM or None), and the PTX
    target with its counts."""
    cubins, ptx_arch, counts, target = {}, None, {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if m := CUBIN.match(line):
                target = m.group(1)
                cubins[target] = {}
            elif m := PTX.match(line):
                ptx_arch, target = m.group(1), None
            elif (m := KERNEL.match(line)) and target:
                blocks = int(m.group(5)) if m.group(5) is not None else None
                cubins[target][m.group(1)] = (int(m.group(3)), blocks)
            elif m := PTX_ROW.match(line):
                fields = re.findall(r"(mma|ldmatrix|ld\.global\.128|cp\.async) +(\d+)", m.group(2))
                counts[m.group(1)] = {k: int(v) for k, v in fields} if fields else None
    return cubins, ptx_arch, counts


def check(model, target, path, kinds):
    errors = []
    where = f"{model} {target}"
    if not os.path.exists(path):
        return [f"{where}: no listing {path}"]
    cubins, ptx_arch, counts = parse(path)
    if list(cubins) != [target]:
        errors.append(f"{where}: the listing has cubins for {list(cubins)}, expected [{target!r}]")
    if ptx_arch != target:
        errors.append(f"{where}: the listing's PTX is for {ptx_arch}, expected {target}")
    spills = cubins.get(target, {})
    if not spills:
        errors.append(f"{where}: no kernels listed")
    for name, (s, blocks) in spills.items():
        if s != 0:
            errors.append(f"{where}: {name} spills {s} bytes (every kernel must spill 0; -1: ptxas reported nothing)")
        if blocks == 0:
            errors.append(f"{where}: {name} fits no block on an SM (occupancy 0: too many registers or too much shared memory)")
    present = set()
    for name in spills:
        c = counts.get(name)
        if c is None or set(c) != set(INSTRUCTIONS):
            errors.append(f"{where}: {name} has no instruction counts in the PTX rows")
            continue
        m = KIND.match(name)
        kind = m.group(1) if m else None
        present.add(kind)
        if kind in REQUIRED:
            insn, why = REQUIRED[kind]
            if c[insn] <= 0:
                errors.append(f"{where}: {name} issues no {insn} instruction ({why})")
    for kind in kinds:
        if kind not in present:
            insn, why = REQUIRED[kind]
            errors.append(f"{where}: no {kind} kernel (the model needs one; {why}, so it must issue {insn})")
    return errors


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir")
    p.add_argument("--targets", required=True)
    p.add_argument("--model", action="append", required=True, help="NAME:KIND,KIND...")
    args = p.parse_args()
    errors, listings = [], 0
    for spec in args.model:
        model, _, kinds = spec.partition(":")
        kinds = [k for k in kinds.split(",") if k]
        unknown = [k for k in kinds if k not in REQUIRED]
        if unknown:
            sys.exit(f"check-ptx: --model {spec}: unknown kinds {unknown}; known: {sorted(REQUIRED)}")
        for target in args.targets.split(","):
            errors += check(model, target, os.path.join(args.dir, f"{model}.{target}.txt"), kinds)
            listings += 1
    for e in errors:
        print(f"check-ptx: FAIL {e}", file=sys.stderr)
    print(f"check-ptx: {listings} listings, {len(errors)} failures")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
