#!/usr/bin/env bash
# Makes the Python environment of the tests and the server: a venv at $PYENV (default
# build/pyenv) with python/requirements-test.txt installed. Idempotent: when the venv exists
# and the requirements have not changed since the last install it returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
PYENV=${PYENV:-build/pyenv}
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
