"""cbc.compile: the compiler module gives what `cbc compile` gives, refuses bad configs and
options with the compiler's one-line message and writes nothing then; without the module it
runs a cbc executable, or says how to get one."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import cbc
import cbc._compile

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "test" / "parity" / "fixtures"
CBC = Path(os.environ.get("CBC_EXECUTABLE") or
           Path(os.environ.get("CBC_BUILD_DIR", REPO / "build")) / "bin" / "cbc")

needs_compiler = pytest.mark.skipif(cbc._compile._compiler is None,
                                    reason="this package was built without the compiler")


def cli_has_compiler():
    return CBC.exists() and subprocess.run([str(CBC), "compile", "--help"], capture_output=True).returncode == 0


# The tests that compare with `cbc compile` need one that has the compiler.
needs_cli = pytest.mark.skipif(not cli_has_compiler(), reason=f"no cbc executable with the compiler at {CBC}")


def cli_compile(config, out, *flags):
    r = subprocess.run([str(CBC), "compile", str(config), "-o", str(out), "--quiet", *flags],
                       capture_output=True, text=True, timeout=300)
    return r


@needs_cli
@needs_compiler
@pytest.mark.parametrize("family", ["llama", "qwen3_moe", "olmo_hybrid"])
def test_compile_equals_cbc_compile(tmp_path, family):
    ours = tmp_path / "py.fb"
    assert cbc.compile(FIXTURES / family, ours, cuda=False) == str(ours)
    r = cli_compile(FIXTURES / family, tmp_path / "cli.fb", "--no-cuda")
    assert r.returncode == 0, r.stderr
    assert ours.read_bytes() == (tmp_path / "cli.fb").read_bytes()


@needs_cli
@needs_compiler
def test_default_kernels_equal_cbc_compile(tmp_path):
    """cuda=None does what cbc compile does by default (kernels, where cbc has CUDA)."""
    cache = tmp_path / "kernels"
    ours = tmp_path / "py.fb"
    cbc.compile(FIXTURES / "llama", ours, kernel_cache=cache)
    r = cli_compile(FIXTURES / "llama", tmp_path / "cli.fb", "--kernel-cache", str(cache))
    assert r.returncode == 0, r.stderr
    assert ours.read_bytes() == (tmp_path / "cli.fb").read_bytes()
    assert (ours.stat().st_mode & 0o777) == ((tmp_path / "cli.fb").stat().st_mode & 0o777)


@needs_compiler
def test_compiled_artefact_serves(tmp_path):
    out = tmp_path / "llama.fb"
    cbc.compile(FIXTURES / "llama" / "config.json", out, cuda=False, block_size=8)
    fresh = cbc.Engine(out, FIXTURES / "llama", threads=1, backend="cpu")
    committed = cbc.Engine(REPO / "test" / "artefacts" / "llama.fb", FIXTURES / "llama", threads=1, backend="cpu")
    ps = [[1, 2, 3, 4], [9, 8, 7]]
    a = fresh.generate_batch(ps, max_new_tokens=8)
    b = committed.generate_batch(ps, max_new_tokens=8)
    assert [a[k].generated_tokens for k in a] == [b[k].generated_tokens for k in b]


def bad_config(tmp_path):
    config = json.loads((FIXTURES / "llama" / "config.json").read_text())
    del config["vocab_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


@needs_cli
@needs_compiler
def test_bad_config_raises_value_error_and_writes_nothing(tmp_path):
    path = bad_config(tmp_path)
    out = tmp_path / "out.fb"
    with pytest.raises(ValueError) as e:
        cbc.compile(path, out, cuda=False)
    r = cli_compile(path, tmp_path / "cli.fb", "--no-cuda")
    assert r.returncode == 2
    # The CLI's message, less its "cbc compile: error: " prefix.
    assert str(e.value) == r.stderr.strip().split("error: ", 1)[1]
    assert "config key 'vocab_size'" in str(e.value)
    assert not out.exists()
    assert os.listdir(tmp_path) == ["config.json"], "no temporary file is left behind"


@needs_compiler
@pytest.mark.parametrize("kwargs,message", [
    ({"dtype": "f8", "cuda": False}, "dtype must be bf16, f16 or f32, got 'f8'"),
    ({"block_size": 0, "cuda": False}, "block-size must be between 1 and"),
    ({"target": "sm_1", "cuda": True}, "sm_1"),
    ({"target": [], "cuda": True}, "names no architecture"),
    ({"dtype": "f16", "cuda": True}, "f16 has no CUDA code generation"),
])
def test_bad_options_raise_value_error(tmp_path, kwargs, message):
    """Checked before any work (no NVRTC): the driver's message, naming the option."""
    with pytest.raises(ValueError, match=message):
        cbc.compile(FIXTURES / "llama", tmp_path / "out.fb", **kwargs)
    assert not (tmp_path / "out.fb").exists()


def test_bad_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="config '/nonexistent.json' does not exist"):
        cbc.compile("/nonexistent.json", tmp_path / "out.fb")
    with pytest.raises(ValueError, match="is a directory without a config.json"):
        cbc.compile(tmp_path, tmp_path / "out.fb")
    with pytest.raises(ValueError, match="is a directory; name the artefact file"):
        cbc.compile(FIXTURES / "llama", tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        cbc.compile(FIXTURES / "llama", tmp_path / "missing" / "out.fb")
    with pytest.raises(TypeError):
        cbc.compile(FIXTURES / "llama", tmp_path / "out.fb", block_size="16")


@needs_cli
def test_without_the_module_runs_the_executable(tmp_path, monkeypatch):
    monkeypatch.setattr(cbc._compile, "_compiler", None)
    monkeypatch.setenv("CBC_EXECUTABLE", str(CBC))
    out = tmp_path / "exe.fb"
    cbc.compile(FIXTURES / "llama", out, cuda=False)
    r = cli_compile(FIXTURES / "llama", tmp_path / "cli.fb", "--no-cuda")
    assert r.returncode == 0
    assert out.read_bytes() == (tmp_path / "cli.fb").read_bytes()
    with pytest.raises(ValueError, match="config key 'vocab_size'"):
        cbc.compile(bad_config(tmp_path), tmp_path / "bad.fb", cuda=False)
    assert not (tmp_path / "bad.fb").exists()


def test_without_the_module_or_an_executable(tmp_path, monkeypatch):
    monkeypatch.setattr(cbc._compile, "_compiler", None)
    monkeypatch.delenv("CBC_EXECUTABLE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(cbc.CompilerUnavailable, match="built without the compiler"):
        cbc.compile(FIXTURES / "llama", tmp_path / "out.fb")


def test_a_runtime_only_executable_is_unavailable(tmp_path, monkeypatch):
    """A cbc built without the compiler says so; cbc.compile passes that on as unavailable."""
    fake = tmp_path / "cbc"
    fake.write_text("#!/bin/sh\necho 'cbc compile: error: this cbc was built without the compiler "
                    "(CBC_BUILD_COMPILER=OFF); it can dump and run artefacts only' >&2\nexit 2\n")
    fake.chmod(0o755)
    monkeypatch.setattr(cbc._compile, "_compiler", None)
    monkeypatch.setenv("CBC_EXECUTABLE", str(fake))
    with pytest.raises(cbc.CompilerUnavailable, match="built without the compiler"):
        cbc.compile(FIXTURES / "llama", tmp_path / "out.fb", cuda=False)
    assert not (tmp_path / "out.fb").exists()
