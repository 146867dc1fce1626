#!/usr/bin/env bash
# Sets up, builds and runs every test suite (lit, unit, parity, emulation), and the runtime's
# tests again in a build without the compiler. No GPU, no network, no torch needed.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
BUILD=${BUILD_DIR:-build}
RUNTIME_BUILD=${RUNTIME_BUILD_DIR:-build-runtime}
export CCACHE_BASEDIR="$PWD"
ninja -C "$BUILD"
ninja -C "$RUNTIME_BUILD"
(cd "$RUNTIME_BUILD" && ctest --output-on-failure -j"$(nproc)" "$@")
cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@"
