#!/usr/bin/env bash
# Sets up, builds and runs every test suite (lit, unit, parity, emulation), and the runtime's
# tests again in a build without the compiler and once more under ASan and UBSan, then runs each
# libFuzzer target for a minute (tools/fuzz.sh), and the suites of a build without CUDA
# (build-cpu). No GPU, no network, no torch needed.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# The venv of the Python tests (build/pyenv) and the Python package in the build tree.
tools/setup_python.sh
# The load generator (aiperf, in build/loadgen) that test/python/test_serve_aiperf.py runs.
tools/setup_loadgen.sh
BUILD=${BUILD_DIR:-build}
RUNTIME_BUILD=${RUNTIME_BUILD_DIR:-build-runtime}
FUZZ_BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
CPU_BUILD=${CPU_BUILD_DIR:-build-cpu}
export CCACHE_BASEDIR="$PWD"
ninja -C "$BUILD"
ninja -C "$RUNTIME_BUILD"
ninja -C "$FUZZ_BUILD"
(cd "$RUNTIME_BUILD" && ctest --output-on-failure -j"$(nproc)" "$@")
# The installed runtime: examples/embed built against it (CMake package and pkg-config).
tools/check_install.sh "$RUNTIME_BUILD"
# The Python package installed with pip into its own venv, tested there (not the build tree).
tools/check_python_install.sh
# Sanitizer findings are fatal (-fno-sanitize-recover=all); leaks fail too. The load test is
# left out here: it bounds RSS growth, which ASan's quarantine (256 MiB) inflates by design.
(cd "$FUZZ_BUILD" && UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$(nproc)" -LE load "$@")
tools/fuzz.sh "$FUZZ_BUILD"
# Without CUDA: the compiler and the runtime built with no toolkit, and their lit, unit and
# parity suites (the load test is the same code as build-runtime's).
ninja -C "$CPU_BUILD"
(cd "$CPU_BUILD" && ctest --output-on-failure -j"$(nproc)" -LE load "$@")
cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@"
