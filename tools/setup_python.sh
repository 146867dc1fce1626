#!/usr/bin/env bash
# Makes the Python environment of the tests and the server: a venv at $PYENV (default
# $BUILD_DIR/pyenv, i.e. build/pyenv) with python/requirements-test.txt installed, and turns the
# Python package on in the build tree (-DCBC_PYTHON=ON with that venv's interpreter) when the
# tree was configured without it. Idempotent: with the venv current it returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
PYENV=${PYENV:-$BUILD/pyenv}
REQ=python/requirements-test.txt
PYTHON=${PYTHON:-python3}
if [ ! -x "$PYENV/bin/python" ]; then
  echo "setup_python: creating $PYENV" >&2
  mkdir -p "$(dirname "$PYENV")"
  "$PYTHON" -m venv "$PYENV"
fi
# The stamp holds the requirements last installed: a changed pin reinstalls.
STAMP="$PYENV/.requirements-installed"
if ! cmp -s "$REQ" "$STAMP"; then
  echo "setup_python: installing $REQ" >&2
  "$PYENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
  cp "$REQ" "$STAMP"
fi
# A tree configured before (or without) CBC_PYTHON gets it once; later runs see it on.
PYABS="$(cd "$PYENV" && pwd)/bin/python"
if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -qx "CBC_PYTHON:BOOL=ON" "$BUILD/CMakeCache.txt"; then
  echo "setup_python: configuring $BUILD with -DCBC_PYTHON=ON" >&2
  cmake -B "$BUILD" -DCBC_PYTHON=ON -DPython_EXECUTABLE="$PYABS" >/dev/null
fi
