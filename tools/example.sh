#!/usr/bin/env bash
# The main job on a bundled example: compile a shipped config and serve a few prompts with
# random weights on the CPU backend.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
BUILD=${BUILD_DIR:-build}
export CCACHE_BASEDIR="$PWD"
ninja -C "$BUILD" cbc
"$BUILD/bin/cbc" compile examples/tiny-llama/config.json -o "$BUILD/tiny-llama.fb"
"$BUILD/bin/cbc" run "$BUILD/tiny-llama.fb" --random-weights --seed 0 \
  --prompts examples/tiny-llama/prompts.jsonl --max-new-tokens 24 --backend cpu
