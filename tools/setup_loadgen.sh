#!/usr/bin/env bash
# The load generator of test/python/test_serve_aiperf.py and bench/serve_aiperf.py: NVIDIA's aiperf
# from PyPI, pinned, in a virtual environment of its own (build/loadgen; it is large, and its
# dependencies are not the server's), made once.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
VENV=${LOADGEN_VENV:-$BUILD/loadgen}
PIN="aiperf==0.13.0"
STAMP="$VENV/.installed"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$PIN" ]; then
  echo "setup_loadgen: installing $PIN into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$PIN"
  echo "$PIN" > "$STAMP"
fi
