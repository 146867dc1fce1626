# `cbc run` request lines with embeddings, made from a multimodal fixture
# (test/parity/fixtures_mm/<family>/expected.safetensors: prompt_i, embeds_i, segments_i,
# grids_i, tokens_i), with the standard library only (no numpy, no torch):
#
#   write FIXTURE_DIR OUT_DIR   writes the rows as .npy and .safetensors files into OUT_DIR and
#                               prints one request line per way of giving them (files with
#                               "start", files with "placeholder", a file's only tensor, base64),
#                               relative paths, so `cbc run` must run in OUT_DIR; the last lines
#                               are prompts as the fixture has them, one a line, by "placeholder"
#   compare FIXTURE_DIR RESULTS I...   checks that result k (by "index") has tokens_{I_k} of
#                               the fixture; exits 1 naming the first that differs
#   bad FIXTURE_DIR OUT_DIR     writes bad segments and prints one bad request line each
#   nogrid FIXTURE_DIR          prints prompt 0's line, base64 by "placeholder", without grids
#   starts FIXTURE_DIR OUT_DIR  as write, the files placed by "start" only, each segment with its
#                               "modality" (a fixture mixing audio and images has no one placeholder)
import base64
import json
import os
import struct
import sys


def read_safetensors(path):
    """{name: (dtype, shape, bytes)}."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[name] = (v["dtype"], v["shape"], raw[8 + n + a:8 + n + b])
    return out


def ints(t):
    return list(struct.unpack(f"<{len(t[2]) // 4}i", t[2]))


def write_npy(path, rows, width, data, descr="<f4"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (descr, rows, width)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)


def write_safetensors(path, tensors):
    """tensors: [(name, shape, f32 bytes)]."""
    header, at = {}, 0
    for name, shape, data in tensors:
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(data)]}
        at += len(data)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(d for _, _, d in tensors))


class Fixture:
    def __init__(self, folder):
        self.t = read_safetensors(os.path.join(folder, "expected.safetensors"))
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        self.placeholder = config.get("image_token_index", config.get("image_token_id"))
        self.count = sum(1 for k in self.t if k.startswith("prompt_"))

    def prompt(self, i):
        return ints(self.t[f"prompt_{i}"])

    def tokens(self, i):
        return ints(self.t[f"tokens_{i}"])

    def width(self, i):
        return self.t[f"embeds_{i}"][1][1]

    def segments(self, i):
        """[(start, rows, f32 bytes, grid or None)]."""
        seg = ints(self.t[f"segments_{i}"])
        grids = ints(self.t[f"grids_{i}"]) if f"grids_{i}" in self.t else None
        data, width, at, out = self.t[f"embeds_{i}"][2], self.width(i), 0, []
        for k in range(0, len(seg), 2):
            start, rows = seg[k], seg[k + 1]
            out.append((start, rows, data[at:at + rows * width * 4],
                        grids[k // 2 * 3:k // 2 * 3 + 3] if grids else None))
            at += rows * width * 4
        return out

    def modalities(self, i):
        """Each segment's modality name (modalities_i: 0 image, 1 video, 2 audio; images without it)."""
        codes = ints(self.t[f"modalities_{i}"]) if f"modalities_{i}" in self.t else []
        names = [("image", "video", "audio")[c] for c in codes]
        return names or ["image"] * len(self.segments(i))


def request(prompt, segments, placeholder=None):
    r = {"prompt": prompt, "max_new_tokens": 16, "ignore_eos": True}
    if placeholder is not None:
        r["placeholder"] = placeholder
    if segments:
        r["embeds"] = segments
    return json.dumps(r)


def with_grid(seg, grid):
    if grid:
        seg["grid"] = grid
    return seg


def write(fx, out):
    lines = []
    # Every prompt, its segments as .npy files placed by "start".
    for i in range(fx.count):
        segs = []
        for k, (start, rows, data, grid) in enumerate(fx.segments(i)):
            write_npy(os.path.join(out, f"p{i}_{k}.npy"), rows, fx.width(i), data)
            segs.append(with_grid({"file": f"p{i}_{k}.npy", "start": start}, grid))
        lines.append(request(fx.prompt(i), segs))
    # Every prompt, its segments as the named tensors of one .safetensors file, by "placeholder".
    tensors, named = [], []
    for i in range(fx.count):
        segs = []
        for k, (start, rows, data, grid) in enumerate(fx.segments(i)):
            tensors.append((f"image_{i}_{k}", [rows, fx.width(i)], data))
            segs.append(with_grid({"file": "all.safetensors", "tensor": f"image_{i}_{k}"}, grid))
        named.append(request(fx.prompt(i), segs, fx.placeholder))
    write_safetensors(os.path.join(out, "all.safetensors"), tensors)
    lines += named
    # Every prompt, base64 by "placeholder"; the first segment also as a file's only tensor.
    for i in range(fx.count):
        segs = []
        for k, (start, rows, data, grid) in enumerate(fx.segments(i)):
            if k == 0:
                write_safetensors(os.path.join(out, f"only{i}.safetensors"), [("x", [rows, fx.width(i)], data)])
                segs.append(with_grid({"file": f"only{i}.safetensors"}, grid))
            else:
                segs.append(with_grid({"base64": base64.b64encode(data).decode()}, grid))
        lines.append(request(fx.prompt(i), segs, fx.placeholder))
    print("\n".join(lines))


def starts(fx, out):
    lines = []
    for i in range(fx.count):
        segs = []
        for k, ((start, rows, data, grid), modality) in enumerate(zip(fx.segments(i), fx.modalities(i))):
            write_npy(os.path.join(out, f"p{i}_{k}.npy"), rows, fx.width(i), data)
            segs.append(with_grid({"file": f"p{i}_{k}.npy", "start": start, "modality": modality}, grid))
        lines.append(request(fx.prompt(i), segs))
    print("\n".join(lines))


def bad(fx, out):
    """One bad line each (prompt 1 has two images); the reasons are checked by the test."""
    prompt, segs = fx.prompt(1), fx.segments(1)
    width = fx.width(1)
    (s0, r0, d0, g0), (s1, r1, d1, g1) = segs
    b64 = lambda d: base64.b64encode(d).decode()
    write_npy(os.path.join(out, "narrow.npy"), r0 * 2, width // 2, d0)
    write_npy(os.path.join(out, "ints.npy"), r0, width, d0, descr="<i4")
    ph = fx.placeholder
    lines = [
        # a file that is not there
        request(prompt, [{"file": "missing.npy", "start": s0}, {"base64": b64(d1), "start": s1}]),
        # rows of half the model's width
        request(prompt, [{"file": "narrow.npy", "start": s0}, {"base64": b64(d1), "start": s1}]),
        # a dtype that is no float
        request(prompt, [{"file": "ints.npy", "start": s0}, {"base64": b64(d1), "start": s1}]),
        # not base64
        request(prompt, [{"base64": "not base64!", "start": s0}]),
        # values that are not whole rows
        request(prompt, [{"base64": b64(d0[:-4]), "start": s0}]),
        # two images, one segment
        request(prompt, [{"base64": b64(d0)}], ph),
        # an image's rows one short of its placeholder run
        request(prompt, [{"base64": b64(d0)}, {"base64": b64(d1[:-4 * width])}], ph),
        # a segment past the prompt's end (the engine's own check)
        request(prompt, [{"base64": b64(d1), "start": len(prompt) - 1}]),
        # the tensor a .safetensors file does not hold
        request(prompt, [{"file": "all.safetensors", "tensor": "nope", "start": s0}]),
        # a file of several tensors and none named
        request(prompt, [{"file": "all.safetensors", "start": s0}]),
        # "start" and "placeholder" together
        request(prompt, [{"base64": b64(d0), "start": s0}], ph),
    ]
    print("\n".join(lines))


def compare(fx, results_path, order):
    with open(results_path) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    got = {r["index"]: r for r in rows if "finish_reason" in r}
    if sorted(got) != list(range(len(order))):
        sys.exit(f"expected results for indices 0..{len(order) - 1}, got {sorted(got)}")
    for k, i in enumerate(order):
        if got[k].get("error") or got[k]["tokens"] != fx.tokens(i):
            sys.exit(f"result {k} (prompt {i}): {got[k].get('error') or got[k]['tokens']} vs the fixture's {fx.tokens(i)}")
    print(f"{len(order)} of {len(order)} results are the fixture's tokens")


def main():
    cmd, folder = sys.argv[1], sys.argv[2]
    fx = Fixture(folder)
    if cmd == "write":
        write(fx, sys.argv[3])
    elif cmd == "starts":
        starts(fx, sys.argv[3])
    elif cmd == "bad":
        bad(fx, sys.argv[3])
    elif cmd == "compare":
        compare(fx, sys.argv[3], [int(i) for i in sys.argv[4:]])
    elif cmd == "nogrid":
        segs = [{"base64": base64.b64encode(d).decode()} for _, _, d, _ in fx.segments(0)]
        print(request(fx.prompt(0), segs, fx.placeholder))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
