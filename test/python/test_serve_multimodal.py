"""cbc serve with embeddings: /v1/completions takes a multimodal prompt's image rows in the body
("embeds", base64 float32, placed by "placeholder" or "start", as `cbc run`'s request lines), and
the official openai client (extra_body) gets transformers' greedy tokens of the llama4 multimodal
fixture (test/parity/fixtures_mm/llama4, tokens_i), requests batched together; bad fields are
400 invalid_request_error naming the param. The fixture has no tokenizer: the test tokenizer
(ids below 256, as the model's vocabulary) decodes the tokens, and the logprobs' pieces show
them one by one."""
import base64
import json
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from mm_util import Fixture, compile_fixture
from serve_util import TOKENIZER, Server

from cbc.embeds import EmbedsError, from_json  # noqa: E402  (serve_util put the package on the path)
from cbc.text import Tokenizer  # noqa: E402

NAME = "llama4"  # the served model's name: its folder's


@pytest.fixture(scope="module")
def fx():
    return Fixture("llama4")


@pytest.fixture(scope="module")
def server(fx, tmp_path_factory):
    artefact = compile_fixture("llama4", tmp_path_factory.mktemp("mm") / "llama4.fb")
    s = Server(model=str(fx.dir), artefact=artefact)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_dir(TOKENIZER)


def b64(data):
    return base64.b64encode(data).decode()


def by_placeholder(fx, i):
    return {"embeds": [{"base64": b64(s.data)} for s in fx.segments(i)], "placeholder": fx.placeholder}


def by_start(fx, i):
    return {"embeds": [{"base64": b64(s.data), "start": s.start} for s in fx.segments(i)]}


def test_completions_give_the_fixture_tokens(client, fx, tok):
    # Prompt 2's tokens hold the test tokenizer's end token (<|im_end|>, a stop of the server):
    # prompts 0 and 1 (two images) run all 16.
    for i in (0, 1):
        assert 4 not in fx.tokens(i)
    bodies = [(0, by_placeholder(fx, 0)), (1, by_placeholder(fx, 1)), (0, by_start(fx, 0)), (1, by_start(fx, 1))]

    def ask(case):
        i, extra = case
        return client.completions.create(model=NAME, prompt=fx.prompt(i), max_tokens=16, temperature=0,
                                         logprobs=0, extra_body={**extra, "ignore_eos": True})

    with ThreadPoolExecutor(len(bodies)) as pool:  # batched together
        replies = list(pool.map(ask, bodies))
    for (i, _), r in zip(bodies, replies):
        want = fx.tokens(i)
        assert r.usage.prompt_tokens == len(fx.prompt(i))
        assert r.usage.completion_tokens == 16
        assert r.choices[0].logprobs.tokens == [tok.decode([t]) for t in want]
        assert r.choices[0].text == tok.decode(want, skip_special_tokens=True)


def test_streamed_with_embeds(client, fx, tok):
    stream = client.completions.create(model=NAME, prompt=fx.prompt(1), max_tokens=16, temperature=0,
                                       stream=True, extra_body={**by_placeholder(fx, 1), "ignore_eos": True})
    text = "".join(c.choices[0].text for c in stream if c.choices)
    assert text == tok.decode(fx.tokens(1), skip_special_tokens=True)


def _error(excinfo):
    body = excinfo.value.body
    assert set(body) >= {"message", "type", "param", "code"}, body
    return body


def test_bad_embeds_are_400_naming_the_param(client, fx):
    p = fx.prompt(1)
    s0, s1 = fx.segments(1)
    cases = [
        ({"embeds": [{"file": "/etc/passwd", "start": 8}]}, "embeds[0].file", "reads no files"),
        ({"embeds": [{"base64": "not base64!", "start": 8}]}, "embeds[0].base64", "not valid base64"),
        ({"embeds": [{"base64": b64(s0.data[:-4]), "start": 8}]}, "embeds[0].base64",
         "not a whole number of rows of the model's embedding width 64"),
        ({"embeds": [{"base64": b64(s0.data)}], "placeholder": fx.placeholder}, "embeds",
         "has 1 segment but the prompt has 2 runs of 'placeholder' 255 (at rows 8, 25)"),
        ({"embeds": [{"base64": b64(s0.data)}, {"base64": b64(s1.data[:-256])}], "placeholder": fx.placeholder},
         "embeds[1]", "has 8 rows (512 values of width 64) but run 1 of 'placeholder' 255"),
        ({"embeds": [{"base64": b64(s0.data)}]}, "embeds[0]", "needs \"start\""),
        ({"embeds": [{"base64": b64(s0.data), "start": 8}, {"base64": b64(s1.data)}], "placeholder": fx.placeholder},
         "embeds[0].start",
         "cannot be given with 'placeholder'"),
        ({"embeds": [{"data": b64(s0.data), "start": 8}]}, "embeds[0].data", "unknown key 'data'"),
        ({"embeds": {"base64": b64(s0.data)}}, "embeds", "must be a list of segments"),
        ({"placeholder": "<|patch|>"}, "placeholder", "must be a token id"),
        ({"embeds": [{"base64": b64(s0.data), "start": 8, "grid": [1, 9]}]}, "embeds[0].grid", "[t, h, w]"),
        ({"embeds": [{"base64": b64(s0.data), "start": 8, "modality": "speech"}]}, "embeds[0].modality",
         "must be \"image\", \"video\" or \"audio\""),
    ]
    for extra, param, why in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(model=NAME, prompt=p, max_tokens=4, extra_body=extra)
        body = _error(e)
        assert body["param"] == param and why in body["message"], (extra, body)
        assert body["type"] == "invalid_request_error"
    # The engine's own refusals: a segment past the prompt's end.
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=NAME, prompt=p, max_tokens=4,
                                  extra_body={"embeds": [{"base64": b64(s0.data), "start": len(p) - 1}]})
    assert "must be a non-empty run of prompt rows" in _error(e)["message"]


def test_chat_refuses_embeds(client, fx):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}],
                                       extra_body={"embeds": [{"base64": b64(fx.segments(0)[0].data), "start": 0}]})
    body = _error(e)
    assert body["param"] == "embeds" and "/v1/completions" in body["message"]


def test_from_json_refusals(fx):
    """The parser's refusals that a multimodal server cannot show: a model that takes none."""
    seg = {"base64": b64(fx.segments(0)[0].data), "start": 2}
    with pytest.raises(EmbedsError, match="this model takes no embeddings") as e:
        from_json([seg], None, fx.prompt(0), 0)
    assert e.value.param == "embeds"
    with pytest.raises(EmbedsError, match="names a tensor of a file") as e:
        from_json([{**seg, "tensor": "x"}], None, fx.prompt(0), 64)
    assert e.value.param == "embeds[0].tensor"
    with pytest.raises(EmbedsError, match="holds no values"):
        from_json([{"base64": "", "start": 0}], None, fx.prompt(0), 64)
    with pytest.raises(EmbedsError, match="decodes to 5 bytes"):
        from_json([{"base64": b64(b"\0" * 5), "start": 0}], None, fx.prompt(0), 64)
    with pytest.raises(EmbedsError, match="must be a prompt row"):
        from_json([{**seg, "start": -1}], None, fx.prompt(0), 64)
    with pytest.raises(EmbedsError, match="must be an object"):
        from_json([3], None, fx.prompt(0), 64)
    # A placeholder with no runs and no segments: nothing to place.
    assert from_json(None, 7, [1, 2, 3], 64) == []
    segs = from_json([{"base64": b64(s.data)} for s in fx.segments(1)], fx.placeholder, fx.prompt(1), 64)
    assert [(s.start, s.rows) for s in segs] == [(s.start, s.rows) for s in fx.segments(1)]


def test_audio_placeholder_past_the_table(tmp_path, tok):
    """Nemotron-3.5-Transcribe names its audio rows by an id one past its table (the vocabulary's
    size): a prompt holding it, with that placeholder, gets the fixture's tokens; elsewhere the id
    stays refused."""
    nemo = Fixture("nemo_speechlm")
    artefact = compile_fixture("nemo_speechlm", tmp_path / "nemo.fb")
    s = Server(model=str(nemo.dir), artefact=artefact)
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        config = json.loads((nemo.dir / "config.json").read_text())
        audio = config["audio_token_id"]
        prompt = nemo.prompt(1)
        assert audio in prompt and audio >= config["text_config"]["vocab_size"]
        extra = {"embeds": [{"base64": b64(seg.data)} for seg in nemo.segments(1)], "placeholder": audio,
                 "ignore_eos": True}
        r = c.completions.create(model="nemo_speechlm", prompt=prompt, max_tokens=16, temperature=0, extra_body=extra)
        assert r.usage.completion_tokens == 16
        assert r.choices[0].text == tok.decode(nemo.tokens(1), skip_special_tokens=True)
        with pytest.raises(openai.BadRequestError) as e:
            c.completions.create(model="nemo_speechlm", prompt=[5, audio, 7], max_tokens=4, temperature=0)
        assert e.value.body["param"] == "prompt"
    finally:
        s.stop()
