"""Embeddings for runs of prompt rows: what a multimodal model's decoder takes in place of its
placeholder tokens' embeddings (an image encoder's or audio encoder's features, projected to the
decoder's width). See cbc.EmbeddingSegment, Engine.add_request(embeds=...) and
Engine.generate_batch(embeds=..., inputs_embeds=...).

The rows cross into the engine as float32 bytes: numpy is used when it is installed, never
required (lists of rows, array.array('f'), bytes and any float32 buffer work without it).
"""
from __future__ import annotations

import array
import base64
import binascii
import sys
from typing import Any, Optional, Sequence

__all__ = ["EmbeddingSegment"]

# What a segment's rows encode (runtime/request.h's Modality).
MODALITIES = ("image", "video", "audio")


class EmbeddingSegment:
    """Embeddings for the prompt rows [start, start + rows).

    data: the rows, [rows, width] floats: a numpy array (any float dtype; a torch tensor on the
    CPU works too), a list of rows (lists of floats), or a flat float32 buffer (bytes of
    little-endian float32, array.array('f'), a memoryview), whose rows are its values divided by
    the model's embedding width (Engine.embedding_width). grid: the image's (t, h, w) for a model
    with multimodal RoPE (Qwen3.5's vision rows), which needs one; None otherwise. modality:
    "image" (the default), "video" or "audio": where a model attends bidirectionally over its
    images (Gemma 3 and 4), an image's or a video's rows see each other, an audio clip's stay
    causal.
    """

    __slots__ = ("start", "grid", "modality", "_bytes", "_rows")

    def __init__(self, start: int, data: Any, grid: Optional[Sequence[int]] = None, modality: str = "image"):
        if isinstance(start, bool) or not isinstance(start, int):
            raise TypeError(f"start must be an int, got {type(start).__name__}")
        if start < 0:
            raise ValueError(f"start must be >= 0, got {start}")
        self.start = start
        if grid is not None:
            try:
                grid = tuple(grid)
            except TypeError:
                raise TypeError("grid must be (t, h, w), three ints") from None
            if len(grid) != 3 or any(isinstance(g, bool) or not isinstance(g, int) for g in grid):
                raise TypeError(f"grid must be (t, h, w), three ints, got {grid!r}")
            if any(g < 1 for g in grid):
                raise ValueError(f"grid must be three sizes >= 1, got {grid!r}")
        self.grid = grid
        if modality not in MODALITIES:
            raise ValueError(f"modality must be one of {', '.join(MODALITIES)}, got {modality!r}")
        self.modality = modality
        self._bytes, self._rows = _float32_bytes(data)

    @property
    def rows(self) -> Optional[int]:
        """The rows the data holds as given (None for a flat buffer: its values divided by the
        model's width)."""
        return self._rows

    @property
    def values(self) -> int:
        """How many float32 values the data holds."""
        return len(self._bytes) // 4

    def __repr__(self) -> str:
        rows = "?" if self._rows is None else self._rows
        grid = "" if self.grid is None else f", grid={self.grid}"
        modality = "" if self.modality == "image" else f", modality={self.modality!r}"
        return f"EmbeddingSegment(start={self.start}, rows={rows}, values={self.values}{grid}{modality})"

    def _native(self, width: int) -> tuple:
        """(start, rows, float32 bytes, grid, modality) for cbc._runtime: the engine checks rows x
        width against the values, so a 2-D array of another width is refused there with the numbers."""
        rows = self._rows
        if rows is None:
            rows = self.values // width if width > 0 else 0
        return (self.start, rows, self._bytes, self.grid or (), self.modality)


def _float32_bytes(data: Any) -> tuple:
    """(native-order float32 bytes, rows or None)."""
    if isinstance(data, (bytes, bytearray)):
        if len(data) % 4:
            raise ValueError(f"embedding data of {len(data)} bytes is not whole float32 values (4 bytes each)")
        return _from_little_endian(bytes(data)), None
    if isinstance(data, str):
        raise TypeError("embedding data must be rows of floats or float32 bytes, not a str")
    # A torch tensor (bfloat16 has no numpy dtype): widened on the CPU.
    if hasattr(data, "detach") and hasattr(data, "float") and hasattr(data, "cpu"):
        data = data.detach().float().cpu()
    # Arrays (numpy's, or anything numpy converts: a CPU tensor) through numpy when it is here;
    # buffers and lists of rows without it, alike whether numpy is installed or not.
    np = _numpy() if hasattr(data, "__array__") or hasattr(data, "__array_interface__") else None
    if np is not None:
        try:
            arr = np.asarray(data, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise TypeError(f"embedding data must be rows of floats: {e}") from None
        if arr.ndim == 0:
            raise TypeError("embedding data must be rows of floats, not a scalar")
        rows = None if arr.ndim == 1 else int(np.prod(arr.shape[:-1]))
        return np.ascontiguousarray(arr).tobytes(), rows
    try:
        view = memoryview(data)
    except TypeError:
        view = None
    if view is not None:
        fmt = view.format.lstrip("@=<")
        if fmt in ("B", "b", "c"):  # raw bytes, as bytes: float32 little-endian
            raw = view.tobytes()
            if len(raw) % 4:
                raise ValueError(f"embedding data of {len(raw)} bytes is not whole float32 values (4 bytes each)")
            return _from_little_endian(raw), None
        if fmt not in ("f", "d"):
            raise TypeError(f"an embedding buffer must hold float32 or float64 values, not format {view.format!r}")
        rows = None if view.ndim <= 1 else _product(view.shape[:-1])
        flat = view.tobytes()  # C order, whatever the strides
        if fmt == "f":
            return flat, rows
        return array.array("f", memoryview(flat).cast("d")).tobytes(), rows
    return _rows_of_floats(data)


def _rows_of_floats(data: Any) -> tuple:
    """A sequence of rows (sequences of floats), without numpy."""
    try:
        rows = list(data)
    except TypeError:
        raise TypeError(f"embedding data must be rows of floats, not {type(data).__name__}") from None
    out = array.array("f")
    width = None
    for i, row in enumerate(rows):
        if isinstance(row, (str, bytes)):
            raise TypeError(f"embedding data row {i} must be a sequence of floats")
        try:
            values = list(row)
        except TypeError:
            raise TypeError("embedding data must be 2-D: rows of floats (give a flat float32 buffer "
                            "as bytes or array.array('f'))") from None
        if width is None:
            width = len(values)
        elif len(values) != width:
            raise ValueError(f"embedding data row {i} has {len(values)} values, row 0 has {width}")
        try:
            out.extend(float(v) for v in values)
        except (TypeError, ValueError):
            raise TypeError(f"embedding data row {i} holds a value that is not a number") from None
    return out.tobytes(), len(rows)


def _from_little_endian(raw: bytes) -> bytes:
    if sys.byteorder == "little":
        return raw
    a = array.array("f")
    a.frombytes(raw)
    a.byteswap()
    return a.tobytes()


def _product(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def segments(embeds: Any) -> list:
    """A prompt's segments: EmbeddingSegments, or (start, data[, grid[, modality]]) tuples."""
    if embeds is None:
        return []
    if isinstance(embeds, EmbeddingSegment):
        raise TypeError("embeds must be a list of EmbeddingSegments (one prompt's), not one segment")
    try:
        items = list(embeds)
    except TypeError:
        raise TypeError(f"embeds must be a list of EmbeddingSegments, not {type(embeds).__name__}") from None
    out = []
    for s in items:
        if isinstance(s, EmbeddingSegment):
            out.append(s)
        elif isinstance(s, tuple) and len(s) in (2, 3, 4):
            out.append(EmbeddingSegment(*s))
        else:
            raise TypeError("each embedding segment must be a cbc.EmbeddingSegment or a (start, data[, grid"
                            f"[, modality]]) tuple, not {type(s).__name__}")
    return out


# -- the JSON form of a request (cbc run's request lines, cbc serve's /v1/completions) -------------

class EmbedsError(ValueError):
    """A bad "embeds" or "placeholder" field: param names it ("embeds[1].base64")."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


_SEGMENT_KEYS = ("file", "tensor", "base64", "start", "grid", "modality")


def from_json(embeds: Any, placeholder: Any, prompt: Sequence[int], width: int) -> list:
    """EmbeddingSegments from a request's "embeds" (segments {"base64": F32_LE, "start": S,
    "grid": [t, h, w], "modality": "image" | "video" | "audio"}) and "placeholder" (a token id: the segments take, in order, the prompt's
    runs of it), as `cbc run` reads them, less "file": a server does not read its own disk for a
    client. Raises EmbedsError naming the field."""
    if placeholder is not None and (isinstance(placeholder, bool) or not isinstance(placeholder, int)
                                    or not 0 <= placeholder < 1 << 31):
        raise EmbedsError("placeholder", f"'placeholder' must be a token id (an integer >= 0), got {placeholder!r}")
    if embeds is None:
        embeds = []
    if not isinstance(embeds, list):
        raise EmbedsError("embeds", "'embeds' must be a list of segments ({\"base64\", \"start\", \"grid\"})")
    if embeds and width <= 0:
        raise EmbedsError("embeds", "'embeds' given, but this model takes no embeddings (only a multimodal "
                          "model's decoder does)")
    runs = _runs(prompt, placeholder) if placeholder is not None else None
    if runs is not None and len(runs) != len(embeds):
        at = "" if not runs else " (at rows " + ", ".join(str(s) for s, _ in runs[:8]) + \
            (", ..." if len(runs) > 8 else "") + ")"
        raise EmbedsError("embeds", f"'embeds' has {len(embeds)} segment{'' if len(embeds) == 1 else 's'} but the "
                          f"prompt has {len(runs)} run{'' if len(runs) == 1 else 's'} of 'placeholder' "
                          f"{placeholder}{at}: one segment a run, in order")
    out = []
    for i, seg in enumerate(embeds):
        where = f"embeds[{i}]"
        if not isinstance(seg, dict):
            raise EmbedsError(where, f"'{where}' must be an object with \"base64\"")
        for key in seg:
            if key not in _SEGMENT_KEYS:
                raise EmbedsError(f"{where}.{key}", f"unknown key '{key}' in '{where}' (a segment takes "
                                  "\"base64\", \"start\", \"grid\" and \"modality\")")
        if "file" in seg:
            raise EmbedsError(f"{where}.file", f"'{where}.file' is not accepted here: the server reads no files "
                              "for a client; send the rows inline as \"base64\" (float32 little-endian)")
        if "tensor" in seg:
            raise EmbedsError(f"{where}.tensor", f"'{where}.tensor' names a tensor of a file; send the rows "
                              "inline as \"base64\"")
        if "base64" not in seg:
            raise EmbedsError(where, f"'{where}' needs \"base64\" (its rows as float32 little-endian bytes)")
        text = seg["base64"]
        if not isinstance(text, str):
            raise EmbedsError(f"{where}.base64", f"'{where}.base64' must be a string of base64")
        try:
            raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError) as e:
            raise EmbedsError(f"{where}.base64", f"'{where}.base64' is not valid base64: {e}") from None
        if not raw:
            raise EmbedsError(f"{where}.base64", f"'{where}.base64' holds no values")
        if len(raw) % 4:
            raise EmbedsError(f"{where}.base64", f"'{where}.base64' decodes to {len(raw)} bytes, not a whole "
                              "number of float32 values (4 bytes each)")
        values = len(raw) // 4
        if values % width:
            raise EmbedsError(f"{where}.base64", f"'{where}' holds {values} values, not a whole number of rows "
                              f"of the model's embedding width {width}")
        rows = values // width
        grid = seg.get("grid")
        if grid is not None and (not isinstance(grid, list) or len(grid) != 3 or
                                 any(isinstance(g, bool) or not isinstance(g, int) or g < 1 for g in grid)):
            raise EmbedsError(f"{where}.grid", f"'{where}.grid' must be [t, h, w], three integers >= 1")
        modality = seg.get("modality", "image")
        if modality not in MODALITIES:
            raise EmbedsError(f"{where}.modality", f"'{where}.modality' must be \"image\", \"video\" or "
                              f"\"audio\", got {modality!r}")
        start = seg.get("start")
        if runs is not None:
            if start is not None:
                raise EmbedsError(f"{where}.start", f"'{where}.start' cannot be given with 'placeholder' (the "
                                  "placeholder's runs place every segment)")
            start, length = runs[i]
            if rows != length:
                raise EmbedsError(where, f"'{where}' has {rows} rows ({values} values of width {width}) but run {i} "
                                  f"of 'placeholder' {placeholder} (prompt rows {start} to {start + length}) "
                                  f"has {length}")
        elif start is None:
            raise EmbedsError(where, f"'{where}' needs \"start\" (its first prompt row), or the request a "
                              "'placeholder' id")
        elif isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise EmbedsError(f"{where}.start", f"'{where}.start' must be a prompt row (an integer >= 0), "
                              f"got {start!r}")
        segment = EmbeddingSegment(start, raw, grid, modality)
        segment._rows = rows
        out.append(segment)
    return out


def _runs(prompt: Sequence[int], token: int) -> list:
    """[(start, length)] of the runs of token in the prompt."""
    runs, i, n = [], 0, len(prompt)
    while i < n:
        if prompt[i] == token:
            j = i
            while j < n and prompt[j] == token:
                j += 1
            runs.append((i, j - i))
            i = j
        else:
            i += 1
    return runs
