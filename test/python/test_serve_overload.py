"""Overload without a model: the scripted engine of test_serve_tools.py holds two requests for as
long as the test wants (1 running + 1 queued, the server's whole limit), so every further request
is refused, deterministically; the refusals leave no server objects and no Python memory behind
(tracemalloc over 300 of them, in the server's own process); the held requests, cancelled, free
their places."""
import gc
import json
import socket
import time
import tracemalloc

import httpx

from test_serve_tools import InProcessServer

from cbc.serve import Generation, Submission  # noqa: E402


def _live(kind) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is kind)


def _hold(url: str) -> socket.socket:
    host, port = url.split("//")[1].split("/")[0].split(":")
    body = json.dumps({"prompt": "hi", "max_tokens": 8, "stream": True}).encode()
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return s


def _wait(pred, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError("condition never held")


def test_refusals_leave_nothing_behind():
    server = InProcessServer("hermes.jinja", max_requests=1, max_queued=1)
    try:
        admission = server.served.admission
        server.engine.scripts += [None, None]
        held = [_hold(server.url) for _ in range(2)]
        _wait(lambda: admission.in_flight() == 2 and len(server.engine.live) == 2)
        url = server.url + "/completions"
        with httpx.Client(timeout=30) as c:
            def refuse(n):
                for _ in range(n):
                    r = c.post(url, json={"prompt": "hi", "max_tokens": 4})
                    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1, r.text
            refuse(20)  # warm: the client's connection, the handlers' first allocations
            gc.collect()
            tracemalloc.start(1)
            before = tracemalloc.take_snapshot()
            refuse(300)
            gc.collect()
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
        grown = sum(d.size_diff for d in after.compare_to(before, "filename"))
        assert grown < 64 * 1024, (grown, after.compare_to(before, "lineno")[:10])
        assert _live(Submission) == 2 and _live(Generation) == 2
        assert admission.in_flight() == 2 and server.served.metrics.overloaded == 320
        for s in held:
            s.close()
        _wait(lambda: admission.in_flight() == 0 and not server.engine.live)
        assert _live(Submission) == 0 and _live(Generation) == 0
    finally:
        server.stop()
