#!/usr/bin/env bash
# Installs the runtime-only build under a prefix and builds examples/embed against the installed
# package twice, through find_package(cbc) and through pkg-config, with LLVM's prefix hidden (no
# MLIR), then runs both on the committed llama artefact. Called by tools/test.sh.
#   tools/check_install.sh [RUNTIME_BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME_BUILD=${1:-build-runtime}
PREFIX="$PWD/$RUNTIME_BUILD/install-check/prefix"
EMBED="$PWD/$RUNTIME_BUILD/install-check/embed"
rm -rf "$PREFIX" "$EMBED"
cmake --install "$RUNTIME_BUILD" --prefix "$PREFIX" >/dev/null
for f in bin/cbc lib/libcbc_runtime.a include/cbc/runtime/engine.h lib/cmake/cbc/cbcConfig.cmake \
         lib/pkgconfig/cbc-runtime.pc; do
  [ -f "$PREFIX/$f" ] || { echo "check_install: $PREFIX/$f was not installed" >&2; exit 1; }
done
cmake -G Ninja -S examples/embed -B "$EMBED/cmake" -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 >/dev/null
ninja -C "$EMBED/cmake" >/dev/null
mkdir -p "$EMBED/pkg-config"
# shellcheck disable=SC2046
clang++-22 -O1 examples/embed/main.cpp -o "$EMBED/pkg-config/cbc-embed" \
  $(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --cflags --libs cbc-runtime)
for exe in "$EMBED/cmake/cbc-embed" "$EMBED/pkg-config/cbc-embed"; do
  "$exe" test/artefacts/llama.fb test/parity/fixtures/llama > "$EMBED/out.txt"
  tail -1 "$EMBED/out.txt"
done
echo "check_install: examples/embed builds and runs against the installed runtime (CMake package and pkg-config)"
