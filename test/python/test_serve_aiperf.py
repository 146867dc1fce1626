"""A third-party load generator as users run it: NVIDIA's aiperf (tools/setup_loadgen.sh installs it
into build/loadgen) streams chat requests at `cbc serve` on the example model at a small size
(bench/serve_aiperf.py runs it larger, beside transformers serve): every request completes,
none fails, and aiperf measures throughput, time to first token and inter-token latency."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import serve_aiperf  # noqa: E402

AIPERF = os.environ.get("CBC_AIPERF", os.path.join(ROOT, "build", "loadgen", "bin", "aiperf"))


@pytest.mark.skipif(not os.path.exists(AIPERF), reason=f"no aiperf at {AIPERF} (tools/setup_loadgen.sh)")
def test_aiperf_completes_every_request(capsys):
    args = ["--aiperf", AIPERF, "--requests", "24", "--concurrency", "4", "--input-tokens", "32",
            "--output-tokens", "24", "--threads", "1", "--json", "--timeout", "600"]
    assert serve_aiperf.main(args) == 0
    import json
    f = json.loads(capsys.readouterr().out)["cbc serve"]
    assert f["completed"] == 24 and f["errors"] == 0, f
    assert f["requests_per_s"] > 0 and f["output_tokens_per_s"] > 0
    # A stream that falls behind sends several tokens in one event, which aiperf times alike: a
    # median inter-token latency of 0 is possible under load.
    assert 0 < f["ttft_p50_ms"] <= f["ttft_p99_ms"] and 0 <= f["itl_p50_ms"] <= f["itl_p99_ms"]
    print(f)
