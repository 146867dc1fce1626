"""cbc serve over the trained example model (examples/kjv-llama, with its own tokenizer): the
text it returns for each fixture prompt is transformers' greedy continuation
(examples/kjv-llama/transformers_greedy.json, written by tools/oracle/make_example_fixture.py),
and the prompt is encoded to transformers' ids. The folder has no artefact: the server
compiles config.json into its cache."""
import json
import os
import subprocess
import sys

import httpx

import openai
import pytest

from serve_util import PYTHON_DIR, ROOT, Server, parse_metrics

from cbc.text import Tokenizer  # noqa: E402  (serve_util put the build's package on the path)

EXAMPLE = os.environ.get("CBC_EXAMPLE_DIR", os.path.join(ROOT, "examples", "kjv-llama"))
FIXTURE = os.path.join(EXAMPLE, "transformers_greedy.json")
pytestmark = pytest.mark.skipif(not os.path.exists(FIXTURE),
                                reason="no trained example model (examples/kjv-llama)")


@pytest.fixture(scope="module")
def fixture():
    with open(FIXTURE, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


def _serve(cache_dir, *extra):
    os.environ["CBC_CACHE_DIR"] = cache_dir
    try:
        return Server(*extra, model=EXAMPLE, artefact=None, tokenizer=EXAMPLE, timeout=600)
    finally:
        del os.environ["CBC_CACHE_DIR"]


@pytest.fixture(scope="module")
def client(cache_dir):
    s = _serve(cache_dir)
    yield openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    s.stop()


@pytest.fixture(scope="module")
def spec_server(cache_dir):
    s = _serve(cache_dir, "--speculative", "ngram", "--num-speculative-tokens", "4")
    yield s
    s.stop()


def test_prompts_encode_to_transformers_ids(fixture):
    tok = Tokenizer.from_dir(EXAMPLE)
    assert fixture["cases"]
    for case in fixture["cases"]:
        assert tok.encode(case["prompt"]) == case["prompt_ids"], case["prompt"]


def test_completions_are_transformers_greedy_text(client, fixture):
    name = os.path.basename(os.path.abspath(EXAMPLE))
    n = fixture["max_new_tokens"]
    for case in fixture["cases"]:
        r = client.completions.create(model=name, prompt=case["prompt"], max_tokens=n,
                                      temperature=0)
        assert r.choices[0].text == case["text"], case["prompt"]
        want = "stop" if case["finish_reason"] in ("eos", "stop") else "length"
        assert r.choices[0].finish_reason == want
        assert r.usage.completion_tokens == len(case["tokens"])
        chunks = client.completions.create(model=name, prompt=case["prompt"], max_tokens=n,
                                           temperature=0, stream=True)
        assert "".join(c.choices[0].text for c in chunks) == case["text"]


def test_speculative_completions_are_transformers_greedy_text(spec_server, fixture):
    """With prompt lookup the text is still transformers' greedy text, and the scripture's
    repetitions let lookup guess right: /metrics counts guesses accepted at each position."""
    client = openai.OpenAI(base_url=spec_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    name = os.path.basename(os.path.abspath(EXAMPLE))
    n = fixture["max_new_tokens"]
    for case in fixture["cases"]:
        r = client.completions.create(model=name, prompt=case["prompt"], max_tokens=n, temperature=0)
        assert r.choices[0].text == case["text"], case["prompt"]
    m = parse_metrics(httpx.get(spec_server.url + "/metrics", timeout=10).text)
    assert m["cbc_draft_tokens_total"] > 0
    assert 0 < m["cbc_accepted_tokens_total"] <= m["cbc_draft_tokens_total"]
    assert m['cbc_spec_accepted_at_total{position="0"}'] > 0
    assert m['cbc_spec_drafted_at_total{position="3"}'] > 0


def test_bad_speculative_method_exits_with_a_clear_error():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (PYTHON_DIR, os.environ.get("PYTHONPATH")) if p))
    for method, message in (("eagle", "unknown speculative method 'eagle'"), ("mtp", "--speculative mtp is not supported yet")):
        r = subprocess.run([sys.executable, "-m", "cbc.serve", EXAMPLE, "--random-weights", "--speculative", method,
                            "--port", "0", "--backend", "cpu"], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 2, r.stderr
        assert message in r.stderr
