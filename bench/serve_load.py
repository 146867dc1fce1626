"""Load test of cbc serve: many concurrent streaming clients on loopback.

    PYTHONPATH=build/python build/pyenv/bin/python bench/serve_load.py --clients 64 --requests 256

Starts a server over the test model (test/artefacts/llama.fb, test/parity/fixtures/llama and
the test tokenizer) unless --url names a running one. CLIENTS workers share REQUESTS streaming
requests (completions and chat completions alternately, greedy, prompts and max_tokens drawn
from --seed) and each records its stream's text and time to first token. Then every request is
run alone through cbc.Engine (the same prompt ids and stops) and its decoded text must equal
the stream's: none lost, none different. Prints clients, requests, tokens/s and p50/p99 time
to first token; exits 1 on any lost or differing stream.
"""
import argparse
import asyncio
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "python"))

from serve_util import ARTEFACT, MODEL, TOKENIZER, Server  # noqa: E402

WORDS = ("the quick brown fox jumps over lazy dog hello world how are you today café 🙂 "
         "你好 世界 über straße numbers 0123 and symbols").split()


def make_requests(n, seed, max_tokens):
    rng = random.Random(seed)
    reqs = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
        reqs.append({"chat": i % 2 == 1, "text": text, "max_tokens": rng.randint(8, max_tokens)})
    return reqs


async def _one(client, model, req):
    """Streams REQ; returns (text, ttft_s, completion_tokens, finish_reason)."""
    start = time.perf_counter()
    ttft, parts, finish, usage = None, [], None, None
    common = dict(model=model, max_tokens=req["max_tokens"], temperature=0, stream=True,
                  stream_options={"include_usage": True})
    if req["chat"]:
        stream = await client.chat.completions.create(
            messages=[{"role": "user", "content": req["text"]}], **common)
    else:
        stream = await client.completions.create(prompt=req["text"], **common)
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        piece = (choice.delta.content if req["chat"] else choice.text) or ""
        if ttft is None and (piece or choice.finish_reason):
            ttft = time.perf_counter() - start
        parts.append(piece)
        finish = choice.finish_reason or finish
    return "".join(parts), ttft, usage.completion_tokens if usage else None, finish


async def _one_raw(http, url, model, req):
    """As _one, over plain httpx with the events parsed here: a lighter client than the openai
    package's (whose per-chunk cost, on a small machine, measures the client, not the server)."""
    start = time.perf_counter()
    ttft, parts, finish, usage = None, [], None, None
    body = {"model": model, "max_tokens": req["max_tokens"], "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if req["chat"]:
        path, body["messages"] = "/v1/chat/completions", [{"role": "user", "content": req["text"]}]
    else:
        path, body["prompt"] = "/v1/completions", req["text"]
    done = False
    async with http.stream("POST", url + path, json=body) as r:
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                break
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]["completion_tokens"]
            for choice in chunk["choices"]:
                piece = (choice["delta"].get("content") if req["chat"] else choice["text"]) or ""
                if ttft is None and (piece or choice["finish_reason"]):
                    ttft = time.perf_counter() - start
                parts.append(piece)
                finish = choice["finish_reason"] or finish
    if not done:
        raise RuntimeError("the stream ended without [DONE]")
    return "".join(parts), ttft, usage, finish


async def run_load(url, model, reqs, clients, client_kind="httpx"):
    """CLIENTS workers over REQS, each with its own connection; returns (results by index,
    wall seconds). client_kind "openai" uses the official client, "httpx" plain requests."""
    import httpx
    import openai

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    http = httpx.AsyncClient(limits=limits, timeout=300)
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0,
                                timeout=300, http_client=http)
    results = [None] * len(reqs)
    next_index = iter(range(len(reqs)))

    async def worker():
        for i in next_index:
            try:
                if client_kind == "openai":
                    results[i] = await _one(client, model, reqs[i])
                else:
                    results[i] = await _one_raw(http, url, model, reqs[i])
            except Exception as e:  # a lost stream is reported, not raised: count them all
                results[i] = e

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    wall = time.perf_counter() - start
    await client.close()
    return results, wall


def run_alone(reqs, tokenizer_dir=TOKENIZER):
    """Each request alone through cbc.Engine: its decoded text and token count."""
    import cbc
    from cbc.text import Tokenizer

    tok = Tokenizer.from_dir(tokenizer_dir)
    eng = cbc.Engine(ARTEFACT, MODEL, threads=1, backend="cpu")
    stops = sorted(set(eng.eos_token_ids) | {tok.eos_token_id})
    out = []
    for r in reqs:
        if r["chat"]:
            ids = tok.apply_chat_template([{"role": "user", "content": r["text"]}],
                                          add_generation_prompt=True, tokenize=True)
        else:
            ids = tok.encode(r["text"])
        gen = eng.generate_batch([ids], max_new_tokens=r["max_tokens"], eos_token_id=stops)
        tokens = gen["req_0"].generated_tokens
        out.append((tok.decode(tokens, skip_special_tokens=True), len(tokens)))
    return out


def percentile(values, q):
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(q / 100 * (len(values) - 1)))))
    return values[k]


def _server_ttft(url):
    """The server's own mean time to first token (arrival to first token, without the
    client's share), from /metrics."""
    import httpx
    from serve_util import parse_metrics

    m = parse_metrics(httpx.get(url + "/metrics", timeout=30).text)
    n = m["cbc_time_to_first_token_seconds_count"]
    return m["cbc_time_to_first_token_seconds_sum"] / n if n else None


def load_test(clients, requests, max_tokens=64, seed=0, url=None, model="llama",
              client_kind="httpx"):
    """Runs the whole test; returns a dict of figures and the failures."""
    server = None if url else Server()
    try:
        url = url or server.url
        reqs = make_requests(requests, seed, max_tokens)
        results, wall = asyncio.run(run_load(url, model, reqs, clients, client_kind))
        server_ttft = _server_ttft(url)
    finally:
        if server:
            server.stop()
    expected = run_alone(reqs)
    failures = []
    for i, (res, (text, ntok)) in enumerate(zip(results, expected)):
        if isinstance(res, Exception) or res is None:
            failures.append(f"request {i}: lost ({res!r})")
        elif res[0] != text or res[2] != ntok or res[3] not in ("stop", "length"):
            failures.append(f"request {i}: stream {res[0]!r} ({res[2]} tokens, {res[3]}) "
                            f"!= alone {text!r} ({ntok} tokens)")
    ok = [r for r in results if not isinstance(r, Exception) and r is not None]
    ttfts = [r[1] for r in ok if r[1] is not None]
    tokens = sum(r[2] or 0 for r in ok)
    return {"clients": clients, "requests": requests, "completed": len(ok),
            "tokens": tokens, "wall_s": wall, "tokens_per_s": tokens / wall,
            "ttft_p50_s": percentile(ttfts, 50) if ttfts else None,
            "ttft_p99_s": percentile(ttfts, 99) if ttfts else None,
            "server_ttft_mean_s": server_ttft,
            "failures": failures}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--requests", type=int, default=256)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--url", help="a running cbc serve over the test model (default: start one)")
    p.add_argument("--client", choices=("httpx", "openai"), default="httpx",
                   help="plain httpx requests (default, the lighter client) or the openai package")
    args = p.parse_args()
    f = load_test(args.clients, args.requests, args.max_tokens, args.seed, args.url,
                  client_kind=args.client)
    print(f"client {args.client}  clients {f['clients']}  requests {f['requests']}  completed {f['completed']}  "
          f"identical to alone {f['requests'] - len(f['failures'])}")
    print(f"tokens {f['tokens']} in {f['wall_s']:.2f} s: {f['tokens_per_s']:.0f} tokens/s")
    if f["ttft_p50_s"] is not None:
        print(f"time to first token: p50 {f['ttft_p50_s'] * 1e3:.1f} ms, "
              f"p99 {f['ttft_p99_s'] * 1e3:.1f} ms (the server's own mean: "
              f"{f['server_ttft_mean_s'] * 1e3:.1f} ms)")
    for line in f["failures"][:20]:
        print(line)
    return 1 if f["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
