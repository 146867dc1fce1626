"""A Hugging Face model folder as cbc serves it: its artefact (given, beside the weights as
model.fb, or compiled from config.json into a cache) and generation_config.json's eos ids."""
from __future__ import annotations

import hashlib
import json
import os
import sys


def _cache_dir() -> str:
    base = os.environ.get("CBC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cbc")
    os.makedirs(base, exist_ok=True)
    return base


def find_artefact(model_dir: str, artefact: str | None, dtype: str, tp: int = 1, ep: int = 1) -> str:
    """--artefact, else MODEL_DIR/model.fb (tp 1 only), else config.json compiled into the cache
    (keyed by the config's bytes, the dtype, tp and ep and the runtime's artefact format, so a
    changed config or a cbc that reads another format compiles anew)."""
    if artefact:
        if not os.path.isfile(artefact):
            raise FileNotFoundError(f"artefact '{artefact}' does not exist")
        return artefact
    local = os.path.join(model_dir, "model.fb")
    if tp == 1 and os.path.isfile(local):
        return local
    config = os.path.join(model_dir, "config.json")
    if not os.path.isfile(config):
        raise FileNotFoundError(f"'{model_dir}' has no config.json (and no model.fb); "
                                "pass a Hugging Face model folder or --artefact")
    from cbc import _runtime
    with open(config, "rb") as f:
        ranks = b"" if tp == 1 else b"tp %d ep %d" % (tp, ep)
        key = hashlib.sha256(f.read() + dtype.encode() + b"format %d" % _runtime.format_version + ranks).hexdigest()[:20]
    out = os.path.join(_cache_dir(), f"{key}.fb")
    if not os.path.isfile(out):
        import cbc
        print(f"cbc serve: compiling {config} into {out}", file=sys.stderr, flush=True)
        cbc.compile(config, out, dtype=dtype, tp=tp, ep=ep)
    return out


def generation_eos(model_dir: str) -> list:
    """generation_config.json's eos_token_id (an int or a list) as a list; [] without one."""
    path = os.path.join(model_dir, "generation_config.json")
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        eos = json.load(f).get("eos_token_id")
    if eos is None:
        return []
    return [eos] if isinstance(eos, int) else [int(t) for t in eos]
