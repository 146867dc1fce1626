"""The trained example model (examples/kjv-llama) through the Python API: generate_batch and
stream give transformers' greedy tokens (examples/kjv-llama/transformers_greedy.json, written by
tools/oracle/make_example_fixture.py with transformers' generate and generate_batch), batched
and one prompt at a time, and TextGenerator gives transformers' text. The artefact is compiled
from the example's config.json into a temporary folder, as a user would."""
import json
import os
import subprocess
from pathlib import Path

import pytest

import cbc
import cbc._compile
from cbc.text import TextGenerator

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "kjv-llama"
FIXTURE = EXAMPLE / "transformers_greedy.json"
CBC = Path(os.environ.get("CBC_EXECUTABLE") or
           Path(os.environ.get("CBC_BUILD_DIR", REPO / "build")) / "bin" / "cbc")


def compiled(out: Path) -> str:
    """cbc.compile where this package has the compiler, else the build tree's cbc."""
    if cbc._compile._compiler is not None:
        return cbc.compile(EXAMPLE / "config.json", out, cuda=False)
    if not CBC.exists():
        pytest.skip(f"no compiler module and no cbc executable at {CBC}")
    r = subprocess.run([str(CBC), "compile", str(EXAMPLE / "config.json"), "-o", str(out),
                        "--no-cuda", "--quiet"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"{CBC} cannot compile: {r.stderr.strip()}")
    return str(out)


@pytest.fixture(scope="module")
def fixture():
    with open(FIXTURE, encoding="utf-8") as f:
        data = json.load(f)
    assert data["cases"]
    return data


@pytest.fixture(scope="module")
def artefact(tmp_path_factory):
    return compiled(tmp_path_factory.mktemp("kjv") / "kjv-llama.fb")


@pytest.fixture(scope="module")
def engine(artefact):
    return cbc.Engine(artefact, EXAMPLE, backend="cpu", threads=1)


def test_generate_batch_is_transformers_greedy(engine, fixture):
    inputs = [case["prompt_ids"] for case in fixture["cases"]]
    out = engine.generate_batch(inputs, max_new_tokens=fixture["max_new_tokens"])
    assert list(out) == [f"req_{i}" for i in range(len(inputs))]
    for i, case in enumerate(fixture["cases"]):
        got = out[f"req_{i}"]
        assert got.status == "finished" and got.error is None
        assert got.prompt_ids == case["prompt_ids"]
        assert got.generated_tokens == case["tokens"], case["prompt"]


def test_one_prompt_at_a_time_and_chunked(artefact, fixture):
    """Alone, with an 8-token step budget (chunked prefill), the same tokens."""
    eng = cbc.Engine(artefact, EXAMPLE, backend="cpu", threads=1, max_batch_tokens=8)
    for case in fixture["cases"]:
        out = eng.generate_batch([case["prompt_ids"]], max_new_tokens=fixture["max_new_tokens"])
        assert out["req_0"].generated_tokens == case["tokens"], case["prompt"]


def test_stream_yields_transformers_tokens(engine, fixture):
    inputs = [case["prompt_ids"] for case in fixture["cases"]]
    tokens = {i: [] for i in range(len(inputs))}
    for ev in engine.stream(inputs, max_new_tokens=fixture["max_new_tokens"]):
        if ev.token is not None:
            tokens[ev.index].append(ev.token)
    for i, case in enumerate(fixture["cases"]):
        assert tokens[i] == case["tokens"], case["prompt"]


def test_text_generator_is_transformers_text(artefact, fixture):
    gen = TextGenerator.from_dir(str(EXAMPLE), artefact=artefact, backend="cpu", threads=1)
    prompts = [case["prompt"] for case in fixture["cases"]]
    texts = gen.generate(prompts, max_new_tokens=fixture["max_new_tokens"])
    assert texts == [case["text"] for case in fixture["cases"]]
