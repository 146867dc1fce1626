#!/usr/bin/env bash
# The Python package as a user installs it: `pip install .` into its own venv ($VENV, default
# build-python/venv), then the engine's pytest suite against that installed package, run from
# outside the source tree (not the build tree's build/python). The wheel is built without the
# compiler, so cbc.compile goes through the cbc executable there. Reinstalls reuse the build
# tree in build-python/ and, with ccache, the objects of earlier builds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-build-python/venv}
CBC_EXE=${CBC_EXECUTABLE:-$ROOT/${BUILD_DIR:-build}/bin/cbc}
# The build backend and pytest at their pins, in the venv: building there, without pip's
# throwaway isolated environment, keeps the paths CMake sees stable, so a reinstall is incremental.
PINS=$(grep -E '^(pytest|scikit-build-core|nanobind)==' python/requirements-test.txt)
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
fi
VENV=$(cd "$VENV" && pwd)
"$VENV/bin/python" -m pip install -q --disable-pip-version-check $PINS
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
export CC=${CC:-clang-22} CXX=${CXX:-clang++-22}
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$ROOT
fi
start=$(date +%s)
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
  --no-build-isolation "$ROOT"
echo "check_python_install: pip install . took $(($(date +%s) - start)) s" >&2
cd "$VENV"
# The package must come from the venv, not from a build tree on the path.
"$VENV/bin/python" - "$VENV" <<'PY'
import os, sys, cbc, cbc._runtime
venv = os.path.realpath(sys.argv[1])
for m in (cbc, cbc._runtime):
    where = os.path.realpath(m.__file__)
    assert where.startswith(venv + os.sep), f"{m.__name__} imported from {where}, not from {venv}"
PY
CBC_EXECUTABLE=$CBC_EXE PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  "$ROOT/test/python/test_engine.py" "$ROOT/test/python/test_engine_compile.py"
