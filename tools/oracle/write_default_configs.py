#!/usr/bin/env python3
"""Write the config each supported family's transformers config class produces with default
arguments to test/configs/defaults/<model_type>.json.

These pin what "no key given" means for the front-end: XConfig().to_json_string(use_diff=False),
i.e. every attribute after __post_init__ (derived layer_types, standardised rope_parameters,
nulled sliding_window, ...), keys sorted. Deterministic for a given transformers version.

Usage: python tools/oracle/write_default_configs.py [--out DIR] [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import transformers

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "test" / "configs" / "defaults"
PINNED_TRANSFORMERS = "5.23.0"

MODEL_TYPES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma2",
    "gemma3_text",
    "gpt_oss",
    "phi3",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "inkling_text",
    "glm_moe_dsa",  # GlmMoeDsaConfig's defaults are GLM-5's shape (its docstring checkpoint zai-org/GLM-5)
    "axk2",  # AXK2Config's: A.X-K2-Light's shape (no expert groups)
    "gemma4_text",  # per-layer inputs of 256 on by default; per_layer_config for the global layers
    "gemma4_unified_text",
    "gemma3n_text",  # Gemma-3n-E4B's shape; intermediate_size saved as a per-layer list
    "dots3_note_text",  # dots3-note-prev's shape; per_layer_config (zero-padded keys) for the sliding layers
    "hy_v4",  # HYV4Config's defaults (hidden 2816, 34 layers): NOT the published Hy4-preview's shape (6144, 78)
    "rwkv",  # RwkvConfig's defaults: hidden 4096, 32 layers (RWKV-4 7B's shape), attention_hidden_size / intermediate_size derived
    "recurrent_gemma",  # RecurrentGemmaConfig's defaults: RecurrentGemma-2B's shape (hidden 2560, 26 layers, window 2048)
    "xlstm",  # xLSTMConfig's defaults: xLSTM-7B's shape (hidden 4096, 32 blocks, 8 heads, qk_dim 2048, v_dim 4096)
    "glm5_next_text",  # Glm5NextTextConfig's defaults: GLM-5.3-Flash's shape (hidden 4096, 45 layers, attention every 4th)
    "mistral_large4_text",  # MistralLarge4TextConfig's defaults: the 1T-A52B shape (hidden 6144, 72 layers, NoPE every 4th)
    "inkling2_text",  # Inkling2TextConfig's defaults: Inkling-2-Small (hidden 4608, 48 layers, full attention every 6th)
    "qwen4_exp_text",  # Qwen4ExpTextConfig's defaults: the QSA fields are None, so no attention layer can be built
)


def render(model_type: str) -> str:
    from transformers import CONFIG_MAPPING

    cfg = CONFIG_MAPPING[model_type]()
    assert cfg.model_type == model_type
    text = cfg.to_json_string(use_diff=False)  # indent 2, sort_keys, trailing newline
    assert f'"model_type": "{model_type}"' in text
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = ap.parse_args(argv)

    transformers.logging.set_verbosity_error()
    if transformers.__version__ != PINNED_TRANSFORMERS:
        print(f"error: transformers {transformers.__version__}, pinned {PINNED_TRANSFORMERS}", file=sys.stderr)
        return 2

    bad = []
    if not args.check:
        args.out.mkdir(parents=True, exist_ok=True)
    for mt in MODEL_TYPES:
        text = render(mt)
        path = args.out / f"{mt}.json"
        if args.check:
            if not path.exists() or path.read_text() != text:
                bad.append(str(path))
        else:
            path.write_text(text)
    if bad:
        print("default configs differ: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
