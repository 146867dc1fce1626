"""A third-party load generator, NVIDIA's aiperf (PyPI), against `cbc serve` on the example model,
and the same run against transformers' own `transformers serve` on the same model and cores.

    python bench/serve_aiperf.py [--aiperf build/loadgen/bin/aiperf] [--requests 200]
        [--concurrency 8] [--input-tokens 64] [--output-tokens 64]
        [--transformers-python /path/to/venv/bin/python]   # also run transformers serve

aiperf streams chat completions with synthetic prompts of --input-tokens (the model's tokenizer)
and asks for --output-tokens each (max_tokens; the same body to both servers, so an answer may end
sooner at the model's end token: transformers serve refuses ignore_eos), after a warm-up of one
request per client; it reports request throughput, output tokens/s, time to first token and
inter-token latency. Prints one row per server, and exits 1 if any
request failed or fewer than --requests completed. tools/setup_loadgen.sh installs aiperf into
build/loadgen (its own venv: it is large). test/python/test_serve_aiperf.py runs this at a small
size in CI."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EXAMPLE = os.path.join(ROOT, "examples", "kjv-llama")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(cmd: list, env=None) -> subprocess.Popen:
    """A server whose output goes to a temporary file (a pipe nobody reads would block it)."""
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    proc.log = log
    return proc


def start_cbc(port: int, threads: int) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "build", "python"), env.get("PYTHONPATH")) if p)
    return spawn([sys.executable, "-m", "cbc.serve", EXAMPLE, "--port", str(port), "--backend", "cpu",
                  "--threads", str(threads)], env)


def start_transformers(python: str, port: int) -> subprocess.Popen:
    exe = os.path.join(os.path.dirname(python), "transformers")
    return spawn([exe, "serve", EXAMPLE, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                  "--continuous-batching"])


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            proc.log.seek(0)
            raise RuntimeError(f"the server exited with {proc.returncode}: {proc.log.read()[-2000:]}")
        try:
            urllib.request.urlopen(url + "/health", timeout=2).read()  # transformers serve's /v1/models can fail
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer in {timeout:.0f} s")


def run_aiperf(aiperf: str, url: str, model: str, args, out: str) -> dict:
    cmd = [aiperf, "profile", "-m", model, "--url", url, "--endpoint-type", "chat", "--streaming",
           "--tokenizer", EXAMPLE, "--concurrency", str(args.concurrency), "--request-count", str(args.requests),
           "--prompt-input-tokens-mean", str(args.input_tokens), "--prompt-input-tokens-stddev", "0",
           "--prompt-output-tokens-mean", str(args.output_tokens), "--prompt-output-tokens-stddev", "0",
           "--warmup-request-count", str(args.concurrency), "--random-seed", "1", "--output-artifact-dir", out,
           "--ui-type", "none", "--no-server-metrics", "--no-gpu-telemetry"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    path = os.path.join(out, "profile_export_aiperf.json")
    if r.returncode != 0 or not os.path.exists(path):
        raise RuntimeError(f"aiperf failed ({r.returncode}): {(r.stdout + r.stderr)[-3000:]}")
    with open(path) as f:
        return json.load(f)


def figures(report: dict) -> dict:
    def avg(key):
        return (report.get(key) or {}).get("avg")

    def pct(key, p):
        return (report.get(key) or {}).get(p)
    errors = sum(e.get("count", 0) for e in report.get("error_summary") or [])
    return {"completed": int(avg("request_count") or 0), "errors": errors,
            "requests_per_s": avg("request_throughput"), "output_tokens_per_s": avg("output_token_throughput"),
            "output_tokens_per_request": avg("output_sequence_length"),
            "ttft_p50_ms": pct("time_to_first_token", "p50"), "ttft_p99_ms": pct("time_to_first_token", "p99"),
            "itl_p50_ms": pct("inter_token_latency", "p50"), "itl_p99_ms": pct("inter_token_latency", "p99")}


def bench(name: str, proc: subprocess.Popen, url: str, model: str, aiperf: str, args) -> dict:
    try:
        wait_ready(url, proc)
        out = tempfile.mkdtemp(prefix=f"aiperf-{name}-")
        try:
            return figures(run_aiperf(aiperf, url, model, args, out))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--aiperf", default=os.path.join(ROOT, "build", "loadgen", "bin", "aiperf"))
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--input-tokens", type=int, default=64)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=0, help="cbc's CPU threads (0: all)")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--transformers-python", help="a Python with transformers[serving] and torch: also "
                   "run `transformers serve` on the same model")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    if not os.path.exists(args.aiperf):
        print(f"serve_aiperf: no aiperf at {args.aiperf} (tools/setup_loadgen.sh installs it)", file=sys.stderr)
        return 2
    rows = {}
    port = free_port()
    rows["cbc serve"] = bench("cbc", start_cbc(port, args.threads), f"http://127.0.0.1:{port}", "kjv-llama",
                              args.aiperf, args)
    if args.transformers_python:
        port = free_port()
        rows["transformers serve"] = bench("transformers", start_transformers(args.transformers_python, port),
                                           f"http://127.0.0.1:{port}", EXAMPLE, args.aiperf, args)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"aiperf: {args.requests} streamed chat requests, concurrency {args.concurrency}, "
              f"{args.input_tokens} prompt and {args.output_tokens} output tokens, example model, CPU")
        print("| server | completed | errors | requests/s | output tokens/s | output tokens/request | "
              "TTFT p50 / p99 ms | ITL p50 / p99 ms |")
        print("|---|---|---|---|---|---|---|---|")
        for name, f in rows.items():
            print(f"| {name} | {f['completed']} | {f['errors']} | {f['requests_per_s']:.2f} | "
                  f"{f['output_tokens_per_s']:.0f} | {f['output_tokens_per_request'] or 0:.1f} | "
                  f"{f['ttft_p50_ms']:.1f} / {f['ttft_p99_ms']:.1f} | "
                  f"{f['itl_p50_ms']:.2f} / {f['itl_p99_ms']:.2f} |")
    bad = [n for n, f in rows.items() if f["errors"] or f["completed"] < args.requests]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
