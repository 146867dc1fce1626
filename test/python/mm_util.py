"""The multimodal fixtures (test/parity/fixtures_mm/<family>: a tiny multimodal model, its
prompts with image placeholders, the rows transformers' vision tower and projector scattered
into them, and the greedy tokens of the real forward), read with the standard library only, and
their decoders compiled for the tests."""
import json
import os
import struct
import subprocess
from array import array
from pathlib import Path

import pytest

import cbc
import cbc._compile

REPO = Path(__file__).resolve().parents[2]
MM_FIXTURES = REPO / "test" / "parity" / "fixtures_mm"
CBC = Path(os.environ.get("CBC_EXECUTABLE") or
           Path(os.environ.get("CBC_BUILD_DIR", REPO / "build")) / "bin" / "cbc")


def read_safetensors(path):
    """{name: (dtype, shape, bytes)}."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, v in header.items():
        if name != "__metadata__":
            a, b = v["data_offsets"]
            out[name] = (v["dtype"], v["shape"], raw[8 + n + a:8 + n + b])
    return out


def _ints(t):
    return list(struct.unpack(f"<{len(t[2]) // 4}i", t[2]))


MODALITIES = ("image", "video", "audio")  # modalities_i's codes 0, 1, 2


class Segment:
    """One image or audio clip of a fixture prompt: its first row, rows, float32 bytes, grid (or
    None) and modality."""

    def __init__(self, start, rows, data, grid, modality="image"):
        self.start, self.rows, self.data, self.grid, self.modality = start, rows, data, grid, modality

    def row_lists(self, width):
        """The rows as lists of floats (no numpy)."""
        a = array("f")
        a.frombytes(self.data)
        return [list(a[r * width:(r + 1) * width]) for r in range(self.rows)]


class Fixture:
    def __init__(self, family):
        self.family = family
        self.dir = MM_FIXTURES / family
        self.t = read_safetensors(self.dir / "expected.safetensors")
        config = json.loads((self.dir / "config.json").read_text())
        self.placeholder = config.get("image_token_index", config.get("image_token_id"))
        self.count = sum(1 for k in self.t if k.startswith("prompt_"))
        self.width = self.t["embeds_0"][1][1]

    def prompt(self, i):
        return _ints(self.t[f"prompt_{i}"])

    def tokens(self, i):
        return _ints(self.t[f"tokens_{i}"])

    def segments(self, i):
        seg = _ints(self.t[f"segments_{i}"])
        grids = _ints(self.t[f"grids_{i}"]) if f"grids_{i}" in self.t else None
        kinds = _ints(self.t[f"modalities_{i}"]) if f"modalities_{i}" in self.t else None
        data, at, out = self.t[f"embeds_{i}"][2], 0, []
        for k in range(0, len(seg), 2):
            start, rows = seg[k], seg[k + 1]
            grid = tuple(grids[k // 2 * 3:k // 2 * 3 + 3]) if grids else None
            modality = MODALITIES[kinds[k // 2]] if kinds else "image"
            out.append(Segment(start, rows, data[at:at + rows * self.width * 4], grid, modality))
            at += rows * self.width * 4
        return out

    def token_rows(self, ids):
        """The model's token embedding rows (bf16 widened to float32) of ids, as float32 bytes."""
        weights = read_safetensors(self.dir / "model.safetensors")
        name = next(k for k in weights if k.endswith("embed_tokens.weight"))
        dtype, shape, raw = weights[name]
        assert dtype == "BF16", dtype
        bf = array("H")
        bf.frombytes(raw)
        out = array("I")
        for t in ids:
            out.extend(v << 16 for v in bf[t * shape[1]:(t + 1) * shape[1]])
        return out.tobytes()


def compile_fixture(family, out: Path) -> str:
    """The fixture's decoder compiled for the CPU: cbc.compile where this package has the
    compiler, else the build tree's cbc."""
    config = MM_FIXTURES / family / "config.json"
    if cbc._compile._compiler is not None:
        return cbc.compile(config, out, cuda=False)
    if not CBC.exists():
        pytest.skip(f"no compiler module and no cbc executable at {CBC}")
    r = subprocess.run([str(CBC), "compile", str(config), "-o", str(out), "--no-cuda", "--quiet"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"{CBC} cannot compile: {r.stderr.strip()}")
    return str(out)
