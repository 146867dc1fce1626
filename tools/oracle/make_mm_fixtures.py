#!/usr/bin/env python3
"""Generate the multimodal parity fixtures under test/parity/fixtures_mm/<family>/.

Each family gets a tiny random composite model (text decoder + the smallest vision tower its config
classes allow), saved the way transformers saves it (config.json + bf16 model.safetensors via
save_pretrained), plus the oracle's float32 expectations for four prompts. Prompts 0..2 hold image
placeholders; prompt 3 is text-only. The engine under test is given the rows transformers injects at
the placeholder positions (captured from the real forward, which runs the real vision tower on tiny
random images) and must reproduce transformers' greedy tokens and logits:

  expected.safetensors  prompt_<i>   int32 [n]        token ids, placeholders included
                        embeds_<i>   float32 [m, H]   the rows masked_scatter puts at the m placeholders, in order
                        segments_<i> int32 [k, 2]     (first placeholder row, length) of each contiguous run
                        modalities_<i> int32 [k]      each segment's modality: 0 = image, 1 = video, 2 = audio (cbc's
                                                      numbering, not transformers' mm_token_type_ids 1 / 2 / 3)
                        tokens_<i>   int32 [16]       greedy tokens
                        logits_<i>   float32 [16, V]  row 0 at the last prompt position, row j after tokens[j-1]
                        qwen3_5 and qwen3_5_moe only:
                        grids_<i>        int32 [k, 3] (t, h, w) of each image in LLM tokens (after the spatial merge)
                        position_ids_<i> int32 [3, n] the M-RoPE (t, h, w) positions transformers used for the prompt
                        rope_delta_<i>   int32 [1]    decode step j (0-based, token at index n + j) sits at n + j + delta
  meta.json             family, seed, versions, atol, features, layouts, self-checks, a `multimodal` section

The weights are drawn from fixed-seed torch.Generators and rounded to bf16; the oracle model is loaded
back from the written checkpoint in float32 (eager attention), so it computes with exactly the stored
weights. Greedy decoding prefills the whole prompt (input_ids + pixel values [+ grids / token types]) in
one forward, then feeds one token per forward through the cache; `generate()` is run as a cross-check.
The run is single-threaded and deterministic, so rerunning gives identical bytes on one machine.

Families: llama4, qwen3_5, gemma3 and qwen3_5_moe (the qwen3_5 composite, family class and prompts with the
qwen3_5_moe_text decoder: every layer a top-2-of-4 MoE; its router gaps are recorded in meta.json), gemma4 (images)
and gemma4_audio (gemma4's model recipe; prompts with AUDIO segments, causal in Gemma 4 where image rows are
bidirectional on the sliding layers, and one prompt with an image and audio; no audio tower: the audio rows are
random, handed to transformers' own audio scatter path by a stand-in for get_audio_features), glm5_next and
mistral_large4 (TextRecipeMM: the text fixtures' composite configs and init recipes, images of three sizes; their
DSA indexers' k-th vs next score cut is recorded in checks.indexer and held to the text fixtures' floors),
nemo_speechlm (the nemotron_h text fixture's decoder behind a tiny real audio tower; audio_token_id is the text
vocabulary's size, as released; the checkpoint in NeMo's layout, as save_pretrained writes it) and inkling_mm_model
(the inkling_text decoder behind tiny real vision and audio towers; the checkpoint in the hub's model.llm.* layout
with interleaved w13 tensors).

Usage:
  python tools/oracle/make_mm_fixtures.py                       # all families
  python tools/oracle/make_mm_fixtures.py --family gemma3       # one family (repeatable)
  python tools/oracle/make_mm_fixtures.py --check               # regenerate in a temp dir, compare bytes
  python tools/oracle/make_mm_fixtures.py --out DIR
  python tools/oracle/make_mm_fixtures.py --family qwen3_5 --search-seeds 100 20   # score seeds, write nothing
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

import safetensors  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from oracle_common import COMMON, NEW_TOKENS, PINNED_TRANSFORMERS, REPO_ROOT, VOCAB  # noqa: E402
from make_fixtures import (  # noqa: E402
    BASE_STD,
    IndexerProbe,
    RouterProbe,
    _json_dump,
    _save_llama4_composite,
    compare_dirs,
    make_model,
    reinit_,
    row_scale_,
    top2_margin,
)
from fixture_families import FAMILIES as TEXT_FAMILIES  # noqa: E402
from fixture_families.dense import _cfg_gemma3_text, TIED_GEMMA_NORM_MEAN, TIED_GEMMA_STD  # noqa: E402
from fixture_families.frontier import _llama4_text_kwargs  # noqa: E402
from fixture_families.pergemma import (  # noqa: E402
    GEMMA4_BUFFER_INIT,
    GEMMA4_NORM_MEAN,
    GEMMA4_STD,
    _bf16_exact_sqrt,
    _gemma4_decoder_kwargs,
)
from fixture_families.state import GDN_DIMS, GDN_INIT_RULES  # noqa: E402

DEFAULT_OUT = REPO_ROOT / "test" / "parity" / "fixtures_mm"
FILES = ("config.json", "model.safetensors", "expected.safetensors", "meta.json")
FIXTURE_FORMAT = 1
MAX_DIR_BYTES = 400 * 1000

# Text ids of the prompts are drawn from [3, TEXT_HI): bos/eos/pad (1/2/0) stay out, and 251..255 are kept for
# the families' image specials (start/end of image, placeholder, ...), as real vocabularies reserve them.
TEXT_HI = 251
MM_PROMPT_SEED = 20250611
PIXEL_SEED = 20250612
SPECIALS = tuple(range(TEXT_HI, VOCAB))

# modalities_<i>: each segment's modality in cbc's numbering (NOT transformers' mm_token_type_ids, where image = 1,
# video = 2, audio = 3 and text = 0)
MODALITY_IMAGE, MODALITY_VIDEO, MODALITY_AUDIO = 0, 1, 2
MODALITY_NAMES = {MODALITY_IMAGE: "image", MODALITY_VIDEO: "video", MODALITY_AUDIO: "audio"}
HF_MM_TOKEN_TYPE = {MODALITY_IMAGE: 1, MODALITY_VIDEO: 2, MODALITY_AUDIO: 3}  # modality -> mm_token_type_ids value
MODALITIES_DOC = (
    "modalities_<i> int32 [k]: the modality of each segment of segments_<i>, 0 = image, 1 = video, 2 = audio (cbc's "
    "numbering; transformers' mm_token_type_ids use 1 = image, 2 = video, 3 = audio, 0 = text)"
)


# --------------------------------------------------------------------------------------
# Shared oracle machinery
# --------------------------------------------------------------------------------------


class Prompt:
    """One prompt: token ids, the images it holds (family-specific pixel inputs), and the placeholder runs."""

    def __init__(self, ids, images, layout, audio=None):
        self.ids = ids
        self.images = images  # family-specific descriptions, in prompt order
        self.layout = layout  # human-readable pieces for meta.json
        self.audio = audio or []  # gemma4_audio: the rows of each audio segment [rows, H], in prompt order

    @property
    def has_mm(self):
        return bool(self.images or self.audio)


def text_ids(gen, n):
    return [int(x) for x in torch.randint(3, TEXT_HI, (n,), generator=gen, dtype=torch.int64)]


def runs_of(ids, placeholder):
    """(start, length) of each maximal run of `placeholder` in ids."""
    runs, i = [], 0
    while i < len(ids):
        if ids[i] == placeholder:
            j = i
            while j < len(ids) and ids[j] == placeholder:
                j += 1
            runs.append((i, j - i))
            i = j
        else:
            i += 1
    return runs


def mm_segments(fam, ids):
    """(start, length, modality) of each maximal run of one placeholder id of the family (fam.segment_ids()); for a
    family with one placeholder these are runs_of(ids, fam.placeholder) with modality image."""
    kinds = fam.segment_ids()
    out, i = [], 0
    while i < len(ids):
        if ids[i] in kinds:
            j = i
            while j < len(ids) and ids[j] == ids[i]:
                j += 1
            out.append((i, j - i, kinds[ids[i]]))
            i = j
        else:
            i += 1
    return out


def mm_positions(fam, ids):
    """Every placeholder position (any modality), in prompt order: where the injected rows go."""
    kinds = fam.segment_ids()
    return [k for k, t in enumerate(ids) if t in kinds]


class DecoderTap:
    """Forward pre-hook on the text decoder: records what the composite hands it (inputs_embeds, position_ids)
    and optionally rewrites those kwargs (the feature-effect interventions)."""

    def __init__(self, decoder):
        self.calls = []
        self.rewrite = None
        self.handle = decoder.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, mod, args, kwargs):
        if self.rewrite is not None:
            kwargs = self.rewrite(dict(kwargs))
        pos = kwargs.get("position_ids")
        self.calls.append(
            {
                "inputs_embeds": kwargs["inputs_embeds"].detach().clone(),
                "position_ids": None if pos is None else pos.detach().clone(),
            }
        )
        return args, kwargs

    def close(self):
        self.handle.remove()


def max_abs(a, b) -> float:
    return float((a - b).abs().max()) if a.numel() else 0.0


# --------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------


class MMFamily:
    name = ""
    seed = 0
    atol = 1e-4
    loader = None
    placeholder = 255
    mrope = False  # qwen3_5 / qwen3_5_moe: M-RoPE positions (grids_<i>, position_ids_<i>, rope_delta_<i>)
    router_gap_over_atol = 100  # the smallest router top-k gap build_family accepts, in units of atol
    router_gap_name = "top-1/top-2"  # which router logits the gap is between (meta.json notes)
    index_cut_floor = None  # DSA families: the smallest k-th vs next index-score cut accepted (checks.indexer)

    # --- checkpoint ---------------------------------------------------------------
    def config(self):
        raise NotImplementedError

    def write_checkpoint(self, fam_dir: Path, seed: int):
        raise NotImplementedError

    def load(self, fam_dir: Path):
        model, info = self.loader.from_pretrained(
            fam_dir, attn_implementation="eager", dtype=torch.float32, output_loading_info=True, **self.load_kwargs()
        )
        assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
        model.eval()
        model.generation_config.eos_token_id = None  # greedy for exactly 16 tokens, no EOS stop
        model.generation_config.pad_token_id = 0
        return model

    def load_kwargs(self):
        return {}

    def segment_ids(self) -> dict:
        """placeholder id -> the modality (MODALITY_*) of the rows injected at it"""
        return {self.placeholder: MODALITY_IMAGE}

    # --- model plumbing -----------------------------------------------------------
    def decoder(self, model):
        raise NotImplementedError

    def embed(self, model, ids):
        """What the composite's get_input_embeddings() gives for ids (gemma3: scaled)."""
        return model.get_input_embeddings()(torch.tensor([ids]))[0]

    def reset(self, model):
        pass

    def inputs(self, prompt: Prompt, ids: list[int]) -> dict:
        """Forward kwargs for a (prompt + continuation) id list `ids` whose first len(prompt.ids) are the prompt."""
        raise NotImplementedError

    def image_rows(self, model, prompt: Prompt) -> torch.Tensor:
        """The rows the composite scatters, computed directly with its own feature path (a cross-check)."""
        raise NotImplementedError

    # --- content ------------------------------------------------------------------
    def prompts(self) -> list[Prompt]:
        raise NotImplementedError

    def feature_effects(self, model, tap, prompts, token_lists) -> dict:
        return {}

    def extra_expected(self, model, tap, prompt, i) -> tuple[dict, dict]:
        return {}, {}

    features: list = []
    notes: list = []

    def multimodal_meta(self, model) -> dict:
        raise NotImplementedError


def _swap_images_rewrite(prompt_runs):
    """Rewrites inputs_embeds so that the rows of images 0 and 1 (equal run lengths) trade places."""

    def rewrite(kw):
        e = kw["inputs_embeds"].clone()
        (s0, l0), (s1, l1) = prompt_runs[0], prompt_runs[1]
        assert l0 == l1
        e[0, s0 : s0 + l0], e[0, s1 : s1 + l1] = kw["inputs_embeds"][0, s1 : s1 + l1], kw["inputs_embeds"][0, s0 : s0 + l0]
        kw["inputs_embeds"] = e
        return kw

    return rewrite


def _reverse_runs_rewrite(runs):
    def rewrite(kw):
        e = kw["inputs_embeds"].clone()
        for s, l in runs:
            e[0, s : s + l] = kw["inputs_embeds"][0, s : s + l].flip(0)
        kw["inputs_embeds"] = e
        return kw

    return rewrite


def _replace_rows_rewrite(positions, rows):
    def rewrite(kw):
        e = kw["inputs_embeds"].clone()
        e[0, positions] = rows
        kw["inputs_embeds"] = e
        return kw

    return rewrite


# ---- Llama 4 ---------------------------------------------------------------------

# The vision tower: one 16-wide layer on 12x12 images of 2x2 patches (6x6 = 36 patches + CLS), pixel shuffle 0.5
# -> 3x3 = 9 tokens per image. Llama4VisionMLP2.fc1 reads intermediate_size = 4 * hidden_size features (the
# shuffled channels), and projector_input_dim = projector_output_dim = vision_output_dim feed the projector.
LLAMA4_MM_VISION = dict(
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    image_size=12,
    patch_size=2,
    vision_output_dim=16,
    projector_input_dim=16,
    projector_output_dim=16,
)
LLAMA4_IDS = dict(image_start=252, image_end=253, image=254, patch=255)


class Llama4MM(MMFamily):
    name = "llama4"
    seed = 10188
    atol = 1e-4
    loader = transformers.Llama4ForConditionalGeneration
    placeholder = LLAMA4_IDS["patch"]
    tokens_per_image = 9

    def config(self):
        return transformers.Llama4Config(
            text_config=_llama4_text_kwargs(),
            vision_config=dict(LLAMA4_MM_VISION),
            tie_word_embeddings=False,
            boi_token_index=LLAMA4_IDS["image_start"],
            eoi_token_index=LLAMA4_IDS["image_end"],
            image_token_index=LLAMA4_IDS["patch"],
        )

    def write_checkpoint(self, fam_dir, seed):
        # The text decoder exactly as the text-only llama4 fixture draws it (its family recipe: init rules, q/k
        # row scale), the vision tower and projector from Generator(seed + 1) by the shared table
        # (_save_llama4_composite).
        _, text = make_model("llama4", seed)
        bf16 = copy.deepcopy(text).to(torch.bfloat16)
        _save_llama4_composite(bf16, self.config(), seed, fam_dir)

    def load_kwargs(self):
        return {"experts_implementation": "eager"}

    def decoder(self, model):
        return model.language_model

    def inputs(self, prompt, ids):
        kw = {"input_ids": torch.tensor([ids])}
        if prompt.images:
            kw["pixel_values"] = torch.stack([im["pixels"] for im in prompt.images])
        return kw

    def image_rows(self, model, prompt):
        if not prompt.images:
            return torch.zeros(0, model.config.text_config.hidden_size)
        px = torch.stack([im["pixels"] for im in prompt.images])
        feats = model.get_image_features(pixel_values=px, return_dict=True).last_hidden_state
        return model.multi_modal_projector(feats.view(-1, feats.size(-1)))

    def image_block(self, gen, close=True):
        c = LLAMA4_MM_VISION
        px = torch.randn((3, c["image_size"], c["image_size"]), generator=gen, dtype=torch.float32)
        ids = [LLAMA4_IDS["image_start"], LLAMA4_IDS["image"]] + [LLAMA4_IDS["patch"]] * self.tokens_per_image
        if close:
            ids.append(LLAMA4_IDS["image_end"])
        return ids, {"pixels": px}

    def prompts(self):
        return _three_layout_prompts(self)

    def feature_effects(self, model, tap, prompts, token_lists):
        return _common_effects(self, model, tap, prompts, token_lists)

    features = [
        "composite Llama4ForConditionalGeneration: the llama4 text fixture's decoder recipe (Llama4TextConfig of "
        "tools/oracle/fixture_families/frontier.py: 4 layers, chunked attention 8 on layers 0-2, NoPE layer 3 with "
        "temperature tuning, MoE top-1 on layers 1 and 3, llama3 RoPE, weightless qk norm, untied head)",
        "vision tower Llama4VisionModel: 1 layer, hidden 16, 2 heads, 12x12 images, 2x2 patches (36 + CLS), "
        "2-D complex RoPE, pixel shuffle 0.5 -> 9 tokens per image, vision adapter MLP (GELU) -> 16",
        "projector multi_modal_projector.linear_1 [64, 16] (no bias): its output rows are what is scattered",
        "prompt format of Llama4Processor for a single-tile image: <|image_start|> <|image|> <|patch|> x 9 "
        "<|image_end|>; only the <|patch|> ids (image_token_index 255) are replaced",
        "prompt 2 ends on the placeholder run itself (no <|image_end|>), so row 0 is the logit vector of an injected row",
        "image runs cross the 8-token attention chunk boundaries",
    ]

    def multimodal_meta(self, model):
        return {
            "placeholder_id": self.placeholder,
            "special_ids": LLAMA4_IDS,
            "placeholder_ids_ge_vocab": False,
            "tokens_per_image": self.tokens_per_image,
            "scatter": (
                "Llama4ForConditionalGeneration.forward: inputs_embeds = language_model.embed_tokens(input_ids) (no "
                "embedding scale in Llama 4), then inputs_embeds.masked_scatter(input_ids == image_token_index, "
                "multi_modal_projector(vision_model(pixel_values).last_hidden_state.view(-1, 16))); the decoder then "
                "runs on inputs_embeds exactly as for text (no norm or scale on the injected rows; positions, the "
                "chunked mask and temperature tuning are the text ones, by absolute index). embeds_<i> are those "
                "rows as the decoder received them (captured by a pre-hook on language_model) and equal the "
                "projector output computed separately (checks.embeds_match_feature_path)"
            ),
            "placeholder_embedding": "embed_tokens(255) is computed and overwritten; it never reaches the decoder",
            "positions": "plain 1-D positions 0..n-1 for every token, images included; decode continues at n + j",
            "mask": "the text mask (chunked causal on layers 0-2, causal on layer 3); no image-specific mask",
        }


# ---- Qwen 3.5 --------------------------------------------------------------------

# The text decoder: the qwen3_5_text fixture's layout (4 layers [linear, linear, full, linear], GDN nk=2 nv=4 16/16,
# gated attention head_dim 32, partial rotary 0.25, interleaved M-RoPE [2, 1, 1]) at hidden 48 / intermediate 64 so
# that the directory stays under 400 kB.
QWEN35_HIDDEN = 48
QWEN35_VISION = dict(
    depth=1,
    hidden_size=16,
    intermediate_size=32,
    num_heads=2,
    patch_size=2,
    temporal_patch_size=2,
    spatial_merge_size=2,
    out_hidden_size=QWEN35_HIDDEN,
    num_position_embeddings=16,  # a 4x4 learned grid, bilinearly resampled to each image's patch grid
)
QWEN35_IDS = dict(vision_start=252, vision_end=253, image_pad=254, video_pad=255)
QWEN35_VISION_RULES = [
    (r"^model\.visual\..*norm[12]?\.weight$", 1.0, 0.1),  # LayerNorms (not zero-centred)
]


class Qwen35MM(MMFamily):
    name = "qwen3_5"
    seed = 3410
    atol = 5e-4
    loader = transformers.Qwen3_5ForConditionalGeneration
    config_class = transformers.Qwen3_5Config
    prefix = "Qwen3_5"  # the modeling classes' prefix, for meta.json's text
    mrope = True
    std_overrides = None  # entries of make_fixtures.BASE_STD to override (reinit_)
    extra_rules: list = []  # (regex, mean, std) rules ahead of the vision and gated-delta ones
    placeholder = QWEN35_IDS["image_pad"]
    # patch grids (t, h, w) of the images, in vision patches; LLM grid = (t, h / 2, w / 2)
    GRIDS = {"A": (1, 4, 6), "B": (1, 6, 4), "C": (1, 8, 8)}

    def rules(self):
        return self.extra_rules + QWEN35_VISION_RULES + GDN_INIT_RULES

    def text_config(self) -> dict:
        return dict(
            **{**COMMON, "hidden_size": QWEN35_HIDDEN, "intermediate_size": 64},
            **GDN_DIMS,
            num_hidden_layers=4,
            layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
            head_dim=32,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.25,
                "mrope_section": [2, 1, 1],
                "mrope_interleaved": True,
            },
        )

    def config(self):
        return self.config_class(
            text_config=self.text_config(),
            vision_config=dict(QWEN35_VISION),
            image_token_id=QWEN35_IDS["image_pad"],
            video_token_id=QWEN35_IDS["video_pad"],
            vision_start_token_id=QWEN35_IDS["vision_start"],
            vision_end_token_id=QWEN35_IDS["vision_end"],
            tie_word_embeddings=False,
        )

    def write_checkpoint(self, fam_dir, seed):
        cfg = self.config()
        model = self.loader._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
        # qwen3_5_text's recipe: (1+w) norms zero-centred, the gated-delta norm at 1, GDN_INIT_RULES; the vision
        # LayerNorms at 1. One generator over every parameter, name order.
        reinit_(model, seed, True, self.std_overrides, {"linear_attn.norm.": 1.0}, rules=self.rules())
        _save_bf16(model, fam_dir)

    def decoder(self, model):
        return model.model.language_model

    def reset(self, model):
        # Qwen3_5Model keeps the last rope_deltas on the module; a text-only prompt after an image prompt would
        # decode with the stale delta (compute_3d_position_ids' elif branch), so every prompt starts clean, as
        # generate() does (_prepare_position_ids_for_generation resets it).
        model.model.rope_deltas = None

    def inputs(self, prompt, ids):
        kw = {"input_ids": torch.tensor([ids])}
        if prompt.images:
            kw["pixel_values"] = torch.cat([im["pixels"] for im in prompt.images])
            kw["image_grid_thw"] = torch.tensor([im["grid"] for im in prompt.images])
            kw["mm_token_type_ids"] = torch.tensor([[1 if t == self.placeholder and k < len(prompt.ids) else 0 for k, t in enumerate(ids)]])
        return kw

    def image_rows(self, model, prompt):
        if not prompt.images:
            return torch.zeros(0, QWEN35_HIDDEN)
        kw = self.inputs(prompt, prompt.ids)
        out = model.get_image_features(kw["pixel_values"], kw["image_grid_thw"], return_dict=True)
        return torch.cat(out.pooler_output, dim=0)

    def image_block(self, gen, key):
        t, h, w = self.GRIDS[key]
        c = QWEN35_VISION
        p = c["patch_size"]
        # one frame, repeated over the temporal patch (as the image processor does for a still image), flattened
        # per patch as Conv3d's (C, T, P, P) kernel reads it
        frame = torch.randn((h * w, 3, 1, p, p), generator=gen, dtype=torch.float32)
        px = frame.expand(h * w, 3, c["temporal_patch_size"], p, p).reshape(h * w, -1).contiguous()
        m = c["spatial_merge_size"]
        n = t * (h // m) * (w // m)
        ids = [QWEN35_IDS["vision_start"]] + [self.placeholder] * n + [QWEN35_IDS["vision_end"]]
        return ids, {"pixels": px, "grid": (t, h, w), "key": key}

    def prompts(self):
        gen = torch.Generator().manual_seed(MM_PROMPT_SEED)
        pix = torch.Generator().manual_seed(PIXEL_SEED)
        out = []
        # 0: image B (3x2 LLM grid, taller than wide) at the start
        ids_b, im_b = self.image_block(pix, "B")
        t0 = text_ids(gen, 12)
        out.append(Prompt(ids_b + t0, [im_b], ["image B (vision_start, 3x2=6 pads, vision_end)", "text 12"]))
        # 1: text, image A (2x3, wider than tall), text, image C (4x4), text
        ids_a, im_a = self.image_block(pix, "A")
        ids_c, im_c = self.image_block(pix, "C")
        a, b, c = text_ids(gen, 7), text_ids(gen, 5), text_ids(gen, 6)
        out.append(
            Prompt(
                a + ids_a + b + ids_c + c,
                [im_a, im_c],
                ["text 7", "image A (2x3=6 pads)", "text 5", "image C (4x4=16 pads)", "text 6"],
            )
        )
        # 2: text, image C at the end (its vision_end is the last prompt token, as the processor always writes it)
        ids_c2, im_c2 = self.image_block(pix, "C")
        t2 = text_ids(gen, 15)
        out.append(Prompt(t2 + ids_c2, [im_c2], ["text 15", "image C (4x4=16 pads), vision_end last"]))
        out.append(Prompt(text_ids(gen, 17), [], ["text 17 (no image)"]))
        return out

    def expected_positions(self, prompt):
        """get_rope_index's rule, written out: text runs continue 1-D; an image whose LLM grid is (t, h, w) starting
        at position s gets (s + t_i, s + h_i, s + w_i) in raster order; the next text starts at s + max(h, w)
        (get_rope_index ignores t there; images have t = 1); delta = max + 1 - n."""
        m = QWEN35_VISION["spatial_merge_size"]
        ids = prompt.ids
        rows = [[], [], []]
        cur, k, img = 0, 0, 0
        while k < len(ids):
            if ids[k] == self.placeholder:
                t, h, w = prompt.images[img]["grid"]
                t, h, w = t, h // m, w // m
                for ti in range(t):
                    for hi in range(h):
                        for wi in range(w):
                            rows[0].append(cur + ti)
                            rows[1].append(cur + hi)
                            rows[2].append(cur + wi)
                cur += max(h, w)
                k += t * h * w
                img += 1
            else:
                for r in rows:
                    r.append(cur)
                cur += 1
                k += 1
        pos = torch.tensor(rows)
        delta = int(pos.max()) + 1 - len(ids)
        return pos, delta

    def extra_expected(self, model, tap, prompt, i):
        m = QWEN35_VISION["spatial_merge_size"]
        grids = torch.tensor(
            [[im["grid"][0], im["grid"][1] // m, im["grid"][2] // m] for im in prompt.images], dtype=torch.int32
        ).reshape(-1, 3)
        pos, delta = self.expected_positions(prompt)
        return (
            {
                f"grids_{i}": grids,
                f"position_ids_{i}": pos.to(torch.int32),
                f"rope_delta_{i}": torch.tensor([delta], dtype=torch.int32),
            },
            {"rope_delta": delta, "grids_llm": grids.tolist(), "grids_patches": [list(im["grid"]) for im in prompt.images]},
        )

    def feature_effects(self, model, tap, prompts, token_lists):
        eff = _common_effects(self, model, tap, prompts, token_lists, swap=False)
        worst_1d = worst_nodelta = worst_contig = 0.0
        rot = self.decoder(model).rotary_emb
        for prompt, tokens in zip(prompts, token_lists):
            if not prompt.images:
                continue
            n = len(prompt.ids)
            seq = prompt.ids + tokens[:-1]
            base = _uncached(self, model, prompt, seq)
            pos, delta = self.expected_positions(prompt)
            L = len(seq)
            gen_pos = torch.arange(n, L)
            full = torch.cat([pos, (gen_pos + delta).expand(3, -1)], dim=1)
            # sanity: explicit positions reproduce the model's own
            same = _uncached(self, model, prompt, seq, position_ids=full[:, None, :])
            assert max_abs(same, base) == 0.0, max_abs(same, base)
            one_d = torch.arange(L).expand(3, -1)
            r = _uncached(self, model, prompt, seq, position_ids=one_d[:, None, :])
            worst_1d = max(worst_1d, max_abs(r, base))
            nodelta = torch.cat([pos, gen_pos.expand(3, -1)], dim=1)
            r = _uncached(self, model, prompt, seq, position_ids=nodelta[:, None, :])
            worst_nodelta = max(worst_nodelta, max_abs(r, base))
            orig = rot.recomposition_frequencies
            rot.recomposition_frequencies = _contiguous_mrope(rot.mrope_section)
            try:
                r = _uncached(self, model, prompt, seq)
            finally:
                rot.recomposition_frequencies = orig
            worst_contig = max(worst_contig, max_abs(r, base))
        eff["text_1d_positions_instead_of_mrope"] = worst_1d
        eff["decode_positions_without_rope_delta"] = worst_nodelta
        eff["mrope_sections_contiguous_instead_of_interleaved"] = worst_contig
        eff["note"] += (
            f"; {self.name}: text_1d_positions = all three rows 0..L-1 (a text-only engine); decode_positions_without_rope_delta = the prompt's M-RoPE positions but the "
            "generated tokens at n + j instead of n + j + delta; mrope_sections_contiguous = the rotary frequencies "
            "taken from T/H/W in contiguous sections [T T H W] (Qwen2-VL style) instead of interleaved [T H W T]"
        )
        return eff

    @torch.no_grad()
    def extra_checks(self, model, prompts) -> dict:
        """Not in the fixture: prompt 2 without its final <|vision_end|>, i.e. ending on an image_pad. generate()
        continues each of its position rows from that row's own last value (+1), the model's own forward (no
        position_ids) from max + 1 = n + delta: measures how far the two disagree."""
        p = prompts[2]
        cut = Prompt(p.ids[:-1], p.images, p.layout)
        tap = DecoderTap(self.decoder(model))
        try:
            rows, tokens, _, dec = greedy_mm(self, model, cut, tap)
            g_toks, g_logits, g_pos = generate_check(self, model, cut, tap)
        finally:
            tap.close()
        n = len(cut.ids)
        return {
            "note": "prompt 2 without its final <|vision_end|> (ends on an image_pad; not a fixture prompt): decode "
            "positions (t, h, w) of the first generated token under generate() vs the model's own rule, and how far "
            "the 16 logit rows of the two differ",
            "first_decode_positions_generate_thw": g_pos[1][1:].reshape(-1).tolist(),
            "first_decode_positions_model_rule_thw": dec[0].reshape(-1).tolist(),
            "prompt_len": n,
            "logits_max_abs_difference": max_abs(g_logits, rows),
            "tokens_agree": g_toks == tokens,
        }

    features = [
        "composite Qwen3_5ForConditionalGeneration (model_type qwen3_5): decoder qwen3_5_text as the qwen3_5_text fixture "
        "(4 layers [linear, linear, full, linear], gated DeltaNet nk=2 nv=4 dk=dv=16, conv K=4, gated attention "
        "head_dim 32 4q/2kv, (1+w) norms, partial rotary 0.25 -> 8 rotary dims) at hidden 48, intermediate 64",
        "interleaved M-RoPE, mrope_section [2, 1, 1]: rotary frequency index f (0..3) takes its angle from position "
        "row T for f % 3 == 0 (f = 0, 3), H for f = 1, W for f = 2 (recomposition_frequencies), then cat(freqs, freqs) "
        "for rotate_half",
        "vision tower Qwen3_5VisionModel: 1 block, hidden 16, 2 heads, patch 2, temporal patch 2, learned 4x4 position "
        "grid bilinearly resampled, 2-D axial RoPE, spatial merge 2 -> merger (LayerNorm, fc 64->64, GELU, fc 64->48)",
        "images of three sizes: A patch grid (1,4,6) -> LLM grid (1,2,3), B (1,6,4) -> (1,3,2), C (1,8,8) -> (1,4,4): "
        "the same token count with transposed shapes (A vs B) and a square one",
        "prompt format of Qwen3VLProcessor: <|vision_start|> <|image_pad|> x (t*h*w/4) <|vision_end|>; only the "
        "image_pad ids (image_token_id 254) are replaced and typed 1 in mm_token_type_ids",
        "prompt 1 holds two images of different grids; the gated-delta layers see injected rows like any other",
    ]

    def multimodal_meta(self, model):
        return {
            "placeholder_id": self.placeholder,
            "special_ids": QWEN35_IDS,
            "placeholder_ids_ge_vocab": False,
            "scatter": (
                f"{self.prefix}Model.forward: inputs_embeds = language_model.embed_tokens(input_ids) (no scale), then "
                "masked_scatter(input_ids == image_token_id, cat(visual(pixel_values, grid_thw).pooler_output)) where "
                "pooler_output is the merger output, (t*h*w)/4 rows per image, in the vision tower's row order (each "
                "2x2 merge window, raster over the LLM grid); the decoder runs on those rows with no norm or scale"
            ),
            "grids": "grids_<i> is (t, h, w) in LLM tokens, i.e. after the 2x2 spatial merge (image_grid_thw // [1, 2, 2]); "
            "meta per_prompt.grids_patches gives the vision-patch grids that image_grid_thw holds",
            "positions": (
                "get_rope_index with mm_token_type_ids (1 exactly at the image_pad ids; vision_start/end are text): "
                "walking the prompt, a text token takes (p, p, p) and p += 1; an image run whose LLM grid is (t, h, w) "
                "and which starts at p gives its k-th row (raster over t, h, w) the positions (p + ti, p + hi, p + wi), "
                "then p += max(h, w) (transformers' rule, t ignored); rope_delta = max(all positions) + 1 - n. "
                "Text-only prompts: positions 0..n-1 on all three rows, delta 0. Decoding: the token fed at step j "
                f"(0-based; the prompt is steps < 0) sits at n + j + delta on all three rows ({self.prefix}Model."
                "compute_3d_position_ids with the cached rope_deltas; generate's own position_ids give the same "
                "rows because every prompt here ends on a text token, checks.generate_vs_manual). The cache is "
                "one-dimensional: it holds rotated keys, nothing positional is re-derived."
            ),
            "text_position_row": (
                "generate() passes a 4-row position_ids: row 0 = plain text positions (0..n-1 in the prefill, n + j at "
                "decode step j, without the delta), used only to build the attention mask (plain causal here), rows "
                "1..3 = the (t, h, w) rows above, which alone drive the rotary (asserted for every prompt). The manual "
                "loop passes no position_ids (the model derives the 3 rows itself, and the mask from the cache "
                "length): tokens and logits agree (checks.generate_vs_manual_max_abs)"
            ),
            "prompt_ending_on_placeholder": (
                "kept out of the fixture: a real prompt always ends with <|vision_end|> or later text, and then both of "
                "transformers' paths agree. If a prompt ended on an image_pad, generate() would continue each position "
                "row from its own last value + 1 (the last image row's (p, p + h - 1, p + w - 1) + 1) while the "
                "model's own forward (and the rope_delta rule above) puts every row at n + j + delta = p + max(h, w) + j: "
                "measured in checks.prompt_ending_on_placeholder (different tokens). An engine should follow the "
                "delta rule."
            ),
            "mask": "plain causal for the attention layer; the gated-delta layers are causal by construction",
        }


# ---- Qwen 3.5 MoE ----------------------------------------------------------------

# The qwen3_5 composite above with the qwen3_5_moe_text decoder: every layer a sparse MoE block (router, experts,
# shared expert with its sigmoid gate) as the qwen3_5_moe_text fixture (4 experts, top-2, always renormalised) at
# hidden 48. The expert and shared-expert widths are cut to 12 (the text fixture: 32 / 48 at hidden 64) so that the
# directory stays under 400 kB. Vision tower, ids, images, prompts, positions and checks are qwen3_5's.
QWEN35_MOE_TEXT = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=12)


class Qwen35MoeMM(Qwen35MM):
    name = "qwen3_5_moe"
    seed = 3637
    atol = 5e-4
    loader = transformers.Qwen3_5MoeForConditionalGeneration
    config_class = transformers.Qwen3_5MoeConfig
    prefix = "Qwen3_5Moe"
    # The qwen3_5 init recipe, with two scales doubled: router N(0, 0.6) (make_fixtures.BASE_STD: 0.3) and lm_head
    # N(0, 0.5) (0.25). With the recipe's own scales the ~700 routing decisions and 64 logit rows of these prompts
    # left no seed in 340 with both the min top-1/top-2 margin >= 100x atol and the min router gap >= 20x atol.
    std_overrides = {"router": 0.6}
    extra_rules = [(r"^lm_head\.weight$", 0.0, 0.5)]
    # Router gaps are held to 20x atol (0.01, the text families' --floor), not 100x: like the qwen3_5_moe_text
    # fixture (0.017, 34x); the router logits an engine computes sit far closer to the oracle's than atol.
    router_gap_over_atol = 20
    router_gap_name = "2nd/3rd logit (top-2 cut)"

    def text_config(self):
        text = super().text_config()
        del text["intermediate_size"]  # every layer is MoE (qwen3_5_moe_text has no dense MLP)
        return {**text, **QWEN35_MOE_TEXT}

    def load_kwargs(self):
        return {"experts_implementation": "eager"}

    features = [
        "composite Qwen3_5MoeForConditionalGeneration (model_type qwen3_5_moe): decoder qwen3_5_moe_text as the "
        "qwen3_5_moe_text fixture (4 layers [linear, linear, full, linear], gated DeltaNet nk=2 nv=4 dk=dv=16, conv K=4, "
        "gated attention head_dim 32 4q/2kv, (1+w) norms, partial rotary 0.25 -> 8 rotary dims) at hidden 48",
        "every layer MoE (Qwen3_5MoeSparseMoeBlock): router mlp.gate [4, 48], softmax -> top-2 -> always renormalised, "
        "4 experts of width 12, + shared expert (width 12) times sigmoid(shared_expert_gate); image rows are routed "
        "like text rows (checks.routers)",
        "checkpoint names as save_pretrained writes them: per expert mlp.experts.N.{gate,up,down}_proj.weight (the "
        "runtime fused gate_up_proj / down_proj are reverted)",
    ] + [f.replace("Qwen3_5VisionModel", "Qwen3_5MoeVisionModel") for f in Qwen35MM.features[1:]]

    notes = [
        "Init: the qwen3_5 composite's recipe (init.rules, init.std) except the router (mlp.gate.weight) N(0, 0.6) and "
        "lm_head N(0, 0.5), twice the shared table's 0.3 and 0.25, so that one seed clears both the 100x atol logit "
        "margin and a router gap of 20x atol (the floor of the text MoE fixtures; qwen3_5_moe_text has 34x): the "
        "router logits an engine computes differ from the oracle's by far less than the final logits' atol. Routing "
        "stays mixed: checks.routers counts every expert chosen for image rows and for text rows in every layer.",
    ]

    @torch.no_grad()
    def router_checks(self, model, prompts, token_lists) -> dict:
        """Per layer, how the routers spread the image rows and the other rows of one uncached forward of
        prompt+tokens[:-1] over the experts (the fixture's expert choices, counted; the gaps are in
        checks.min_router_top_k_gap)."""
        layers = self.decoder(model).layers
        got = {}

        def hook(idx):
            def h(mod, args, out):
                got[idx] = out[2].detach().clone()

            return h

        E = QWEN35_MOE_TEXT["num_experts"]
        handles = [layer.mlp.gate.register_forward_hook(hook(i)) for i, layer in enumerate(layers)]
        per_layer = [{"image_rows": [0] * E, "other_rows": [0] * E} for _ in layers]
        try:
            for prompt, tokens in zip(prompts, token_lists):
                got.clear()
                _uncached(self, model, prompt, prompt.ids + tokens[:-1])
                is_image = torch.tensor([t == self.placeholder for t in prompt.ids] + [False] * (len(tokens) - 1))
                for i in range(len(layers)):
                    idx = got[i].reshape(len(is_image), -1)
                    for key, sel in (("image_rows", is_image), ("other_rows", ~is_image)):
                        counts = torch.bincount(idx[sel].reshape(-1), minlength=E)
                        per_layer[i][key] = [a + int(b) for a, b in zip(per_layer[i][key], counts.tolist())]
        finally:
            for h in handles:
                h.remove()
        return {
            "note": "expert selections (top-2 per row) per decoder layer over one uncached forward of prompt+tokens[:-1] "
            "for each of the 4 prompts, split into the image_pad rows (injected features) and all other rows",
            "per_layer": per_layer,
        }


def _contiguous_mrope(section):
    def recompose(freq):
        t, h, w = section
        out = torch.cat([freq[0, ..., :t], freq[1, ..., t : t + h], freq[2, ..., t + h : t + h + w]], dim=-1)
        return torch.cat((out, out), dim=-1)

    return recompose


# ---- Gemma 3 ---------------------------------------------------------------------

# SigLIP: one 16-wide layer on 16x16 images of 2x2 patches (8x8 = 64 patches); the projector average-pools 2x2
# -> mm_tokens_per_image 16 (4x4), RMS-norms ((1+w), eps 1e-6) and multiplies by mm_input_projection_weight [16, 64].
GEMMA3_VISION = dict(
    model_type="siglip_vision_model",
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    image_size=16,
    patch_size=2,
    vision_use_head=False,
)
GEMMA3_TOKENS_PER_IMAGE = 16
GEMMA3_IDS = dict(boi=252, eoi=253, image=255)
GEMMA3_VISION_RULES = [
    (r"^model\.vision_tower\..*(layer_norm[12]|post_layernorm)\.weight$", 1.0, 0.1),  # SigLIP LayerNorms (w, not 1+w)
]


class Gemma3MM(MMFamily):
    name = "gemma3"
    seed = 1600
    atol = 1e-4
    loader = transformers.Gemma3ForConditionalGeneration
    placeholder = GEMMA3_IDS["image"]

    def config(self):
        # gemma3_text's decoder (window 8, per-layer-type rope, query_pre_attn_scalar 24, tied, embed scale 8) with
        # the full-attention layer in the MIDDLE ([sliding, full, sliding]): a last-layer mask only reaches the logits
        # of its own positions, so the full layer's bidirectional image blocks would not show in any logit row
        # otherwise; intermediate 64 (not 96) keeps the directory under 400 kB.
        text = _cfg_gemma3_text().to_dict()
        text.update(intermediate_size=64, layer_types=["sliding_attention", "full_attention", "sliding_attention"])
        text.pop("sliding_window_pattern", None)
        return transformers.Gemma3Config(
            text_config=text,
            vision_config=dict(GEMMA3_VISION),
            mm_tokens_per_image=GEMMA3_TOKENS_PER_IMAGE,
            boi_token_index=GEMMA3_IDS["boi"],
            eoi_token_index=GEMMA3_IDS["eoi"],
            image_token_index=GEMMA3_IDS["image"],
        )

    def write_checkpoint(self, fam_dir, seed):
        cfg = self.config()
        model = self.loader._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
        # gemma3_text's recipe (zero-centred (1+w) norms, TIED_GEMMA_STD / TIED_GEMMA_NORM_MEAN; "model.norm." also
        # matches model.language_model.norm.) plus the SigLIP LayerNorms at 1. One generator, name order.
        reinit_(model, seed, True, TIED_GEMMA_STD, TIED_GEMMA_NORM_MEAN, rules=GEMMA3_VISION_RULES)
        _save_bf16(model, fam_dir)

    def decoder(self, model):
        return model.model.language_model

    def inputs(self, prompt, ids):
        kw = {"input_ids": torch.tensor([ids])}
        if prompt.images:
            kw["pixel_values"] = torch.stack([im["pixels"] for im in prompt.images])
            kw["token_type_ids"] = torch.tensor([[1 if t == self.placeholder and k < len(prompt.ids) else 0 for k, t in enumerate(ids)]])
        return kw

    def image_rows(self, model, prompt):
        if not prompt.images:
            return torch.zeros(0, model.config.text_config.hidden_size)
        px = torch.stack([im["pixels"] for im in prompt.images])
        out = model.get_image_features(px, return_dict=True).pooler_output
        return out.reshape(-1, out.shape[-1])

    def image_block(self, gen, close=True):
        s = GEMMA3_VISION["image_size"]
        px = torch.randn((3, s, s), generator=gen, dtype=torch.float32)
        ids = [GEMMA3_IDS["boi"]] + [self.placeholder] * GEMMA3_TOKENS_PER_IMAGE
        if close:
            ids.append(GEMMA3_IDS["eoi"])
        return ids, {"pixels": px}

    def prompts(self):
        return _three_layout_prompts(self)

    def masks(self, model, seq_len, block_ids, variant):
        """The 4-D additive masks for one uncached forward: 'hf' (what transformers builds), 'mine' (the rule as
        written in meta, must equal hf), and the variants."""
        cfg = model.config.get_text_config()
        sw = cfg.sliding_window
        q = torch.arange(seq_len)[:, None]
        k = torch.arange(seq_len)[None, :]
        causal = k <= q
        b = block_ids[0]
        same = (b[:, None] == b[None, :]) & (b[:, None] >= 0)
        window = k > q - sw
        if variant == "mine":
            full, sliding = causal | same, window & (causal | same)
        elif variant == "bidirectional_full_layers_only":
            full, sliding = causal | same, window & causal
        elif variant == "bidirectional_sliding_layers_only":
            full, sliding = causal, window & (causal | same)
        elif variant == "symmetric_window_for_image_pairs":
            full, sliding = causal | same, (window & causal) | (same & ((q - k).abs() < sw))
        elif variant == "causal":
            full, sliding = causal, window & causal
        else:
            raise ValueError(variant)
        minv = torch.finfo(torch.float32).min

        def add(m):
            return torch.where(m, 0.0, minv)[None, None]

        return {"full_attention": add(full), "sliding_attention": add(sliding)}

    def feature_effects(self, model, tap, prompts, token_lists):
        from transformers.models.gemma3.modeling_gemma3 import create_masks_for_vision_model, get_block_sequence_ids_for_mask

        eff = _common_effects(self, model, tap, prompts, token_lists)
        worst = {
            "causal": 0.0,
            "bidirectional_full_layers_only": 0.0,
            "bidirectional_sliding_layers_only": 0.0,
            "symmetric_window_for_image_pairs": 0.0,
        }
        worst_scaled = 0.0
        mask_rule_exact = True
        scale = model.config.text_config.hidden_size**0.5
        for prompt, tokens in zip(prompts, token_lists):
            if not prompt.images:
                continue
            seq = prompt.ids + tokens[:-1]
            kw = self.inputs(prompt, seq)
            base = _uncached(self, model, prompt, seq)
            block = get_block_sequence_ids_for_mask(kw["token_type_ids"])
            hf = create_masks_for_vision_model(
                config=model.config.get_text_config(),
                inputs_embeds=torch.zeros(1, len(seq), model.config.text_config.hidden_size),
                attention_mask=None,
                past_key_values=None,
                position_ids=None,
                block_sequence_ids=block,
            )
            mine = self.masks(model, len(seq), block, "mine")
            for key in ("full_attention", "sliding_attention"):
                h = hf[key]
                h = torch.where(h, 0.0, torch.finfo(torch.float32).min) if h.dtype == torch.bool else h
                if not torch.equal((h == 0), (mine[key] == 0)):
                    mask_rule_exact = False
            r = _uncached(self, model, prompt, seq, attention_mask=mine)
            assert max_abs(r, base) == 0.0, ("hand-built mask differs", max_abs(r, base))
            for variant in worst:
                r = _uncached(self, model, prompt, seq, attention_mask=self.masks(model, len(seq), block, variant))
                worst[variant] = max(worst[variant], max_abs(r, base))
            positions = [k for k, t in enumerate(prompt.ids) if t == self.placeholder]
            tap.rewrite = lambda kw_, pos=positions: _scale_rows(kw_, pos, scale)
            try:
                r = _uncached(self, model, prompt, seq)
            finally:
                tap.rewrite = None
            worst_scaled = max(worst_scaled, max_abs(r, base))
        assert mask_rule_exact
        eff["plain_causal_mask_instead_of_bidirectional_image_blocks"] = worst["causal"]
        eff["bidirectional_on_full_layers_only_sliding_layers_plain"] = worst["bidirectional_full_layers_only"]
        eff["bidirectional_on_sliding_layers_only_full_layer_plain"] = worst["bidirectional_sliding_layers_only"]
        eff["sliding_layers_symmetric_window_for_same_image_pairs"] = worst["symmetric_window_for_image_pairs"]
        eff["injected_rows_times_sqrt_hidden"] = worst_scaled
        eff["note"] += (
            "; gemma3: plain_causal = no token_type_ids (the text masks); bidirectional_on_full_layers_only = the "
            "sliding layers keep the plain sliding-causal mask; bidirectional_on_sliding_layers_only = the full layer "
            "keeps the plain causal mask; symmetric_window = same-image pairs at |q-k| < 8 "
            "instead of k > q - 8 (future same-image keys at any distance); injected_rows_times_sqrt_hidden = the "
            "image rows scaled by the embedding scale sqrt(64) = 8 like text embeddings. The full layer's image blocks "
            "reach a logit row only through the last (sliding, window 8) layer, i.e. only rows within 8 positions of an "
            "image (prompt 2's row 0 and 1-6, prompt 1's rows 0-1): bidirectional_on_sliding_layers_only isolates that "
            "part, and bidirectional_on_full_layers_only has the same maximum as plain_causal (reached further away)"
        )
        return eff

    features = [
        "composite Gemma3ForConditionalGeneration: decoder as the gemma3_text fixture (window 8, per-layer-type rope: "
        "sliding default theta 1e4, full linear factor 4 theta 1e6; q/k norms, sandwich (1+w) norms, "
        "query_pre_attn_scalar 24, tied embeddings, embed scale sqrt(64) = 8) but with layer_types [sliding, full, "
        "sliding] written out (the full layer in the middle, so its image-block mask reaches the logit rows) and "
        "intermediate_size 64",
        "vision tower SiglipVisionModel: 1 layer, hidden 16, 2 heads, 16x16 images, 2x2 patches -> 64 patches, no head",
        "projector Gemma3MultiModalProjector: 8x8 patch grid avg-pooled 2x2 -> 16 tokens, (1+w) RMSNorm eps 1e-6, "
        "x @ mm_input_projection_weight [16, 64]",
        "prompt format of Gemma3Processor: <start_of_image> <image_soft_token> x 16 <end_of_image> (the processor's "
        "surrounding \\n\\n text tokens are left out); only the soft-token ids (image_token_index 255) are replaced "
        "and typed 1 in token_type_ids",
        "bidirectional attention inside each image (16 tokens, twice the sliding window 8) during prefill",
        "prompt 2 ends on the placeholder run itself (no <end_of_image>), so row 0 is the logit vector of an injected row",
    ]

    def multimodal_meta(self, model):
        H = model.config.text_config.hidden_size
        return {
            "placeholder_id": self.placeholder,
            "special_ids": GEMMA3_IDS,
            "placeholder_ids_ge_vocab": False,
            "placeholder_id_rule": (
                "as the released checkpoints (text vocab 262208, image_token_index 262144) the placeholder id is inside "
                "the text vocab here (255 < 256). Gemma3Model.forward: if image_token_id >= text vocab_size, the "
                "placeholder ids are replaced by 0 (pad) before embed_tokens (to avoid an index error); either way the "
                "placeholder rows are then overwritten, so the id's own embedding never reaches the decoder"
            ),
            "tokens_per_image": GEMMA3_TOKENS_PER_IMAGE,
            "scatter": (
                f"Gemma3Model.forward: inputs_embeds = embed_tokens(ids) which already includes the embedding scale "
                f"(Gemma3TextScaledWordEmbedding: weight[id] * sqrt(hidden) = * {H ** 0.5:g}), THEN masked_scatter of "
                "the projector rows at the placeholders: the injected rows are NOT multiplied by the embedding scale "
                "(multimodal.feature_effects.injected_rows_times_sqrt_hidden); then the decoder as for text"
            ),
            "mask": (
                "prefill (and any forward given token_type_ids): block id = index of the maximal run of token_type 1 "
                "(image soft tokens), -1 for text; full-attention layers: key k visible to query q iff k <= q OR "
                "(same block and block >= 0); sliding layers (window 8): k > q - 8 AND (k <= q OR same block), i.e. "
                "an image token sees every later token of its own image (no upper bound) but only the last 8 "
                "positions behind it. Separate images (and boi/eoi, text) stay causal. Decode: "
                "prepare_inputs_for_generation drops token_type_ids after the first step, so every decode query uses "
                "the plain causal / sliding-causal mask (decode queries are text tokens; the cached image keys were "
                "computed under the bidirectional prefill mask and are reused as they are). A prompt prefilled in "
                "chunks would need each image inside one chunk (or the whole image's keys) to reproduce these rows."
            ),
            "positions": "plain 1-D positions 0..n-1, images included; decode continues at n + j",
        }


def _scale_rows(kw, positions, scale):
    e = kw["inputs_embeds"].clone()
    e[0, positions] = e[0, positions] * scale
    kw["inputs_embeds"] = e
    return kw


def _three_layout_prompts(fam):
    """llama4 and gemma3 (fixed-size images): image at the start; two images in the middle; text then an image
    run that ends the prompt (no end-of-image token); text only."""
    gen = torch.Generator().manual_seed(MM_PROMPT_SEED)
    pix = torch.Generator().manual_seed(PIXEL_SEED)
    out = []
    ids0, im0 = fam.image_block(pix)
    t0 = text_ids(gen, 10)
    out.append(Prompt(ids0 + t0, [im0], ["image (closed)", "text 10"]))
    ids1a, im1a = fam.image_block(pix)
    ids1b, im1b = fam.image_block(pix)
    a, b, c = text_ids(gen, 6), text_ids(gen, 5), text_ids(gen, 4)
    out.append(Prompt(a + ids1a + b + ids1b + c, [im1a, im1b], ["text 6", "image (closed)", "text 5", "image (closed)", "text 4"]))
    ids2, im2 = fam.image_block(pix, close=False)
    t2 = text_ids(gen, 14)
    out.append(Prompt(t2 + ids2, [im2], ["text 14", "image (open: the prompt ends on its last placeholder)"]))
    out.append(Prompt(text_ids(gen, 15), [], ["text 15 (no image)"]))
    return out


def _save_bf16(model, fam_dir, sub_configs=("text_config", "vision_config")):
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    for sub in sub_configs:
        getattr(bf16.config, sub).dtype = torch.bfloat16
    bf16.save_pretrained(fam_dir, safe_serialization=True)
    del bf16


# ---- Gemma 4 ---------------------------------------------------------------------

# The decoder: the gemma4_text fixture's recipe (tools/oracle/fixture_families/pergemma.py: hidden 36, intermediate
# 32, sliding head_dim 16 4q/2kv, full layers global_head_dim 32 with attention_k_eq_v and one KV head, per-layer-type
# RoPE, layer_scalar, softcap 30, tied, the same init table) cut to 4 layers [sliding, full, sliding, full] without KV
# sharing, with use_bidirectional_attention "vision", per-layer inputs of width 16 over the whole text vocab, and
# pad_token_id 3. The full layer sits in the middle so that "bidirectional on the full layers too" can reach the logit
# rows (a last-layer mask only changes the rows of its own image positions); every sliding layer precedes a full layer,
# so their image-block masks reach every later row. No KV sharing: with [s, f, s, f] a consumer layer would read the
# K/V of a layer before the masks it should exercise (num_kv_shared_layers 2 would hide the full layer's image blocks
# from every text row). hidden_size_per_layer_input 16 keeps the PLE scale sqrt(16) = 4 bf16-exact (pergemma.py's rule).
# The vision tower: one 16-wide Gemma4VisionModel layer (2 heads of 8, 2-D axial RoPE) on 16x16 images of 2x2 patches
# (8x8 = 64 patches, position table [2, 8, 16]), pooled 2x2 -> 16 soft tokens per image, twice the sliding window.
GEMMA4_MM_LAYER_TYPES = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]
GEMMA4_MM_PLE_DIM = 16
GEMMA4_MM_PAD = 3
GEMMA4_MM_PATCHES = 8  # patches per side
GEMMA4_VISION = dict(
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=8,
    patch_size=2,
    pooling_kernel_size=2,
    position_embedding_size=GEMMA4_MM_PATCHES,
)
GEMMA4_TOKENS_PER_IMAGE = (GEMMA4_MM_PATCHES // GEMMA4_VISION["pooling_kernel_size"]) ** 2
# image, video and audio placeholders (all three are replaced by pad_token_id before the embeddings) in the reserved
# ids; boa / eoa are left at the class defaults (outside the 256-id vocab; no audio tower, never in a prompt)
GEMMA4_IDS = dict(boi=252, eoi=253, image=255, video=254, audio=251)
# embed_tokens_per_layer at N(0, 0.175): x sqrt(16) = 4 gives rows of std 0.7, as the gemma4_text table (N(0, 0.35) x 2)
GEMMA4_MM_INIT = [(r"embed_tokens_per_layer\.weight$", 0.0, 0.175)]


class Gemma4MM(MMFamily):
    name = "gemma4"
    # 2414 of 2000-2599 (6 of the 600 reached 100x atol with no special among the greedy tokens), the best margin;
    # layer_scalar 0.852, 1.242, 0.715, 1.539 (layers 0-2 distinct and >= 0.24 from 1; layer 3's is cancelled by the
    # final norm)
    seed = 2414
    atol = 2.5e-4
    loader = transformers.Gemma4ForConditionalGeneration
    placeholder = GEMMA4_IDS["image"]

    def text_config(self) -> dict:
        _bf16_exact_sqrt(GEMMA4_MM_PLE_DIM)
        text = _gemma4_decoder_kwargs()
        text.update(
            num_hidden_layers=len(GEMMA4_MM_LAYER_TYPES),
            layer_types=list(GEMMA4_MM_LAYER_TYPES),
            num_kv_shared_layers=0,
            use_double_wide_mlp=False,  # only widens KV-shared layers; there are none
            pad_token_id=GEMMA4_MM_PAD,
            use_bidirectional_attention="vision",
            hidden_size_per_layer_input=GEMMA4_MM_PLE_DIM,
            vocab_size_per_layer_input=VOCAB,
            enable_moe_block=False,
        )
        return text

    def config(self):
        return transformers.Gemma4Config(
            text_config=self.text_config(),
            vision_config=dict(GEMMA4_VISION),
            audio_config=None,
            boi_token_id=GEMMA4_IDS["boi"],
            eoi_token_id=GEMMA4_IDS["eoi"],
            image_token_id=GEMMA4_IDS["image"],
            video_token_id=GEMMA4_IDS["video"],
            audio_token_id=GEMMA4_IDS["audio"],
            tie_word_embeddings=True,
        )

    def write_checkpoint(self, fam_dir, seed):
        cfg = self.config()
        model = self.loader._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
        assert model.model.audio_tower is None and model.model.embed_audio is None
        # gemma4_text's recipe (plain-weight norms, GEMMA4_STD / GEMMA4_NORM_MEAN, layer_scalar buffers N(1, 0.25)) over
        # every parameter of the composite, vision tower included; the PLE table as GEMMA4_MM_INIT. One generator.
        reinit_(model, seed, False, GEMMA4_STD, GEMMA4_NORM_MEAN, rules=GEMMA4_MM_INIT, buffer_init=GEMMA4_BUFFER_INIT)
        _save_bf16(model, fam_dir)

    def load(self, fam_dir):
        model = super().load(fam_dir)
        lm = self.decoder(model)
        # the pad row must be visible: non-zero in both tables (nn.Embedding's padding_idx only zeroes it at init)
        assert lm.embed_tokens.weight[GEMMA4_MM_PAD].abs().min() > 0
        assert lm.embed_tokens_per_layer.weight[GEMMA4_MM_PAD].abs().min() > 0
        self.layer_scalars = [round(float(layer.layer_scalar), 4) for layer in lm.layers]
        return model

    def decoder(self, model):
        return model.model.language_model

    # mm_token_type_ids by placeholder id, as ProcessorMixin.create_mm_token_type_ids writes them (image 1, video 2,
    # audio 3, text 0); gemma4's prompts hold image placeholders only
    def token_types(self) -> dict:
        return {GEMMA4_IDS["image"]: 1}

    def inputs(self, prompt, ids):
        # as Gemma4Processor returns them: mm_token_type_ids for every prompt (zeros for a text-only one), 1 at the
        # image soft tokens; the continuation (generated tokens) is text
        kw = {"input_ids": torch.tensor([ids])}
        types = self.token_types()
        kw["mm_token_type_ids"] = torch.tensor(
            [[types.get(t, 0) if k < len(prompt.ids) else 0 for k, t in enumerate(ids)]]
        )
        if prompt.images:
            kw["pixel_values"] = torch.stack([im["pixels"] for im in prompt.images])
            kw["image_position_ids"] = torch.stack([im["positions"] for im in prompt.images])
        return kw

    def image_rows(self, model, prompt):
        if not prompt.images:
            return torch.zeros(0, model.config.text_config.hidden_size)
        kw = self.inputs(prompt, prompt.ids)
        out = model.model.get_image_features(kw["pixel_values"], kw["image_position_ids"], return_dict=True)
        return torch.cat(out.pooler_output, dim=0)

    def image_block(self, gen, close=True):
        """A 16x16 image patchified as Gemma4ImageProcessor does (convert_image_to_patches: patch-major rows of
        (p, p, C) pixels; positions (x, y) = (column, row) of each patch), no padding patches."""
        p, g = GEMMA4_VISION["patch_size"], GEMMA4_MM_PATCHES
        img = torch.randn((3, g * p, g * p), generator=gen, dtype=torch.float32)
        patches = img.reshape(3, g, p, g, p).permute(1, 3, 2, 4, 0).reshape(g * g, -1).contiguous()
        xs, ys = torch.meshgrid(torch.arange(g), torch.arange(g), indexing="xy")
        positions = torch.stack([xs, ys], dim=-1).reshape(g * g, 2)
        ids = [GEMMA4_IDS["boi"]] + [self.placeholder] * GEMMA4_TOKENS_PER_IMAGE
        if close:
            ids.append(GEMMA4_IDS["eoi"])
        return ids, {"pixels": patches, "positions": positions}

    def prompts(self):
        return _three_layout_prompts(self)

    # --- the fixture contract's extras ----------------------------------------------
    def pad_ids(self, ids):
        """The ids both embeddings see: every image / video / audio placeholder replaced by text pad_token_id."""
        mm = {GEMMA4_IDS["image"], GEMMA4_IDS["video"], GEMMA4_IDS["audio"]}
        return [GEMMA4_MM_PAD if t in mm else t for t in ids]

    def replay_prefill_kwargs(self, model, ids, rows_at, kinds):
        """replay(): the per-layer identity part from the pad-substituted ids (transformers cannot recover it from
        inputs_embeds alone, the injected rows match no embedding row) and token types on the segments from their
        modalities (image 1, video 2, audio 3)."""
        pli = self.decoder(model).get_per_layer_inputs(torch.tensor([self.pad_ids(ids)]))
        tt = torch.zeros(1, len(ids), dtype=torch.long)
        for k, m in zip(rows_at, kinds):
            tt[0, k] = HF_MM_TOKEN_TYPE[m]
        return {"per_layer_inputs": pli, "mm_token_type_ids": tt}

    replay_note = (
        " with per_layer_inputs = embed_tokens_per_layer(prompt_<i> with every placeholder replaced by pad_token_id 3) "
        "and mm_token_type_ids 1 on the segments"
    )

    # --- masks and effects -----------------------------------------------------------
    def masks(self, model, seq_len, block_ids, variant):
        """Additive 4-D masks for one uncached forward: 'mine' (the rule as written in meta; equals what transformers
        builds) and the variants."""
        sw = model.config.text_config.sliding_window
        q = torch.arange(seq_len)[:, None]
        k = torch.arange(seq_len)[None, :]
        causal = k <= q
        b = block_ids[0]
        same = (b[:, None] == b[None, :]) & (b[:, None] >= 0)
        window = k > q - sw
        if variant == "mine":
            full, sliding = causal, window & (causal | same)
        elif variant == "causal":
            full, sliding = causal, window & causal
        elif variant == "bidirectional_all_layers":
            full, sliding = causal | same, window & (causal | same)
        elif variant == "bidirectional_full_layers_only":
            full, sliding = causal | same, window & causal
        elif variant == "symmetric_window_for_image_pairs":
            full, sliding = causal, (window & causal) | (same & ((q - k).abs() < sw))
        else:
            raise ValueError(variant)
        minv = torch.finfo(torch.float32).min

        def add(m):
            return torch.where(m, 0.0, minv)[None, None]

        return {"full_attention": add(full), "sliding_attention": add(sliding)}

    swap_effect = True  # _common_effects' two_images_swapped (prompt 1 holds two images)

    @torch.no_grad()
    def feature_effects(self, model, tap, prompts, token_lists):
        from transformers.models.gemma4.modeling_gemma4 import (
            create_masks_for_vision_model,
            get_block_sequence_ids_for_mask,
        )

        lm = self.decoder(model)
        cfg = model.config.text_config
        L, d, H = cfg.num_hidden_layers, cfg.hidden_size_per_layer_input, cfg.hidden_size
        sw = cfg.sliding_window
        eff = _common_effects(self, model, tap, prompts, token_lists, swap=self.swap_effect)
        variants = ("causal", "bidirectional_all_layers", "bidirectional_full_layers_only", "symmetric_window_for_image_pairs")
        worst = {k: 0.0 for k in variants}
        worst_no_ids = worst_pli_id = worst_proj_pad = worst_scaled = 0.0
        pad_pli = lm.get_per_layer_inputs(torch.tensor([[GEMMA4_MM_PAD]]))[0, 0]  # [L, d]
        for ph in self.segment_ids():
            assert not torch.equal(pad_pli, lm.get_per_layer_inputs(torch.tensor([[ph]]))[0, 0]), ph
        pad_row = lm.embed_tokens(torch.tensor([GEMMA4_MM_PAD]))[0]  # scaled, as the pre-scatter placeholder rows
        checks = dict.fromkeys(("pad_identity_at_image_rows", "mask_rule_exact", "window_bounds_backward_reach_only"), True)
        for prompt, tokens in zip(prompts, token_lists):
            if not prompt.has_mm:
                continue
            seq = prompt.ids + tokens[:-1]
            positions = mm_positions(self, prompt.ids)  # every segment row (gemma4_audio: image and audio)
            # the per-layer identity part each segment row would get from its own placeholder id
            own_pli = lm.get_per_layer_inputs(torch.tensor([[prompt.ids[k] for k in positions]]))[0]
            kw = self.inputs(prompt, seq)
            base = _uncached(self, model, prompt, seq)
            # what the composite hands the decoder as the per-layer identity part: the pad row at every image row
            # (DecoderTap keeps inputs_embeds only: one more forward with a probe on per_layer_inputs)
            got = {}

            def probe(mod, args, kwargs):
                got["pli"] = kwargs["per_layer_inputs"].detach().clone()

            h = lm.register_forward_pre_hook(probe, with_kwargs=True)
            try:
                _uncached(self, model, prompt, seq)
            finally:
                h.remove()
            pli = got["pli"][0]
            text_pos = [k for k in range(len(seq)) if k not in set(positions)]
            checks["pad_identity_at_image_rows"] &= bool(
                torch.equal(pli[positions], pad_pli.expand(len(positions), L, d))
                and torch.equal(pli[text_pos], lm.get_per_layer_inputs(torch.tensor([[seq[k] for k in text_pos]]))[0])
            )
            # the mask transformers builds == the rule written in meta; a forward with the hand-built masks == base
            block = get_block_sequence_ids_for_mask(kw["mm_token_type_ids"], device=torch.device("cpu"))
            hf = create_masks_for_vision_model(
                config=cfg,
                inputs_embeds=torch.zeros(1, len(seq), H),
                attention_mask=None,
                past_key_values=None,
                position_ids=torch.arange(len(seq))[None],
                block_sequence_ids=block,
            )
            mine = self.masks(model, len(seq), block, "mine")
            for key in ("full_attention", "sliding_attention"):
                m = hf[key]
                m = torch.where(m, 0.0, torch.finfo(torch.float32).min) if m.dtype == torch.bool else m
                checks["mask_rule_exact"] &= bool(torch.equal(m == 0, mine[key] == 0))
            # the window bounds only the backward reach: the first image row sees its image's last row (distance
            # 15 >= 8) on the sliding layers, and not the row 8 before it
            visible = {k_: hf[k_] if hf[k_].dtype == torch.bool else hf[k_] == 0 for k_ in hf}
            sl, fl = visible["sliding_attention"], visible["full_attention"]
            for s, l in runs_of(prompt.ids, self.placeholder):
                ok = bool(sl[0, 0, s, s + l - 1]) and l - 1 >= sw and not bool(fl[0, 0, s, s + 1])
                if s - sw >= 0:
                    ok = ok and not bool(sl[0, 0, s, s - sw]) and bool(sl[0, 0, s, s - sw + 1])
                checks["window_bounds_backward_reach_only"] &= ok
            r = _uncached(self, model, prompt, seq, attention_mask=mine)
            assert max_abs(r, base) == 0.0, ("hand-built mask differs", max_abs(r, base))
            for variant in worst:
                r = _uncached(self, model, prompt, seq, attention_mask=self.masks(model, len(seq), block, variant))
                worst[variant] = max(worst[variant], max_abs(r, base))
            # (b') no mm_token_type_ids at all (what a caller without the processor's token types gets)
            r = _uncached(self, model, prompt, seq, mm_token_type_ids=None)
            worst_no_ids = max(worst_no_ids, max_abs(r, base))
            # (a) the per-layer identity part at the image rows from the placeholder id instead of pad
            def pli_rewrite(kw_, pos=positions):
                p = kw_["per_layer_inputs"].clone()
                p[0, pos] = own_pli
                kw_["per_layer_inputs"] = p
                return kw_

            tap.rewrite = pli_rewrite
            try:
                r = _uncached(self, model, prompt, seq)
            finally:
                tap.rewrite = None
            worst_pli_id = max(worst_pli_id, max_abs(r, base))
            # the per-layer projection part computed from the pre-scatter rows (scaled pad embedding) at the image
            # rows instead of the injected rows (the attention / MLP still see the injected rows)
            orig = lm.project_per_layer_inputs

            def proj_from_pad(inputs_embeds, per_layer_inputs=None, pos=positions):
                e = inputs_embeds.clone()
                e[0, pos] = pad_row
                return orig(e, per_layer_inputs)

            lm.project_per_layer_inputs = proj_from_pad
            try:
                r = _uncached(self, model, prompt, seq)
            finally:
                del lm.project_per_layer_inputs
            worst_proj_pad = max(worst_proj_pad, max_abs(r, base))
            # the injected rows multiplied by the embedding scale sqrt(36) = 6 like text rows
            tap.rewrite = lambda kw_, pos=positions: _scale_rows(kw_, pos, H**0.5)
            try:
                r = _uncached(self, model, prompt, seq)
            finally:
                tap.rewrite = None
            worst_scaled = max(worst_scaled, max_abs(r, base))
        assert all(checks.values()), checks
        self.verified = checks
        eff["per_layer_identity_from_placeholder_id_instead_of_pad"] = worst_pli_id
        eff["per_layer_projection_from_pad_rows_instead_of_injected"] = worst_proj_pad
        eff["plain_causal_mask_instead_of_bidirectional_image_blocks"] = worst["causal"]
        eff["no_mm_token_type_ids"] = worst_no_ids
        eff["bidirectional_on_full_layers_too"] = worst["bidirectional_all_layers"]
        eff["bidirectional_on_full_layers_only_sliding_layers_plain"] = worst["bidirectional_full_layers_only"]
        eff["sliding_layers_symmetric_window_for_same_image_pairs"] = worst["symmetric_window_for_image_pairs"]
        eff["injected_rows_times_sqrt_hidden"] = worst_scaled
        eff["note"] += (
            "; gemma4: per_layer_identity_from_placeholder_id = the identity part of the per-layer inputs at the image "
            "rows read from embed_tokens_per_layer row 255 (the placeholder id) instead of row 3 (pad_token_id); "
            "per_layer_projection_from_pad_rows = per_layer_model_projection applied to the pre-scatter rows (the scaled "
            "pad embedding) at the image rows instead of the injected rows; plain_causal = hand-built masks without the "
            "image blocks (sliding-causal / causal); no_mm_token_type_ids = the same through transformers (forward "
            "without mm_token_type_ids); bidirectional_on_full_layers_too = the image blocks OR-ed into the full "
            "layers' causal mask as well (gemma3's rule); bidirectional_on_full_layers_only = the image blocks on the "
            "full layers and none on the sliding ones; symmetric_window = same-image pairs at |q-k| < 8 instead of "
            "k > q - 8 (future same-image keys at any distance); injected_rows_times_sqrt_hidden = the image rows scaled "
            "by the embedding scale sqrt(36) = 6 like text embeddings (for the attention and the per-layer projection)"
        )
        return eff

    features = [
        "composite Gemma4ForConditionalGeneration (model_type gemma4, text gemma4_text, vision gemma4_vision, no audio "
        "tower: audio_config null, so no audio_tower / embed_audio weights)",
        "decoder as the gemma4_text fixture's recipe (hidden 36, intermediate 32, tied head, embed scale sqrt(36) = 6, "
        "sliding layers head_dim 16 4 q / 2 kv heads, full layers global_head_dim 32 with attention_k_eq_v and one KV "
        "head (per_layer_config overrides of layers 1 and 3), attention scaling 1.0 after q_norm / k_norm, weightless "
        "v_norm, RoPE per layer type (sliding default theta 1e4, full proportional 0.25 theta 1e6), plain-weight "
        "sandwich RMSNorms, layer_scalar per layer, final softcap 30) but 4 layers [sliding, full, sliding, full] "
        "(written out), sliding_window 8, no KV sharing, no MoE",
        "pad_token_id 3 (text config), whose rows in embed_tokens and embed_tokens_per_layer are non-zero",
        "per-layer inputs: hidden_size_per_layer_input 16 (scale sqrt(16) = 4, bf16-exact), vocab_size_per_layer_input "
        "256 (the whole text vocab): embed_tokens_per_layer [256, 4 x 16], per_layer_model_projection [64, 36], "
        "per_layer_projection_norm [16]; per layer per_layer_input_gate [16, 36], per_layer_projection [36, 16], "
        "post_per_layer_input_norm [36]",
        "text_config.use_bidirectional_attention = \"vision\": during prefill (mm_token_type_ids given), sliding "
        "layers let every image row see the later rows of its own image",
        "vision tower Gemma4VisionModel: patch embedder (input_proj [16, 12] of 2x2x3 patches after 2 (x - 0.5), "
        "learned (x, y) position table [2, 8, 16]), 1 encoder layer (hidden 16, 2 heads of 8, 2-D axial RoPE theta 100, "
        "q/k/v norms, gated GELU MLP 32, sandwich norms), 2x2 average pool by patch position x sqrt(16) -> 16 soft "
        "tokens per 16x16 image; embed_vision: weightless RMSNorm then embedding_projection [36, 16]",
        "prompt format of Gemma4Processor: <boi> <image> x 16 <eoi> per image; only the image ids (image_token_id 255) "
        "are replaced and typed 1 in mm_token_type_ids",
        "images of 16 soft tokens, twice the sliding window 8, so the sliding layers' image blocks reach past the window "
        "forward but not backward",
        "prompt 2 ends on the placeholder run itself (no <eoi>), so row 0 is the logit vector of an injected row",
    ]

    @property
    def notes(self):
        return [
            "Images: Gemma4VisionPatchEmbedder maps each pixel x to 2 (x - 0.5); the N(0, 1) values are drawn as a "
            "[3, 16, 16] image and patchified as Gemma4ImageProcessor does (pixel_values [k, 64, 12], "
            "image_position_ids [k, 64, 2] = (column, row) of each patch, no padding patches).",
            "Init: gemma4_text's table (pergemma.py) over every parameter of the composite (the vision tower's norms "
            "included), embed_tokens_per_layer N(0, 0.175), layer_scalar buffers N(1, 0.25) after the parameters: "
            + ", ".join(f"{v:.3f}" for v in getattr(self, "layer_scalars", ())) + ".",
        ]

    def init_meta(self) -> dict:
        std = dict(BASE_STD)
        std.update(GEMMA4_STD)
        return {
            "generator": "torch.Generator().manual_seed(seed); every parameter of the composite (vision tower, "
            "embed_vision, decoder) in name order; N(mean, std) then bf16 (make_fixtures.reinit_); then the "
            "layer_scalar buffers from the same generator",
            "zero_centred_norms": False,
            "norm_mean_overrides": GEMMA4_NORM_MEAN,
            "rules": [list(r) for r in GEMMA4_MM_INIT],
            "buffers": [list(r) for r in GEMMA4_BUFFER_INIT],
            "std": std,
            "layer_scalars": list(getattr(self, "layer_scalars", ())),
        }

    def multimodal_meta(self, model):
        return {
            "placeholder_id": self.placeholder,
            "special_ids": GEMMA4_IDS,
            "placeholder_ids_ge_vocab": False,
            "pad_token_id": GEMMA4_MM_PAD,
            "tokens_per_image": GEMMA4_TOKENS_PER_IMAGE,
            "pad_substitution": (
                "Gemma4Model.forward: llm_input_ids = where(input_ids is image_token_id 255, video_token_id 254 or "
                "audio_token_id 251, text_config.pad_token_id = 3, input_ids), always (the ids are inside the vocab). "
                "Both embeddings read llm_input_ids: embed_tokens (scaled by sqrt(36) = 6) and the per-layer identity "
                "part embed_tokens_per_layer(llm_input_ids) * sqrt(16) = 4, reshaped [n, 4 layers, 16]. So at every "
                "image row the identity part is embed_tokens_per_layer row 3 (multimodal.verified.pad_identity_at_image_rows), "
                "never row 255 (multimodal.feature_effects.per_layer_identity_from_placeholder_id_instead_of_pad); the "
                "main embedding of 3 is computed and then overwritten"
            ),
            "scatter": (
                "then inputs_embeds.masked_scatter(image rows, embed_vision(vision_tower(pixel_values, "
                "image_position_ids))) with embed_vision = weightless RMSNorm (eps 1e-6) then embedding_projection "
                "[36, 16]: the injected rows are NOT multiplied by the embedding scale "
                "(multimodal.feature_effects.injected_rows_times_sqrt_hidden). embeds_<i> are those rows as the decoder "
                "received them (pre-hook on language_model) and equal get_image_features' pooler_output"
            ),
            "per_layer_inputs": (
                "Gemma4TextModel.forward (language_model) gets inputs_embeds = the injected rows and per_layer_inputs = "
                "the identity part above; project_per_layer_inputs: per_layer_inputs = (per_layer_projection_norm("
                "reshape(per_layer_model_projection(inputs_embeds) * 36^-0.5, [n, 4, 16])) + identity) * 2^-0.5. The "
                "projection part therefore reads the INJECTED rows at image positions "
                "(multimodal.feature_effects.per_layer_projection_from_pad_rows_instead_of_injected), the identity part "
                "the pad row. Layer i adds post_per_layer_input_norm(per_layer_projection(gelu_tanh(per_layer_input_gate"
                "(h)) * per_layer_inputs[:, :, i])) after its MLP, then h *= layer_scalar. An engine given embeds_<i> "
                "computes the identity part from prompt_<i> with the segment rows' ids replaced by 3"
            ),
            "mask": (
                "only because text_config.use_bidirectional_attention == \"vision\" and mm_token_type_ids is given: "
                "block id = index of the maximal run of mm_token_type 1 or 2 (image / video; audio 3 is excluded), -1 "
                "elsewhere (boi / eoi / text). Sliding layers (0 and 2, window 8): key k visible to query q iff "
                "k > q - 8 AND (k <= q OR same block >= 0): an image row sees every later row of its own image (no "
                "upper bound, 15 ahead here) but only the last 8 positions behind it; the window bounds the backward "
                "reach only. Full layers (1 and 3): plain causal, no image blocks (unlike gemma3). Separate images stay "
                "causal to each other. Checked (multimodal.verified): the mask transformers builds "
                "(create_masks_for_vision_model) equals this rule and a forward with the hand-built masks gives the "
                "same logits exactly. Prefill only: "
                "prepare_inputs_for_generation passes mm_token_type_ids on the first iteration and None afterwards, so "
                "every decode step uses the plain causal / sliding-causal masks (decode queries are text; the cached "
                "image keys and values were computed under the prefill masks and are reused as they are). A prefill cut "
                "into chunks would need each image inside one chunk to reproduce these rows"
            ),
            "positions": "plain 1-D positions 0..n-1, images included; decode continues at n + j",
            "verified": dict(getattr(self, "verified", {})),
            "verified_note": (
                "asserted over the image prompts' uncached forwards of prompt+tokens[:-1]: pad_identity_at_image_rows = "
                "the per_layer_inputs handed to language_model equal embed_tokens_per_layer(3) * 4 at every image row "
                "and the table rows of the ids elsewhere; mask_rule_exact = create_masks_for_vision_model's full and "
                "sliding masks equal the rule above (full causal; sliding k > q - 8 AND (k <= q OR same image)); "
                "window_bounds_backward_reach_only = on the sliding mask each image's first row sees the image's last "
                "row (15 ahead) but not the row 8 behind it (the row 7 behind it yes), and on the full mask it does not "
                "see the next image row"
            ),
        }

# ---- Gemma 4 with audio ----------------------------------------------------------

# gemma4's composite, recipe and seed machinery (Gemma4MM: same config, same decoder, same vision tower, no audio
# tower) with prompts that carry AUDIO segments at the audio placeholder (GEMMA4_IDS["audio"] 251), typed 3 in
# mm_token_type_ids as the processor types them (ProcessorMixin.create_mm_token_type_ids), and one prompt with an image
# and audio. In Gemma 4 image / video rows (types 1 / 2) attend to the later rows of their own run on the sliding
# layers (get_block_sequence_ids_for_mask), audio rows (3) do not: they are causal like text. The audio rows are drawn
# from Generator(GEMMA4_AUDIO_SEED), N(0, GEMMA4_AUDIO_STD) (the gemma4 fixture's image rows have rms 0.49-0.54), and
# are handed to transformers' own audio path (pad substitution, per-layer inputs, masked_scatter at the audio
# placeholders) as input_features through a stand-in for get_audio_features that returns them unchanged.
GEMMA4_AUDIO_SEED = 20250613
GEMMA4_AUDIO_STD = 0.5


def _stand_in_audio_features(input_features, input_features_mask=None, return_dict=True, **kwargs):
    """Gemma4Model.get_audio_features without an audio tower: the 'features' are already the rows to scatter
    ([1, m, H]); every row valid (attention_mask True)."""
    return SimpleNamespace(pooler_output=input_features, attention_mask=input_features_mask)


class Gemma4AudioMM(Gemma4MM):
    name = "gemma4_audio"
    # 2471 of 2000-2599 (--search-seeds 2000 600: 8 of the 600 reached 100x atol with no special among the greedy
    # tokens), the best margin; gemma4's own 2414 gives 41x atol on these prompts
    seed = 2471
    audio_placeholder = GEMMA4_IDS["audio"]
    audio_type = HF_MM_TOKEN_TYPE[MODALITY_AUDIO]  # mm_token_type_ids at the audio rows (modality_checks retypes them)
    swap_effect = False  # one image only

    def segment_ids(self):
        return {GEMMA4_IDS["image"]: MODALITY_IMAGE, self.audio_placeholder: MODALITY_AUDIO}

    def token_types(self):
        return {GEMMA4_IDS["image"]: HF_MM_TOKEN_TYPE[MODALITY_IMAGE], self.audio_placeholder: self.audio_type}

    @contextlib.contextmanager
    def audio_typed(self, t):
        old, self.audio_type = self.audio_type, t
        try:
            yield
        finally:
            self.audio_type = old

    def load(self, fam_dir):
        model = super().load(fam_dir)
        assert model.model.audio_tower is None
        model.model.get_audio_features = _stand_in_audio_features
        return model

    def hidden(self):
        return self.text_config()["hidden_size"]

    def inputs(self, prompt, ids):
        kw = super().inputs(prompt, ids)
        if prompt.audio:
            rows = torch.cat(prompt.audio)
            kw["input_features"] = rows[None]
            kw["input_features_mask"] = torch.ones(1, rows.shape[0], dtype=torch.bool)
        return kw

    def image_rows(self, model, prompt):
        """Every segment's rows in prompt order: the vision path for the image, the drawn rows for the audio."""
        images = super().image_rows(model, prompt)
        audio = list(prompt.audio)
        out, at = [], 0
        for _, l, m in mm_segments(self, prompt.ids):
            if m == MODALITY_IMAGE:
                out.append(images[at : at + l])
                at += l
            else:
                out.append(audio.pop(0))
        assert at == images.shape[0] and not audio
        return torch.cat(out) if out else torch.zeros(0, self.hidden())

    def audio_block(self, gen, n):
        rows = torch.randn((n, self.hidden()), generator=gen, dtype=torch.float32) * GEMMA4_AUDIO_STD
        return [self.audio_placeholder] * n, rows

    def prompts(self):
        """0: audio (12 rows) at the very start, then text; 1: text, audio 8, text, image (closed), text, audio 10,
        text; 2: text, then audio (12 rows) that ends the prompt; 3: text only. Audio runs of 8-12 rows against the
        sliding window 8. The processor's <boa> / <eoa> around an audio run are left out (no in-vocab ids are left
        for them; to the decoder they would be text tokens)."""
        gen = torch.Generator().manual_seed(MM_PROMPT_SEED)
        pix = torch.Generator().manual_seed(PIXEL_SEED)
        aud = torch.Generator().manual_seed(GEMMA4_AUDIO_SEED)
        out = []
        ids0, a0 = self.audio_block(aud, 12)
        out.append(Prompt(ids0 + text_ids(gen, 10), [], ["audio 12 (rows 0-11)", "text 10"], audio=[a0]))
        ids1a, a1a = self.audio_block(aud, 8)
        ids1i, im1 = self.image_block(pix)
        ids1b, a1b = self.audio_block(aud, 10)
        a, b, c, d = text_ids(gen, 5), text_ids(gen, 3), text_ids(gen, 4), text_ids(gen, 3)
        out.append(
            Prompt(
                a + ids1a + b + ids1i + c + ids1b + d,
                [im1],
                ["text 5", "audio 8", "text 3", "image (closed)", "text 4", "audio 10", "text 3"],
                audio=[a1a, a1b],
            )
        )
        ids2, a2 = self.audio_block(aud, 12)
        out.append(Prompt(text_ids(gen, 14) + ids2, [], ["text 14", "audio 12 (the prompt ends on its last row)"], audio=[a2]))
        out.append(Prompt(text_ids(gen, 15), [], ["text 15 (no image, no audio)"]))
        return out

    def extra_expected(self, model, tap, prompt, i):
        segs = mm_segments(self, prompt.ids)
        meta = {"modalities": [MODALITY_NAMES[m] for _, _, m in segs]}
        if prompt.audio:
            meta["audio_rows_rms"] = float(torch.cat(prompt.audio).pow(2).mean().sqrt())
        return {}, meta

    replay_note = (
        " with per_layer_inputs = embed_tokens_per_layer(prompt_<i> with every placeholder replaced by pad_token_id 3) "
        "and mm_token_type_ids from modalities_<i> on the segments (image 1, audio 3)"
    )

    @torch.no_grad()
    def feature_effects(self, model, tap, prompts, token_lists):
        eff = super().feature_effects(model, tap, prompts, token_lists)
        typed_as_image = 0.0
        for prompt, tokens in zip(prompts, token_lists):
            if not prompt.audio:
                continue
            seq = prompt.ids + tokens[:-1]
            base = _uncached(self, model, prompt, seq)
            with self.audio_typed(HF_MM_TOKEN_TYPE[MODALITY_IMAGE]):
                typed_as_image = max(typed_as_image, max_abs(_uncached(self, model, prompt, seq), base))
        eff["audio_rows_typed_as_image_bidirectional_on_sliding_layers"] = typed_as_image
        eff["note"] += (
            "; gemma4_audio: the effects above that name image rows apply to EVERY segment row (image and audio: "
            "placeholder_rows_not_replaced, rows_reversed, per_layer_identity_from_placeholder_id (row 255 at image rows, "
            "row 251 at audio rows), per_layer_projection_from_pad_rows, injected_rows_times_sqrt_hidden); the mask "
            "variants change only the image blocks (prompt 1's image); audio_rows_typed_as_image = the audio rows typed 1 "
            "(image) instead of 3 in mm_token_type_ids, so that they form bidirectional blocks on the sliding layers "
            "(checks.audio_typed_as_vision has the per-prompt numbers and the greedy tokens)"
        )
        return eff

    @torch.no_grad()
    def modality_checks(self, model, prompts, token_lists) -> dict:
        """The audio rows retyped: as image (1) and video (2) they form bidirectional blocks on the sliding layers; as
        text (0) nothing changes (audio 3 is not a block type). Teacher-forced: one uncached forward of
        prompt+tokens[:-1]; greedy: the fixture's own loop (prefill + 15 cached steps) with the retyped prefill."""
        from transformers.models.gemma4.modeling_gemma4 import create_masks_for_vision_model, get_block_sequence_ids_for_mask

        cfg = model.config.text_config
        per_prompt = []
        causal_ok = True
        tap = DecoderTap(self.decoder(model))
        try:
            for i, (prompt, tokens) in enumerate(zip(prompts, token_lists)):
                if not prompt.audio:
                    continue
                seq = prompt.ids + tokens[:-1]
                base = _uncached(self, model, prompt, seq)
                entry = {"prompt": i}
                for name, t in (("image", 1), ("video", 2), ("text", 0)):
                    with self.audio_typed(t):
                        r = _uncached(self, model, prompt, seq)
                        entry[f"typed_as_{name}_teacher_forced_max_abs"] = max_abs(r, base)
                        if name == "image":
                            entry["typed_as_image_teacher_forced_row0_max_abs"] = max_abs(r[0], base[0])
                            entry["typed_as_image_teacher_forced_max_abs_per_row"] = [
                                round(max_abs(r[j], base[j]), 4) for j in range(r.shape[0])
                            ]
                            g_rows, g_toks, _, _ = greedy_mm(self, model, prompt, tap)
                            entry["typed_as_image_greedy_tokens"] = g_toks
                            diff = [j for j, (x, y) in enumerate(zip(g_toks, tokens)) if x != y]
                            entry["typed_as_image_greedy_tokens_differ"] = len(diff)
                            entry["typed_as_image_greedy_first_different_token"] = diff[0] if diff else None
                        if name == "video":
                            entry["typed_as_video_equals_typed_as_image"] = bool(
                                torch.equal(r, _typed(self, model, prompt, seq, 1))
                            )
                # the mask transformers builds: each audio run's first row does not see the run's second row on the
                # sliding layers (causal), and does once the run is typed as image
                for t, want in ((self.audio_type, False), (1, True)):
                    with self.audio_typed(t):
                        kw = self.inputs(prompt, seq)
                    block = get_block_sequence_ids_for_mask(kw["mm_token_type_ids"], device=torch.device("cpu"))
                    hf = create_masks_for_vision_model(
                        config=cfg,
                        inputs_embeds=torch.zeros(1, len(seq), cfg.hidden_size),
                        attention_mask=None,
                        past_key_values=None,
                        position_ids=torch.arange(len(seq))[None],
                        block_sequence_ids=block,
                    )
                    sl = hf["sliding_attention"]
                    sl = sl if sl.dtype == torch.bool else sl == 0
                    for s, l, m in mm_segments(self, prompt.ids):
                        if m == MODALITY_AUDIO:
                            causal_ok &= bool(sl[0, 0, s, s + 1]) == want and bool(sl[0, 0, s + 1, s])
                per_prompt.append(entry)
        finally:
            tap.close()
        assert causal_ok
        assert all(e["typed_as_text_teacher_forced_max_abs"] == 0.0 for e in per_prompt), per_prompt
        assert all(e["typed_as_video_equals_typed_as_image"] for e in per_prompt), per_prompt
        worst = max(e["typed_as_image_teacher_forced_max_abs"] for e in per_prompt)
        return {
            "audio_typed_as_vision": {
                "note": "the audio prompts run with the audio rows' mm_token_type_ids 1 (image) instead of 3 (audio), "
                "everything else equal (same rows, same pad substitution and per-layer inputs): they become "
                "bidirectional blocks on the sliding layers. teacher_forced = max |dlogit| over the 16 logit rows of one "
                "uncached forward of prompt+tokens[:-1] (the fixture's tokens); greedy = the fixture's greedy loop with "
                "the retyped prefill (decode steps carry no token types either way). Typed 2 (video) gives exactly the "
                "typed-1 logits; typed 0 (text) exactly the fixture's (audio 3 is not a block type)",
                "atol": self.atol,
                "max_abs_teacher_forced": worst,
                "max_abs_over_atol": round(worst / self.atol),
                "greedy_tokens_change": any(e["typed_as_image_greedy_tokens_differ"] for e in per_prompt),
                "per_prompt": per_prompt,
                "audio_rows_causal_on_sliding_mask": causal_ok,
            }
        }

    features = [
        f
        for f in Gemma4MM.features
        if not f.startswith("prompt 2 ends") and not f.startswith("images of 16")
    ] + [
        "audio segments at the audio placeholder (audio_token_id 251), typed 3 in mm_token_type_ids as the processor "
        "types them; no audio tower (audio_config null): the rows are random N(0, 0.5) (rms like the vision rows) and "
        "go through transformers' own audio path (pad substitution, per-layer inputs, masked_scatter at the audio ids)",
        "audio rows are NOT bidirectional: get_block_sequence_ids_for_mask makes blocks of types 1 and 2 only, so audio "
        "rows see what a text row at their position sees (causal / sliding-causal); the image rows of prompt 1 are "
        "bidirectional on the sliding layers as in the gemma4 fixture",
        "prompt 0 starts with an audio run (row 0), prompt 1 holds audio 8, an image of 16 and audio 10 (modalities "
        "[audio, image, audio]), prompt 2 ends on the last row of an audio run, so row 0 is the logit vector of an "
        "injected audio row",
        "audio runs of 8, 10 and 12 rows against the sliding window 8: typed as image they would see up to 11 rows ahead",
    ]

    @property
    def notes(self):
        return super().notes + [
            "Audio: no audio tower. Each audio run's rows are drawn from torch.Generator().manual_seed(%d) as "
            "randn([rows, 36]) * %g, in prompt order (prompt 0's run, prompt 1's two runs, prompt 2's run), and passed to "
            "the real Gemma4Model.forward as input_features [1, m, 36] with input_features_mask all True; the instance's "
            "get_audio_features is replaced by a stand-in that returns them as pooler_output, so the pad substitution, "
            "the per-layer inputs and the audio masked_scatter are transformers' own. modalities_<i> records each "
            "segment's modality (0 image, 2 audio here)." % (GEMMA4_AUDIO_SEED, GEMMA4_AUDIO_STD)
        ]

    def multimodal_meta(self, model):
        meta = super().multimodal_meta(model)
        meta["audio"] = {
            "placeholder_id": self.audio_placeholder,
            "mm_token_type_id": HF_MM_TOKEN_TYPE[MODALITY_AUDIO],
            "modality_in_modalities": MODALITY_AUDIO,
            "seed": GEMMA4_AUDIO_SEED,
            "std": GEMMA4_AUDIO_STD,
            "token_types": (
                "Gemma4Processor (return_mm_token_type_ids = True) builds mm_token_type_ids with "
                "ProcessorMixin.create_mm_token_type_ids: 1 at image_token_ids, 2 at video_token_ids, 3 at "
                "audio_token_ids, 0 elsewhere; the prompts here are typed that way (1 at 255, 3 at 251)"
            ),
            "pad_substitution": (
                "as for images: Gemma4Model.forward's multimodal_mask = image | video | audio placeholder ids, so "
                "llm_input_ids has pad_token_id 3 at every audio row; embed_tokens(3) is computed and overwritten, and "
                "the per-layer identity part at audio rows is embed_tokens_per_layer row 3 (not row 251; "
                "multimodal.verified.pad_identity_at_image_rows covers the audio rows here)"
            ),
            "scatter": (
                "inputs_embeds.masked_scatter(input_ids == audio_token_id, audio features with the invalid rows "
                "stripped), after the image scatter; no embedding scale on the injected audio rows, as for images"
            ),
            "per_layer_inputs": (
                "as for images: the projection part reads the injected audio rows (project_per_layer_inputs runs on "
                "the scattered inputs_embeds inside the language model), the identity part the pad row"
            ),
            "mask": (
                "get_block_sequence_ids_for_mask: is_vision = (type == 1) | (type == 2): audio rows (type 3) get block "
                "id -1 like text, so they are causal on the full layers and sliding-causal (k > q - 8 AND k <= q) on the "
                "sliding layers; an engine must not give them the image blocks (checks.audio_typed_as_vision)"
            ),
            "boa_eoa": "left out of the prompts (the class-default ids lie outside this 256-id vocab)",
        }
        return meta


# ---- GLM-5.3-Flash and Mistral Large 4 ----------------------------------------------

# Both composites scatter the image rows with masked_scatter on a plain embedding and hand the text decoder nothing
# else (SEMANTICS_MULTIMODAL.md sections 4 and 7): glm5_next's decoder is NoPE, mistral_large4's takes plain 1-D
# positions, and neither has a media mask. The composite config is the text fixture's (the text families' `build` in
# tools/oracle/fixture_families: frontier.py _cfg_glm5_next, latent.py _cfg_mistral_large4) with in-vocab image ids,
# and every parameter is drawn by the text family's recipe (make_fixtures.make_model's: init rules, buffer draws, row
# scales; one generator over the composite in name order), plus a family's extra_rules ahead of it. The vision towers
# are the text fixtures' one-layer towers cut to 8 wide (MM_VISION_8), run on tiny random images of three sizes, in
# LLM tokens (rows, columns) after the 2x2 spatial merge: A 2x3, B 3x2 (A transposed), C 2x2. Budget: the text
# fixtures' checkpoints are 307 / 314 kB and these expectations 73 kB (4 prompts x 16 rows x 256 logits), so the
# towers are as narrow as their classes allow and glm5_next's experts are cut from 16 to 12 wide (MM_GLM5_NEXT_TEXT,
# as qwen3_5_moe's) to stay under 400 kB. The checkpoints are saved as the text fixtures' are (save_pretrained's
# default: glm5_next's saved layout, mistral_large4's Mistral-native names), so cbc reads the same decoder names.
SIZED_IMAGES = {"A": (2, 3), "B": (3, 2), "C": (2, 2)}
MM_VISION_8 = dict(hidden_size=8, intermediate_size=8)  # 2 heads of 4 (the axial RoPE needs head_dim % 4 == 0)


def _sized_image_prompts(fam):
    """glm5_next and mistral_large4 (images of any size): image B at the start; text, image A, text, image C, text;
    text then image C that ends the prompt (no end-of-image token); text only."""
    gen = torch.Generator().manual_seed(MM_PROMPT_SEED)
    pix = torch.Generator().manual_seed(PIXEL_SEED)
    out = []
    ids_b, im_b = fam.image_block(pix, "B")
    out.append(Prompt(ids_b + text_ids(gen, 12), [im_b], ["image B 3x2 (closed)", "text 12"]))
    ids_a, im_a = fam.image_block(pix, "A")
    ids_c, im_c = fam.image_block(pix, "C")
    a, b, c = text_ids(gen, 7), text_ids(gen, 5), text_ids(gen, 6)
    out.append(
        Prompt(
            a + ids_a + b + ids_c + c,
            [im_a, im_c],
            ["text 7", "image A 2x3 (closed)", "text 5", "image C 2x2 (closed)", "text 6"],
        )
    )
    ids_c2, im_c2 = fam.image_block(pix, "C", close=False)
    t2 = text_ids(gen, 15)
    out.append(Prompt(t2 + ids_c2, [im_c2], ["text 15", "image C 2x2 (open: the prompt ends on its last placeholder)"]))
    out.append(Prompt(text_ids(gen, 17), [], ["text 17 (no image)"]))
    return out


class TextRecipeMM(MMFamily):
    """A composite whose config and init are a text family's (TEXT_FAMILIES[text_family]): glm5_next, mistral_large4,
    nemo_speechlm, inkling_mm_model. Saved by save_pretrained's default layout, its sub_configs in bf16."""

    text_family = ""
    extra_rules: list = []  # (regex, mean, std) rules ahead of the text family's
    sub_configs = ("text_config", "vision_config")

    def rules(self):
        return self.extra_rules + list(TEXT_FAMILIES[self.text_family].get("init_rules") or ())

    def building(self):
        """A context the model is built (and loaded) in."""
        return contextlib.nullcontext()

    def write_checkpoint(self, fam_dir, seed):
        spec = TEXT_FAMILIES[self.text_family]
        with self.building():
            model = self.loader._from_config(self.config(), attn_implementation="eager", dtype=torch.float32)
        reinit_(
            model,
            seed,
            spec["zero_centred_norms"],
            spec.get("std"),
            spec.get("norm_mean"),
            rules=self.rules(),
            buffer_init=spec.get("buffer_init"),
        )
        if spec.get("row_scale"):
            row_scale_(model, spec["row_scale"])
        _save_bf16(model, fam_dir, self.sub_configs)

    def load_kwargs(self):
        return {"experts_implementation": "eager"}

    def decoder(self, model):
        return model.model.language_model

    def prompts(self):
        return _sized_image_prompts(self)

    def feature_effects(self, model, tap, prompts, token_lists):
        return _common_effects(self, model, tap, prompts, token_lists, swap=False)

    def init_meta(self) -> dict:
        spec = TEXT_FAMILIES[self.text_family]
        std = dict(BASE_STD)
        std.update(spec.get("std") or {})
        return {
            "generator": "torch.Generator().manual_seed(seed); every parameter of the composite (decoder, vision tower, "
            "projector) in name order; N(mean, std) then bf16 (make_fixtures.reinit_), then the buffer draws and the row "
            f"scales: the {self.text_family} text fixture's recipe (make_fixtures.make_model)",
            "zero_centred_norms": spec["zero_centred_norms"],
            "norm_mean_overrides": spec.get("norm_mean") or {},
            "rules": [list(r) for r in self.rules()],
            "buffers": [list(r) for r in spec.get("buffer_init") or ()],
            "row_scale": [list(r) for r in spec.get("row_scale") or ()],
            "std": std,
        }


# glm5_next: the chat template's <|begin_of_image|> <|image|> <|end_of_image|>, the <|image|> expanded by
# Glm5NextProcessor.replace_image_token to t*h*w/4 copies (the begin / end ids come from the template, not the
# processor); videos reuse the image placeholder inside video start/end spans (the video ids stay at the class
# defaults, outside this 256-id vocab, so no prompt holds a video span).
GLM5_NEXT_IDS = dict(image_start=252, image_end=253, image=255)
MM_GLM5_NEXT_TEXT = dict(moe_intermediate_size=12)  # routed and shared experts 12 wide (the text fixture: 16)


class Glm5NextMM(TextRecipeMM):
    name = "glm5_next"
    text_family = "glm5_next"
    # 13024: the best of 13000-14399 (`--search-seeds`, 287 of the 1400 without a special token and with a pool-score
    # cut >= 1e-3): margin 0.063 (126x atol), router gap 0.0089, pool-score cut 2.8e-3
    seed = 13024
    atol = 5e-4  # the glm5_next text fixture's
    # Router gaps are held to 16x atol (0.008), below the text MoE fixtures' 0.01 (qwen3_5_moe's 20x): router gaps are
    # small in this family (median 0.0018 over those 1400 seeds; the glm5_next text fixture has 0.014) and no seed had
    # both a router gap >= 0.01 and a margin >= 100x atol. Pool-score cut >= 1e-3, the text fixture's seed criterion.
    router_gap_over_atol = 16
    router_gap_name = "2nd/3rd sigmoid-score cut (logit-equivalent: twice the score gap)"
    index_cut_floor = 1e-3
    # lm_head N(0, 0.5), twice the text recipe's 0.25 (as qwen3_5_moe's): with the text recipe no seed of 13000-13199
    # had a min top-1/top-2 margin >= 100x atol over these 64 logit rows (best 0.049, median 0.008; with 0.5 the
    # median is 0.016). A router N(0, 0.6) as qwen3_5_moe's did not widen the router gaps (13000-13149)
    extra_rules = [(r"^lm_head\.weight$", 0.0, 0.5)]
    loader = transformers.Glm5NextForConditionalGeneration
    placeholder = GLM5_NEXT_IDS["image"]

    def config(self):
        cfg = TEXT_FAMILIES[self.text_family]["build"]()
        for k, v in MM_GLM5_NEXT_TEXT.items():
            setattr(cfg.text_config, k, v)
        for k, v in MM_VISION_8.items():
            setattr(cfg.vision_config, k, v)
        # the merger's output is what is scattered: it must be text-hidden wide (the text fixture's tower, never run,
        # has out_hidden_size 16)
        cfg.vision_config.out_hidden_size = cfg.text_config.hidden_size
        cfg.vision_config.projection_intermediate_size = 8
        cfg.image_token_id = GLM5_NEXT_IDS["image"]
        cfg.image_start_token_id = GLM5_NEXT_IDS["image_start"]
        cfg.image_end_token_id = GLM5_NEXT_IDS["image_end"]
        return cfg

    def image_block(self, gen, key, close=True):
        """An image of h x w LLM tokens = (2h) x (2w) patches of 2x2 pixels, one frame repeated over the temporal
        patch (as the image processor does for a still image), flattened per patch as Conv3d's (C, T, P, P) kernel
        reads it."""
        h, w = SIZED_IMAGES[key]
        m, p, tp = 2, 2, 2  # spatial_merge_size, patch_size, temporal_patch_size
        n = h * w * m * m
        frame = torch.randn((n, 3, 1, p, p), generator=gen, dtype=torch.float32)
        px = frame.expand(n, 3, tp, p, p).reshape(n, -1).contiguous()
        ids = [GLM5_NEXT_IDS["image_start"]] + [self.placeholder] * (h * w)
        if close:
            ids.append(GLM5_NEXT_IDS["image_end"])
        return ids, {"pixels": px, "grid": (1, h * m, w * m), "key": key}

    def inputs(self, prompt, ids):
        kw = {"input_ids": torch.tensor([ids])}
        if prompt.images:
            kw["pixel_values"] = torch.cat([im["pixels"] for im in prompt.images])
            kw["image_grid_thw"] = torch.tensor([im["grid"] for im in prompt.images])
        return kw

    def image_rows(self, model, prompt):
        if not prompt.images:
            return torch.zeros(0, model.config.text_config.hidden_size)
        kw = self.inputs(prompt, prompt.ids)
        out = model.model.get_image_features(kw["pixel_values"], kw["image_grid_thw"], return_dict=True)
        return torch.cat(out.pooler_output, dim=0)

    features = [
        "composite Glm5NextForConditionalGeneration (model_type glm5_next, text glm5_next_text): the glm5_next text "
        "fixture's decoder (4 layers [KDA, indexed full, indexed shared, KDA], mHC 3 streams, NoPE MLA, k-pooled DSA "
        "indexer, MoE on layers 1 and 3, untied head) and init recipe, except moe_intermediate_size 12 (16 there: "
        "routed and shared experts) for the size budget and lm_head N(0, 0.5) (0.25 there) for the margins; image ids "
        "moved into the vocab",
        "vision tower Glm5NextVisionModel: 1 block, hidden 8, 2 heads of 4, 2x2 patches, temporal patch 2, 2-D axial "
        "RoPE, RMSNorm, 2x2 conv downsample to out_hidden_size 64 = the text hidden size, then the patch merger (proj "
        "[64, 64], LayerNorm, GELU, clamped SwiGLU 8 wide) whose output rows are scattered",
        "images of three sizes: A 2x3, B 3x2 (A transposed), C 2x2 LLM tokens (patch grids (1, 4, 6), (1, 6, 4), (1, 4, 4))",
        "prompt format: <|begin_of_image|> <|image|> x (h*w) <|end_of_image|> (the chat template's begin / end around "
        "the <|image|> that Glm5NextProcessor expands); only the <|image|> ids (image_token_id 255) are replaced",
        "prompt 2 ends on the placeholder run itself (no <|end_of_image|>), so row 0 is the logit vector of an injected row",
    ]

    def multimodal_meta(self, model):
        return {
            "placeholder_id": self.placeholder,
            "special_ids": GLM5_NEXT_IDS,
            "placeholder_ids_ge_vocab": False,
            "scatter": (
                "Glm5NextModel.forward: inputs_embeds = language_model.embed_tokens(input_ids) (no scale, no norm), then "
                "masked_scatter(image mask, cat(visual(pixel_values, image_grid_thw).pooler_output)) with image mask = "
                "(input_ids == image_token_id) AND NOT inside a video_start/video_end span; the pooler_output is the "
                "patch merger's, h*w rows per image in raster order over the LLM grid. The decoder then copies each row "
                "into the hc_mult 3 streams like any row"
            ),
            "placeholder_embedding": "embed_tokens(255) is computed and overwritten; it never reaches the decoder",
            "positions": "none: the decoder is NoPE (no rotary anywhere; the KDA layers are recurrent, the DSA indexer "
            "and MLA use no positions); the 1-D position_ids transformers builds reach no computation",
            "mask": "the text masks (causal DSA selection, causal KDA recurrence); no image-specific mask; "
            "mm_token_type_ids is accepted by the forward and dropped",
            "video_ids": "video_start / video_end / video_token ids at the class defaults (154832, 154833, 154855), "
            "outside this 256-id vocab: no prompt has a video span",
        }


# mistral_large4 (Pixtral's prompt format): per image row [IMG] x w then [IMG_BREAK], the last [IMG_BREAK] replaced by
# [IMG_END], so an image of h rows is h runs of w placeholders. The class default image_token_index 10 lies among the
# prompts' text ids: moved to 255.
ML4_IDS = dict(image=255, image_break=253, image_end=254)


class MistralLarge4MM(TextRecipeMM):
    name = "mistral_large4"
    text_family = "mistral_large4"
    # 14428: the best of 14000-14799 (`--search-seeds`; margins are small in this family, median 0.0055)
    seed = 14428
    atol = 2.5e-4  # the mistral_large4 text fixture's
    # router gaps held to 0.01 = 40x atol (the text MoE fixtures' floor; the text fixture has 0.031): with 100x, no seed
    # of the 800 had both that and the 100x atol margin
    router_gap_over_atol = 40
    router_gap_name = "expert/group cut (raw logit units)"
    index_cut_floor = 1e-4  # the text fixture's seed criterion (the DSA fixtures' floor)
    loader = transformers.MistralLarge4ForConditionalGeneration
    placeholder = ML4_IDS["image"]
    pixels_per_token = 4  # patch_size 2 x spatial_merge_size 2

    def config(self):
        cfg = TEXT_FAMILIES[self.text_family]["build"]()
        for k, v in dict(MM_VISION_8, head_dim=4).items():
            setattr(cfg.vision_config, k, v)
        cfg.image_token_index = ML4_IDS["image"]
        return cfg

    def image_block(self, gen, key, close=True):
        """An image of h x w LLM tokens = (4h) x (4w) pixels (patches of 2x2 pixels, merged 2x2)."""
        h, w = SIZED_IMAGES[key]
        s = self.pixels_per_token
        px = torch.randn((3, h * s, w * s), generator=gen, dtype=torch.float32)
        ids = []
        for _ in range(h):
            ids += [self.placeholder] * w + [ML4_IDS["image_break"]]
        ids[-1] = ML4_IDS["image_end"]
        if not close:
            ids.pop()
        return ids, {"pixels": px, "key": key}

    def inputs(self, prompt, ids):
        kw = {"input_ids": torch.tensor([ids])}
        if prompt.images:
            # as PixtralImageProcessor batches them: zero-padded to the largest height and width, true sizes apart
            sizes = [tuple(im["pixels"].shape[1:]) for im in prompt.images]
            px = torch.zeros(len(sizes), 3, max(h for h, _ in sizes), max(w for _, w in sizes))
            for k, im in enumerate(prompt.images):
                px[k, :, : sizes[k][0], : sizes[k][1]] = im["pixels"]
            kw["pixel_values"] = px
            kw["image_sizes"] = torch.tensor(sizes)
        return kw

    def image_rows(self, model, prompt):
        if not prompt.images:
            return torch.zeros(0, model.config.text_config.hidden_size)
        kw = self.inputs(prompt, prompt.ids)
        out = model.model.get_image_features(pixel_values=kw["pixel_values"], image_sizes=kw["image_sizes"], return_dict=True)
        return torch.cat(out.pooler_output, dim=0)

    def checkpoint_names(self, names) -> dict:
        """The Mistral-native layout (no `.layers.` prefix, no embed_tokens / lm_head): build_family's generic
        summary does not apply."""
        decoder = ("layers.", "tok_embeddings.", "norm.", "output.", "lerope.")
        assert {"tok_embeddings.weight", "output.weight", "norm.weight", "lerope.alpha"} <= set(names)
        return {
            "decoder_layers": ["layers.N.*"],
            "embed_tokens": ["tok_embeddings.weight"],
            "lm_head": ["output.weight"],
            "other_decoder": ["norm.weight", "lerope.alpha"],
            "other_prefixes": sorted({n.split(".")[0] for n in names if not n.startswith(decoder)}),
            "note": "Mistral-native names, as save_pretrained writes them (it reverts conversion_mapping's "
            "mistral_large4 and mistral_large4_text entries), the same decoder names as the mistral_large4 text fixture",
        }

    features = [
        "composite MistralLarge4ForConditionalGeneration (model_type mistral_large4, text mistral_large4_text): the "
        "mistral_large4 text fixture's decoder config and init recipe unchanged (4 layers, MLA without q-LoRA, LeRoPE, "
        "log-position query scaling, DSA indexers full/shared, latent-KV sharing, MoE on layer 1, softcap 10, untied "
        "head), image_token_index 255 instead of the class default 10",
        "vision tower PixtralVisionModel: 1 layer, hidden 8, 2 heads of 4, 2x2 patches, 2-D axial RoPE, block-diagonal "
        "attention per image; projector: RMSNorm (eps rms_norm_eps), patch merger (2x2 unfold, merging_layer [8, 32]), "
        "linear_1 [64, 8], GELU, linear_2 [64, 64]",
        "images of three sizes: A 2x3, B 3x2 (A transposed), C 2x2 LLM tokens (8x12, 12x8, 8x8 pixels), zero-padded "
        "to a common size per prompt with image_sizes",
        "prompt format of PixtralProcessor: per image row [IMG] x w [IMG_BREAK], the last [IMG_BREAK] replaced by "
        "[IMG_END]: an image of h rows is h placeholder runs (segments) separated by [IMG_BREAK]; only the [IMG] ids "
        "(image_token_index 255) are replaced",
        "prompt 2 ends on the placeholder run itself (no [IMG_END]), so row 0 is the logit vector of an injected row",
    ]

    def multimodal_meta(self, model):
        return {
            "placeholder_id": self.placeholder,
            "special_ids": ML4_IDS,
            "placeholder_ids_ge_vocab": False,
            "scatter": (
                "MistralLarge4Model.forward: inputs_embeds = language_model.embed_tokens(input_ids) (no scale, no norm), "
                "then masked_scatter(input_ids == image_token_index, cat(multi_modal_projector(vision_tower(pixel_values, "
                "image_sizes).hidden_states[-1], image_sizes))): h*w rows per image in raster order over the LLM grid, "
                "spread over the image's h placeholder runs (the [IMG_BREAK] / [IMG_END] rows between them are text). "
                "The decoder runs on those rows with no norm or scale"
            ),
            "placeholder_embedding": "embed_tokens(255) is computed and overwritten; it never reaches the decoder",
            "positions": "plain 1-D positions 0..n-1 for every token, images included (RoPE layers' LeRoPE and every "
            "layer's log-position query scaling by absolute index); decode continues at n + j",
            "mask": "the text mask (causal, DSA top-k); no image-specific mask",
        }


# ---- Nemotron 3.5 Transcribe (nemo_speechlm) ---------------------------------------

# The composite Nemotron3_5TranscribeForConditionalGeneration: the nemotron_h text fixture's decoder config unchanged
# (tools/oracle/fixture_families/mamba.py _cfg_nemotron_h: 6 layers [mamba, moe, mamba, attention, mamba, mlp], hidden
# 32, vocab 256) and init recipe (MAMBA_INIT_RULES, e_score_correction_bias buffers, one generator over the composite in
# name order), and the smallest audio model its config classes allow: the speech recognition encoder and the
# diarization model 8 wide with one layer each, 8 mel bins stacked 4 frames at a time (subsampling_factor 4: one audio
# row per 4 spectrogram frames, the last group zero-padded), 2 speakers, both run in chunks of 8 encoder frames with 2
# frames of context on either side (so clips B and C, 12 and 10 rows, are encoded in two chunks); the word timestamp
# encoder and head (never on the decoder's path) 8 wide with 4 classes. audio_token_id = the text vocabulary's size
# 256, as the released model's 131072 with its 131072-row vocabulary: _embed_input_ids looks it up as token 0 before
# the scatter. The towers stay in the checkpoint (as the other composites' vision towers do): the oracle reloads the
# whole composite from it and runs the real audio model on every prompt.
NEMO_AUDIO_ID = VOCAB
NEMO_SUBSAMPLING = 4
NEMO_MEL_BINS = 8
NEMO_ENCODER = dict(
    hidden_size=8,
    intermediate_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_mel_bins=NEMO_MEL_BINS,
    subsampling_factor=NEMO_SUBSAMPLING,
)
NEMO_SPEAKERS = 2
NEMO_DIARIZATION = dict(
    audio_config=dict(NEMO_ENCODER),
    head_config=dict(hidden_size=8, num_speakers=NEMO_SPEAKERS, audio_hidden_size=8, subsampling_factor=NEMO_SUBSAMPLING),
    streaming_config=dict(
        num_speakers=NEMO_SPEAKERS,
        subsampling_factor=NEMO_SUBSAMPLING,
        fifo_length=8,
        speaker_cache_update_period=4,
        speaker_cache_length=8,
    ),
    chunk_length=8,
    chunk_left_context=2,
    chunk_right_context=2,
    fifo_length=4,
    speaker_cache_update_period=4,
)
NEMO_WORD_TIMESTAMP = dict(
    hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=2, vocab_size=4, blank_token_id=3
)
# clip lengths in spectrogram frames -> ceil(frames / 4) audio rows: A 30 -> 8, B 45 -> 12, C 37 -> 10 (none a multiple
# of 4, so every clip's last row comes from a zero-padded group)
NEMO_CLIPS = {"A": 30, "B": 45, "C": 37}
NEMO_AUDIO_SEED = 20250614


class NemoSpeechLmMM(TextRecipeMM):
    name = "nemo_speechlm"
    text_family = "nemotron_h"
    # 15882 of 15000-15999 (--search-seeds 15000 1000: min top-1/top-2 margin 0.041 = 166x atol, router gap 0.013 = 53x
    # atol, the only seed with margin >= 100x and router gap >= 40x atol and no special among the greedy tokens)
    seed = 15882
    atol = 2.5e-4  # the nemotron_h text fixture's
    router_gap_over_atol = 40  # 0.01 logit-equivalent, the nemotron_h text fixture's seed floor
    router_gap_name = "2nd/3rd biased sigmoid score (logit-equivalent, x2)"
    loader = transformers.Nemotron3_5TranscribeForConditionalGeneration
    placeholder = NEMO_AUDIO_ID

    def segment_ids(self):
        return {NEMO_AUDIO_ID: MODALITY_AUDIO}

    def config(self):
        text = TEXT_FAMILIES[self.text_family]["build"]()
        return transformers.Nemotron3_5TranscribeConfig(
            text_config=text.to_dict(),
            audio_config=dict(asr_config=dict(NEMO_ENCODER), diarization_config=copy.deepcopy(NEMO_DIARIZATION)),
            word_timestamp_config=dict(NEMO_WORD_TIMESTAMP),
            audio_token_id=NEMO_AUDIO_ID,
        )

    # Saved by save_pretrained's default, NeMo's layout (llm.model.*, llm.lm_head, perception.*, ctc_timestamp.*).
    sub_configs = ("text_config", "audio_config", "word_timestamp_config")

    def embed(self, model, ids):
        """_embed_input_ids: the audio id (== the text vocab size) is looked up as token 0."""
        return model.model._embed_input_ids(torch.tensor([ids]))[0]

    def clip(self, gen, key):
        """A random 'log-mel spectrogram' [frames, 8] (the audio model normalises each mel bin over the clip's frames
        for the speech encoder; the diarization model reads it as it is) and its audio placeholders."""
        frames = NEMO_CLIPS[key]
        feats = torch.randn((frames, NEMO_MEL_BINS), generator=gen, dtype=torch.float32)
        rows = -(-frames // NEMO_SUBSAMPLING)
        return [NEMO_AUDIO_ID] * rows, {"features": feats, "key": key, "frames": frames, "rows": rows}

    def inputs(self, prompt, ids):
        kw = {"input_ids": torch.tensor([ids])}
        if prompt.audio:
            # as the processor batches a prompt's clips: zero-padded on the right to the longest, then to a multiple of
            # subsampling_factor frames; input_features_mask marks each clip's own frames
            frames = [c["frames"] for c in prompt.audio]
            width = -(-max(frames) // NEMO_SUBSAMPLING) * NEMO_SUBSAMPLING
            feats = torch.zeros(len(frames), width, NEMO_MEL_BINS)
            mask = torch.zeros(len(frames), width, dtype=torch.long)
            for k, c in enumerate(prompt.audio):
                feats[k, : c["frames"]] = c["features"]
                mask[k, : c["frames"]] = 1
            kw["input_features"] = feats
            kw["input_features_mask"] = mask
        return kw

    def image_rows(self, model, prompt):
        if not prompt.audio:
            return torch.zeros(0, model.config.text_config.hidden_size)
        kw = self.inputs(prompt, prompt.ids)
        out = model.model.get_audio_features(kw["input_features"], kw["input_features_mask"], return_dict=True)
        return out.pooler_output

    def prompts(self):
        """0: clip A (8 rows) at the very start, then text; 1: text, clip B (12 rows), text, clip A' (8 rows), text (two
        clips of different lengths in one batch: A' is padded to B's 48 frames); 2: text, then clip C (10 rows) that
        ends the prompt; 3: text only. No begin/end-of-audio ids: the processor writes the audio token run alone."""
        gen = torch.Generator().manual_seed(MM_PROMPT_SEED)
        aud = torch.Generator().manual_seed(NEMO_AUDIO_SEED)
        out = []
        ids0, c0 = self.clip(aud, "A")
        out.append(Prompt(ids0 + text_ids(gen, 10), [], ["audio A (30 frames, 8 rows 0-7)", "text 10"], audio=[c0]))
        ids1b, c1b = self.clip(aud, "B")
        ids1a, c1a = self.clip(aud, "A")
        a, b, c = text_ids(gen, 5), text_ids(gen, 4), text_ids(gen, 3)
        out.append(
            Prompt(
                a + ids1b + b + ids1a + c,
                [],
                ["text 5", "audio B (45 frames, 12 rows)", "text 4", "audio A (30 frames, 8 rows)", "text 3"],
                audio=[c1b, c1a],
            )
        )
        ids2, c2 = self.clip(aud, "C")
        layout2 = ["text 14", "audio C (37 frames, 10 rows; the prompt ends on its last row)"]
        out.append(Prompt(text_ids(gen, 14) + ids2, [], layout2, audio=[c2]))
        out.append(Prompt(text_ids(gen, 15), [], ["text 15 (no audio)"]))
        return out

    def extra_expected(self, model, tap, prompt, i):
        meta = {"modalities": [MODALITY_NAMES[m] for _, _, m in mm_segments(self, prompt.ids)]}
        if prompt.audio:
            meta["audio_clips"] = [{"key": c["key"], "frames": c["frames"], "rows": c["rows"]} for c in prompt.audio]
        return {}, meta

    replay_note = " (the audio ids, == the text vocab size, embedded as token 0 before the overwrite)"

    features = [
        "composite Nemotron3_5TranscribeForConditionalGeneration (model_type nemo_speechlm, text nemotron_h): the "
        "nemotron_h text fixture's decoder config unchanged (6 layers [mamba, moe, mamba, attention, mamba, mlp], hidden "
        "32, Mamba2 8 heads of 6 with n_groups 2, NoPE GQA attention, relu2 MLPs, sigmoid-routed MoE top-2 of 4 with "
        "e_score_correction_bias and a shared expert, untied head) and init recipe",
        "checkpoint in NeMo's layout as save_pretrained writes it by default: llm.model.embed_tokens, "
        "llm.model.layers.N.{norm, mixer.*} with Mamba's mixer._fp32_params.{A_log, D, dt_bias}, llm.model.norm, "
        "llm.lm_head; the audio model under perception.*, the word timestamp encoder and head under ctc_timestamp.*",
        "audio_token_id 256 == the text vocab size (as released: 131072 == 131072): no embedding row; "
        "_embed_input_ids looks it up as token 0, then masked_scatter overwrites those rows",
        "audio model Nemotron3_5TranscribeAudioModel: speech encoder (per-mel-bin normalisation, 4-frame stacking "
        "projection 32 -> 8, 1 layer hidden 8, 2 heads with q/k LayerNorms and partial RoPE) and diarization model "
        "(1 layer, 2 speakers, speaker cache / FIFO) run in chunks of 8 encoder frames with 2 frames of context; "
        "speaker activities (> 0.5) embedded and added after asr_norm; projector multi_modal_projector [32, 8] + bias",
        "clips of 30, 45 and 37 spectrogram frames -> 8, 12 and 10 audio rows (post_length = ceil(frames / 4)); prompt 1 "
        "batches clips of 45 and 30 frames, so the shorter one's rows past its post_length are dropped",
        "prompt 0 starts with an audio run (row 0), prompt 1 holds two audio runs of different lengths, prompt 2 ends on "
        "the last row of an audio run, so row 0 is the logit vector of an injected audio row",
    ]

    @property
    def notes(self):
        return [
            "Audio: each clip is a random [frames, 8] 'log-mel spectrogram' (N(0, 1) from torch.Generator().manual_seed"
            "(%d), drawn in prompt order: A, B, A', C), no feature extractor; a prompt's clips are batched as the "
            "processor does (zero-padded on the right to the longest clip rounded up to a multiple of 4 frames, "
            "input_features_mask 1 on each clip's frames) and run through this checkpoint's real audio model and "
            "projector. modalities_<i> is 2 (audio) for every segment." % NEMO_AUDIO_SEED,
            "Checkpoint: checkpoint_names.decoder_layers also lists the audio model's and the word timestamp encoder's "
            "layer prefixes (perception.*, ctc_timestamp.*: build_family takes every prefix before '.layers.'); the "
            "decoder's own is llm.model.",
        ]

    def multimodal_meta(self, model):
        return {
            "placeholder_id": NEMO_AUDIO_ID,
            "special_ids": {"audio": NEMO_AUDIO_ID},
            "placeholder_ids_ge_vocab": True,
            "subsampling_factor": NEMO_SUBSAMPLING,
            "placeholder_embedding": (
                "Nemotron3_5TranscribeModel._embed_input_ids: audio_token_id 256 >= text vocab_size 256, so the audio "
                "ids are replaced by 0 before embeddings(ids) (plain nn.Embedding, no scale); row 0 is computed and "
                "then overwritten, it never reaches the decoder"
            ),
            "scatter": (
                "Nemotron3_5TranscribeModel.forward: inputs_embeds.masked_scatter(input_ids == audio_token_id, "
                "get_audio_features(input_features, input_features_mask).pooler_output) = multi_modal_projector("
                "audio_tower(...).last_hidden_state) with the first post_length = ceil(valid frames / 4) rows of each "
                "clip kept, clips in batch order. The decoder then runs on inputs_embeds as for text (no norm or scale "
                "on the injected rows). embeds_<i> are those rows as the decoder received them (pre-hook on "
                "language_model) and equal get_audio_features' pooler_output (checks.embeds_match_feature_path)"
            ),
            "positions": "none: Nemotron-H attention has no RoPE and the Mamba layers are position-free",
            "mask": "the text masks (causal attention, padding mask for Mamba); no audio-specific mask",
            "boa_eoa": "none: the processor writes the audio token run alone",
        }


# ---- Inkling (inkling_mm_model) ----------------------------------------------------

# The composite InklingForConditionalGeneration (SEMANTICS_MULTIMODAL.md section 5): the inkling_text text fixture's
# decoder config unchanged (tools/oracle/fixture_families/frontier.py _cfg_inkling_text: 3 layers [hybrid_sliding,
# hybrid_sliding, hybrid], no RoPE, relative bias, log scaling on the full layer, four short convs per layer, dense layer
# 0, MoE top-2 of 4 with 2 shared experts as softmax sinks on layers 1-2, embed_norm, untied head behind the muP divisor)
# and init recipe (INKLING_INIT_RULES, the e_score_correction_bias buffers; one generator over the composite in name
# order), and the smallest towers the config classes allow. Vision: InklingVisionModel with n_layers 1 on 2x2 patches
# of 2 frames (the image processor repeats a still image over temporal_patch_size 2): every patch is one LLM row,
# final_norm(projection(fold(patch))), projection [64, 24] (plan_out_scales [1,1,1,3] -> [2,2,2,1536]: the one layer
# goes straight to the text width, no layer norm, no GELU); the patches are cut as InklingImageProcessor cuts them
# (ceil(h / 2) rows of w // 2 + 1 columns, partial and empty patches padded with the raw value -1, then rescaled and
# CLIP-normalised). Audio: InklingAudioModel with 4 dMel bins of 16 levels (the processor's num_dmel_bins): every
# frame is one LLM row, norm(sum over bins b of embed_audio_tokens[16 b + level_b]). The ids are the release's roles
# in the reserved ids: image 255 (release 200054), audio 254 (200053), image bos 253 (200005), audio bos 252 (200020);
# the bos ids are ordinary text rows. plan_out_scales imports scipy's linear_sum_assignment whenever n_layers < the
# number of scales (3 here); the oracle environment has no scipy, so _inkling_scipy_stand_in lends it an exact brute
# force one while the model is built (with n_layers 1 both indices it returns are overwritten by plan_out_scales).
INKLING_IDS = dict(image=255, audio=254, image_bos=253, audio_bos=252)
INKLING_PATCH = 2
INKLING_VISION = dict(
    patch_size=INKLING_PATCH,
    temporal_patch_size=2,
    num_channels=3,
    num_hidden_layers=1,
    hidden_size=8,  # read by nothing in InklingVisionModel (the widths come from plan_out_scales)
    num_attention_heads=2,  # likewise (the tower has no attention)
)
INKLING_AUDIO = dict(n_mel_bins=4, mel_vocab_size=16)
# images (height, width) in pixels -> ceil(h / 2) x (w // 2 + 1) patches = LLM rows: A 4x5 -> 2x3 = 6 (its last column
# half padding), B 6x8 -> 3x5 = 15 (its last column all padding: w // 2 + 1 columns even when 2 divides w)
INKLING_IMAGES = {"A": (4, 5), "B": (6, 8)}
INKLING_CLIPS = {"A": 7, "B": 10, "C": 9}  # frames = audio rows
INKLING_AUDIO_SEED = 20250615


def _inkling_lsa(cost):
    """scipy.optimize.linear_sum_assignment by brute force (exact; plan_out_scales' cost matrices are at most a few
    rows): the assignment of rows to distinct columns with the smallest total cost."""
    import itertools

    import numpy as np

    n, m = cost.shape
    best = min(itertools.permutations(range(m), n), key=lambda p: sum(float(cost[i, p[i]]) for i in range(n)))
    return np.arange(n), np.asarray(best)


@contextlib.contextmanager
def _inkling_scipy_stand_in():
    """scipy.optimize as plan_out_scales imports it, while InklingVisionModel is built (real scipy if installed)."""
    try:
        import scipy.optimize  # noqa: F401
    except ImportError:
        pass
    else:
        yield
        return
    import importlib.machinery
    import types

    mods = {}
    for name in ("scipy", "scipy.optimize"):
        mods[name] = types.ModuleType(name)
        mods[name].__spec__ = importlib.machinery.ModuleSpec(name, None)
    mods["scipy.optimize"].linear_sum_assignment = _inkling_lsa
    mods["scipy"].optimize = mods["scipy.optimize"]
    sys.modules.update(mods)
    try:
        yield
    finally:
        for name in mods:
            sys.modules.pop(name, None)


class InklingMM(TextRecipeMM):
    name = "inkling_mm_model"
    text_family = "inkling_text"
    # 17303 of 17000-17399 (--search-seeds 17000 400: min top-1/top-2 margin 0.051 = 204x atol, router gap 0.032 = 129x
    # atol, the best score; 6 of the 400 reach 100x atol on both with no special among the greedy tokens)
    seed = 17303
    atol = 2.5e-4  # the inkling_text text fixture's
    router_gap_over_atol = 40  # 0.01 logit-equivalent, the inkling_text text fixture's seed floor
    router_gap_name = "2nd/3rd biased sigmoid score (logit-equivalent, x2)"
    loader = transformers.InklingForConditionalGeneration
    placeholder = INKLING_IDS["image"]

    def segment_ids(self):
        return {INKLING_IDS["image"]: MODALITY_IMAGE, INKLING_IDS["audio"]: MODALITY_AUDIO}

    def config(self):
        text = TEXT_FAMILIES[self.text_family]["build"]()
        return transformers.InklingConfig(
            text_config=text.to_dict(),
            vision_config=dict(INKLING_VISION),
            audio_config=dict(INKLING_AUDIO),
            image_token_id=INKLING_IDS["image"],
            audio_token_id=INKLING_IDS["audio"],
            image_bos_token_id=INKLING_IDS["image_bos"],
            audio_bos_token_id=INKLING_IDS["audio_bos"],
        )

    # Saved by save_pretrained's default, the hub layout (model.llm.*, model.visual.*, model.audio.*).
    sub_configs = ("text_config", "vision_config", "audio_config")

    def building(self):
        return _inkling_scipy_stand_in()

    def load(self, fam_dir):
        with self.building():
            return super().load(fam_dir)

    def hidden(self):
        return TEXT_FAMILIES[self.text_family]["build"]().hidden_size

    def image_block(self, gen, key):
        """An image of h x w already-normalised pixels (N(0, 1)) cut into patches as InklingImageProcessor cuts
        them: ceil(h / 2) rows of w // 2 + 1 columns in raster order, the pixels past the image filled with the raw
        value -1 rescaled and normalised ((-1/255 - mean_c) / std_c), each patch repeated over the 2 frames:
        pixel_values [N, 2, 2, 2, 3] (patch, t, y, x, channel). Its ids: the image bos, then one placeholder per
        patch."""
        from transformers.utils.constants import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD

        h, w = INKLING_IMAGES[key]
        p = INKLING_PATCH
        rows, cols = -(-h // p), w // p + 1
        img = torch.randn((3, h, w), generator=gen, dtype=torch.float32)
        fill = (-1.0 / 255 - torch.tensor(OPENAI_CLIP_MEAN)) / torch.tensor(OPENAI_CLIP_STD)
        canvas = fill[:, None, None].expand(3, rows * p, cols * p).clone()
        canvas[:, :h, :w] = img
        patches = canvas.reshape(3, rows, p, cols, p).permute(1, 3, 0, 2, 4).reshape(rows * cols, 3, p, p)
        px = patches[..., None].repeat(1, 1, 1, 1, 2).permute(0, 4, 2, 3, 1).contiguous()
        ids = [INKLING_IDS["image_bos"]] + [INKLING_IDS["image"]] * (rows * cols)
        return ids, {"pixels": px, "key": key, "pixels_hw": [h, w], "patches_hw": [rows, cols]}

    def clip(self, gen, key):
        """A clip of dMel codes [frames, 4] (levels uniform in 0..15, as the processor's quantised log-mels) and its
        ids: the audio bos, then one placeholder per frame."""
        frames = INKLING_CLIPS[key]
        n_bins, levels = INKLING_AUDIO["n_mel_bins"], INKLING_AUDIO["mel_vocab_size"]
        codes = torch.randint(0, levels, (frames, n_bins), generator=gen, dtype=torch.int32)
        return [INKLING_IDS["audio_bos"]] + [INKLING_IDS["audio"]] * frames, {"codes": codes, "key": key, "frames": frames}

    def inputs(self, prompt, ids):
        kw = {"input_ids": torch.tensor([ids])}
        if prompt.images:
            kw["pixel_values"] = torch.cat([im["pixels"] for im in prompt.images])
        if prompt.audio:
            # as the processor batches a prompt's clips: padded on the right to the longest (the padding frames are
            # code 0 here; the mask drops them before the tower), audio_input_ids_mask 1 on each clip's own frames
            frames = [c["frames"] for c in prompt.audio]
            codes = torch.zeros(len(frames), max(frames), INKLING_AUDIO["n_mel_bins"], dtype=torch.int32)
            mask = torch.zeros(len(frames), max(frames), dtype=torch.int32)
            for k, c in enumerate(prompt.audio):
                codes[k, : c["frames"]] = c["codes"]
                mask[k, : c["frames"]] = 1
            kw["audio_input_ids"] = codes
            kw["audio_input_ids_mask"] = mask
        return kw

    def image_rows(self, model, prompt):
        """Every segment's rows in prompt order, from the composite's own feature paths: get_image_features for the
        image segments, get_audio_features for the audio segments."""
        kw = self.inputs(prompt, prompt.ids)
        H = self.hidden()
        images = (
            model.model.get_image_features(kw["pixel_values"], return_dict=True).pooler_output.reshape(-1, H)
            if prompt.images
            else torch.zeros(0, H)
        )
        audio = (
            model.model.get_audio_features(kw["audio_input_ids"], kw["audio_input_ids_mask"]).pooler_output.reshape(-1, H)
            if prompt.audio
            else torch.zeros(0, H)
        )
        out, at = [], {MODALITY_IMAGE: 0, MODALITY_AUDIO: 0}
        src = {MODALITY_IMAGE: images, MODALITY_AUDIO: audio}
        for _, l, m in mm_segments(self, prompt.ids):
            out.append(src[m][at[m] : at[m] + l])
            at[m] += l
        assert at[MODALITY_IMAGE] == images.shape[0] and at[MODALITY_AUDIO] == audio.shape[0]
        return torch.cat(out) if out else torch.zeros(0, H)

    def prompts(self):
        """0: image A (6 rows) right after its bos at the start, then text; 1: text, audio A (7 rows), text, image B
        (15 rows), text, audio B (10 rows), text (two clips of different lengths batched: A is padded to 10 frames);
        2: text, then audio C (9 rows) that ends the prompt; 3: text only."""
        gen = torch.Generator().manual_seed(MM_PROMPT_SEED)
        pix = torch.Generator().manual_seed(PIXEL_SEED)
        aud = torch.Generator().manual_seed(INKLING_AUDIO_SEED)
        out = []
        ids0, im0 = self.image_block(pix, "A")
        out.append(Prompt(ids0 + text_ids(gen, 12), [im0], ["image bos", "image A 4x5 px (6 rows 1-6)", "text 12"]))
        ids1a, c1a = self.clip(aud, "A")
        ids1i, im1 = self.image_block(pix, "B")
        ids1b, c1b = self.clip(aud, "B")
        a, b, c, d = text_ids(gen, 5), text_ids(gen, 3), text_ids(gen, 4), text_ids(gen, 3)
        out.append(
            Prompt(
                a + ids1a + b + ids1i + c + ids1b + d,
                [im1],
                ["text 5", "audio bos", "audio A (7 rows)", "text 3", "image bos", "image B 6x8 px (15 rows)", "text 4",
                 "audio bos", "audio B (10 rows)", "text 3"],
                audio=[c1a, c1b],
            )
        )
        ids2, c2 = self.clip(aud, "C")
        layout2 = ["text 14", "audio bos", "audio C (9 rows; the prompt ends on its last row)"]
        out.append(Prompt(text_ids(gen, 14) + ids2, [], layout2, audio=[c2]))
        out.append(Prompt(text_ids(gen, 15), [], ["text 15 (no image, no audio)"]))
        return out

    def extra_expected(self, model, tap, prompt, i):
        meta = {"modalities": [MODALITY_NAMES[m] for _, _, m in mm_segments(self, prompt.ids)]}
        if prompt.images:
            meta["images"] = [
                {"key": im["key"], "pixels_hw": im["pixels_hw"], "patches_hw": im["patches_hw"]} for im in prompt.images
            ]
        if prompt.audio:
            meta["audio_clips"] = [{"key": c["key"], "frames": c["frames"]} for c in prompt.audio]
        return {}, meta

    def init_meta(self) -> dict:
        meta = super().init_meta()
        meta["generator"] = meta["generator"].replace("(decoder, vision tower, projector)", "(decoder, vision and audio towers)")
        meta["names"] = "the rules match the in-memory names (model.language_model.*, lm_head.weight), drawn before saving"
        return meta

    def checkpoint_names(self, names) -> dict:
        """The hub layout (model.llm.*): build_family's generic summary (embed_tokens / lm_head suffixes) does not
        apply."""
        llm = ("model.llm.embed.weight", "model.llm.embed_norm.weight", "model.llm.norm.weight", "model.llm.unembed.weight")
        assert set(llm) <= set(names)
        return {
            "decoder_layers": ["model.llm.layers.N.*"],
            "embed_tokens": ["model.llm.embed.weight"],
            "embed_norm": ["model.llm.embed_norm.weight"],
            "lm_head": ["model.llm.unembed.weight"],
            "other_decoder": ["model.llm.norm.weight"],
            "other_prefixes": sorted({".".join(n.split(".")[:2]) for n in names if not n.startswith("model.llm.")}),
            "note": "the hub layout as save_pretrained writes it by default (it reverts conversion_mapping's "
            "inkling_mm_model entry): attn.{wq_du, wk_dv, wv_dv, wr_du, wo_ud}, attn_norm / mlp_norm, interleaved "
            "gate/up mlp.w13_dn.weight (dense) and mlp.experts.w13_weight / shared_experts.shared_w13_weight (MoE), "
            "mlp.gate.bias = e_score_correction_bias; NOT the inkling_text text fixture's runtime names",
        }

    replay_note = " (the image / audio placeholder ids embedded and normed like text before the overwrite)"

    @torch.no_grad()
    def feature_effects(self, model, tap, prompts, token_lists):
        eff = super().feature_effects(model, tap, prompts, token_lists)
        embed_norm = model.model.language_model.embed_tokens.embed_norm
        normed = 0.0
        for prompt, tokens in zip(prompts, token_lists):
            if not prompt.has_mm:
                continue
            seq = prompt.ids + tokens[:-1]
            base = _uncached(self, model, prompt, seq)
            tap.rewrite = _replace_rows_rewrite(mm_positions(self, prompt.ids), embed_norm(self.image_rows(model, prompt)))
            try:
                normed = max(normed, max_abs(_uncached(self, model, prompt, seq), base))
            finally:
                tap.rewrite = None
        eff["injected_rows_through_embed_norm"] = normed
        eff["note"] += (
            "; inkling_mm_model: the effects that name image rows apply to EVERY segment row (image and audio; prompts "
            "0-2); injected_rows_through_embed_norm = the injected rows passed through embed_norm as the text rows are "
            "(transformers scatters them after the norm)"
        )
        return eff

    features = [
        "composite InklingForConditionalGeneration (model_type inkling_mm_model, text inkling_text): the inkling_text "
        "text fixture's decoder config unchanged (3 layers [hybrid_sliding, hybrid_sliding, hybrid], no RoPE, relative "
        "bias, log scaling, four short convs per layer, dense layer 0, MoE top-2 of 4 + 2 shared experts as sinks on "
        "layers 1-2, embed_norm, untied head behind logits_mup_width_multiplier 2) and init recipe",
        "checkpoint in the hub layout as save_pretrained writes it by default: model.llm.{embed, embed_norm, norm, "
        "unembed}, model.llm.layers.N.{attn.wq_du / wk_dv / wv_dv / wr_du / wo_ud, attn.{q,k}_norm, attn.{k,v}_sconv, "
        "attn.rel_logits_proj.proj, attn_norm, mlp_norm, attn_sconv, mlp_sconv, mlp.*} with interleaved gate/up w13 "
        "tensors; the towers under model.visual.* and model.audio.*",
        "scatter AFTER embed_norm: inputs_embeds = embed_norm(embed(ids)), then masked_scatter of the image rows, then of "
        "the audio rows; the injected rows are not normed",
        "vision tower InklingVisionModel, n_layers 1: a 2x2x2 (t, y, x) patch of 3 channels folded to 24 features, "
        "projection [64, 24] to the text width, final_norm: one LLM row per patch, patches independent (no attention)",
        "images of two sizes: A 4x5 px -> 2x3 = 6 patches, B 6x8 px -> 3x5 = 15 patches (the processor's w // 2 + 1 "
        "columns: B's last column is all padding)",
        "audio tower InklingAudioModel: 4 dMel bins x 16 levels, one LLM row per frame = norm(sum of the 4 bins' "
        "embeddings); clips of 7, 10 and 9 frames; prompt 1 batches clips of 7 and 10 frames (audio_input_ids_mask)",
        "prompt 0 starts with an image run (row 1, after the image bos), prompt 1 holds audio 7, image 15 and audio 10 "
        "(modalities [audio, image, audio]), prompt 2 ends on the last row of an audio run, so row 0 is the logit "
        "vector of an injected audio row",
    ]

    @property
    def notes(self):
        return [
            "Audio: each clip is random dMel codes [frames, 4], uniform in 0..15 (torch.randint from "
            "torch.Generator().manual_seed(%d), drawn in prompt order: A, B, C), no feature extractor; a prompt's clips "
            "are batched as the processor does (padded on the right to the longest, audio_input_ids_mask 1 on each "
            "clip's frames) and run through this checkpoint's real audio tower. Images: the pixels are drawn before the "
            "padding, per image in prompt order (A, B). modalities_<i> is 0 (image) or 2 (audio) per segment."
            % INKLING_AUDIO_SEED,
            "Checkpoint: the hub layout (checkpoint_names): a reader must map model.llm.* to the decoder and undo "
            "the interleaving of the w13 tensors (rows 2j = gate row j, 2j + 1 = up row j).",
        ]

    def multimodal_meta(self, model):
        return {
            "placeholder_id": INKLING_IDS["image"],
            "special_ids": dict(INKLING_IDS),
            "release_ids": {"image": 200054, "audio": 200053, "image_bos": 200005, "audio_bos": 200020},
            "placeholder_ids_ge_vocab": False,
            "placeholder_embedding": (
                "embed_norm(embed(255)) and embed_norm(embed(254)) are computed and overwritten; they never reach the "
                "decoder"
            ),
            "scatter": (
                "InklingModel.forward: inputs_embeds = language_model.embed_tokens(input_ids) = embed_norm(embed(ids)) "
                "(InklingNormedEmbedding: RMSNorm, eps rms_norm_eps), then masked_scatter(input_ids == image_token_id, "
                "vision_tower(pixel_values).pooler_output) (one row per patch, images in order), then "
                "masked_scatter(input_ids == audio_token_id, audio_tower(audio_input_ids[audio_input_ids_mask]).pooler_output) "
                "(one row per valid frame, clips in order). The injected rows are NOT passed through embed_norm; the "
                "decoder runs on inputs_embeds as for text"
            ),
            "bos": "the image / audio bos ids (253 / 252) before each run are ordinary text rows (embedded and normed)",
            "positions": "none: no RoPE; the relative bias and the log scaling use the cache offsets, media rows count "
            "as positions like text; decode continues at n + j",
            "mask": "the text masks (causal full, sliding window 8, conv masks); no media-specific mask",
        }


# --------------------------------------------------------------------------------------
# Oracle runs
# --------------------------------------------------------------------------------------


@torch.no_grad()
def _typed(fam, model, prompt, seq, audio_type):
    with fam.audio_typed(audio_type):
        return _uncached(fam, model, prompt, seq)


@torch.no_grad()
def _uncached(fam, model, prompt, seq, **extra):
    fam.reset(model)
    kw = fam.inputs(prompt, seq)
    kw.update(extra)
    out = model(**kw, use_cache=False)
    return out.logits[0, len(prompt.ids) - 1 :].float()


@torch.no_grad()
def greedy_mm(fam, model, prompt, tap):
    """Prefill the prompt in one forward (images included), then one token per forward through the cache."""
    fam.reset(model)
    tap.calls.clear()
    out = model(**fam.inputs(prompt, prompt.ids), use_cache=True)
    cache = out.past_key_values
    prefill_call = tap.calls[0]
    rows = [out.logits[0, -1].float().clone()]
    tokens = [int(torch.argmax(rows[-1]))]
    for _ in range(1, NEW_TOKENS):
        out = model(input_ids=torch.tensor([[tokens[-1]]]), past_key_values=cache, use_cache=True)
        rows.append(out.logits[0, -1].float().clone())
        tokens.append(int(torch.argmax(rows[-1])))
    decode_positions = [c["position_ids"] for c in tap.calls[1:]]
    return torch.stack(rows), tokens, prefill_call, decode_positions


@torch.no_grad()
def generate_check(fam, model, prompt, tap):
    fam.reset(model)
    tap.calls.clear()
    g = model.generate(
        **fam.inputs(prompt, prompt.ids),
        do_sample=False,
        max_new_tokens=NEW_TOKENS,
        output_logits=True,
        return_dict_in_generate=True,
    )
    toks = g.sequences[0, len(prompt.ids) :].tolist()
    logits = torch.stack([x[0].float() for x in g.logits])
    positions = [c["position_ids"] for c in tap.calls]
    return toks, logits, positions


@torch.no_grad()
def _common_effects(fam, model, tap, prompts, token_lists, swap=True):
    no_inject = reverse = swapped = 0.0
    for prompt, tokens in zip(prompts, token_lists):
        if not prompt.has_mm:
            continue
        seq = prompt.ids + tokens[:-1]
        base = _uncached(fam, model, prompt, seq)
        runs = [(s, l) for s, l, _ in mm_segments(fam, prompt.ids)]
        positions = mm_positions(fam, prompt.ids)
        own = fam.embed(model, [prompt.ids[k] for k in positions])
        for rewrite, which in (
            (_replace_rows_rewrite(positions, own), "no_inject"),
            (_reverse_runs_rewrite(runs), "reverse"),
        ):
            tap.rewrite = rewrite
            try:
                r = _uncached(fam, model, prompt, seq)
            finally:
                tap.rewrite = None
            d = max_abs(r, base)
            if which == "no_inject":
                no_inject = max(no_inject, d)
            else:
                reverse = max(reverse, d)
        if swap and len(prompt.images) == 2:
            tap.rewrite = _swap_images_rewrite(runs)
            try:
                r = _uncached(fam, model, prompt, seq)
            finally:
                tap.rewrite = None
            swapped = max(swapped, max_abs(r, base))
    eff = {
        "note": "max |dlogit| over the logit rows (positions n-1 .. n+14) of one uncached forward of prompt+tokens[:-1], "
        "image prompts 0-2, with the named feature switched off or replaced. placeholder_rows_not_replaced = the "
        "placeholders keep their own token embedding (no scatter); image_rows_reversed_within_each_run = each image's "
        "rows in reverse order"
        + ("; two_images_swapped = prompt 1's two images' rows exchanged" if swap else ""),
        "placeholder_rows_not_replaced": no_inject,
        "image_rows_reversed_within_each_run": reverse,
    }
    if swap:
        eff["two_images_swapped"] = swapped
    return eff


@torch.no_grad()
def run_oracle(fam, model, prompts, full=True):
    """The greedy rows of every prompt plus, with full, every self-check. Returns (tensors, per_prompt, checks)."""
    tap = DecoderTap(fam.decoder(model))
    router = RouterProbe(model)
    indexer = IndexerProbe(model)
    tensors, per_prompt, token_lists = {}, [], []
    gen_worst = 0.0
    gen_tokens_agree = True
    embeds_match = 0.0
    try:
        for i, prompt in enumerate(prompts):
            rows, tokens, prefill, decode_pos = greedy_mm(fam, model, prompt, tap)
            token_lists.append(tokens)
            n = len(prompt.ids)
            positions = mm_positions(fam, prompt.ids)
            segs = mm_segments(fam, prompt.ids)
            runs = [(s, l) for s, l, _ in segs]
            embeds = prefill["inputs_embeds"][0, positions].float().contiguous()
            entry = {
                "prompt_len": n,
                "layout": prompt.layout,
                "placeholders": len(positions),
                "segments": [list(r) for r in runs],
                "tokens": tokens,
                "min_top1_top2_margin": top2_margin(rows),
                "logit_std": float(rows.std()),
                "logit_max_abs": float(rows.abs().max()),
            }
            tensors[f"prompt_{i}"] = torch.tensor(prompt.ids, dtype=torch.int32)
            tensors[f"embeds_{i}"] = embeds
            tensors[f"segments_{i}"] = torch.tensor(runs, dtype=torch.int32).reshape(-1, 2)
            tensors[f"modalities_{i}"] = torch.tensor([m for _, _, m in segs], dtype=torch.int32)
            tensors[f"tokens_{i}"] = torch.tensor(tokens, dtype=torch.int32)
            tensors[f"logits_{i}"] = rows.contiguous()
            extra_t, extra_m = fam.extra_expected(model, tap, prompt, i)
            tensors.update(extra_t)
            entry.update(extra_m)
            if not full:
                per_prompt.append(entry)
                continue
            assert len(positions) == (sum(l for _, l in runs) if prompt.has_mm else 0), (positions, runs)
            # the rows the decoder got = the feature path computed on its own; text rows untouched
            direct = fam.image_rows(model, prompt)
            embeds_match = max(embeds_match, max_abs(direct, embeds))
            text_pos = [k for k in range(n) if k not in set(positions)]
            assert torch.equal(prefill["inputs_embeds"][0, text_pos], fam.embed(model, [prompt.ids[k] for k in text_pos]))
            if positions:
                entry["embeds_rms"] = float(embeds.pow(2).mean().sqrt())
            entry["text_embeds_rms"] = float(fam.embed(model, [prompt.ids[k] for k in text_pos]).pow(2).mean().sqrt())
            # positions transformers used (qwen3_5, qwen3_5_moe): prefill = the rule written out, decode = n + j + delta
            if fam.mrope:
                pos, delta = fam.expected_positions(prompt)
                got = prefill["position_ids"]
                if prompt.images:
                    assert got is not None and torch.equal(got.reshape(3, -1), pos), (got, pos)
                else:
                    assert got is None  # Qwen3_5(Moe)TextModel's default arange
                for j, p in enumerate(decode_pos):
                    want = n + j + delta
                    if p is None:  # text-only prompt: default arange from the cache length, delta 0
                        assert delta == 0
                    else:
                        assert p.reshape(-1).tolist() == [want] * 3, (p, want)
            # generate() cross-check
            g_toks, g_logits, g_pos = generate_check(fam, model, prompt, tap)
            gd = max_abs(g_logits, rows)
            gen_worst = max(gen_worst, gd)
            gen_tokens_agree &= g_toks == tokens
            entry["generate_vs_manual_max_abs"] = gd
            entry["generate_tokens_agree"] = g_toks == tokens
            if fam.mrope:
                # generate's 4-row position_ids: rows 1..3 must be the ones above (row 0 = text positions)
                p0 = g_pos[0]
                assert p0.shape[0] == 4
                assert torch.equal(p0[1:].reshape(3, -1), pos), (p0, pos)
                assert torch.equal(p0[0].reshape(-1), torch.arange(n)), p0
                for j, p in enumerate(g_pos[1:]):
                    # rows 1..3 (the rotary's t, h, w) at n + j + delta; row 0 (text positions, mask only) at n + j
                    assert p.reshape(-1).tolist() == [n + j] + [n + j + delta] * 3, (j, p, n + j + delta)
            # uncached forward over prompt + tokens[:-1]
            router.recording = True
            nc = _uncached(fam, model, prompt, prompt.ids + tokens[:-1])
            router.recording = False
            delta_nc = (nc - rows).abs()
            entry["cached_vs_uncached_max_abs_all_rows"] = float(delta_nc.max())
            entry["uncached_greedy_tokens_agree"] = bool(torch.equal(nc.argmax(-1), rows.argmax(-1)))
            per_prompt.append(entry)
        checks = {"min_router_top_k_gap": None if math.isinf(router.min_gap) else router.min_gap}
        index_summary = indexer.summary()
        if index_summary is not None:  # DSA indexers (glm5_next, mistral_large4): the k-th vs next score cut
            checks["min_index_score_cut"] = None if math.isinf(indexer.min_gap) else indexer.min_gap
            checks["indexer"] = index_summary
        if full:
            checks.update(
                {
                    "embeds_match_feature_path_max_abs": embeds_match,
                    "generate_vs_manual_max_abs": gen_worst,
                    "generate_tokens_agree": gen_tokens_agree,
                }
            )
            plain = router.plain_summary()
            if plain is not None:
                checks["routers"] = plain
        checks["_token_lists"] = token_lists
    finally:
        tap.close()
        router.close()
        indexer.close()
    return tensors, per_prompt, checks, tap


@torch.no_grad()
def replay(fam, model, t: dict, i: int) -> float:
    """The fixture contract, checked from the written tensors alone: embed prompt_<i>, overwrite the segments_<i>
    rows with embeds_<i>, prefill that with inputs_embeds (qwen3_5, qwen3_5_moe: position_ids_<i>; gemma3: token types 1
    on the segments), then feed tokens_<i> one by one (qwen3_5, qwen3_5_moe: at n + j + rope_delta_<i>). Returns max |d| to logits_<i>."""
    fam.reset(model)
    ids = t[f"prompt_{i}"].long().tolist()
    n = len(ids)
    e = fam.embed(model, ids).clone()
    segs = t[f"segments_{i}"].tolist()
    mods = t[f"modalities_{i}"].tolist() if f"modalities_{i}" in t else [MODALITY_IMAGE] * len(segs)
    rows_at = [k for s, l in segs for k in range(s, s + l)]
    kinds = [m for (s, l), m in zip(segs, mods) for _ in range(l)]  # the modality of each injected row
    kinds_of = fam.segment_ids()
    assert all(kinds_of.get(ids[k]) == m for k, m in zip(rows_at, kinds))
    assert sum(t in kinds_of for t in ids) == len(rows_at)
    e[rows_at] = t[f"embeds_{i}"]
    kw = {"inputs_embeds": e[None], "use_cache": True}
    delta = 0
    if fam.mrope:
        kw["position_ids"] = t[f"position_ids_{i}"].long()[:, None, :]
        delta = int(t[f"rope_delta_{i}"][0])
    if fam.name == "gemma3" and rows_at:
        tt = torch.zeros(1, n, dtype=torch.long)
        tt[0, rows_at] = 1
        kw["token_type_ids"] = tt
    if hasattr(fam, "replay_prefill_kwargs"):  # gemma4: per-layer identity from the pad-substituted ids, token types
        kw.update(fam.replay_prefill_kwargs(model, ids, rows_at, kinds))
    out = model(**kw)
    cache = out.past_key_values
    got = [out.logits[0, -1].float()]
    tokens = t[f"tokens_{i}"].long().tolist()
    for j in range(1, NEW_TOKENS):
        step = {"input_ids": torch.tensor([[tokens[j - 1]]]), "past_key_values": cache, "use_cache": True}
        if fam.mrope:
            step["position_ids"] = torch.full((3, 1, 1), n + (j - 1) + delta, dtype=torch.long)
        got.append(model(**step).logits[0, -1].float())
    return max_abs(torch.stack(got), t[f"logits_{i}"])


FAMILIES = {
    f.name: f
    for f in (Llama4MM(), Qwen35MM(), Gemma3MM(), Qwen35MoeMM(), Gemma4MM(), Gemma4AudioMM(), Glm5NextMM(), MistralLarge4MM(), NemoSpeechLmMM(), InklingMM())
}


def _write_and_load(fam, fam_dir, seed):
    if fam_dir.exists():
        shutil.rmtree(fam_dir)
    fam_dir.mkdir(parents=True)
    fam.write_checkpoint(fam_dir, seed)
    for extra in sorted(os.listdir(fam_dir)):
        if extra not in ("config.json", "model.safetensors"):
            os.remove(fam_dir / extra)
    return fam.load(fam_dir)


def score_seed(fam, seed) -> dict:
    with tempfile.TemporaryDirectory(prefix="cbc-mm-seed-") as tmp:
        model = _write_and_load(fam, Path(tmp) / fam.name, seed)
        prompts = fam.prompts()
        tensors, per_prompt, checks, _ = run_oracle(fam, model, prompts, full=False)
    margin = min(p["min_top1_top2_margin"] for p in per_prompt)
    specials = sorted({t for p in per_prompt for t in p["tokens"] if t in SPECIALS})
    distinct = min(len(set(p["tokens"])) for p in per_prompt)
    gap = checks["min_router_top_k_gap"]
    index_cut = checks.get("min_index_score_cut")
    return {
        "seed": seed,
        "margin": margin,
        "router_gap": gap,
        "index_cut": index_cut,
        "specials": specials,
        "distinct": distinct,
    }


def search_seeds(fam, start, count, min_distinct) -> int | None:
    """Scores seeds start..start+count-1 (write nothing) and returns the best by min(margin, router gap scaled to
    the margin's 100x floor), among those with no image special among the greedy tokens and >= min_distinct
    distinct tokens per prompt (and, for a DSA family, an index-score cut >= its index_cut_floor)."""
    best, best_score = None, -math.inf
    for seed in range(start, start + count):
        r = score_seed(fam, seed)
        # the router gap scaled to the margin's floor (100x atol): a family may accept a smaller router gap
        gap = r["router_gap"] * 100 / fam.router_gap_over_atol if r["router_gap"] is not None else math.inf
        score = min(r["margin"], gap)
        ok = not r["specials"] and r["distinct"] >= min_distinct
        if fam.index_cut_floor is not None:
            ok = ok and r["index_cut"] is not None and r["index_cut"] >= fam.index_cut_floor
        print(
            f"{fam.name} seed {seed}: margin {r['margin']:.4f}"
            + (f" router gap {r['router_gap']:.4f}" if r["router_gap"] is not None else "")
            + (f" index cut {r['index_cut']:.2e}" if r["index_cut"] is not None else "")
            + f" distinct {r['distinct']} specials {r['specials']} score/atol {score / fam.atol:.0f}"
            + ("" if ok else "  (rejected)"),
            file=sys.stderr,
            flush=True,
        )
        if ok and score > best_score:
            best, best_score = seed, score
    print(f"{fam.name}: best seed {best} (min gap {best_score:.4f} = {best_score / fam.atol:.0f}x atol)", file=sys.stderr)
    return best


def build_family(name: str, out_dir: Path, verbose=True) -> dict:
    fam = FAMILIES[name]
    fam_dir = out_dir / name
    model = _write_and_load(fam, fam_dir, fam.seed)
    cfg = model.config
    # the oracle computes with exactly the stored weights: every fp32 parameter is its bf16 value
    for pname, p in model.named_parameters():
        assert torch.equal(p, p.to(torch.bfloat16).float()), pname
    with safe_open(str(fam_dir / "model.safetensors"), "pt") as f:
        stored_dtypes = sorted({str(f.get_slice(k).get_dtype()) for k in f.keys()})
        n_stored = len(list(f.keys()))
        stored_names = sorted(f.keys())
        decoder_prefix = sorted({k.split(".layers.")[0] for k in f.keys() if ".layers." in k and "vision" not in k and "visual" not in k})
        head = sorted(k for k in f.keys() if k.endswith("lm_head.weight"))
        embed = sorted(k for k in f.keys() if k.endswith("embed_tokens.weight"))
        other = sorted({".".join(k.split(".")[:2]) for k in f.keys() if not any(k.startswith(d) for d in decoder_prefix)})

    prompts = fam.prompts()
    tensors, per_prompt, checks, tap = run_oracle(fam, model, prompts, full=True)
    token_lists = checks.pop("_token_lists")
    for p in per_prompt:
        assert not any(t in SPECIALS for t in p["tokens"]), ("a greedy token is an image special", p["tokens"])
    tap = DecoderTap(fam.decoder(model))
    try:
        with torch.no_grad():
            effects = fam.feature_effects(model, tap, prompts, token_lists)
    finally:
        tap.close()
    if hasattr(fam, "extra_checks"):
        checks["prompt_ending_on_placeholder"] = fam.extra_checks(model, prompts)
    if hasattr(fam, "router_checks"):
        checks["routers"] = fam.router_checks(model, prompts, token_lists)
    if hasattr(fam, "modality_checks"):
        checks.update(fam.modality_checks(model, prompts, token_lists))
    save_file(tensors, str(fam_dir / "expected.safetensors"), metadata={"format": "pt"})
    with safe_open(str(fam_dir / "expected.safetensors"), "pt") as f:
        written = {k: f.get_tensor(k) for k in f.keys()}
    replay_worst = max(replay(fam, model, written, i) for i in range(len(prompts)))
    checks["replay_from_fixture_max_abs"] = replay_worst

    atol = fam.atol
    margin = min(p["min_top1_top2_margin"] for p in per_prompt)
    max_delta = max(p["cached_vs_uncached_max_abs_all_rows"] for p in per_prompt)
    logit_max = max(p["logit_max_abs"] for p in per_prompt)
    router_gap = checks["min_router_top_k_gap"]
    assert replay_worst <= atol / 5, replay_worst
    assert max_delta <= atol / 5, max_delta  # torch's own reordering noise must sit well inside the tolerance
    assert margin >= 100 * atol, (margin, atol)
    if router_gap is not None:
        assert router_gap >= fam.router_gap_over_atol * atol, (router_gap, atol, fam.router_gap_over_atol)
    if fam.index_cut_floor is not None:
        assert checks["min_index_score_cut"] >= fam.index_cut_floor, (checks["min_index_score_cut"], fam.index_cut_floor)
    small = {k: v for k, v in effects.items() if k != "note" and v < 100 * atol}
    assert not small, ("feature effects below 100x atol", small)

    notes = [
        f"Tolerance: atol {atol:g} on max |dlogit| over every row, tokens exact (the text fixture of the same decoder "
        f"uses {atol:g}). The oracle is fp32 with bf16-exact weights and |logit| <= {logit_max:.3g}; torch's cached and "
        f"uncached paths differ by at most {max_delta:.2g} here ({atol / max_delta:.0f}x below atol). The min top-1/top-2 logit margin {margin:.3g} is "
        f"{margin / atol:.0f}x atol"
        + (f" and the min router {fam.router_gap_name} gap {router_gap:.3g} is {router_gap / atol:.0f}x atol" if router_gap else "")
        + (", so no token or expert choice can flip inside the tolerance." if router_gap else ", so no token choice can flip inside the tolerance.")
        + (
            f" The smallest k-th vs next index-score cut of the DSA indexers is {checks['min_index_score_cut']:.3g} "
            f"(index-score units, floor {fam.index_cut_floor:g} as the text fixture's; checks.indexer)."
            if fam.index_cut_floor is not None
            else ""
        ),
        "Input: the engine is given prompt_<i> and embeds_<i> (the rows to put at the placeholder positions, in "
        "order; segments_<i> gives each contiguous run) and must produce tokens_<i> / logits_<i>. Prompt 3 has no "
        "image (embeds_3 [0, H], segments_3 [0, 2]) so that text-only and multimodal requests can share a batch.",
        f"Checks: the cached greedy path agrees with one uncached forward over prompt+tokens[:-1] to {max_delta:.3g}; "
        f"model.generate(do_sample=False, output_logits=True) gives the same tokens and logits to "
        f"{checks['generate_vs_manual_max_abs']:.3g}; the captured rows equal the composite's own feature path "
        f"(get_image_features + projector) to {checks['embeds_match_feature_path_max_abs']:.3g}; replaying the fixture "
        "from its own tensors (embed prompt_<i>, overwrite the segments with embeds_<i>, prefill by inputs_embeds"
        + (" at position_ids_<i>, decode at n + j + rope_delta_<i>" if fam.mrope else "")
        + (" with token types 1 on the segments" if name == "gemma3" else "")
        + getattr(fam, "replay_note", "")
        + f", teacher-forced tokens_<i>) gives logits_<i> to {replay_worst:.3g}; every feature effect "
        "in multimodal.feature_effects is >= 100x atol.",
        "Images: tiny random images (pixels N(0, 1) from Generator(%d), i.e. already-normalised pixel values, no image "
        "processor), run through the real vision tower of this checkpoint." % PIXEL_SEED,
    ] + list(fam.notes)
    meta = {
        "fixture_format": FIXTURE_FORMAT,
        "family": name,
        "model_type": cfg.model_type,
        "text_model_type": cfg.get_text_config().model_type,
        "architecture": type(model).__name__,
        "seed": fam.seed,
        "prompt_seed": MM_PROMPT_SEED,
        "pixel_seed": PIXEL_SEED,
        "versions": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "safetensors": safetensors.__version__,
        },
        "dtype": {"checkpoint": "bfloat16 (bf16-exact weights)", "stored": stored_dtypes, "expectations": "float32"},
        "checkpoint_tensors": n_stored,
        "checkpoint_names": fam.checkpoint_names(stored_names)
        if hasattr(fam, "checkpoint_names")
        else {
            "decoder_layers": [d + ".layers.N.*" for d in decoder_prefix],
            "embed_tokens": embed,
            "lm_head": head or "none (tied to embed_tokens)",
            "other_prefixes": [o for o in other if not o.endswith("lm_head")],
            "note": "as save_pretrained writes them (it reverts the in-memory names to the family's checkpoint names)",
        },
        "attn_implementation": "eager",
        "atol": atol,
        "tolerance_metric": "max |logit - expected| over every row of logits_<i>; tokens must match exactly",
        "notes": " ".join(notes),
        "prompt_lengths": [len(p.ids) for p in prompts],
        "new_tokens": NEW_TOKENS,
        "rows": "row 0 = logits at the last prompt position; row j = logits after feeding tokens[j-1]",
        "hidden_size": cfg.get_text_config().hidden_size,
        "vocab_size": cfg.get_text_config().vocab_size,
        "features": fam.features,
        "multimodal": {**fam.multimodal_meta(model), "modalities": MODALITIES_DOC, "feature_effects": effects},
        "init": _init_meta(fam),
        "checks": {
            "per_prompt": per_prompt,
            "cached_vs_uncached_max_abs": max_delta,
            "min_top1_top2_margin": margin,
            **checks,
            "feature_effects": "see multimodal.feature_effects",
        },
    }
    _json_dump(meta, fam_dir / "meta.json")
    assert sorted(os.listdir(fam_dir)) == sorted(FILES), sorted(os.listdir(fam_dir))
    size = sum((fam_dir / f).stat().st_size for f in FILES)
    assert size < MAX_DIR_BYTES, (name, size)
    if verbose:
        print(
            f"{name:8s} {size / 1000:.0f} kB, prompts {[len(p.ids) for p in prompts]}, cached/uncached {max_delta:.2e}, "
            f"generate {checks['generate_vs_manual_max_abs']:.2e}, min margin {margin:.4f} ({margin / atol:.0f}x atol)"
            + (f", router gap {router_gap:.4f}" if router_gap is not None else ""),
            file=sys.stderr,
        )
    return meta


def _init_meta(fam) -> dict:
    if hasattr(fam, "init_meta"):
        return fam.init_meta()
    if fam.name == "llama4":
        spec = TEXT_FAMILIES["llama4"]
        return {
            "text": "the llama4 text fixture's recipe (make_fixtures.make_model('llama4', seed)): "
            "torch.Generator().manual_seed(seed), Llama4ForCausalLM params in name order, N(mean, std) then bf16, "
            "then the q/k row scale",
            "rules": [list(r) for r in spec["init_rules"]],
            "row_scale": [list(r) for r in spec["row_scale"]],
            "std": BASE_STD,
            "vision_tower": "vision_model.* and multi_modal_projector.*: torch.Generator().manual_seed(seed + 1), params "
            "in name order, the shared std table (LayerNorm weights N(1, 0.1)), then bf16 (make_fixtures._save_llama4_composite)",
        }
    rules = fam.rules() if fam.mrope else GEMMA3_VISION_RULES
    std = dict(BASE_STD)
    if fam.name == "gemma3":
        std.update(TIED_GEMMA_STD)
    std.update(getattr(fam, "std_overrides", None) or {})
    return {
        "generator": "torch.Generator().manual_seed(seed); every parameter of the composite (vision tower, projector, "
        "decoder) in name order; N(mean, std) then bf16 (make_fixtures.reinit_)",
        "zero_centred_norms": True,
        "norm_mean_overrides": {"linear_attn.norm.": 1.0} if fam.mrope else TIED_GEMMA_NORM_MEAN,
        "rules": [list(r) for r in rules],
        "std": std,
    }


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", action="append", help="only this family (repeatable)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output root (default {DEFAULT_OUT})")
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare bytes with --out")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--search-seeds", nargs=2, type=int, metavar=("START", "COUNT"))
    ap.add_argument("--min-distinct", type=int, default=4)
    args = ap.parse_args(argv)

    families = args.family or list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown family {unknown}; known: {', '.join(FAMILIES)}")

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    if transformers.__version__ != PINNED_TRANSFORMERS:
        print(f"error: transformers {transformers.__version__} found, fixtures are pinned to {PINNED_TRANSFORMERS}", file=sys.stderr)
        return 2

    if args.search_seeds:
        for fam in families:
            search_seeds(FAMILIES[fam], args.search_seeds[0], args.search_seeds[1], args.min_distinct)
        return 0

    if args.check:
        with tempfile.TemporaryDirectory(prefix="cbc-mm-fixtures-") as tmp:
            for fam in families:
                build_family(fam, Path(tmp), verbose=not args.quiet)
            problems = compare_dirs(args.out, Path(tmp), families)
        if problems:
            print("fixture check FAILED:", file=sys.stderr)
            for p in problems:
                print("  " + p, file=sys.stderr)
            return 1
        print(f"fixture check ok: {len(families)} families identical", file=sys.stderr)
        return 0

    args.out.mkdir(parents=True, exist_ok=True)
    for fam in families:
        build_family(fam, args.out, verbose=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
