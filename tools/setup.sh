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
  libzstd-dev
  mpich libmpich-dev
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

# CI's machines have the CUDA toolkit; without it build/ is configured without CUDA too (CMake
# finds none: CBC_CUDA=OFF), so the kernel, SIMT and CUDA backend tests are left out.
if [ ! -d /usr/local/cuda/include ]; then
  echo "setup: no CUDA toolkit at /usr/local/cuda: building without CUDA (no kernels, no CUDA backend)" >&2
fi

BUILD=${BUILD_DIR:-build}
RUNTIME_BUILD=${RUNTIME_BUILD_DIR:-build-runtime}
FUZZ_BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
CPU_BUILD=${CPU_BUILD_DIR:-build-cpu}
export CCACHE_BASEDIR="$PWD"
COMMON=(-G Ninja -S . -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-22
        -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# No precompiled headers: ccache cannot cache an object built with one ("could not use
# precompiled header"), so with them every run recompiled the MLIR-heavy objects; without, they
# are cache hits, shared by build/ and build-cpu/ (whose flags are the same but for two files).
COMMON+=(-DCBC_PCH=OFF)
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake "${COMMON[@]}" -B "$BUILD" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_USE_LINKER=lld >/dev/null
fi
# The runtime alone, configured with LLVM's prefix hidden: proof that serving needs no MLIR; and
# without MPI (CBC_MPI=OFF): proof that --tp 1 serving needs none either.
if [ ! -f "$RUNTIME_BUILD/build.ninja" ]; then
  cmake "${COMMON[@]}" -B "$RUNTIME_BUILD" -DCBC_BUILD_COMPILER=OFF -DCBC_MPI=OFF \
    -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 >/dev/null
fi
# The compiler and the runtime without CUDA (CBC_CUDA=OFF), the toolkit hidden from CMake: proof
# that neither needs it (the ctest cpu-only-no-toolkit checks that no object read its headers).
if [ ! -f "$CPU_BUILD/build.ninja" ]; then
  cmake "${COMMON[@]}" -B "$CPU_BUILD" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir -DLLVM_USE_LINKER=lld \
    -DCBC_CUDA=OFF "-DCMAKE_IGNORE_PREFIX_PATH=$(ls -d /usr/local/cuda* 2>/dev/null | paste -sd';')" >/dev/null
fi
# The runtime again with ASan, UBSan (fatal) and coverage feedback: its tests run there too, and
# the libFuzzer targets (test/fuzz) of every parser of untrusted input are built there. Without
# MPI: a binary linking MPICH (UCX) crashes under ASan before main.
if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
  cmake "${COMMON[@]}" -B "$FUZZ_BUILD" -DCBC_BUILD_COMPILER=OFF -DCBC_FUZZ=ON -DCBC_MPI=OFF \
    -DCMAKE_IGNORE_PREFIX_PATH=/usr/lib/llvm-22 >/dev/null
fi
