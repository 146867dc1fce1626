"""cbc serve --tp: the server starts itself again as an MPI job (rank 0 serves HTTP and schedules,
the other ranks follow its steps on their shards) and answers as one process does; and what it
says about a size the model cannot take or a launcher it cannot find."""
import os
import shutil
import subprocess
import sys

import openai
import pytest

from serve_util import ARTEFACT, MODEL, PYTHON_DIR, TOKENIZER, Server

from cbc import _runtime  # noqa: E402  (serve_util put the build's package on the path)

pytestmark = pytest.mark.skipif(not _runtime.built_with_mpi or shutil.which("mpiexec") is None,
                                reason="cbc built without MPI, or no mpiexec on PATH")
PROMPTS = ["hello there", "the quick brown fox", "a", "one two three four five six"]


def _serve(*extra, cache, **kw):
    os.environ["CBC_CACHE_DIR"] = str(cache)
    try:
        return Server(*extra, **kw, timeout=300)
    finally:
        del os.environ["CBC_CACHE_DIR"]


def _texts(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    return [client.completions.create(model="llama", prompt=p, max_tokens=12, temperature=0).choices[0].text
            for p in PROMPTS]


def test_two_ranks_answer_as_one_process(tmp_path):
    one = Server()
    try:
        want = _texts(one)
    finally:
        one.stop()
    two = _serve("--tp", "2", artefact=None, cache=tmp_path)
    try:
        assert _texts(two) == want
    finally:
        two.stop()


def _run(*args, env=None):
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PYTHON_DIR, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "cbc.serve", MODEL, "--tokenizer", TOKENIZER, *args],
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_size_the_model_cannot_take_names_the_sizes(tmp_path):
    r = _run("--tp", "3", env={"CBC_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 2
    assert "tensor-parallel sizes this model can take" in r.stderr, r.stderr


def test_bad_tp_and_ep_flags():
    r = _run("--tp", "0")
    assert r.returncode == 2 and "--tp must be at least 1" in r.stderr
    r = _run("--tp", "2", "--ep", "3")
    assert r.returncode == 2 and "--ep 1 or equal to --tp" in r.stderr


def test_no_launcher_is_a_clear_error(tmp_path):
    r = _run("--tp", "2", env={"CBC_MPIEXEC": "", "PATH": str(tmp_path), "CBC_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 2
    assert "--tp needs an MPI launcher" in r.stderr, r.stderr


def test_an_artefact_for_one_process_is_refused_on_two_ranks():
    r = _run("--tp", "2", "--artefact", ARTEFACT, "--port", "0", "--backend", "cpu")
    assert r.returncode != 0
    assert "the artefact was compiled without --tp but runs on 2 ranks" in r.stderr, r.stderr
