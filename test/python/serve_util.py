"""Starting `python -m cbc.serve` on loopback for the server tests and the load test."""
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
# The package as the build assembles it (build/python), unless PYTHONPATH already finds one.
PYTHON_DIR = os.environ.get("CBC_PYTHON_DIR", os.path.join(ROOT, "build", "python"))
if PYTHON_DIR not in sys.path:
    sys.path.append(PYTHON_DIR)

# The served fixture: the Llama test model (vocabulary 256) with the test tokenizer, whose ids
# are all below 256.
MODEL = os.path.join(ROOT, "test", "parity", "fixtures", "llama")
ARTEFACT = os.path.join(ROOT, "test", "artefacts", "llama.fb")
TOKENIZER = os.path.join(HERE, "fixtures", "tok_chatml")


class Server:
    """A cbc serve process on 127.0.0.1 with a free port (the server binds port 0 and says
    which it got); stop() ends it."""

    def __init__(self, *extra, model=MODEL, artefact=ARTEFACT, tokenizer=TOKENIZER, timeout=60):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PYTHON_DIR, env.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-m", "cbc.serve", model, "--tokenizer", tokenizer, "--port", "0",
               "--threads", "1", "--backend", "cpu", *extra]
        if artefact:
            cmd += ["--artefact", artefact]
        self.proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            m = re.search(r"on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"cbc serve exited with {self.proc.returncode}")
        else:
            self.stop()
            raise RuntimeError(f"cbc serve did not start: {line!r}")
        self.url = f"http://127.0.0.1:{self.port}"
        # Keep reading stderr, so a chatty server never blocks on a full pipe.
        self.log = []
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def parse_metrics(text):
    """Prometheus text -> {name{labels}: float}."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out
