#!/usr/bin/env bash
# The main job on the bundled example: set up, build cbc, compile the trained example model
# (examples/kjv-llama, a 3.4M-parameter llama trained on the King James Bible by
# tools/train_tiny_llama.py) and generate text from a few prompts on the CPU backend.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
BUILD=${BUILD_DIR:-build}
PYENV=${PYENV:-$BUILD/pyenv}
export CCACHE_BASEDIR="$PWD"

# Prompts are text; `cbc run` reads and writes token ids, so the model's tokenizer.json encodes
# and decodes them (tokenizers, in the build tree's virtual environment). The venv and the
# Python package built beside cbc are also what `cbc serve` runs.
if [ -x tools/setup_python.sh ]; then
  PYENV="$PYENV" tools/setup_python.sh
  ninja -C "$BUILD" cbc cbc_python
else
  ninja -C "$BUILD" cbc
  if [ ! -x "$PYENV/bin/python" ]; then
    python3 -c "import ensurepip" 2>/dev/null || {
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    }
    python3 -m venv "$PYENV"
  fi
  "$PYENV/bin/python" -c "import tokenizers" 2>/dev/null ||
    "$PYENV/bin/python" -m pip install -q --disable-pip-version-check tokenizers==0.23.3
fi

MODEL=examples/kjv-llama
"$BUILD/bin/cbc" compile "$MODEL/config.json" -o "$BUILD/kjv-llama.fb" --no-cuda --quiet
"$PYENV/bin/python" tools/example_generate.py --cbc "$BUILD/bin/cbc" --artefact "$BUILD/kjv-llama.fb" \
  --model "$MODEL" --prompts "$MODEL/prompts.txt" --max-new-tokens 48 --backend cpu
