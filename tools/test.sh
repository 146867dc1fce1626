#!/usr/bin/env bash
# Sets up, builds and runs every test suite (lit, unit, parity, emulation). No GPU, no network,
# no torch needed.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
BUILD=${BUILD_DIR:-build}
export CCACHE_BASEDIR="$PWD"
ninja -C "$BUILD"
cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@"
