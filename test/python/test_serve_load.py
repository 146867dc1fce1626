"""The fast CI variant of bench/serve_load.py: concurrent streaming clients on loopback, none
lost, each stream identical to the same request run alone through cbc.Engine (greedy)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import serve_load  # noqa: E402


@pytest.mark.parametrize("client_kind,clients,requests", [("httpx", 16, 48), ("openai", 8, 16)])
def test_concurrent_streams_equal_alone(client_kind, clients, requests):
    f = serve_load.load_test(clients, requests, max_tokens=32, seed=3, client_kind=client_kind)
    assert f["failures"] == []
    assert f["completed"] == requests
    assert f["tokens"] > requests  # streams carried text, not just their ends
    print(f"{client_kind}: {clients} clients, {requests} requests, {f['tokens_per_s']:.0f} tokens/s,"
          f" TTFT p50 {f['ttft_p50_s'] * 1e3:.0f} ms p99 {f['ttft_p99_s'] * 1e3:.0f} ms")
