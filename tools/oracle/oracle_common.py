"""What make_fixtures.py and the family tables under fixture_families/ share: paths, the pinned
release, prompt and vocabulary sizes, the config builder every table entry uses, and the
constants more than one family group reads."""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import math
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import safetensors
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, DynamicCache

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "test" / "parity" / "fixtures"

PINNED_TRANSFORMERS = "5.23.0"
FIXTURE_FORMAT = 1
NEW_TOKENS = 16
PROMPT_LENGTHS = (5, 13, 29)
VOCAB = 256
PROMPT_SEED = 20240611  # prompts: token ids drawn from [3, VOCAB) so bos/eos/pad (1/2/0) stay out
FILES = ("config.json", "model.safetensors", "expected.safetensors", "meta.json")

# Shared shape of every tiny config. Token ids are valid inside the vocab.
COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)

DEFAULT_ATOL = 1e-4


def _config(cls_name: str, **kwargs):
    """A family's config builder in one table entry: transformers.<cls_name>(**COMMON, **kwargs), the
    entry's keys winning over COMMON's. For the Llama-like families a front-end mapping serves."""

    def build():
        import transformers

        return getattr(transformers, cls_name)(**{**COMMON, **kwargs})

    return build


PHI3_ORIGINAL_MAX = 24


# The per-request-state and sparse-attention families' prompts: longer, so that the 80-token prompt
# crosses the 64-token chunk of transformers' torch chunked gated-delta kernel.
PROMPT_LENGTHS_STATE = (5, 23, 80)


# The MLA families' shared shape (fixture_families/latent.py).
MLA_DIMS = dict(
    q_lora_rank=32,
    kv_lora_rank=32,
    qk_nope_head_dim=16,
    qk_rope_head_dim=8,
)
MLA_COMMON = {**COMMON, "num_key_value_heads": 4, "intermediate_size": 64}


# MLA init: every weight at BASE_STD's 0.125 (~1/sqrt(64)) except those whose fan-in is not 64, which get
# 1/sqrt(fan_in): q_b_proj (fan-in q_lora_rank), kv_b_proj (kv_lora_rank), the routed and shared experts'
# down_proj (their widths). Norm weights (q_a_layernorm, kv_a_layernorm, post_mlp_layernorm, ...) are N(1, 0.1)
# by the shared table; routers N(0, 0.3); the e_score_correction_bias buffers are redrawn (buffer_init) so the
# biased choice differs from the unbiased one.
def mla_init_rules(kv_lora: int, expert_width: int | None = None, shared_width: int | None = None, q_lora: int = 32):
    rules = [
        (r"q_b_proj\.weight$", 0.0, round(q_lora**-0.5, 4)),
        (r"kv_b_proj\.weight$", 0.0, round(kv_lora**-0.5, 4)),
    ]
    if expert_width:
        rules.append((r"mlp\.experts\.down_proj$", 0.0, round(expert_width**-0.5, 4)))
    if shared_width:
        rules.append((r"mlp\.shared_experts\.down_proj\.weight$", 0.0, round(shared_width**-0.5, 4)))
    return rules


MLA_ATOL_NOTE = (
    "MLA re-expands K/V from the cached latent every step, so the cached and uncached paths run different "
    "matmul shapes; that is all the measured noise."
)
SIGMOID_ROUTER_NOTE = (
    "Routing: sigmoid(logits) + e_score_correction_bias chooses (group top-2 sums, then the experts of the kept "
    "groups); weights are the unbiased sigmoids renormalised x routed_scaling_factor, smooth once the choice is made."
)


class RwkvState:
    """RWKV's per-request state. RwkvForCausalLM.forward takes no Cache: it takes `state`, a list of five
    [batch, hidden, layers] tensors (channel-mix shift, time-mix shift, wkv num, den, max), creates it when
    use_cache is set and none is given, updates it in place and returns it as `output.state`; generate() carries
    it the same way (`state` is one of generation/utils.py's ALL_CACHE_NAMES). make_fixtures.forward() passes
    `state` and keeps what comes back here."""

    layers = ()  # no per-layer cache objects (state_family_checks reads `state` instead)

    def __init__(self):
        self.state = None


def new_cache(model):
    """The cache generate() would make: MiniMax refuses anything but its own MiniMaxCache; RWKV takes a state
    list (RwkvState). RecurrentGemma keeps its conv and RG-LRU states inside the recurrent blocks (conv1d_state,
    rg_lru.recurrent_states) and only the attention layers' keys/values in the DynamicCache; generate() passes a
    fresh DynamicCache, with which the model does not reset those module states (it does only when it makes the
    cache itself), so a new request starts from the previous one's. A multi-token prefill overwrites the conv
    state and the position-0 reset zeroes the RG-LRU's, but a 1-token forward at position 0 reads the stale conv
    columns. The harness zeroes them per request, as RecurrentGemmaModel.forward does without a cache. xLSTM takes
    its own xLSTMCache as `cache_params` (a DynamicCache raises: no rnn_state), per layer (C, n, m); its dtype
    defaults to bfloat16, and the model copies its fp32 kernel states into it after every forward, so the harness
    asks for float32 (generate() makes it in the model's dtype, float32 here)."""
    if model.config.model_type == "rwkv":
        return RwkvState()
    if model.config.model_type == "xlstm":
        from transformers.models.xlstm.modeling_xlstm import xLSTMCache

        return xLSTMCache(model.config, 1, dtype=torch.float32)
    if model.config.model_type == "recurrent_gemma":
        model._setup_cache(model.config, 1, model.device, model.dtype)
    if model.config.model_type == "minimax":
        from transformers.models.minimax.modeling_minimax import MiniMaxCache

        return MiniMaxCache()
    return DynamicCache(config=model.config)


# Everything above, underscored names included, for `from oracle_common import *`.
__all__ = [name for name in dir() if not name.startswith("__")]
