#!/bin/sh
# Proof that a build without CUDA (CBC_CUDA=OFF) needs no CUDA toolkit: no compile or link
# command names it, no object of the build read one of its headers (ninja's dependency log,
# resolved through symlinks: this machine links the toolkit's headers into /usr/local/include,
# where a stray #include <cuda.h> would find them), and no binary needs one of its libraries.
# usage: no_toolkit.sh BUILD_DIR
set -eu
BUILD=$1
fail() { echo "no-toolkit: $*" >&2; exit 1; }
[ -f "$BUILD/build.ninja" ] || fail "$BUILD is not a Ninja build tree"
if grep -nE '/usr/local/cuda|/cuda-[0-9]|libnvrtc|libcublas|libcudart|-lcuda\b|-lnvrtc' "$BUILD/build.ninja" >&2; then
  fail "a build command names the CUDA toolkit"
fi
objects=$(ninja -C "$BUILD" -t deps | grep -c '^[^ ].*#deps' || true)
[ "$objects" -gt 0 ] || fail "ninja recorded no dependencies: build the tree first"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ninja -C "$BUILD" -t deps | sed -n 's/^    //p' | sort -u | python3 -c '
import glob, os, sys
build, src = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
# The toolkit wherever it is installed here, and its headers by name wherever else they are
# (the project has headers of its own named like them, under codegen/cuda and runtime/cuda).
roots = {os.path.realpath(p) + "/" for p in glob.glob("/usr/local/cuda*") + [os.environ.get("CUDA_HOME", "/usr/local/cuda")]}
toolkit = {"cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda_bf16.h", "cublasLt.h", "nvrtc.h"}
bad = []
for line in sys.stdin:
    path = line.strip()
    real = os.path.realpath(os.path.join(build, path))  # ninja records paths from the build tree
    ours = real.startswith(src + "/") or real.startswith(build + "/")
    if any(real.startswith(r) for r in roots) or (not ours and os.path.basename(real) in toolkit):
        bad.append(path + " -> " + real)
for b in bad:
    print("no-toolkit: an object includes " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
' "$BUILD" "$SRC" || fail "an object of $BUILD includes a CUDA toolkit header"
for bin in "$BUILD"/bin/*; do
  [ -f "$bin" ] && [ -x "$bin" ] || continue
  if readelf -d "$bin" 2>/dev/null | grep -E 'NEEDED.*(libcuda|libnvrtc|libcublas|libcudart)' >&2; then
    fail "$bin needs a CUDA library"
  fi
done
echo "no-toolkit: ok ($objects objects, none reads a CUDA header)"
