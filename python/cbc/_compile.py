"""cbc.compile: the compiler module (cbc._compiler) when this package was built with the
compiler; else a `cbc` executable (CBC_EXECUTABLE, or cbc on PATH) run as `cbc compile`; else
CompilerUnavailable saying how to get one."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
from typing import Optional

try:
    from . import _compiler
except ImportError:  # a runtime-only build: no MLIR in it
    _compiler = None


def _config_file(config) -> str:
    config = os.fspath(config)
    if os.path.isdir(config):
        inside = os.path.join(config, "config.json")
        if not os.path.exists(inside):
            raise ValueError(f"'{config}' is a directory without a config.json; pass the model's "
                             "config.json or the folder that holds it")
        return inside
    if not os.path.exists(config):
        raise FileNotFoundError(errno.ENOENT, f"config '{config}' does not exist", config)
    return config


def _out_path(out) -> str:
    out = os.fspath(out)
    if not out:
        raise ValueError("out names no file")
    if os.path.isdir(out):
        raise ValueError(f"out '{out}' is a directory; name the artefact file to write")
    parent = os.path.dirname(out)
    if parent and not os.path.isdir(parent):
        raise ValueError(f"out '{out}': directory '{parent}' does not exist")
    return out


def _targets(target) -> Optional[list]:
    if target is None:
        return None
    if isinstance(target, str):
        return [t for t in target.split(",") if t]
    return [str(t) for t in target]


def _write_atomically(path: str, data: bytes) -> None:
    """A failure leaves no artefact: written beside the target, then renamed. Created as open()
    creates files (0666 less the umask), as cbc compile's are."""
    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _executable() -> Optional[str]:
    exe = os.environ.get("CBC_EXECUTABLE")
    if exe:
        return exe
    return shutil.which("cbc")


def _compile_with_executable(exe, config, out, dtype, targets, block_size, cuda, fuse,
                             kernel_cache, quiet, tp, ep) -> None:
    cmd = [exe, "compile", config, "-o", out, "--dtype", dtype, "--block-size", str(block_size)]
    if tp > 1:
        cmd += ["--tp", str(tp), "--ep", str(ep)]
    if targets is not None:
        cmd += ["--target", ",".join(targets)]
    if cuda is False:
        cmd.append("--no-cuda")
    if not fuse:
        cmd.append("--no-fuse")
    if kernel_cache is not None:
        cmd += ["--kernel-cache", os.fspath(kernel_cache)]
    if quiet:
        cmd.append("--quiet")
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if not quiet:
        sys.stderr.write(r.stderr)
    if r.returncode == 0:
        return
    lines = [l for l in r.stderr.splitlines() if "error:" in l]
    message = lines[-1].split("error:", 1)[1].strip() if lines else r.stderr.strip()
    if "built without the compiler" in message:  # a runtime-only cbc
        from . import CompilerUnavailable

        raise CompilerUnavailable(f"{exe}: {message}")
    if r.returncode == 2:  # bad input: the config or an option
        raise ValueError(message)
    raise RuntimeError(f"{exe} compile failed ({r.returncode}): {message}")


def compile_artefact(config, out, *, dtype, target, block_size, cuda, fuse, kernel_cache, quiet,
                     tp=1, ep=1) -> str:
    from . import CompilerUnavailable

    if isinstance(block_size, bool) or not isinstance(block_size, int):
        raise TypeError(f"block_size must be an int, got {type(block_size).__name__}")
    path = _config_file(config)
    out = _out_path(out)
    targets = _targets(target)
    if _compiler is None:
        exe = _executable()
        if exe is None:
            raise CompilerUnavailable(
                "this cbc package was built without the compiler (cbc._compiler) and no cbc "
                "executable was found: set CBC_EXECUTABLE, put cbc on PATH, or build the package "
                "with -DCBC_BUILD_COMPILER=ON")
        _compile_with_executable(exe, path, out, dtype, targets, block_size, cuda, fuse,
                                 kernel_cache, quiet, tp, ep)
        return out
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read config '{path}': {e}") from None
    # Not told: kernels as cbc compile makes them by default (always, where this cbc has CUDA),
    # and whenever targets are named.
    emit = cuda if cuda is not None else bool(_compiler.default_emit_cuda or targets is not None)
    if targets is None:
        targets = list(_compiler.default_targets)
    try:
        data = _compiler.compile_config(text, dtype, targets, block_size, bool(emit), fuse,
                                        "" if kernel_cache is None else os.fspath(kernel_cache), tp, ep)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    _write_atomically(out, data)
    return out
