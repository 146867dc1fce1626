#!/bin/sh
# CMake's side of CBC_CUDA, with the CUDA toolkit hidden (its prefixes and every directory that
# holds an nvcc ignored, PATH without them): by default the configure chooses a CPU-only build
# and says why; -DCBC_CUDA=ON is a configure error naming what is missing. The runtime alone is
# configured (no compiler: quicker, and the option is the same).
# usage: configure.sh SOURCE_DIR CMAKE CXX_COMPILER
set -eu
SRC=$1
CMAKE=$2
CXX=$3
fail() { echo "cpu-only configure: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

hide_prefix=$(ls -d /usr/local/cuda* 2>/dev/null | paste -sd';' -)
hide_dirs=$( (ls -d /usr/local/cuda*/bin 2>/dev/null; which -a nvcc 2>/dev/null | xargs -r -n1 dirname) | sort -u | paste -sd';' -)
path=$(echo "$PATH" | tr ':' '\n' | grep -v -e cuda -e '^/usr/local/bin$' | paste -sd: -)
configure() {
  dir=$1
  shift
  env -u CUDA_PATH -u CUDAToolkit_ROOT PATH="$path" "$CMAKE" -S "$SRC" -B "$tmp/$dir" -DCMAKE_CXX_COMPILER="$CXX" \
    -DCBC_BUILD_COMPILER=OFF "-DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22;$hide_prefix" \
    "-DCMAKE_IGNORE_PATH=$hide_dirs" "$@"
}

configure auto > "$tmp/auto.log" 2>&1 || fail "the default configure failed: $(tail -5 "$tmp/auto.log")"
grep -q 'cbc: CPU-only build (the CUDA toolkit was not found)' "$tmp/auto.log" || fail "no CPU-only note: $(cat "$tmp/auto.log")"
grep -q '^CBC_CUDA:BOOL=OFF$' "$tmp/auto/CMakeCache.txt" || fail "CBC_CUDA is not OFF without the toolkit"
grep -q 'kBuiltWithCuda = false;' "$tmp/auto/runtime/build_config.h" || fail "build_config.h says CUDA is in"

status=0
configure on -DCBC_CUDA=ON > "$tmp/on.log" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "-DCBC_CUDA=ON configured without the toolkit"
tr -s ' \n' ' ' < "$tmp/on.log" | grep -q 'CBC_CUDA=ON but the CUDA toolkit was not found: the CUDA backend needs its headers (cuda.h, cublasLt.h) and the compiler needs NVRTC (libnvrtc)' ||
  fail "-DCBC_CUDA=ON said: $(cat "$tmp/on.log")"
echo "cpu-only configure: ok"
