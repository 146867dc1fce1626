#!/usr/bin/env bash
# Installs the build dependencies (Debian 12) and configures the build tree. Idempotent: when
# every package is present it only checks and returns in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
  ninja-build ccache cmake
  flatbuffers-compiler libflatbuffers-dev
  libgtest-dev libgmock-dev libboost-context-dev
  libopenblas-dev nlohmann-json3-dev libxxhash-dev libclang-rt-22-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -d /usr/local/cuda/include ]; then
  echo "setup: the CUDA toolkit is expected at /usr/local/cuda (headers, NVRTC, cuBLASLt)" >&2
  exit 1
fi

BUILD=${BUILD_DIR:-build}
RUNTIME_BUILD=${RUNTIME_BUILD_DIR:-build-runtime}
FUZZ_BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
export CCACHE_BASEDIR="$PWD"
COMMON=(-G Ninja -S . -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-22
        -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake "${COMMON[@]}" -B "$BUILD" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_USE_LINKER=lld >/dev/null
fi
# The runtime alone, configured with LLVM's prefix hidden: proof that serving needs no MLIR.
if [ ! -f "$RUNTIME_BUILD/build.ninja" ]; then
  cmake "${COMMON[@]}" -B "$RUNTIME_BUILD" -DCBC_BUILD_COMPILER=OFF \
    -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 >/dev/null
fi
# The runtime again with ASan, UBSan (fatal) and coverage feedback: its tests run there too, and
# the libFuzzer targets (test/fuzz) of every parser of untrusted input are built there.
if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
  cmake "${COMMON[@]}" -B "$FUZZ_BUILD" -DCBC_BUILD_COMPILER=OFF -DCBC_FUZZ=ON \
    -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 >/dev/null
fi
