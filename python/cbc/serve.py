"""cbc serve: an OpenAI-compatible HTTP server over one cbc.Engine.

    python -m cbc.serve MODEL_DIR [--artefact model.fb] [--host 127.0.0.1] [--port 8000]

MODEL_DIR holds config.json, the weights (safetensors) and the tokenizer files (tokenizer.json,
tokenizer_config.json with the chat template); --tokenizer names another folder for those. The
artefact is --artefact, else MODEL_DIR/model.fb, else one compiled from config.json into a cache
(cbc.compile; $CBC_CACHE_DIR, default ~/.cache/cbc).

Endpoints: POST /v1/completions, POST /v1/chat/completions (stream=true: server-sent events),
GET /v1/models, GET /health, GET /metrics (Prometheus text). A multimodal model's decoder takes
embeddings for runs of prompt rows on /v1/completions: the body's "embeds" and "placeholder", as
in `cbc run`'s request lines, with the rows inline as base64 (the server reads no files).

Overload: the server holds at most --max-requests running plus --max-queued-requests waiting
sequences (a request with n choices counts n); a request beyond them is answered at once with
429 and a Retry-After estimate, and nothing admitted is dropped.

--tp N serves an artefact compiled for N tensor-parallel ranks: the command starts itself again
as an MPI job of N processes (mpiexec -n N, $CBC_MPIEXEC to name another launcher); rank 0
serves HTTP and schedules, the others hold their shards and follow its steps.

One thread owns the engine and its step loop (EngineLoop); the asyncio handlers submit requests
and cancellations to it through a thread-safe queue and get tokens back through
loop.call_soon_threadsafe, so a request that arrives joins the running batch at the next step,
and a client that goes away cancels its request and frees its cache.
"""

import argparse
import asyncio
import collections
import json
import math
import os
import queue
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

from cbc.model_dir import find_artefact, generation_eos
from cbc.serve_api import ApiError, CompletionParams, parse_chat, parse_completion
from cbc import serve_models, tool_calls
from cbc.text import Tokenizer, TokenizerError


# -- the engine thread ----------------------------------------------------------------------------

@dataclass
class Submission:
    """One request on its way to the engine and the channel its tokens come back on."""
    prompt: list
    params: CompletionParams
    loop: asyncio.AbstractEventLoop
    items: asyncio.Queue = field(default_factory=asyncio.Queue)
    rid: int | None = None
    arrived: float = field(default_factory=time.monotonic)
    first_token: float | None = None
    # n > 1: the submissions of the other choices, which the engine forks from this one.
    forks: list = field(default_factory=list)

    def push(self, item: tuple) -> None:
        # Called on the engine thread: hands the item to the handler's event loop.
        self.loop.call_soon_threadsafe(self.items.put_nowait, item)


class Metrics:
    """Counters the engine thread updates and /metrics reads (under one lock)."""

    TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
    RATE_WINDOW_S = 10.0

    def __init__(self):
        self.lock = threading.Lock()
        self.finished = collections.Counter()   # finish reason -> requests
        self.rejected = 0
        self.overloaded = 0                      # requests answered 429 (the queue was full)
        self.mean_latency = 0.0                  # seconds per finished request, smoothed
        self.prompt_tokens = 0
        self.generated_tokens = 0
        self.ttft_counts = [0] * (len(self.TTFT_BUCKETS) + 1)
        self.ttft_sum = 0.0
        self.recent = collections.deque()        # (time, tokens) of the last RATE_WINDOW_S
        self.started = time.monotonic()

    def on_tokens(self, n: int, now: float) -> None:
        with self.lock:
            self.generated_tokens += n
            self.recent.append((now, n))
            while self.recent and self.recent[0][0] < now - self.RATE_WINDOW_S:
                self.recent.popleft()

    def on_first_token(self, seconds: float) -> None:
        with self.lock:
            self.ttft_sum += seconds
            i = next((i for i, b in enumerate(self.TTFT_BUCKETS) if seconds <= b),
                     len(self.TTFT_BUCKETS))
            self.ttft_counts[i] += 1

    def on_finished(self, seconds: float) -> None:
        with self.lock:
            self.mean_latency = seconds if self.mean_latency == 0 else (
                0.8 * self.mean_latency + 0.2 * seconds)

    def tokens_per_second(self, now: float) -> float:
        with self.lock:
            while self.recent and self.recent[0][0] < now - self.RATE_WINDOW_S:
                self.recent.popleft()
            span = min(self.RATE_WINDOW_S, max(now - self.started, 1e-9))
            return sum(n for _, n in self.recent) / span


class EngineLoop(threading.Thread):
    """Owns the engine: adds what was submitted, steps while anything is running or waiting,
    and routes each token to its submission. Blocks on the queue when the engine is idle."""

    def __init__(self, engine, metrics: Metrics, admission: "Admission"):
        super().__init__(name="cbc-engine", daemon=True)
        self.engine = engine
        self.metrics = metrics
        self.admission = admission
        self.commands: queue.SimpleQueue = queue.SimpleQueue()
        self.live: dict[int, Submission] = {}
        self.error: str | None = None
        self._stopping = False

    def submit(self, sub: Submission) -> None:
        self.commands.put(("add", sub))

    def cancel(self, sub: Submission) -> None:
        self.commands.put(("cancel", sub))

    def stop(self) -> None:
        self._stopping = True
        self.commands.put(("stop", None))

    def run(self) -> None:
        try:
            while not self._stopping:
                self._drain(block=not self.live and self.engine.idle())
                if self.live or not self.engine.idle():
                    self._step()
        except Exception as e:  # the engine failed: every request learns it, /health says so
            self.error = f"engine failed: {e}"
            for sub in self.live.values():
                sub.push(("error", 500, self.error))
            self.admission.release(len(self.live))
            self.live.clear()
            # Submissions still queued get the same answer (a handler may be waiting on one).
            while True:
                try:
                    kind, sub = self.commands.get_nowait()
                except queue.Empty:
                    break
                if kind == "add":
                    for s in [sub] + sub.forks:
                        s.push(("error", 500, self.error))
                    self.admission.release(1 + len(sub.forks))

    def _drain(self, block: bool) -> None:
        try:
            cmd = self.commands.get(timeout=0.5) if block else self.commands.get_nowait()
        except queue.Empty:
            return
        while True:
            self._command(*cmd)
            try:
                cmd = self.commands.get_nowait()
            except queue.Empty:
                return

    def _command(self, kind: str, sub: Submission | None) -> None:
        if kind == "add":
            p = sub.params
            subs = [sub] + sub.forks
            try:
                ids = self.engine.add_forked_request(
                    sub.prompt, len(subs), max_new_tokens=p.max_tokens, temperature=p.temperature,
                    top_k=p.top_k, top_p=p.top_p, min_p=p.min_p, seed=p.seed,
                    stop_token_ids=p.stop_token_ids, ignore_eos=p.ignore_eos,
                    logprobs=p.logprobs is not None, top_logprobs=p.logprobs or 0, embeds=p.embeds or None,
                    logit_bias=p.logit_bias, repetition_penalty=p.repetition_penalty,
                    presence_penalty=p.presence_penalty, frequency_penalty=p.frequency_penalty,
                    min_tokens=p.min_tokens, bad_words=p.bad_words, structured=p.structured,
                    prompt_logprobs=p.logprobs if p.echo is not None and p.logprobs is not None else None)
            except ValueError as e:
                with self.metrics.lock:
                    self.metrics.rejected += 1
                self.admission.release(len(subs))
                for s in subs:
                    s.push(("error", 400, str(e)))
                return
            with self.metrics.lock:
                self.metrics.prompt_tokens += len(sub.prompt) * len(subs)
            for s, rid in zip(subs, ids):
                s.rid = rid
                self.live[rid] = s
                s.push(("accepted",))
        elif kind == "cancel" and sub.rid in self.live:
            self.engine.cancel(sub.rid)

    def _step(self) -> None:
        events = self.engine.step()
        now = time.monotonic()
        n = 0
        ended = {}  # request id -> finish reason, ended with the request's output below
        for ev in events:
            sub = self.live.get(ev.id)
            if sub is None:
                continue
            if ev.token is not None and ev.finish_reason not in ("cancelled", "rejected"):
                n += 1
                if sub.first_token is None:
                    sub.first_token = now
                    self.metrics.on_first_token(now - sub.arrived)
                sub.push(("token", ev.token, ev.logprob, ev.top_logprobs))
            if ev.finished:
                ended[ev.id] = ev.finish_reason
        if n:
            self.metrics.on_tokens(n, now)
        # The finished requests' outputs (those that ended without an event too: cancelled
        # while waiting, say), which carry an echo's prompt log-probabilities.
        for out in self.engine.take_finished():
            sub = self.live.get(out.id)
            if sub is not None:
                self._end(sub, ended.pop(out.id, out.finish_reason), out)
        for rid, reason in ended.items():
            self._end(self.live[rid], reason)

    def _end(self, sub: Submission, reason: str | None, out=None) -> None:
        del self.live[sub.rid]
        self.admission.release(1)
        if reason in ("eos", "stop", "length"):  # a cancelled request says nothing of the pace
            self.metrics.on_finished(time.monotonic() - sub.arrived)
        with self.metrics.lock:
            self.metrics.finished[reason or "unknown"] += 1
        prompt = (out.prompt_logprobs, out.prompt_top_logprobs) if out is not None else ([], [])
        sub.push(("end", reason, *prompt))


class Admission:
    """How many sequences the server holds (running, waiting in the engine, or on their way to
    it) against its limit: the engine's batch plus a bounded queue. A request that would pass
    the limit is refused at once with 429 and a Retry-After estimate, so a burst never piles up
    unbounded work or memory; every admitted sequence is released exactly once, by the engine
    thread, when it ends or is refused."""

    def __init__(self, running: int, queued: int):
        self.running, self.queued = running, queued
        self.limit = running + queued
        self.held = 0
        self.lock = threading.Lock()

    def admit(self, n: int, metrics: Metrics) -> None:
        if n > self.limit:
            raise ApiError(400, f"'n'={n} exceeds what this server holds at once ({self.limit} "
                           "sequences: --max-requests plus --max-queued-requests)", param="n",
                           code="invalid_value")
        with self.lock:
            if self.held + n <= self.limit:
                self.held += n
                return
            ahead = self.held + n - self.running
        with metrics.lock:
            metrics.overloaded += 1
            latency = metrics.mean_latency
        # The queue ahead drains about `running` sequences per mean request latency.
        wait = max(1, min(60, math.ceil(latency * ahead / max(self.running, 1))))
        raise ApiError(429, f"the server is at its limit of {self.limit} sequences "
                       f"({self.running} running, {self.queued} queued); retry after {wait} s",
                       "rate_limit_error", code="server_overloaded",
                       headers={"Retry-After": str(wait)})

    def release(self, n: int) -> None:
        with self.lock:
            self.held -= n

    def in_flight(self) -> int:
        with self.lock:
            return self.held


# -- the model being served -----------------------------------------------------------------------

class Served:
    """The engine, its tokenizer and name, and the loop thread: what the handlers share."""

    def __init__(self, engine, tokenizer: Tokenizer, name: str, extra_stop_ids=(),
                 max_requests: int = 64, max_queued: int = 256, tool_format: str | None = "auto"):
        self.engine = engine
        self.tokenizer = tokenizer
        self.name = name
        self.max_model_len = engine.max_model_len
        self.vocab_size = engine.vocab_size
        self.prompt_vocab_size = engine.prompt_vocab_size
        self.embedding_width = engine.embedding_width
        # The engine stops at the model's eos; a chat tokenizer's own end token (ChatML's
        # <|im_end|>) and generation_config's eos ids stop the text too.
        stops = set(extra_stop_ids)
        if tokenizer.eos_token_id is not None:
            stops.add(tokenizer.eos_token_id)
        self.stop_ids = sorted(t for t in stops
                               if t < self.vocab_size and t not in engine.eos_token_ids)
        # Structured outputs compile grammars over the tokenizer's vocabulary; where they cannot
        # (a build without xgrammar, a tokenizer it cannot read), requests for them get a 400 why.
        self.structured_error = None
        try:
            engine.set_structured_vocab(tokenizer, self.stop_ids)
        except ValueError as e:
            self.structured_error = str(e)
        # The format tool calls are read in: the chat template's own ("auto"), a named one, or none.
        self.tool_format = (tool_calls.detect(tokenizer.chat_template) if tool_format == "auto"
                            else tool_format)
        self.metrics = Metrics()
        self.admission = Admission(max_requests, max_queued)
        self.loop_thread = EngineLoop(engine, self.metrics, self.admission)
        self.created = int(time.time())

    def start(self) -> None:
        self.loop_thread.start()

    def stop(self) -> None:
        self.loop_thread.stop()
        self.loop_thread.join(timeout=5)


def _finish_reason(engine_reason: str | None) -> str:
    # OpenAI's names: "stop" for an end token or a stop string, "length" for the token budget.
    return "length" if engine_reason == "length" else "stop"


class Generation:
    """One request's text as it is generated: detokenises, applies stop strings, keeps
    logprobs, and cancels the engine request when a stop string ends it early."""

    def __init__(self, served: Served, sub: Submission):
        self.served = served
        self.sub = sub
        # With tools, the calls' markers may be special tokens: they are decoded, and the end
        # tokens (which stop the request) are left out of the text instead.
        self.tools = sub.params.tool_format
        self.detok = served.tokenizer.detokenizer(skip_special_tokens=self.tools is None)
        self.end_ids = set(served.stop_ids) | set(served.engine.eos_token_ids) | set(sub.params.stop_token_ids)
        self.tool_calls: list[dict] = []
        self.stops = sub.params.stop
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.pending = ""          # decoded but not yet sent (might begin a stop string)
        self.text = ""             # sent so far
        self.tokens: list[int] = []
        self.logprobs: list[float] = []
        self.top_logprobs: list[list] = []  # per token: [(id, logprob), ...] with top logprobs
        self.prompt_logprobs: list[float] = []  # with echo and logprobs: prompt tokens 1..
        self.prompt_top_logprobs: list[list] = []
        self.finish_reason: str | None = None
        self.engine_done = False   # the engine has finished the request (it holds no cache)

    async def next_delta(self) -> tuple[str, list] | None:
        """The next piece of text and the (token, logprob, top) triples behind it; None at the end
        (then finish_reason is set). Raises ApiError when the engine refused the request.
        Takes every item already queued, so a stream that fell behind (a slow client, a busy
        server) catches up in fewer, larger chunks."""
        if self.finish_reason is not None:
            return None
        items = [await self.sub.items.get()]
        while items[-1][0] == "token" and not self.sub.items.empty():
            items.append(self.sub.items.get_nowait())
        toks = [(item[1], item[2], item[3]) for item in items if item[0] == "token"]
        text = ""
        if toks:
            self.tokens += [t for t, _, _ in toks]
            self.logprobs += [lp for _, lp, _ in toks]
            self.top_logprobs += [top for _, _, top in toks]
            fed = (t for t, _, _ in toks if self.tools is None or t not in self.end_ids)
            text, toks = self._emit(self.detok.extend(fed), toks, final=False)
            if self.finish_reason is not None:  # a stop string ended it
                return text, toks
        last = items[-1]
        if last[0] == "error":
            raise ApiError(last[1], last[2], "invalid_request_error" if last[1] < 500
                           else "server_error")
        if last[0] == "end":
            self.engine_done = True
            self.prompt_logprobs, self.prompt_top_logprobs = last[2], last[3]
            self.finish_reason = _finish_reason(last[1])
            tail, _ = self._emit(self.detok.finish(), [], final=True)
            text += tail
            if self.tools is not None:
                text += self._take_tool_calls()
        return text, toks

    def _emit(self, new: str, toks: list, final: bool) -> tuple[str, list]:
        self.pending += new
        if self.stops:
            cut = min((i for i in (self.pending.find(s) for s in self.stops) if i >= 0),
                      default=-1)
            if cut >= 0:
                out, self.pending = self.pending[:cut], ""
                self.text += out
                if self.finish_reason is None:
                    self.finish_reason = "stop"
                    self.served.loop_thread.cancel(self.sub)
                return out, toks
        keep = 0 if final or not self.stops else self.hold
        out = self.pending[:len(self.pending) - keep] if keep else self.pending
        if self.tools is not None:  # what may begin a tool call waits for the end
            held = tool_calls.hold_from(self.tools, self.text + self.pending)
            if held is not None:
                out = out[:max(0, held - len(self.text))]
        self.pending = self.pending[len(out):]
        self.text += out
        return out, toks

    def _take_tool_calls(self) -> str:
        """At the end, with tools: the calls in the whole text (an unreadable call stays text),
        and the content still to send."""
        whole = self.text + self.pending
        try:
            content, calls = tool_calls.parse(self.tools, whole)
        except tool_calls.ToolCallError:
            content, calls = whole, []
        if not calls:  # all of it is content
            tail, self.pending = self.pending, ""
            self.text += tail
            return tail
        self.pending = ""
        self.tool_calls = calls
        self.finish_reason = "tool_calls"
        content = content or ""
        tail = content[len(self.text):] if content.startswith(self.text) else ""
        self.text = content
        return tail


# -- the HTTP application ---------------------------------------------------------------------------

def _error_body(status: int, message: str, type_: str, param: str | None = None,
                code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def create_app(served: Served):
    """The FastAPI application over SERVED (whose loop thread the app's lifespan starts)."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @asynccontextmanager
    async def lifespan(app):
        if not served.loop_thread.is_alive():
            served.start()
        yield
        served.stop()

    app = FastAPI(title="cbc serve", lifespan=lifespan)

    @app.exception_handler(ApiError)
    async def api_error(request, e: ApiError):
        return JSONResponse(_error_body(e.status, e.message, e.type, e.param, e.code),
                            status_code=e.status, headers=e.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, e):
        kind = "not_found_error" if e.status_code == 404 else "invalid_request_error"
        return JSONResponse(_error_body(e.status_code, str(e.detail), kind), status_code=e.status_code)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request, e):
        # The first of pydantic's errors, in OpenAI's terms (param "messages[0].role").
        err = e.errors()[0]
        param = serve_models.error_param(tuple(err.get("loc", ())))
        if err.get("type") == "json_invalid":
            message, param, code = f"the request body is not valid JSON: {err.get('msg')}", None, None
        elif param is None:
            message, code = "the request body must be a JSON object", "invalid_type"
        else:
            message, code = f"'{param}': {err.get('msg')}", serve_models.error_code(err.get("type", ""))
        return JSONResponse(_error_body(400, message, "invalid_request_error", param, code), status_code=400)

    def body_of(body) -> dict:
        """The validated body as the parsers read it: the fields given (extras too)."""
        model = body.model
        if model is not None and model != served.name:
            raise ApiError(404, f"The model '{model}' does not exist; this server serves "
                           f"'{served.name}'", "not_found_error", "model", "model_not_found")
        return body.model_dump(exclude_unset=True)

    @app.get("/health")
    async def health():
        if served.loop_thread.error or not served.loop_thread.is_alive():
            return JSONResponse({"status": "error", "error": served.loop_thread.error
                                 or "engine thread not running"}, status_code=503)
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [_model_card(served)]}

    @app.get("/v1/models/{name}")
    async def model(name: str):
        if name != served.name:
            raise ApiError(404, f"The model '{name}' does not exist", "not_found_error",
                           "model", "model_not_found")
        return _model_card(served)

    @app.get("/metrics")
    async def metrics():
        return PlainTextResponse(render_metrics(served),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.post("/v1/completions")
    async def completions(request: Request, body: serve_models.CompletionRequest):
        """OpenAI's completions: one prompt (text or token ids), n choices, streamed or not."""
        prompt, params = parse_completion(body_of(body), served)
        return await _respond(request, served, prompt, params, chat=False,
                              streaming=StreamingResponse)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request, body: serve_models.ChatCompletionRequest):
        """OpenAI's chat completions through the model's chat template, with tools."""
        prompt, params = parse_chat(body_of(body), served)
        return await _respond(request, served, prompt, params, chat=True,
                              streaming=StreamingResponse)

    return app


def _model_card(served: Served) -> dict:
    return {"id": served.name, "object": "model", "created": served.created, "owned_by": "cbc",
            "max_model_len": served.max_model_len}


async def _submit(served: Served, prompt: list, params: CompletionParams) -> list:
    """Hands the request to the engine thread and waits until the engine took or refused it:
    a Generation per choice (n of them, forked by the engine from the first)."""
    loop = asyncio.get_running_loop()
    subs = [Submission(prompt, params, loop) for _ in range(params.n)]
    subs[0].forks = subs[1:]
    gens = [Generation(served, sub) for sub in subs]
    served.admission.admit(params.n, served.metrics)
    served.loop_thread.submit(subs[0])
    for sub in subs:
        item = await sub.items.get()
        if item[0] == "error":
            raise ApiError(item[1], item[2], "invalid_request_error" if item[1] < 500
                           else "server_error")
    return gens


async def _respond(request, served: Served, prompt: list, params: CompletionParams, chat: bool,
                   streaming):
    from cbc.serve_api import chat_chunk, chat_response, completion_chunk, completion_response
    if served.loop_thread.error:
        raise ApiError(503, served.loop_thread.error, "server_error")
    gens = await _submit(served, prompt, params)
    rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
    created = int(time.time())
    if not params.stream:
        done = await _collect(request, served, gens)
        if not done:  # the client went away; nobody reads this
            return None
        make = chat_response if chat else completion_response
        return make(served, gens, rid, created, len(prompt))

    async def events():
        try:
            async for event in _events():
                yield event
        except ApiError as e:  # the engine failed mid-stream: the error as the last event
            yield _sse(_error_body(e.status, e.message, e.type, e.param, e.code))
        finally:
            # Reached on a normal end, and when the client disconnected (the response task is
            # cancelled): an unfinished request is cancelled and its cache freed.
            for gen in gens:
                if not gen.engine_done:
                    served.loop_thread.cancel(gen.sub)

    async def _events():
        if chat:
            for i in range(len(gens)):
                yield _sse(chat_chunk(served, rid, created, {"role": "assistant", "content": ""}, index=i))
        elif params.echo:
            for i, gen in enumerate(gens):
                yield _sse(completion_chunk(served, gen, rid, created, params.echo, [], index=i))
        # The choices' pieces as they come, each tagged with its choice's index.
        pieces: asyncio.Queue = asyncio.Queue()

        async def pump(i, gen):
            try:
                while (piece := await gen.next_delta()) is not None:
                    await pieces.put((i, piece))
                await pieces.put((i, None))
            except ApiError as e:
                await pieces.put((i, e))
        tasks = [asyncio.ensure_future(pump(i, g)) for i, g in enumerate(gens)]
        try:
            left = len(gens)
            while left:
                i, piece = await pieces.get()
                gen = gens[i]
                if isinstance(piece, ApiError):
                    raise piece
                if piece is None:
                    left -= 1
                    if gen.tool_calls:  # whole calls, as one delta (OpenAI's clients join deltas)
                        calls = [{"index": k, **c} for k, c in enumerate(gen.tool_calls)]
                        yield _sse(chat_chunk(served, rid, created, {"tool_calls": calls}, index=i))
                    yield _sse(chat_chunk(served, rid, created, {}, finish=gen.finish_reason, index=i) if chat
                               else completion_chunk(served, gen, rid, created, "", [],
                                                     finish=gen.finish_reason, index=i))
                    continue
                text, toks = piece
                # A token that completed no character (half of a UTF-8 sequence, or text held
                # back as the start of a stop string) sends nothing, unless logprobs are wanted.
                if not text and (not toks or params.logprobs is None):
                    continue
                if chat:
                    yield _sse(chat_chunk(served, rid, created, {"content": text},
                                          gen=gen, toks=toks, index=i))
                else:
                    yield _sse(completion_chunk(served, gen, rid, created, text, toks, index=i))
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()
        if params.include_usage:
            usage = _usage(len(prompt), sum(len(g.tokens) for g in gens))
            obj = "chat.completion.chunk" if chat else "text_completion"
            yield _sse({"id": rid, "object": obj, "created": created, "model": served.name,
                        "choices": [], "usage": usage})
        yield "data: [DONE]\n\n"

    return streaming(events(), media_type="text/event-stream",
                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _collect(request, served: Served, gens: list) -> bool:
    """Runs every choice to its end; False (and the requests cancelled) when the client
    disconnects."""
    async def watch():
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                return

    async def run():
        for gen in gens:
            while await gen.next_delta() is not None:
                pass

    watcher = asyncio.ensure_future(watch())
    runner = asyncio.ensure_future(run())
    try:
        done, _ = await asyncio.wait({watcher, runner}, return_when=asyncio.FIRST_COMPLETED)
        if runner in done:
            runner.result()  # an ApiError from the engine propagates
            return True
        for gen in gens:
            served.loop_thread.cancel(gen.sub)
        return False
    finally:
        for t in (watcher, runner):
            if not t.done():
                t.cancel()


def _usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def _sse(obj: dict) -> str:
    return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"


# The engine's prefix-cache, fork and swap figures on /metrics: (stats key, kind, help).
_CACHE_METRICS = (
    ("prefix_queries", "counter", "Prompt tokens looked up in the prefix cache."),
    ("prefix_hits", "counter", "Prompt tokens found in the prefix cache (not computed)."),
    ("prefix_limited_by_state", "counter",
     "Prompt tokens whose attention rows were cached but no recurrent-state snapshot was."),
    ("cached_blocks", "gauge", "KV blocks findable by the prefix cache now."),
    ("block_evictions", "counter", "Cached KV blocks reused for other content."),
    ("cached_snapshots", "gauge", "Recurrent-state snapshots kept now."),
    ("snapshot_bytes", "gauge", "Bytes of the recurrent-state snapshots kept now."),
    ("snapshots", "counter", "Recurrent-state snapshots taken."),
    ("snapshot_drops", "counter", "Snapshots dropped because a block before them was evicted."),
    ("snapshot_evictions", "counter", "Snapshots reused for other content."),
    ("forks", "counter", "Sequences (n > 1) that shared their prompt's cache."),
    ("fork_fallbacks", "counter", "Sequences (n > 1) that found no room to share and computed it."),
    ("swaps_out", "counter", "Preempted requests saved to host memory."),
    ("swaps_in", "counter", "Swapped requests restored from host memory."),
    ("swap_fallbacks", "counter", "Preempted requests recomputed for want of swap space."),
    ("swap_bytes", "gauge", "Host memory holding swapped requests now."),
    ("draft_tokens", "counter", "Speculative draft tokens verified."),
    ("accepted_tokens", "counter", "Speculative draft tokens accepted."),
    ("spec_rollbacks", "counter", "Steps undone for a rejected draft (recurrent states)."),
)


def render_metrics(served: Served) -> str:
    """The Prometheus text exposition of the server's and the engine's state."""
    m = served.metrics
    eng = served.engine
    now = time.monotonic()
    lines = []

    def metric(name, kind, help_, samples):
        lines.append(f"# HELP {name} {help_}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            lines.append(f"{name}{labels} {value}")

    metric("cbc_requests_running", "gauge", "Requests in the running batch.",
           [("", eng.num_running)])
    metric("cbc_requests_waiting", "gauge", "Requests waiting for a place in the batch.",
           [("", eng.num_waiting)])
    metric("cbc_sequences_in_flight", "gauge",
           "Sequences the server holds: running, waiting, or on their way to the engine.",
           [("", served.admission.in_flight())])
    metric("cbc_sequences_limit", "gauge",
           "Sequences the server holds at most (--max-requests plus --max-queued-requests).",
           [("", served.admission.limit)])
    metric("cbc_cache_usage", "gauge", "Fraction of the KV cache blocks / state slots in use.",
           [("", f"{eng.cache_usage:.6f}")])
    rate = m.tokens_per_second(now)
    with m.lock:
        finished = dict(m.finished)
        metric("cbc_requests_finished_total", "counter", "Requests finished, by engine reason.",
               [(f'{{reason="{r}"}}', n) for r, n in sorted(finished.items())] or
               [('{reason="eos"}', 0)])
        metric("cbc_requests_rejected_total", "counter", "Requests the engine refused.",
               [("", m.rejected)])
        metric("cbc_requests_overloaded_total", "counter",
               "Requests answered 429 because the server held its limit of sequences.",
               [("", m.overloaded)])
        metric("cbc_prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
               [("", m.prompt_tokens)])
        metric("cbc_generated_tokens_total", "counter", "Tokens generated.",
               [("", m.generated_tokens)])
        metric("cbc_generated_tokens_per_second", "gauge",
               f"Tokens generated per second over the last {m.RATE_WINDOW_S:g} s.",
               [("", f"{rate:.3f}")])
        buckets, total = [], 0
        for bound, count in zip(m.TTFT_BUCKETS, m.ttft_counts):
            total += count
            buckets.append((f'_bucket{{le="{bound:g}"}}', total))
        total += m.ttft_counts[-1]
        buckets += [('_bucket{le="+Inf"}', total), ("_sum", f"{m.ttft_sum:.6f}"),
                    ("_count", total)]
        metric("cbc_time_to_first_token_seconds", "histogram",
               "Seconds from a request's arrival to its first token.", buckets)
    stats = eng.stats
    for key in ("steps", "preemptions"):
        if key in stats:
            metric(f"cbc_engine_{key}_total", "counter", f"Engine {key} since start.",
                   [("", stats[key])])
    for key, kind, help_ in _CACHE_METRICS:
        if key in stats:
            metric(f"cbc_{key}" + ("_total" if kind == "counter" else ""), kind, help_, [("", stats[key])])
    if stats.get("drafted_at"):
        for key, help_ in (("drafted_at", "Speculative draft tokens verified, by draft position."),
                           ("accepted_at", "Speculative draft tokens accepted, by draft position.")):
            metric(f"cbc_spec_{key}_total", "counter", help_,
                   [(f'{{position="{j}"}}', v) for j, v in enumerate(stats[key])])
    return "\n".join(lines) + "\n"


# -- command line ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cbc serve", description="Serve a model over an OpenAI-compatible HTTP API "
        "(/v1/completions, /v1/chat/completions, /v1/models, /health, /metrics).")
    p.add_argument("model_dir", metavar="MODEL_DIR",
                   help="folder with config.json, the safetensors weights and the tokenizer files")
    p.add_argument("--artefact", help="compiled model (default: MODEL_DIR/model.fb, else "
                   "config.json compiled into $CBC_CACHE_DIR)")
    p.add_argument("--tokenizer", help="folder with tokenizer.json and tokenizer_config.json "
                   "(default: MODEL_DIR)")
    p.add_argument("--chat-template", metavar="FILE",
                   help="a Jinja chat template to use instead of the tokenizer's")
    p.add_argument("--tool-call-parser", default="auto", choices=("auto", "none") + tool_calls.FORMATS,
                   help="how tool calls are read from answers: auto (default: from the chat "
                   "template's markers), none, or a format")
    p.add_argument("--random-weights", action="store_true",
                   help="random weights from --seed instead of MODEL_DIR's (for tests)")
    p.add_argument("--seed", type=int, default=0, help="seed of --random-weights")
    p.add_argument("--served-model-name", help="the model's name in the API (default: the "
                   "folder's name)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free one, "
                   "printed on stderr)")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"),
                   help="auto (default): CUDA when a GPU is usable, else the CPU")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: all)")
    p.add_argument("--max-batch-tokens", type=int, default=None,
                   help="token budget per step (default: chosen for the backend, as cbc run)")
    p.add_argument("--max-requests", type=int, default=64,
                   help="sequences in the running batch at most (default 64)")
    p.add_argument("--max-queued-requests", type=int, default=256, metavar="N",
                   help="sequences waiting for the batch at most (default 256); a request beyond "
                   "them is answered 429 with Retry-After")
    # --cache-memory as in `cbc run`; --cache-memory-mib as cbc.Engine's keyword names it.
    p.add_argument("--cache-memory", "--cache-memory-mib", dest="cache_memory_mib", type=int,
                   default=None, metavar="MIB", help="memory for the paged cache (default: "
                   "chosen from the machine, as cbc run)")
    p.add_argument("--max-model-len", type=int, default=0, help="0: the model's own")
    p.add_argument("--no-prefix-cache", dest="prefix_caching", action="store_false",
                   help="compute every prompt whole: no prefix caching")
    p.add_argument("--snapshot-memory", dest="snapshot_memory_mib", type=int, default=None,
                   metavar="MIB", help="recurrent models: cache memory for state snapshots "
                   "(default: a fifth of the cache memory)")
    p.add_argument("--snapshot-interval", type=int, default=0, metavar="N",
                   help="recurrent models: a state snapshot every N prompt tokens, a multiple of 64 "
                   "(default 0: at the prompt's end and where attention matched further)")
    p.add_argument("--swap-space", dest="swap_space_mib", type=int, default=0, metavar="MIB",
                   help="host memory for preempted requests' cache, restored instead of "
                   "recomputed (default 0: recompute)")
    p.add_argument("--speculative", default=None, metavar="METHOD",
                   help="speculative decoding: ngram (prompt lookup) verifies up to "
                   "--num-speculative-tokens guesses per request in a step (default off)")
    p.add_argument("--num-speculative-tokens", type=int, default=3, metavar="K",
                   help="with --speculative: guesses per request and step, 1 to 64 (default 3)")
    p.add_argument("--speculative-max-tokens", type=int, default=None, metavar="N",
                   help="with --speculative: no guesses once a step would pass N tokens (default 16)")
    p.add_argument("--dtype", default="bf16", help="dtype when compiling (default bf16)")
    p.add_argument("--tp", type=int, default=1, metavar="N",
                   help="tensor-parallel ranks: serve as an MPI job of N processes (mpiexec -n N), the "
                   "artefact compiled with --tp N (default 1)")
    p.add_argument("--ep", type=int, default=1, metavar="N",
                   help="with --tp N, 1 divides MoE layers by features, N divides the experts among "
                   "the ranks (default 1)")
    p.add_argument("--log-level", default="warning",
                   choices=("critical", "error", "warning", "info", "debug"))
    return p


def load(args) -> Served:
    import cbc
    model_dir = args.model_dir
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"model folder '{model_dir}' does not exist")
    tokenizer = Tokenizer.from_dir(args.tokenizer or model_dir)
    if args.chat_template:
        try:
            with open(args.chat_template, encoding="utf-8") as f:
                tokenizer.chat_template = f.read()
        except OSError as e:
            raise FileNotFoundError(f"cannot read --chat-template {args.chat_template}: {e.strerror}") from None
    artefact = find_artefact(model_dir, args.artefact, args.dtype, tp=args.tp, ep=args.ep)
    weights = None if args.random_weights else model_dir
    engine = cbc.Engine(artefact, weights, random_weights=args.random_weights, seed=args.seed, tp=args.tp,
                        backend=args.backend, threads=args.threads,
                        max_batch_tokens=args.max_batch_tokens, max_requests=args.max_requests,
                        cache_memory_mib=args.cache_memory_mib, max_model_len=args.max_model_len,
                        prefix_caching=args.prefix_caching, snapshot_memory_mib=args.snapshot_memory_mib,
                        snapshot_interval=args.snapshot_interval, swap_space_mib=args.swap_space_mib,
                        speculative=args.speculative, num_speculative_tokens=args.num_speculative_tokens,
                        speculative_max_tokens=args.speculative_max_tokens)
    if tokenizer.vocab_size > engine.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} ids but the model's "
                         f"vocabulary is {engine.vocab_size}: they do not belong together")
    name = args.served_model_name or os.path.basename(os.path.abspath(model_dir))
    return Served(engine, tokenizer, name, generation_eos(model_dir),
                  max_requests=args.max_requests, max_queued=args.max_queued_requests,
                  tool_format=None if args.tool_call_parser == "none" else args.tool_call_parser)


def _mpi_rank():
    """This process's rank of the MPI job that started it (MPICH, Open MPI), None outside one."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if var in os.environ:
            return int(os.environ[var])
    return None


def start_ranks(args, argv) -> int:
    """--tp N started by hand: the artefact compiled for N ranks (once, here), then this command
    again as an MPI job of N processes, every rank told the artefact."""
    import shutil
    mpiexec = os.environ.get("CBC_MPIEXEC") or shutil.which("mpiexec")
    if not mpiexec:
        print("cbc serve: error: --tp needs an MPI launcher: install MPICH or Open MPI (mpiexec on PATH), "
              "or name one in $CBC_MPIEXEC", file=sys.stderr)
        return 2
    try:
        if not os.path.isdir(args.model_dir):
            raise FileNotFoundError(f"model folder '{args.model_dir}' does not exist")
        artefact = find_artefact(args.model_dir, args.artefact, args.dtype, tp=args.tp, ep=args.ep)
    except (FileNotFoundError, ValueError) as e:
        print(f"cbc serve: error: {e}", file=sys.stderr)
        return 2
    cmd = [mpiexec, "-n", str(args.tp), sys.executable, "-m", "cbc.serve", *argv]
    if not args.artefact:
        cmd += ["--artefact", artefact]
    print(f"cbc serve: starting {args.tp} ranks with {mpiexec}", file=sys.stderr, flush=True)
    os.execv(mpiexec, cmd)


def follow(args) -> int:
    """A rank other than 0: its shard, then rank 0's steps until rank 0's engine closes."""
    import cbc
    weights = None if args.random_weights else args.model_dir
    cbc.follow_rank0(args.artefact, weights, random_weights=args.random_weights, seed=args.seed,
                     backend=args.backend, threads=args.threads, tp=args.tp)
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.max_requests < 1 or args.max_queued_requests < 0:
        parser.error("--max-requests must be at least 1 and --max-queued-requests at least 0")
    if args.tp < 1 or args.ep not in (1, args.tp):
        parser.error("--tp must be at least 1, and --ep 1 or equal to --tp")
    if args.speculative is not None:
        from cbc import _runtime
        why = _runtime.check_speculative_method(args.speculative)
        if why:
            parser.error(why)
    if not 1 <= args.num_speculative_tokens <= 64:
        parser.error("--num-speculative-tokens must be in [1, 64]")
    try:
        for name in ("fastapi", "uvicorn", "tokenizers", "jinja2"):
            __import__(name)
    except ImportError as e:
        print(f"cbc serve: error: {e}; install the server's packages: pip install '.[serve]' "
              "from the cbc source (or pip install -r python/requirements-test.txt)",
              file=sys.stderr)
        return 2
    rank = _mpi_rank()
    if args.tp > 1 and rank is None:
        return start_ranks(args, argv)
    if args.tp > 1 and rank > 0:
        return follow(args)
    import uvicorn
    try:
        served = load(args)
    except (FileNotFoundError, ValueError, TokenizerError) as e:
        print(f"cbc serve: error: {e}", file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        print(f"cbc serve: error: cannot listen on {args.host}:{args.port}: {e.strerror}",
              file=sys.stderr)
        return 2
    # Listening now, so a client that connects as soon as the address is printed waits in the
    # backlog until uvicorn accepts instead of being refused.
    sock.listen(2048)
    port = sock.getsockname()[1]
    # The engine thread holds the GIL only between steps, but a waiting handler thread would
    # still wait out the default 5 ms switch interval each time: a shorter one keeps the
    # time to first token down under load.
    sys.setswitchinterval(0.0005)
    app = create_app(served)
    config = uvicorn.Config(app, log_level=args.log_level, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    print(f"cbc serve: serving '{served.name}' on http://{args.host}:{port}", file=sys.stderr,
          flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        served.engine.close()  # a --tp group's other ranks stop with it
    return 0


if __name__ == "__main__":
    sys.exit(main())
