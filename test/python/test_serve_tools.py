"""Tool calling in cbc serve: the formats' parsers (cbc/tool_calls.py), and calls round-tripped with
the official openai client for three template families (Hermes/Qwen, Llama 3.1 JSON, Mistral):
the tools reach the chat template, the model's answer (scripted here: the engine is a stand-in
that writes a given text, since a random tiny model writes no calls) comes back as tool_calls,
whole and streamed, and a conversation holding the calls and their results renders again."""
import json
import os
import socket
import threading
import time
from collections import namedtuple
from types import SimpleNamespace

import openai
import pytest

from serve_util import HERE, TOKENIZER

import cbc  # noqa: E402
from cbc import tool_calls  # noqa: E402  (serve_util put the build's package on the path)
from cbc.serve import Served, create_app  # noqa: E402
from cbc.text import Tokenizer  # noqa: E402

TEMPLATES = os.path.join(HERE, "fixtures", "tool_templates")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}

Event = namedtuple("Event", "id token logprob finished finish_reason top_logprobs")


class ScriptedEngine:
    """cbc.Engine's serving interface, answering each request with the next scripted text
    (then the tokenizer's end token; a script of None holds the request until it is cancelled);
    it records the prompts it was given."""

    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.scripts, self.prompts = [], []
        self.live, self.finished = {}, []
        self.next_id = 0
        self.eos_token_ids = [tok.eos_token_id]
        self.vocab_size = self.prompt_vocab_size = tok.vocab_size
        self.max_model_len, self.embedding_width = 4096, 0
        self.num_running = self.num_waiting = 0
        self.cache_usage, self.stats = 0.0, {}

    def set_structured_vocab(self, tokenizer, stop_ids=()):
        raise ValueError("the scripted engine has no structured outputs")

    def add_forked_request(self, prompt, n, **kw):
        self.prompts.append(list(prompt))
        ids = []
        for _ in range(n):
            text = self.scripts.pop(0)
            self.live[self.next_id] = None if text is None else \
                self.tok.encode(text, add_special_tokens=False) + [self.tok.eos_token_id]
            ids.append(self.next_id)
            self.next_id += 1
        return ids

    def idle(self):
        return not self.live and not self.finished

    def step(self):
        time.sleep(0.001)  # a step takes time: the loop thread does not spin on held requests
        events = []
        for rid, toks in list(self.live.items()):
            if toks is None:
                continue
            tok = toks.pop(0)
            done = not toks
            events.append(Event(rid, tok, 0.0, done, "stop" if done else None, []))
            if done:
                del self.live[rid]
                self.finished.append(SimpleNamespace(id=rid, finish_reason="stop", prompt_logprobs=[],
                                                     prompt_top_logprobs=[]))
        return events

    def take_finished(self):
        out, self.finished = self.finished, []
        return out

    def cancel(self, rid):
        if self.live.pop(rid, "gone") == "gone":
            return False
        self.finished.append(SimpleNamespace(id=rid, finish_reason="cancelled", prompt_logprobs=[],
                                             prompt_top_logprobs=[]))
        return True


class InProcessServer:
    """create_app over a Served with the scripted engine, run by uvicorn on a loopback port."""

    def __init__(self, template: str, engine=None, tokenizer=TOKENIZER, **served):
        import uvicorn
        tok = Tokenizer.from_dir(str(tokenizer))
        with open(os.path.join(TEMPLATES, template), encoding="utf-8") as f:
            tok.chat_template = f.read()
        self.tok = tok
        self.engine = engine if engine is not None else ScriptedEngine(tok)
        self.served = Served(self.engine, tok, "scripted", **served)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        self.server = uvicorn.Server(uvicorn.Config(create_app(self.served), log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        self.client = openai.OpenAI(base_url=self.url, api_key="unused", max_retries=0, timeout=30)

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def last_prompt(self) -> str:
        return self.tok.decode(self.engine.prompts[-1])


# (template, the format detected, an answer calling get_weather(city="Paris") in it)
FAMILIES = [
    ("hermes.jinja", "hermes",
     'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
    ("llama3.jinja", "llama3_json", '{"name": "get_weather", "parameters": {"city": "Paris"}}'),
    ("mistral.jinja", "mistral", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]'),
]


@pytest.fixture(scope="module", params=FAMILIES, ids=[f[1] for f in FAMILIES])
def family(request):
    template, fmt, answer = request.param
    s = InProcessServer(template)
    yield s, fmt, answer
    s.stop()


def test_the_template_names_its_format(family):
    server, fmt, _ = family
    assert server.served.tool_format == fmt


def test_a_call_comes_back_as_tool_calls(family):
    server, fmt, answer = family
    server.engine.scripts.append(answer)
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    r = server.client.chat.completions.create(model="scripted", messages=messages, tools=[WEATHER])
    assert "get_weather" in server.last_prompt() and "The weather in a city." in server.last_prompt()
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert choice.message.content == ("Let me look." if fmt == "hermes" else None)
    # The conversation with the call and its result renders for the next turn.
    server.engine.scripts.append("It is sunny.")
    follow = messages + [choice.message.model_dump(exclude_none=True),
                         {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}]
    r2 = server.client.chat.completions.create(model="scripted", messages=follow, tools=[WEATHER])
    assert r2.choices[0].message.content == "It is sunny." and r2.choices[0].message.tool_calls is None
    assert r2.choices[0].finish_reason == "stop"
    prompt = server.last_prompt()
    assert '"city": "Paris"' in prompt and "sunny, 21 C" in prompt


def test_a_streamed_call_joins_into_the_same_tool_calls(family):
    server, fmt, answer = family
    server.engine.scripts.append(answer)
    chunks = list(server.client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER],
        stream=True))
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    assert len(deltas) == 1 and deltas[0].index == 0 and deltas[0].function.name == "get_weather"
    assert json.loads(deltas[0].function.arguments) == {"city": "Paris"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    # Streamed content stops where the call begins: none of the call's text is sent as content.
    assert content.strip() == ("Let me look." if fmt == "hermes" else "")


def test_plain_answers_and_tool_choice_none_stay_text(family):
    server, _, answer = family
    server.engine.scripts.append("Hello there.")
    r = server.client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}],
                                              tools=[WEATHER], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in r if c.choices) == "Hello there."
    server.engine.scripts.append(answer)
    r = server.client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}],
                                              tools=[WEATHER], tool_choice="none")
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason == "stop"
    assert "get_weather" not in server.last_prompt()  # "none": the template is not given the tools
    # A call the format cannot read comes back as the text it is.
    broken = {"hermes": "<tool_call>{oops", "llama3_json": '{"name": "f", "parameters": {oops',
              "mistral": "[TOOL_CALLS] [oops"}[server.served.tool_format]
    server.engine.scripts.append(broken)
    r = server.client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}],
                                              tools=[WEATHER])
    assert r.choices[0].message.content == broken and r.choices[0].finish_reason == "stop"


def test_tool_errors(family):
    server, _, _ = family
    client = server.client
    user = [{"role": "user", "content": "hi"}]
    cases = [
        (dict(tools=[WEATHER], tool_choice="required"), "tool_choice", "unsupported_value"),  # no xgrammar here
        (dict(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}}),
         "tool_choice", "invalid_value"),
        (dict(tools=[{"type": "function", "function": {}}]), "tools[0]", "invalid_value"),
        (dict(tools=[{"type": "retrieval"}]), "tools[0].function", "missing"),
        (dict(tools=[{"type": "retrieval", "function": {"name": "f"}}]), "tools[0]", "invalid_value"),
        (dict(extra_body={"tool_choice": "auto"}), "tool_choice", "invalid_value"),
        # The scripted engine has no structured outputs: a request for them is refused, saying why.
        (dict(response_format={"type": "json_object"}), "response_format", "unsupported_value"),
        (dict(extra_body={"structured_outputs": {"regex": "a+"}}), "structured_outputs", "unsupported_value"),
    ]
    for kw, param, code in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="scripted", messages=user, **kw)
        err = e.value.response.json()["error"]
        assert (err["param"], err["code"]) == (param, code), kw


# Short names: the example model's tokenizer, trained on the KJV, spends about a token per
# character of JSON, and its context is 512 tokens.
CITY = {"type": "function", "function": {"name": "w", "parameters": {
    "type": "object", "additionalProperties": False, "required": ["c"], "properties": {"c": {"enum": ["P", "R"]}}}}}
ZONE = {"type": "function", "function": {"name": "t", "parameters": {
    "type": "object", "additionalProperties": False, "required": ["z"], "properties": {"z": {"enum": ["U", "C"]}}}}}


@pytest.fixture(scope="module")
def example_artefact(tmp_path_factory):
    from test_engine_example import compiled
    return compiled(tmp_path_factory.mktemp("kjv") / "kjv-llama.fb")


@pytest.mark.parametrize("template", ["hermes.jinja", "llama3.jinja", "mistral.jinja"])
def test_a_forced_call_is_decoded_by_the_engine(template, example_artefact):
    """tool_choice "required" and a named function: the real engine (the example model, which
    never saw a tool call) samples under a structural tag of the template's call format, so its
    answer is one call of a given tool with arguments in that tool's schema."""
    from test_engine_example import EXAMPLE
    engine = cbc.Engine(example_artefact, str(EXAMPLE), threads=1, backend="cpu")
    server = InProcessServer(template, engine=engine, tokenizer=EXAMPLE)
    try:
        user = [{"role": "user", "content": "hi"}]
        names = set()
        for seed in range(4):
            r = server.client.chat.completions.create(model="scripted", messages=user, tools=[CITY, ZONE],
                                                      tool_choice="required", temperature=1.0, seed=seed)
            (call,) = r.choices[0].message.tool_calls
            args = json.loads(call.function.arguments)
            assert r.choices[0].finish_reason == "tool_calls"
            assert (call.function.name, list(args)) in (("w", ["c"]), ("t", ["z"])), args
            assert args.get("c", "P") in ("P", "R") and args.get("z", "U") in ("U", "C")
            names.add(call.function.name)
        r = server.client.chat.completions.create(
            model="scripted", messages=user, tools=[CITY, ZONE], temperature=1.0, seed=9,
            tool_choice={"type": "function", "function": {"name": "t"}}, stream=True)
        deltas = [d for c in r if c.choices for d in (c.choices[0].delta.tool_calls or [])]
        assert [d.function.name for d in deltas] == ["t"]
        assert json.loads(deltas[0].function.arguments)["z"] in ("U", "C")
    finally:
        server.stop()


def test_a_template_without_tools_refuses_them():
    tok = Tokenizer.from_dir(TOKENIZER)  # ChatML without tool sections
    assert tool_calls.detect(tok.chat_template) is None
    s = Served(ScriptedEngine(tok), tok, "scripted")
    assert s.tool_format is None
    from cbc.serve_api import ApiError, parse_chat
    with pytest.raises(ApiError) as e:
        parse_chat({"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER]}, s)
    assert e.value.param == "tools" and "--tool-call-parser" in e.value.message


@pytest.mark.parametrize("fmt,text,name,args,content", [
    ("hermes", '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
               '<tool_call>{"name": "g", "arguments": {}}</tool_call>', "f", {"a": 1}, None),
    ("hermes", 'x <tool_call>{"name": "f", "arguments": {"a": [1, 2]}}', "f", {"a": [1, 2]}, "x"),
    ("mistral", '[TOOL_CALLS]f[ARGS]{"a": 1}', "f", {"a": 1}, None),
    ("llama3_json", '<|python_tag|>{"name": "f", "parameters": {"a": 1}}', "f", {"a": 1}, None),
    ("llama3_json", '{"name": "f", "parameters": {"a": 1}}; {"name": "g", "parameters": {}}', "f", {"a": 1}, None),
    ("deepseek_v3", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n"
                    '{"a": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>', "f", {"a": 1}, None),
    ("harmony", '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1}<|call|>',
     "f", {"a": 1}, None),
])
def test_parsers(fmt, text, name, args, content):
    got, calls = tool_calls.parse(fmt, text)
    assert got == content
    assert calls[0]["function"]["name"] == name and json.loads(calls[0]["function"]["arguments"]) == args


def test_parsers_leave_text_alone_and_refuse_broken_calls():
    assert tool_calls.parse("llama3_json", '{"answer": 42}') == ('{"answer": 42}', [])
    assert tool_calls.parse("hermes", "no calls here") == ("no calls here", [])
    with pytest.raises(tool_calls.ToolCallError, match="not valid JSON"):
        tool_calls.parse("hermes", "<tool_call>{not json}</tool_call>")
    # Streaming holds back from a marker, or what may still become one.
    assert tool_calls.hold_from("hermes", "abc <tool") == 4
    assert tool_calls.hold_from("hermes", "abc <b>") is None
    assert tool_calls.hold_from("llama3_json", "  {") == 2
    assert tool_calls.hold_from("llama3_json", "Sure") is None
    assert tool_calls.detect(None) is None
