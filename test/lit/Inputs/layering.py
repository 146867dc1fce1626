#!/usr/bin/env python3
"""Checks two rules of the layering on the sources under ROOT and prints one line per breach:

  family   no model family's name in the code (comments aside) of dialects/, passes/, codegen/
           or runtime/: below the front end, ops, kernels and the runtime name what they compute;
  include  each layer includes only what it may: runtime/ no compiler and no MLIR, dialects/
           itself and the shape rules its verifiers share with the CPU backend
           (runtime/schema/shape_rules.h, which includes nothing of the project), passes/ the
           dialect, codegen/ the dialect and runtime/schema/, the config
           parser no MLIR (and of runtime/ only runtime/schema/, whose limits.h bounds the
           sizes both the front end and the loader accept).

Exits 1 on any breach. usage: layering.py ROOT
"""
import pathlib
import re
import sys

FAMILY = re.compile(
    r"llama|mistral|mixtral|qwen|gemma|phi-?3|gpt[-_]?oss|jamba|mamba|bamba|zamba|falcon|granite|"
    r"nemotron|lfm2|olmo|deepseek|minimax|kimi|glm4",
    re.IGNORECASE,
)
SOURCES = (".cpp", ".h", ".cuh", ".td", ".fbs", ".cmake", ".txt")
# Project include roots each layer may use (system, mlir/ and llvm/ headers aside, where allowed).
INCLUDES = {
    "runtime": (("runtime/",), False),
    "dialects": (("dialects/", "runtime/schema/shape_rules.h"), True),
    "passes": (("dialects/", "passes/"), True),
    "codegen": (("dialects/", "runtime/schema/", "codegen/"), True),
    "frontends/hf_config/families": (("frontends/hf_config/", "runtime/schema/"), False),
}
PARSER_FILES = ("config_reader", "rope", "parse_config", "family_registry", "model_spec")


def code_lines(text):
    """Yields (line number, code) with // and /* */ comments removed (string contents kept)."""
    in_block = False
    for n, line in enumerate(text.splitlines(), 1):
        out, i = "", 0
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                    continue
                in_block, i = False, end + 2
            elif line.startswith("//", i) or (line.startswith("#", i) and line[i:].startswith("# ")):
                break
            elif line.startswith("/*", i):
                in_block, i = True, i + 2
            else:
                out += line[i]
                i += 1
        yield n, out


def main(root):
    root = pathlib.Path(root)
    breaches = []
    for layer in ("dialects", "passes", "codegen", "runtime"):
        for f in sorted((root / layer).rglob("*")):
            if f.suffix not in SOURCES or f.name.endswith("_generated.h"):
                continue
            for n, code in code_lines(f.read_text(errors="replace")):
                m = FAMILY.search(code)
                if m:
                    breaches.append(f"family {f.relative_to(root)}:{n}: '{m.group(0)}' in: {code.strip()}")
    checked = {}
    for layer, (allowed, mlir) in INCLUDES.items():
        for f in sorted((root / layer).rglob("*")):
            if f.suffix in (".cpp", ".h", ".cuh"):
                checked[f] = (allowed, mlir)
    for f in sorted((root / "frontends/hf_config").glob("*")):
        if f.stem in PARSER_FILES and f.suffix in (".cpp", ".h"):
            checked[f] = (("frontends/hf_config/", "runtime/schema/"), False)
    for f, (allowed, mlir) in checked.items():
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            external = inc.startswith(("mlir/", "llvm/"))
            local = "/" not in inc  # a file beside the includer (generated .inc, kernels)
            if (external and not mlir) or (not external and not local and not inc.startswith(allowed)):
                breaches.append(f"include {f.relative_to(root)}:{n}: {inc}")
    for b in breaches:
        print(b)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
