"""cbc serve with the official openai client as a real client, over loopback. Expected tokens
come from cbc.Engine running the same request alone; expected text is the tokenizer's decode of
those tokens."""
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from serve_util import ARTEFACT, MODEL, PYTHON_DIR, ROOT, TOKENIZER, Server, parse_metrics

import cbc  # noqa: E402  (serve_util put the build's package on the path)
from cbc.text import Tokenizer  # noqa: E402

NAME = "llama"  # the served model's name: its folder's


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_dir(TOKENIZER)


@pytest.fixture(scope="module")
def alone(tok):
    """Greedy tokens of one request run alone through cbc.Engine, with the stops the server
    uses (the model's eos and the tokenizer's <|im_end|>)."""
    eng = cbc.Engine(ARTEFACT, MODEL, threads=1, backend="cpu")
    stops = sorted(set(eng.eos_token_ids) | {tok.eos_token_id})

    def run(prompt_ids, max_tokens):
        out = eng.generate_batch([prompt_ids], max_new_tokens=max_tokens, eos_token_id=stops)
        return out["req_0"].generated_tokens
    return run


def metrics(server):
    return parse_metrics(httpx.get(server.url + "/metrics", timeout=10).text)


PROMPTS = ["hello world", "the quick brown fox", "Café 🙂", "你好"]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_completion_greedy_equals_engine_alone(client, tok, alone, prompt):
    ids = tok.encode(prompt)
    r = client.completions.create(model=NAME, prompt=prompt, max_tokens=40, temperature=0)
    want = alone(ids, 40)
    assert r.usage.prompt_tokens == len(ids)
    assert r.usage.completion_tokens == len(want)
    assert r.choices[0].text == tok.decode(want, skip_special_tokens=True)
    assert r.choices[0].finish_reason == ("length" if len(want) == 40 else "stop")
    assert r.model == NAME and r.object == "text_completion"


def test_completion_from_token_ids_with_logprobs(client, tok, alone):
    ids = [5, 17, 200, 33]
    r = client.completions.create(model=NAME, prompt=ids, max_tokens=12, temperature=0, logprobs=0)
    want = alone(ids, 12)
    lp = r.choices[0].logprobs
    assert lp.tokens == [tok.decode([t]) for t in want]
    assert len(lp.token_logprobs) == len(want) and all(x <= 0 for x in lp.token_logprobs)
    assert r.choices[0].text == tok.decode(want, skip_special_tokens=True)


def test_logits_processing_fields(client, tok):
    """logit_bias, the penalties and vLLM's repetition_penalty / min_tokens reach the engine: the
    tokens equal cbc.Engine's with the same fields."""
    eng = cbc.Engine(ARTEFACT, MODEL, threads=1, backend="cpu")
    ids = [5, 17, 200, 33]
    fields = dict(logit_bias={"45": 2.0, "7": -5.0}, presence_penalty=0.4, frequency_penalty=0.3)
    extra = dict(repetition_penalty=1.3)
    r = client.completions.create(model=NAME, prompt=ids, max_tokens=10, temperature=0, logprobs=0,
                                  extra_body=extra, **fields)
    rid = eng.add_request(ids, max_new_tokens=10, logit_bias={45: 2.0, 7: -5.0}, presence_penalty=0.4,
                          frequency_penalty=0.3, repetition_penalty=1.3,
                          stop_token_ids=[tok.eos_token_id])
    while not eng.idle():
        eng.step()
    (want,) = [o.tokens for o in eng.take_finished() if o.id == rid]
    assert r.choices[0].logprobs.tokens == [tok.decode([t]) for t in want]
    plain = client.completions.create(model=NAME, prompt=ids, max_tokens=10, temperature=0, logprobs=0)
    assert plain.choices[0].logprobs.tokens != r.choices[0].logprobs.tokens, "the fields changed nothing"
    # A large bias decides every token, in chat completions too.
    chat = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}],
                                          max_tokens=3, temperature=0, logit_bias={"45": 100})
    assert chat.choices[0].message.content == tok.decode([45, 45, 45])


def test_top_logprobs(client, tok):
    """logprobs=N (completions) and top_logprobs (chat): each token's N best alternatives,
    best first, the sampled (greedy) token first among them, as cbc.Engine reports them."""
    eng = cbc.Engine(ARTEFACT, MODEL, threads=1, backend="cpu")
    ids = [5, 17, 200, 33]
    rid = eng.add_request(ids, max_new_tokens=6, top_logprobs=3, stop_token_ids=[tok.eos_token_id])
    while not eng.idle():
        eng.step()
    (want,) = [o for o in eng.take_finished() if o.id == rid]
    assert [len(t) for t in want.top_logprobs] == [3] * len(want.tokens)
    r = client.completions.create(model=NAME, prompt=ids, max_tokens=6, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert lp.token_logprobs == pytest.approx(want.logprobs)
    for step, (alt, top) in enumerate(zip(lp.top_logprobs, want.top_logprobs)):
        first = {}
        for i, v in top:
            first.setdefault(tok.decode([i]), v)
        assert alt == pytest.approx(first), step
        assert max(alt.values()) == pytest.approx(lp.token_logprobs[step])
    chunks = list(client.completions.create(model=NAME, prompt=ids, max_tokens=6, temperature=0, logprobs=3,
                                            stream=True))
    streamed = [d for c in chunks if c.choices[0].logprobs for d in c.choices[0].logprobs.top_logprobs]
    assert streamed == lp.top_logprobs
    chat = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}],
                                          max_tokens=4, temperature=0, logprobs=True, top_logprobs=2)
    for item in chat.choices[0].logprobs.content:
        assert len(item.top_logprobs) == 2
        assert item.top_logprobs[0].logprob == pytest.approx(item.logprob)
        assert item.top_logprobs[0].logprob >= item.top_logprobs[1].logprob


def test_structured_outputs(client):
    """response_format json_schema (also through the client's parse() with a pydantic model) and
    vLLM's structured_outputs regex: sampled answers keep to them, streamed too; bad ones are 400s."""
    from typing import Literal

    from pydantic import BaseModel

    schema = {"type": "object", "additionalProperties": False, "required": ["ok", "n"],
              "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 9}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    chat = [{"role": "user", "content": "hi"}]
    for seed in range(8):
        r = client.chat.completions.create(model=NAME, messages=chat, max_tokens=40, temperature=1.0, seed=seed,
                                           response_format=fmt)
        value = json.loads(r.choices[0].message.content)
        assert set(value) == {"ok", "n"} and isinstance(value["ok"], bool) and 0 <= value["n"] <= 9, value
    chunks = client.chat.completions.create(model=NAME, messages=chat, max_tokens=40, temperature=1.0, seed=1,
                                            response_format=fmt, stream=True)
    assert set(json.loads("".join(c.choices[0].delta.content or "" for c in chunks if c.choices))) == {"ok", "n"}

    class Answer(BaseModel):
        colour: Literal["red", "green"]
        sure: bool
    parsed = client.chat.completions.parse(model=NAME, messages=chat, max_tokens=40, temperature=1.0, seed=2,
                                           response_format=Answer)
    assert isinstance(parsed.choices[0].message.parsed, Answer)
    r = client.completions.create(model=NAME, prompt="hello", max_tokens=10, temperature=1.0, seed=4,
                                  extra_body={"structured_outputs": {"regex": "(yes|no)!"}})
    assert r.choices[0].text in ("yes!", "no!")
    cases = [
        (dict(response_format={"type": "xml"}), "response_format"),
        (dict(response_format={"type": "json_schema", "json_schema": {"name": "x"}}), "response_format"),
        (dict(extra_body={"structured_outputs": {"regex": "(open"}}), None),
        (dict(extra_body={"structured_outputs": {"regex": "a", "grammar": "b"}}), "structured_outputs"),
    ]
    for kw, param in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model=NAME, messages=chat, max_tokens=5, **kw)
        assert _error(e)["param"] == param, kw


def test_bad_words(client, tok):
    """vLLM's bad_words: the word's tokens, alone and after a space, are kept out in the engine;
    the output equals cbc.Engine's with those id sequences and no longer holds the word."""
    ids = [5, 17, 200, 33]
    plain = client.completions.create(model=NAME, prompt=ids, max_tokens=12, temperature=0, logprobs=0)
    word = next(p.strip() for p in plain.choices[0].logprobs.tokens if p.strip())
    seqs = []
    for text in (word, " " + word):
        seq = tok.encode(text, add_special_tokens=False)
        if seq not in seqs:
            seqs.append(seq)
    eng = cbc.Engine(ARTEFACT, MODEL, threads=1, backend="cpu")
    rid = eng.add_request(ids, max_new_tokens=12, bad_words=seqs, stop_token_ids=[tok.eos_token_id])
    while not eng.idle():
        eng.step()
    (want,) = [o.tokens for o in eng.take_finished() if o.id == rid]
    r = client.completions.create(model=NAME, prompt=ids, max_tokens=12, temperature=0, logprobs=0,
                                  extra_body={"bad_words": [word]})
    assert r.choices[0].logprobs.tokens == [tok.decode([t]) for t in want]
    assert r.choices[0].logprobs.tokens != plain.choices[0].logprobs.tokens
    assert all(s not in [want[i:i + len(s)] for i in range(len(want))] for s in seqs)


def test_echo(client, tok):
    """echo: the prompt's text before the output; with logprobs, the prompt's tokens lead the
    logprobs (the first with none), each with the log-probability cbc.Engine reports for it."""
    eng = cbc.Engine(ARTEFACT, MODEL, threads=1, backend="cpu")
    ids = [5, 17, 200, 33]
    rid = eng.add_request(ids, max_new_tokens=1, prompt_logprobs=2)
    while not eng.idle():
        eng.step()
    (want,) = [o for o in eng.take_finished() if o.id == rid]
    plain = client.completions.create(model=NAME, prompt="hello world", max_tokens=5, temperature=0)
    r = client.completions.create(model=NAME, prompt="hello world", max_tokens=5, temperature=0, echo=True)
    assert r.choices[0].text == "hello world" + plain.choices[0].text
    r = client.completions.create(model=NAME, prompt=ids, max_tokens=3, temperature=0, echo=True,
                                  logprobs=2)
    lp = r.choices[0].logprobs
    assert lp.tokens[:4] == [tok.decode([t]) for t in ids] and len(lp.tokens) == 4 + 3
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert lp.token_logprobs[1:4] == pytest.approx(want.prompt_logprobs)
    for alt, top in zip(lp.top_logprobs[1:4], want.prompt_top_logprobs):
        assert list(alt) == list(dict.fromkeys(tok.decode([i]) for i, _ in top))
    assert r.choices[0].text.startswith(tok.decode(ids))
    assert lp.text_offset[:2] == [0, len(lp.tokens[0])]
    chunks = list(client.completions.create(model=NAME, prompt="hello world", max_tokens=5,
                                            temperature=0, echo=True, stream=True))
    assert "".join(c.choices[0].text for c in chunks) == r"hello world" + plain.choices[0].text
    with pytest.raises(openai.BadRequestError, match="is not streamed"):
        client.completions.create(model=NAME, prompt="hi", max_tokens=2, echo=True, logprobs=1,
                                  stream=True)


@pytest.mark.parametrize("prompt", PROMPTS[:2])
def test_completion_stream_equals_non_stream(client, prompt):
    whole = client.completions.create(model=NAME, prompt=prompt, max_tokens=30, temperature=0)
    chunks = list(client.completions.create(model=NAME, prompt=prompt, max_tokens=30,
                                            temperature=0, stream=True))
    assert len(chunks) >= 2
    assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text
    assert [c.choices[0].finish_reason for c in chunks][-1] == whole.choices[0].finish_reason
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


def test_n_choices_share_the_prompt_and_stream(client, server, tok, alone):
    """n greedy choices: each is the request alone; the engine forked them from one prompt."""
    before = metrics(server)
    r = client.completions.create(model=NAME, prompt="hello world", max_tokens=12, temperature=0, n=3)
    want_ids = alone(tok.encode("hello world"), 12)
    want = tok.decode(want_ids, skip_special_tokens=True)
    assert [c.index for c in r.choices] == [0, 1, 2]
    assert all(c.text == want for c in r.choices)
    assert r.usage.completion_tokens == 3 * len(want_ids)
    after = metrics(server)
    assert after["cbc_forks_total"] - before["cbc_forks_total"] == 2
    # Streamed: every choice's chunks carry its index and end with its finish reason.
    chunks = list(client.completions.create(model=NAME, prompt="hello world", max_tokens=12,
                                            temperature=0, n=2, stream=True))
    for i in range(2):
        mine = [c.choices[0] for c in chunks if c.choices[0].index == i]
        assert "".join(c.text for c in mine) == want
        assert mine[-1].finish_reason is not None
    chat = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}],
                                          max_tokens=8, temperature=1.0, seed=7, n=2)
    assert [c.index for c in chat.choices] == [0, 1]


def test_prefix_cache_metrics(client, server):
    """A prompt sent twice finds its whole blocks cached the second time."""
    prompt = list(range(1, 60))
    before = metrics(server)
    for _ in range(2):
        client.completions.create(model=NAME, prompt=prompt, max_tokens=2, temperature=0)
    after = metrics(server)
    assert after["cbc_prefix_queries_total"] - before["cbc_prefix_queries_total"] == 2 * len(prompt)
    assert after["cbc_prefix_hits_total"] - before["cbc_prefix_hits_total"] >= 48
    for name in ("cbc_cached_blocks", "cbc_swaps_out_total", "cbc_snapshots_total", "cbc_swap_bytes"):
        assert name in after


CHATS = [
    [{"role": "user", "content": "hello there"}],
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "how are you today?"}],
]


@pytest.mark.parametrize("messages", CHATS)
def test_chat_greedy_equals_engine_alone(client, tok, alone, messages):
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    r = client.chat.completions.create(model=NAME, messages=messages, max_tokens=32,
                                       temperature=0)
    want = alone(ids, 32)
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == tok.decode(want, skip_special_tokens=True)
    assert r.usage.prompt_tokens == len(ids) and r.usage.completion_tokens == len(want)


def test_chat_stream(client, tok, alone):
    messages = CHATS[1]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    stream = client.chat.completions.create(model=NAME, messages=messages, max_tokens=32,
                                            temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    want = alone(ids, 32)
    assert text == tok.decode(want, skip_special_tokens=True)
    finals = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finals[-1] in ("stop", "length") and all(f is None for f in finals[:-1])
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == len(want)


def test_chat_content_parts_and_no_generation_prompt(client, tok, alone):
    parts = [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]
    r = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": parts}],
                                       max_tokens=8, temperature=0)
    ids = tok.apply_chat_template([{"role": "user", "content": "hello there"}],
                                  add_generation_prompt=True, tokenize=True)
    assert r.choices[0].message.content == tok.decode(alone(ids, 8), skip_special_tokens=True)


def test_stop_strings(client, tok, alone):
    prompt = "the quick brown fox"
    full = tok.decode(alone(tok.encode(prompt), 40), skip_special_tokens=True)
    assert len(full) > 6
    stop = full[3:5]  # a stop string that occurs: the text ends before its first occurrence
    want = full[:full.find(stop)]
    r = client.completions.create(model=NAME, prompt=prompt, max_tokens=40, temperature=0,
                                  stop=[stop, "\x00never"])
    assert r.choices[0].text == want and r.choices[0].finish_reason == "stop"
    chunks = list(client.completions.create(model=NAME, prompt=prompt, max_tokens=40,
                                            temperature=0, stop=stop, stream=True))
    assert "".join(c.choices[0].text for c in chunks) == want
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_seeded_sampling_repeats(client):
    kw = dict(model=NAME, prompt="hello", max_tokens=20, temperature=1.0, top_p=0.9, seed=7)
    a = client.completions.create(**kw).choices[0].text
    b = client.completions.create(**kw).choices[0].text
    assert a == b


def test_models_and_health(client, server):
    models = client.models.list()
    assert [m.id for m in models.data] == [NAME]
    assert client.models.retrieve(NAME).id == NAME
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("other")
    h = httpx.get(server.url + "/health", timeout=10)
    assert h.status_code == 200 and h.json() == {"status": "ok"}


def _error(excinfo):
    body = excinfo.value.body
    assert set(body) >= {"message", "type", "param", "code"}, body
    return body


def test_errors(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="nope", prompt="hi")
    assert _error(e)["code"] == "model_not_found"
    cases = [
        (dict(prompt="hi", max_tokens=1000), "max_tokens", "context_length_exceeded"),
        (dict(prompt=""), "prompt", "invalid_value"),
        (dict(prompt=[]), "prompt", "invalid_value"),
        (dict(prompt=[1, 999]), "prompt", "invalid_value"),
        (dict(prompt=list(range(1, 256)) * 2), "prompt", "context_length_exceeded"),
        (dict(prompt="hi", n=0), "n", "invalid_value"),
        (dict(prompt="hi", n=129), "n", "invalid_value"),
        (dict(prompt="hi", n=2, best_of=3), "best_of", "unsupported_value"),
        (dict(prompt="hi", temperature=5), "temperature", "invalid_value"),
        (dict(prompt="hi", max_tokens=0), "max_tokens", "invalid_value"),
        (dict(prompt="hi", stop=["a", "b", "c", "d", "e"]), "stop", "invalid_value"),
        (dict(prompt=["a", "b"]), "prompt", "unsupported_value"),
        (dict(prompt="hi", logprobs=6), "logprobs", "invalid_value"),
        (dict(prompt="hi", presence_penalty=3), "presence_penalty", "invalid_value"),
        (dict(prompt="hi", frequency_penalty=-2.5), "frequency_penalty", "invalid_value"),
        (dict(prompt="hi", logit_bias={"x": 1}), "logit_bias", "invalid_value"),
        (dict(prompt="hi", logit_bias={"5": 101}), "logit_bias", "invalid_value"),
        (dict(prompt="hi", logit_bias={"999": 1}), "logit_bias", "invalid_value"),
        (dict(prompt="hi", extra_body={"repetition_penalty": 0}), "repetition_penalty", "invalid_value"),
        (dict(prompt="hi", extra_body={"min_tokens": -1}), "min_tokens", "invalid_value"),
        (dict(prompt="hi", extra_body={"temperature": "hot"}), "temperature", "invalid_type"),
        (dict(prompt="hi", extra_body={"bad_words": "word"}), "bad_words", "invalid_type"),
        (dict(prompt="hi", extra_body={"bad_words": ["ok", " "]}), "bad_words", "invalid_value"),
        (dict(prompt="hi", echo="yes"), "echo", "invalid_type"),
    ]
    for kw, param, code in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(model=NAME, **kw)
        err = _error(e)
        assert (err["param"], err["code"], err["type"]) == (param, code, "invalid_request_error"), kw


def test_chat_errors(client):
    cases = [
        (dict(messages=[]), "messages"),
        (dict(messages=[{"role": "wizard", "content": "x"}]), "messages[0].role"),
        (dict(messages=[{"role": "user", "content": 3}]), "messages[0].content"),
        (dict(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]),
         "messages[0].content"),
        (dict(messages=CHATS[0], max_tokens=300), "max_tokens"),
        (dict(messages=CHATS[0], top_logprobs=2), "top_logprobs"),
        (dict(messages=CHATS[0], top_logprobs=21, logprobs=True), "top_logprobs"),
    ]
    for kw, param in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model=NAME, **kw)
        assert _error(e)["param"] == param, kw


def test_openapi_schema_documents_the_bodies(server):
    """The request bodies are pydantic models: /openapi.json has their fields with types and
    ranges, /docs renders it, and a wrong type is refused with the field named."""
    spec = httpx.get(server.url + "/openapi.json", timeout=10).json()
    schemas = spec["components"]["schemas"]
    temp = schemas["CompletionRequest"]["properties"]["temperature"]
    assert temp["maximum"] == 2 and temp["minimum"] == 0
    assert "messages" in schemas["ChatCompletionRequest"]["required"]
    assert "tools" in schemas["ChatCompletionRequest"]["properties"]
    assert httpx.get(server.url + "/docs", timeout=10).status_code == 200
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "hi", "max_tokens": "5"}, timeout=10)
    err = r.json()["error"]
    assert r.status_code == 400 and (err["param"], err["code"]) == ("max_tokens", "invalid_type"), err
    r = httpx.post(server.url + "/v1/chat/completions", json={"messages": [{"content": "x"}]}, timeout=10)
    err = r.json()["error"]
    assert (err["param"], err["code"]) == ("messages[0].role", "missing"), err


def test_malformed_bodies(server):
    r = httpx.post(server.url + "/v1/completions", content=b"{not json", timeout=10)
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.post(server.url + "/v1/chat/completions", json=[1, 2], timeout=10)
    assert r.status_code == 400 and "JSON object" in r.json()["error"]["message"]
    r = httpx.get(server.url + "/v1/nothing", timeout=10)
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


def test_metrics_after_requests(client, server):
    before = metrics(server)
    client.completions.create(model=NAME, prompt="hello", max_tokens=10, temperature=0,
                              extra_body={"ignore_eos": True})
    after = metrics(server)
    assert after["cbc_generated_tokens_total"] - before["cbc_generated_tokens_total"] == 10
    assert after['cbc_requests_finished_total{reason="length"}'] >= 1
    assert after["cbc_time_to_first_token_seconds_count"] == \
        before["cbc_time_to_first_token_seconds_count"] + 1
    assert after['cbc_time_to_first_token_seconds_bucket{le="+Inf"}'] == \
        after["cbc_time_to_first_token_seconds_count"]
    assert after["cbc_prompt_tokens_total"] > before["cbc_prompt_tokens_total"]
    assert after["cbc_generated_tokens_per_second"] > 0
    for name in ("cbc_requests_running", "cbc_requests_waiting", "cbc_cache_usage"):
        assert after[name] == 0
    assert after["cbc_requests_rejected_total"] >= 0


def _wait_metric(server, pred, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = metrics(server)
        if pred(m):
            return m
        time.sleep(0.05)
    raise AssertionError(f"metrics never satisfied the condition: {m}")


LONG = 4000  # tokens: seconds of work for the long-context model below


def _model_folder(tmp_path_factory, name, **sizes):
    """A random-weight model with an 8192-token context, so that a request can run long enough
    to be cancelled, and the folder its artefact is compiled into: the model folder has none, so
    the first server compiles config.json into $CBC_CACHE_DIR."""
    folder = tmp_path_factory.mktemp(name)
    with open(os.path.join(MODEL, "config.json")) as f:
        config = json.load(f)
    config.update(max_position_embeddings=8192, num_hidden_layers=4, head_dim=64, **sizes)
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes(open(os.path.join(TOKENIZER, name), "rb").read())
    return folder, tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    return _model_folder(tmp_path_factory, "long_model", hidden_size=256, intermediate_size=512)


@pytest.fixture(scope="module")
def slow_model(tmp_path_factory):
    """Wide enough (about 100M parameters, 200 MB to read per step) that a long request decodes
    for minutes."""
    return _model_folder(tmp_path_factory, "slow_model", hidden_size=2048, intermediate_size=4096)


def _long_server(long_model, *extra):
    folder, cache = long_model
    os.environ["CBC_CACHE_DIR"] = str(cache)
    try:
        return Server("--random-weights", "--cache-memory", "64", *extra, model=str(folder),
                      artefact=None, tokenizer=str(folder), timeout=300)
    finally:
        del os.environ["CBC_CACHE_DIR"]


@pytest.fixture(scope="module")
def long_server(long_model):
    s = _long_server(long_model)
    assert [p.suffix for p in long_model[1].iterdir()] == [".fb"]  # compiled on the fly
    yield s
    s.stop()


def _open_stream(server, max_tokens, prompt="hello", stream=True):
    """A completion sent on a raw socket and left running; close the socket to cancel."""
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "ignore_eos": True, "stream": stream}).encode()
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return s


@pytest.mark.parametrize("stream", [True, False])
def test_disconnect_cancels_the_request(long_server, stream):
    server = long_server
    before = metrics(server)
    cancelled = 'cbc_requests_finished_total{reason="cancelled"}'
    s = _open_stream(server, LONG, stream=stream)
    if stream:
        assert s.recv(64).startswith(b"HTTP/1.1 200")  # the stream has begun
    _wait_metric(server, lambda m: m["cbc_requests_running"] == 1 and
                 m["cbc_generated_tokens_total"] > before["cbc_generated_tokens_total"] + 10)
    s.close()
    m = _wait_metric(server, lambda m: m.get(cancelled, 0) == before.get(cancelled, 0) + 1)
    # The slot and the cache are free, and the request stopped well before its end.
    m = _wait_metric(server, lambda m: m["cbc_requests_running"] == 0 and
                     m["cbc_cache_usage"] == 0)
    assert m["cbc_generated_tokens_total"] - before["cbc_generated_tokens_total"] < LONG / 2


def test_overload_gets_429_with_retry_after_and_loses_nothing(slow_model):
    """1 running + 1 queued sequence at most: with two long requests held, every further one is
    refused at once with 429 and Retry-After (n beyond the limit: 400), and a burst sent with
    the official client's retries (which honour Retry-After)
    completes every request with all its tokens once the long ones are gone."""
    server = _long_server(slow_model, "--max-requests", "1", "--max-queued-requests", "1")
    try:
        # The running one decodes for thousands of steps; the queued one waits for all of them.
        held = [_open_stream(server, LONG, stream=False) for _ in range(2)]
        m = _wait_metric(server, lambda m: m["cbc_sequences_in_flight"] == 2 and
                         m["cbc_requests_running"] == 1 and m["cbc_requests_waiting"] == 1)
        assert m["cbc_sequences_limit"] == 2
        url = server.url + "/v1/completions"
        r = httpx.post(url, json={"prompt": "hi", "max_tokens": 4}, timeout=30)
        assert r.status_code == 429, r.text
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        err = r.json()["error"]
        assert err["type"] == "rate_limit_error" and err["code"] == "server_overloaded"
        assert "limit of 2 sequences" in err["message"]
        r = httpx.post(url, json={"prompt": "hi", "max_tokens": 4, "n": 3}, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["param"] == "n", r.text
        name = httpx.get(server.url + "/v1/models").json()["data"][0]["id"]
        strict = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.RateLimitError) as e:
            strict.chat.completions.create(model=name, max_tokens=4,
                                           messages=[{"role": "user", "content": "hi"}])
        assert e.value.response.headers["Retry-After"]
        # (That refusals hold no memory is test_serve_overload.py's, over a scripted engine.)
        m = metrics(server)
        assert m["cbc_requests_overloaded_total"] == 2 and m["cbc_sequences_in_flight"] == 2
        for s in held:
            s.close()
        _wait_metric(server, lambda m: m["cbc_sequences_in_flight"] == 0 and m["cbc_cache_usage"] == 0)
        # A burst four times the limit, each client retrying on 429: none is lost or cut short.
        patient = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=20,
                                timeout=120)

        def one(i):
            r = patient.completions.create(model=name, prompt=f"request {i}", max_tokens=16,
                                           temperature=0, extra_body={"ignore_eos": True})
            return r.usage.completion_tokens
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(one, range(8))) == [16] * 8
        m = metrics(server)
        assert m['cbc_requests_finished_total{reason="length"}'] == 8
        assert m["cbc_sequences_in_flight"] == 0
    finally:
        server.stop()


def test_serve_bad_input_exits_2(tmp_path):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "cbc.serve", *args], env=env,
                              capture_output=True, text=True, timeout=60)
    r = run(str(tmp_path / "missing"))
    assert r.returncode == 2 and "model folder" in r.stderr and "does not exist" in r.stderr
    r = run(MODEL, "--artefact", ARTEFACT)  # the fixture model folder has no tokenizer.json
    assert r.returncode == 2 and "no tokenizer.json" in r.stderr
    r = run(MODEL, "--artefact", str(tmp_path / "x.fb"), "--tokenizer", TOKENIZER)
    assert r.returncode == 2 and "artefact" in r.stderr and "does not exist" in r.stderr
    r = run("--help")
    assert r.returncode == 0 and "/v1/chat/completions" in r.stdout and "--max-queued-requests" in r.stdout
    r = run(MODEL, "--max-queued-requests", "-1")
    assert r.returncode == 2 and "--max-queued-requests at least 0" in r.stderr, r.stderr
    r = run(MODEL, "--tool-call-parser", "xml")
    assert r.returncode == 2 and "invalid choice: 'xml'" in r.stderr, r.stderr
    r = run(MODEL, "--artefact", ARTEFACT, "--tokenizer", TOKENIZER, "--chat-template", str(tmp_path / "none.jinja"))
    assert r.returncode == 2 and "cannot read --chat-template" in r.stderr, r.stderr
    # A tokenizer with more ids than the model's vocabulary belongs to another model.
    from tokenizers import Tokenizer as Backend
    big = Backend.from_file(os.path.join(TOKENIZER, "tokenizer.json"))
    big.add_tokens([f"<extra_{i}>" for i in range(300)])
    (tmp_path / "big").mkdir()
    big.save(str(tmp_path / "big" / "tokenizer.json"))
    r = run(MODEL, "--artefact", ARTEFACT, "--tokenizer", str(tmp_path / "big"))
    assert r.returncode == 2 and "do not belong together" in r.stderr, r.stderr
    # A port already taken.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        r = run(MODEL, "--artefact", ARTEFACT, "--tokenizer", TOKENIZER, "--port", port)
    assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr, r.stderr


CBC = os.path.join(ROOT, "build", "bin", "cbc")


@pytest.mark.skipif(not os.path.exists(CBC), reason="no build/bin/cbc")
def test_cbc_serve_subcommand(server, tmp_path):
    """`cbc serve` runs this package's server with $CBC_PYTHON (the build tree's package found
    beside the executable)."""
    env = dict(os.environ, CBC_PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    r = subprocess.run([CBC, "serve", "--help"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "usage: cbc serve" in r.stdout and "--artefact" in r.stdout
    r = subprocess.run([CBC, "serve", str(tmp_path / "missing")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("model folder '%s' does not exist" % (tmp_path / "missing"))
    # Without $CBC_PYTHON a build tree's cbc runs its own venv (build/pyenv), whose packages
    # the server needs: the full help, not the fallback.
    venv = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(CBC))), "pyenv", "bin", "python")
    if os.path.exists(venv):
        env.pop("CBC_PYTHON")
        env["PATH"] = "/usr/bin:/bin"  # a python3 there lacks the server's packages
        r = subprocess.run([CBC, "serve", "--help"], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "--artefact" in r.stdout, r.stderr
