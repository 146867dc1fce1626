"""The OpenAI request and response shapes of cbc serve: parsing and checking the request bodies
(a bad one is an ApiError that the server turns into OpenAI's error object) and building the
completion, chat completion and streamed chunk objects."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from cbc import tool_calls
from cbc.embeds import EmbedsError, from_json as _embeds_from_json
from cbc.text import TokenizerError


class ApiError(Exception):
    """An error reply: {"error": {"message", "type", "param", "code"}} with STATUS."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = (
            status, message, type_, param, code)
        self.headers = headers or {}


@dataclass
class CompletionParams:
    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int = 0
    stop: list = field(default_factory=list)
    stop_token_ids: list = field(default_factory=list)
    ignore_eos: bool = False
    logprobs: int | None = None      # None: no logprobs; 0: the sampled tokens'; N: and N alternatives
    stream: bool = False
    include_usage: bool = False
    n: int = 1                       # choices: the prompt's cache is shared by all of them
    # Logits processing in the engine (cbc.Engine.add_request): OpenAI's fields and vLLM's extras.
    logit_bias: dict = field(default_factory=dict)
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_tokens: int = 0
    bad_words: list = field(default_factory=list)  # token id sequences the output never ends with
    embeds: list = field(default_factory=list)  # cbc.EmbeddingSegments for runs of prompt rows
    echo: str | None = None          # completions' echo: the prompt's text, put before the output
    tool_format: str | None = None   # chat with tools: the format its calls are parsed in (tool_calls.py)
    structured: tuple | None = None  # (kind, spec) for the engine's structured outputs


def _bad(message: str, param: str | None, code: str | None = None) -> ApiError:
    return ApiError(400, message, "invalid_request_error", param, code)


def _typed(body: dict, name: str, kinds: tuple, kind_name: str, default: Any) -> Any:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in kinds:
        raise _bad(f"'{name}' must be {kind_name}, got {value!r}", name, "invalid_type")
    if not isinstance(value, kinds):
        raise _bad(f"'{name}' must be {kind_name}, got {type(value).__name__}", name,
                   "invalid_type")
    return value


def _number(body, name, default, lo=None, hi=None, integer=False):
    value = _typed(body, name, (int,) if integer else (int, float),
                   "an integer" if integer else "a number", default)
    if value is None:
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise _bad(f"'{name}' must be {rng}, got {value}", name, "invalid_value")
    return value


def _unsupported(body: dict, name: str, allowed, why: str) -> None:
    value = body.get(name)
    if value is not None and value not in allowed:
        raise _bad(f"'{name}'={value!r} is not supported: {why}", name, "unsupported_value")


def _common(body: dict, served, prompt_len: int, default_max: int | None) -> CompletionParams:
    """The sampling fields shared by completions and chat completions."""
    n = _number(body, "n", 1, 1, 128, integer=True)
    _number(body, "best_of", n, 1, integer=True)
    _unsupported(body, "best_of", (n,), "cbc serve returns every sequence it generates (best_of = n)")
    p = CompletionParams()
    p.presence_penalty = float(_number(body, "presence_penalty", 0.0, -2, 2))
    p.frequency_penalty = float(_number(body, "frequency_penalty", 0.0, -2, 2))
    p.repetition_penalty = float(_number(body, "repetition_penalty", 1.0))
    if p.repetition_penalty <= 0:
        raise _bad("'repetition_penalty' must be greater than 0", "repetition_penalty", "invalid_value")
    p.min_tokens = _number(body, "min_tokens", 0, 0, integer=True)
    p.logit_bias = _logit_bias(body, served)
    p.bad_words = _bad_words(body, served)
    p.temperature = float(_number(body, "temperature", 1.0, 0, 2))
    p.top_p = float(_number(body, "top_p", 1.0, 0, 1))
    if p.top_p == 0:
        raise _bad("'top_p' must be greater than 0", "top_p", "invalid_value")
    p.top_k = _number(body, "top_k", 0, -1, integer=True)
    p.top_k = 0 if p.top_k < 0 else p.top_k
    p.min_p = float(_number(body, "min_p", 0.0, 0, 1))
    seed = _number(body, "seed", None, integer=True)
    # No seed: a fresh one, as OpenAI samples differently each time; greedy ignores it.
    p.seed = random.getrandbits(32) if seed is None else seed % (1 << 63)
    p.ignore_eos = _typed(body, "ignore_eos", (bool,), "a boolean", False)
    p.stream = _typed(body, "stream", (bool,), "a boolean", False)
    opts = _typed(body, "stream_options", (dict,), "an object", {})
    if opts and not p.stream:
        raise _bad("'stream_options' is only allowed with stream=true", "stream_options")
    p.include_usage = _typed(opts, "include_usage", (bool,), "a boolean", False)
    p.stop = _stops(body)
    # The tokenizer's and generation config's end tokens stop a request as the model's eos does,
    # so ignore_eos passes them too (as vLLM does); stop_token_ids always stop it.
    p.stop_token_ids = [] if p.ignore_eos else list(served.stop_ids)
    ids = _typed(body, "stop_token_ids", (list,), "a list of token ids", [])
    p.stop_token_ids += [_token_id(t, served, "stop_token_ids") for t in ids]
    p.max_tokens = _max_tokens(body, served, prompt_len, default_max)
    p.n = n
    p.structured = _structured(body, served)
    return p


def _structured(body: dict, served) -> tuple | None:
    """OpenAI's response_format (json_object, json_schema; text: none) or vLLM's
    structured_outputs ({"json": schema} | {"regex": ...} | {"grammar": EBNF} | {"json_object": true})
    as the engine's (kind, spec)."""
    fmt = _typed(body, "response_format", (dict,), "an object", None)
    extra = _typed(body, "structured_outputs", (dict,), "an object", None)
    if fmt is not None and extra is not None:
        raise _bad("give 'response_format' or 'structured_outputs', not both", "structured_outputs",
                   "invalid_value")
    want = None
    if fmt is not None:
        kind = fmt.get("type")
        if kind == "json_object":
            want = ("json", "")
        elif kind == "json_schema":
            spec = fmt.get("json_schema")
            schema = spec.get("schema") if isinstance(spec, dict) else None
            if not isinstance(schema, (dict, bool)):
                raise _bad("'response_format.json_schema.schema' must be a JSON schema object",
                           "response_format", "invalid_value")
            want = ("json_schema", json.dumps(schema))
        elif kind != "text":
            raise _bad(f"'response_format.type' must be text, json_object or json_schema, got {kind!r}",
                       "response_format", "invalid_value")
    elif extra is not None:
        given = [k for k in ("json", "regex", "grammar", "json_object") if extra.get(k) not in (None, False)]
        if len(given) != 1:
            raise _bad("'structured_outputs' must give exactly one of json, regex, grammar, json_object",
                       "structured_outputs", "invalid_value")
        key = given[0]
        value = extra[key]
        if key == "json_object":
            want = ("json", "")
        elif key == "json":
            want = ("json_schema", value if isinstance(value, str) else json.dumps(value))
        elif isinstance(value, str):
            want = (key, value)
        else:
            raise _bad(f"'structured_outputs.{key}' must be a string", "structured_outputs", "invalid_type")
    if want is not None:
        field = "response_format" if fmt is not None else "structured_outputs"
        _need_structured(served, f"'{field}'", field)
    return want


def _need_structured(served, what: str, field: str) -> None:
    """Refuses `what` (400, naming `field`) where the server has no structured outputs."""
    if served.structured_error:
        raise _bad(f"{what} needs structured outputs, which are not available: {served.structured_error}",
                   field, "unsupported_value")


def _bad_words(body: dict, served) -> list:
    """vLLM's bad_words: strings the output never produces, each kept out as its tokens alone
    and after a space (as it would follow a word), so both spellings a tokenizer has are covered."""
    words = _typed(body, "bad_words", (list,), "a list of strings", [])
    out = []
    for i, w in enumerate(words):
        if not isinstance(w, str) or not w.strip():
            raise _bad(f"'bad_words[{i}]' must be a non-empty string, got {w!r}", "bad_words",
                       "invalid_value")
        for text in (w, " " + w.lstrip()):
            ids = served.tokenizer.encode(text, add_special_tokens=False)
            if ids and ids not in out:
                out.append(ids)
    return out


def _logit_bias(body: dict, served) -> dict:
    """OpenAI's logit_bias: token ids (as strings) to biases in [-100, 100]."""
    bias = _typed(body, "logit_bias", (dict,), "an object", None) or {}
    out = {}
    for key, value in bias.items():
        tid = int(key) if isinstance(key, str) and key.isdigit() else None
        if tid is None:
            raise _bad(f"'logit_bias' keys must be token ids, got {key!r}", "logit_bias", "invalid_value")
        _token_id(tid, served, "logit_bias")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -100 <= value <= 100:
            raise _bad(f"'logit_bias' values must be numbers in [-100, 100], got {value!r} for {key}",
                       "logit_bias", "invalid_value")
        out[tid] = float(value)
    return out


def _stops(body: dict) -> list:
    stop = body.get("stop")
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise _bad("'stop' must be a string or a list of strings", "stop", "invalid_type")
    if len(stops) > 4:
        raise _bad(f"'stop' may hold at most 4 sequences, got {len(stops)}", "stop",
                   "invalid_value")
    if any(s == "" for s in stops):
        raise _bad("'stop' sequences must not be empty", "stop", "invalid_value")
    return stops


def _max_tokens(body: dict, served, prompt_len: int, default: int | None) -> int:
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    limit = served.max_model_len
    if prompt_len >= limit:
        raise _bad(f"This model's maximum context length is {limit} tokens. However, your "
                   f"prompt is {prompt_len} tokens, which leaves no room for the completion.",
                   "messages" if "messages" in body else "prompt", "context_length_exceeded")
    value = _number(body, name, None, 1, integer=True)
    if value is None:
        return min(default, limit - prompt_len) if default is not None else limit - prompt_len
    if prompt_len + value > limit:
        raise _bad(f"This model's maximum context length is {limit} tokens. However, you "
                   f"requested {prompt_len + value} tokens ({prompt_len} in the prompt, {value} "
                   f"for the completion). Please reduce the prompt or {name}.", name,
                   "context_length_exceeded")
    return value


def _token_id(t: Any, served, param: str, limit: int | None = None) -> int:
    """A token id below `limit` (default: the ids the model generates)."""
    limit = served.vocab_size if limit is None else limit
    if isinstance(t, bool) or not isinstance(t, int):
        raise _bad(f"'{param}' must hold integer token ids, got {t!r}", param, "invalid_type")
    if not 0 <= t < limit:
        raise _bad(f"token id {t} in '{param}' is outside the vocabulary (0..{limit - 1})",
                   param, "invalid_value")
    return t


def _prompt_ids(body: dict, served) -> list:
    if "prompt" not in body or body["prompt"] is None:
        raise _bad("'prompt' is required", "prompt", "missing")
    prompt = body["prompt"]
    # One prompt: a string, a list of token ids, or a list holding one of those.
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    elif isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
        raise _bad(f"'prompt' holds {len(prompt)} prompts; cbc serve takes one prompt per "
                   "request (send them as separate requests: they are batched together)",
                   "prompt", "unsupported_value")
    if isinstance(prompt, str):
        if not prompt:
            raise _bad("'prompt' must not be empty", "prompt", "invalid_value")
        ids = served.tokenizer.encode(prompt)
        if not ids:
            raise _bad("'prompt' encodes to no tokens", "prompt", "invalid_value")
        return ids
    if isinstance(prompt, list):
        if not prompt:
            raise _bad("'prompt' must not be empty", "prompt", "invalid_value")
        # A prompt may hold any id the embedding table has (past the head's: placeholders), and
        # the request's own placeholder, whose rows its embeds replace: a model may name it past
        # its table (Nemotron-3.5-Transcribe's audio id is the vocabulary's size).
        placeholder = body.get("placeholder")
        return [t if type(t) is int and t == placeholder else _token_id(t, served, "prompt", served.prompt_vocab_size)
                for t in prompt]
    raise _bad("'prompt' must be a string or a list of token ids", "prompt", "invalid_type")


def parse_completion(body: dict, served) -> tuple[list, CompletionParams]:
    if body.get("suffix"):
        raise _bad("'suffix' is not supported", "suffix", "unsupported_value")
    prompt = _prompt_ids(body, served)
    params = _common(body, served, len(prompt), 16)
    params.embeds = _embeds(body, served, prompt)
    params.logprobs = _number(body, "logprobs", None, 0, 5, integer=True)
    if _typed(body, "echo", (bool,), "a boolean", False):
        if params.stream and params.logprobs is not None:
            raise _bad("'echo' with 'logprobs' is not streamed: the prompt's log-probabilities "
                       "come with the whole response (ask with stream=false)", "echo",
                       "unsupported_value")
        text = body["prompt"]
        text = text[0] if isinstance(text, list) and len(text) == 1 and isinstance(text[0], str) else text
        params.echo = text if isinstance(text, str) else served.tokenizer.decode(prompt)
    return prompt, params


def _message(m: Any, i: int) -> dict:
    where = f"messages[{i}]"
    if not isinstance(m, dict):
        raise _bad(f"'{where}' must be an object with 'role' and 'content'", where, "invalid_type")
    role = m.get("role")
    if role not in ("system", "developer", "user", "assistant", "tool"):
        raise _bad(f"'{where}.role' must be one of system, developer, user, assistant, tool; "
                   f"got {role!r}", f"{where}.role", "invalid_value")
    content = m.get("content")
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or \
                    not isinstance(part.get("text"), str):
                raise _bad(f"'{where}.content' parts must be {{\"type\": \"text\", \"text\": ...}}"
                           " (the model takes text only)", f"{where}.content", "unsupported_value")
            texts.append(part["text"])
        content = "".join(texts)
    elif content is None and not (role == "assistant" and m.get("tool_calls")):
        raise _bad(f"'{where}.content' is required", f"{where}.content", "missing")
    elif content is not None and not isinstance(content, str):
        raise _bad(f"'{where}.content' must be a string or a list of text parts",
                   f"{where}.content", "invalid_type")
    out = {k: v for k, v in m.items() if k != "content"}
    out["content"] = content
    if isinstance(m.get("tool_calls"), list):  # templates read the arguments as an object
        out["tool_calls"] = [_template_call(c) for c in m["tool_calls"]]
    return out


def _template_call(call: Any) -> Any:
    """An assistant message's tool call as chat templates read it: OpenAI's JSON-text arguments
    as an object, the function's fields also at the top (transformers' convention)."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return call
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            pass
    fn = {**fn, "arguments": args}
    return {**call, "function": fn, "name": fn.get("name"), "arguments": args}


def _embeds(body: dict, served, prompt: list) -> list:
    """A multimodal decoder's rows for runs of the prompt: "embeds" (segments {"base64", "start",
    "grid"}) placed by "start" or on the runs of "placeholder", as `cbc run`'s request lines give
    them, less "file"."""
    if body.get("embeds") is None and body.get("placeholder") is None:
        return []
    try:
        return _embeds_from_json(body.get("embeds"), body.get("placeholder"), prompt,
                                 getattr(served, "embedding_width", 0))
    except EmbedsError as e:
        raise _bad(str(e), e.param, "invalid_value") from None


def parse_chat(body: dict, served) -> tuple[list, CompletionParams]:
    for name in ("embeds", "placeholder"):
        if body.get(name) is not None:
            raise _bad(f"'{name}' is not supported on /v1/chat/completions: chat messages with images "
                       "or audio are not supported; give a multimodal prompt's rows to /v1/completions "
                       "with a prompt of token ids", name, "unsupported_value")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty list of messages", "messages",
                   "missing" if messages is None else "invalid_value")
    messages = [_message(m, i) for i, m in enumerate(messages)]
    tools, tool_format, forced = _tools(body, served)
    extra = _typed(body, "chat_template_kwargs", (dict,), "an object", {})
    gen_prompt = _typed(body, "add_generation_prompt", (bool,), "a boolean", True)
    try:
        prompt = served.tokenizer.apply_chat_template(
            messages, add_generation_prompt=gen_prompt, tokenize=True, tools=tools, **extra)
    except (TokenizerError, TypeError) as e:
        raise _bad(str(e), "messages", "invalid_value") from None
    if not prompt:
        raise _bad("the chat template made an empty prompt of these messages", "messages",
                   "invalid_value")
    params = _common(body, served, len(prompt), None)
    want = _typed(body, "logprobs", (bool,), "a boolean", False)
    top = _number(body, "top_logprobs", None, 0, 20, integer=True)
    if top is not None and not want:
        raise _bad("'top_logprobs' needs logprobs=true", "top_logprobs", "invalid_value")
    params.logprobs = (top or 0) if want else None
    params.tool_format = tool_format
    if forced is not None:
        if params.structured is not None:
            raise _bad("a forced tool call and 'response_format' / 'structured_outputs' exclude each other",
                       "tool_choice", "invalid_value")
        _need_structured(served, "forcing a tool call", "tool_choice")
        params.structured = ("structural_tag", json.dumps(forced))
    return prompt, params


def _tools(body: dict, served) -> tuple[list | None, str | None, dict | None]:
    """The tools the template is given, the format the answer's calls are parsed in, and with
    tool_choice "required" or a named function the structural tag that forces one call:
    (None, None, None) without tools or with tool_choice "none"."""
    tools = _typed(body, "tools", (list,), "a list of tools", None)
    choice = body.get("tool_choice")
    _typed(body, "parallel_tool_calls", (bool,), "a boolean", True)
    if not tools:
        if choice not in (None, "none"):
            raise _bad("'tool_choice' needs 'tools'", "tool_choice", "invalid_value")
        return None, None, None
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type", "function") != "function" or \
                not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise _bad(f"'tools[{i}]' must be {{\"type\": \"function\", \"function\": {{\"name\": ..., "
                       "\"parameters\": ...}}}}", f"tools[{i}]", "invalid_value")
    if choice == "none":
        return None, None, None
    if served.tool_format is None:
        raise _bad("this model's chat template writes no tool calls cbc serve can read (start the "
                   "server with --tool-call-parser, or a --chat-template that takes tools)", "tools",
                   "unsupported_value")
    if choice in (None, "auto"):
        return tools, served.tool_format, None
    if choice == "required":
        return tools, served.tool_format, tool_calls.forced_call(served.tool_format, tools)
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    chosen = [t for t in tools if t["function"]["name"] == name]
    if not chosen:
        raise _bad(f"'tool_choice' must be \"none\", \"auto\", \"required\" or {{\"type\": \"function\", "
                   f"\"function\": {{\"name\": ...}}}} naming one of the tools, got {choice!r}", "tool_choice",
                   "invalid_value")
    return tools, served.tool_format, tool_calls.forced_call(served.tool_format, chosen)


# -- responses ------------------------------------------------------------------------------------

def _usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def _completion_logprobs(served, toks: list, offset: int, top: int) -> dict:
    """toks: (token, logprob, [(id, logprob), ...]) triples; top: how many alternatives to list."""
    pieces = [served.tokenizer.decode([t]) for t, _, _ in toks]
    offsets, at = [], offset
    for p in pieces:
        offsets.append(at)
        at += len(p)
    alternatives = None
    if top:  # the legacy format: a {text: logprob} dict per token, best first (of pieces that
        alternatives = []  # decode alike, the likelier stands); None for an echoed first token
        for _, _, alt in toks:
            if alt is None:
                alternatives.append(None)
                continue
            d: dict = {}
            for i, lp in alt:
                d.setdefault(served.tokenizer.decode([i]), lp)
            alternatives.append(d)
    return {"tokens": pieces, "token_logprobs": [lp for _, lp, _ in toks],
            "top_logprobs": alternatives, "text_offset": offsets}


def _chat_logprobs(served, toks: list) -> dict:
    def entry(t, lp):
        piece = served.tokenizer.decode([t])
        return {"token": piece, "logprob": lp, "bytes": list(piece.encode("utf-8"))}

    content = []
    for t, lp, alt in toks:
        content.append({**entry(t, lp), "top_logprobs": [entry(i, a) for i, a in alt]})
    return {"content": content}


def _triples(gen) -> list:
    """(token, logprob, top alternatives) for each token a finished generation holds."""
    tops = gen.top_logprobs if gen.top_logprobs else [[]] * len(gen.tokens)
    return list(zip(gen.tokens, gen.logprobs, tops))


def _prompt_triples(gen) -> list:
    """With echo: (token, logprob, top alternatives) for each prompt token, the first without."""
    prompt = gen.sub.prompt
    lps = gen.prompt_logprobs
    tops = gen.prompt_top_logprobs or [[]] * len(lps)
    return [(prompt[0], None, None)] + list(zip(prompt[1:], lps, tops))


def completion_response(served, gens: list, rid: str, created: int, prompt_len: int) -> dict:
    choices = []
    for i, gen in enumerate(gens):
        p = gen.sub.params
        lp = None
        if p.logprobs is not None:
            triples = (_prompt_triples(gen) if p.echo is not None else []) + _triples(gen)
            lp = _completion_logprobs(served, triples, 0, p.logprobs)
        text = (p.echo or "") + gen.text
        choices.append({"index": i, "text": text, "logprobs": lp, "finish_reason": gen.finish_reason})
    return {"id": rid, "object": "text_completion", "created": created, "model": served.name,
            "choices": choices, "usage": _usage(prompt_len, sum(len(g.tokens) for g in gens))}


def chat_response(served, gens: list, rid: str, created: int, prompt_len: int) -> dict:
    choices = []
    for i, gen in enumerate(gens):
        lp = _chat_logprobs(served, _triples(gen)) if gen.sub.params.logprobs is not None else None
        message = {"role": "assistant", "content": gen.text}
        if gen.tool_calls:
            message = {"role": "assistant", "content": gen.text or None, "tool_calls": gen.tool_calls}
        choices.append({"index": i, "message": message, "logprobs": lp, "finish_reason": gen.finish_reason})
    return {"id": rid, "object": "chat.completion", "created": created, "model": served.name,
            "choices": choices, "usage": _usage(prompt_len, sum(len(g.tokens) for g in gens))}


def completion_chunk(served, gen, rid: str, created: int, text: str, toks: list,
                     finish: str | None = None, index: int = 0) -> dict:
    lp = None
    if gen.sub.params.logprobs is not None and toks:
        lp = _completion_logprobs(served, toks, len(gen.text) - len(text), gen.sub.params.logprobs)
    return {"id": rid, "object": "text_completion", "created": created, "model": served.name,
            "choices": [{"index": index, "text": text, "logprobs": lp, "finish_reason": finish}]}


def chat_chunk(served, rid: str, created: int, delta: dict, finish: str | None = None,
               gen=None, toks=(), index: int = 0) -> dict:
    lp = None
    if gen is not None and gen.sub.params.logprobs is not None and toks:
        lp = _chat_logprobs(served, list(toks))
    return {"id": rid, "object": "chat.completion.chunk", "created": created,
            "model": served.name,
            "choices": [{"index": index, "delta": delta, "logprobs": lp, "finish_reason": finish}]}
