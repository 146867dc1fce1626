"""A model folder's artefact compiled into the cache: the cache keys on the runtime's artefact
format, so an artefact a cbc of another format left there is never served (it would be refused
with 'recompile it')."""
import os

from serve_util import MODEL  # puts the built package on the path

import cbc  # noqa: E402
from cbc import _runtime  # noqa: E402
from cbc.model_dir import find_artefact  # noqa: E402


def test_cached_artefacts_key_on_the_runtime_format(tmp_path, monkeypatch):
    monkeypatch.setenv("CBC_CACHE_DIR", str(tmp_path))
    current = _runtime.format_version
    monkeypatch.setattr(_runtime, "format_version", current - 1)
    stale = find_artefact(MODEL, None, "bf16")  # compiled under the older format's key
    monkeypatch.setattr(_runtime, "format_version", current)
    fresh = find_artefact(MODEL, None, "bf16")
    assert fresh != stale and os.path.dirname(fresh) == str(tmp_path)
    assert find_artefact(MODEL, None, "bf16") == fresh  # the same format finds it again
    cbc.Engine(fresh, MODEL, backend="cpu", threads=1)  # this runtime reads it
