"""cbc serve over the trained example model (examples/kjv-llama, with its own tokenizer): the
text it returns for each fixture prompt is transformers' greedy continuation
(examples/kjv-llama/transformers_greedy.json, written by tools/oracle/make_example_fixture.py),
and the prompt is encoded to transformers' ids. The folder has no artefact: the server
compiles config.json into its cache."""
import json
import os

import openai
import pytest

from serve_util import ROOT, Server

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
def client(tmp_path_factory):
    os.environ["CBC_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        s = Server(model=EXAMPLE, artefact=None, tokenizer=EXAMPLE, timeout=600)
    finally:
        del os.environ["CBC_CACHE_DIR"]
    yield openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=120)
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
