"""Text in and out for cbc: a Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json,
optionally chat_template.jinja) read the way transformers reads it, chat templates rendered the
way transformers renders them, and incremental detokenisation for streaming.

The runtime and the C++ CLI stay token-based; this module is the only place text exists.

    tok = Tokenizer.from_dir("path/to/model")
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    detok = tok.detokenizer()
    for token in generated: sys.stdout.write(detok.add(token))
    sys.stdout.write(detok.finish())

Semantics follow transformers 5 for a tokenizer.json folder (TokenizersBackend): the special
tokens (bos/eos/pad/unk/sep/cls/mask) come from tokenizer_config.json as strings or AddedToken
dicts; whether bos/eos are added is decided by tokenizer.json's post-processor alone
(transformers drops add_bos_token/add_eos_token from tokenizer_config when tokenizer.json
exists, and a missing post-processor adds nothing); chat templates are rendered with
add_special_tokens=False when tokenized, so a template's own bos_token is not doubled.
"""
from __future__ import annotations

import json
import os
from datetime import datetime
from typing import Any, Iterable, Sequence

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token")

# The clean-up transformers applies to non-BPE decodes when clean_up_tokenization_spaces is set.
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
_CLEANUP_HOLD = max(len(a) for a, _ in _CLEANUP)


class TokenizerError(ValueError):
    """A tokenizer folder that cannot be used, or a chat template that refused the messages."""


def _token_content(value: Any, key: str, path: str) -> str | None:
    # tokenizer_config.json gives a special token as a string or as an AddedToken dict.
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    raise TokenizerError(f"{path}: {key} must be a string or an AddedToken object "
                         f"with \"content\", got {json.dumps(value)}")


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise TokenizerError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise TokenizerError(f"{path}: expected a JSON object")
    return data


def _read_chat_template(folder: str, config: dict, config_path: str) -> str | None:
    # transformers 5 saves the template to chat_template.jinja and prefers it over the config's.
    jinja_path = os.path.join(folder, "chat_template.jinja")
    if os.path.exists(jinja_path):
        with open(jinja_path, encoding="utf-8") as f:
            return f.read()
    json_path = os.path.join(folder, "chat_template.json")
    if os.path.exists(json_path):
        template = _read_json(json_path).get("chat_template")
    else:
        template = config.get("chat_template")
    if template is None or isinstance(template, str):
        return template
    # A list of named templates: the one named "default" is what apply_chat_template uses.
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        if isinstance(named.get("default"), str):
            return named["default"]
        raise TokenizerError(f"{config_path}: chat_template is a list without a \"default\" entry")
    raise TokenizerError(f"{config_path}: chat_template must be a string or a list of "
                         "{name, template} objects")


class Tokenizer:
    """A tokenizer.json tokenizer with its tokenizer_config.json special tokens and template."""

    def __init__(self, backend, config: dict | None = None, chat_template: str | None = None,
                 source: str = "<tokenizer>"):
        from tokenizers import AddedToken

        self._tok = backend
        self.config = dict(config or {})
        self.source = source
        self.chat_template = chat_template
        self.special_tokens: dict[str, str] = {}
        for name in SPECIAL_TOKEN_NAMES:
            content = _token_content(self.config.get(name), name, source)
            if content is not None:
                self.special_tokens[name] = content
        # As transformers does: a named special token missing from the vocabulary is added.
        missing = [t for t in self.special_tokens.values() if self._tok.token_to_id(t) is None]
        if missing:
            self._tok.add_special_tokens([AddedToken(t, special=True) for t in dict.fromkeys(missing)])
        self.clean_up_tokenization_spaces = bool(self.config.get("clean_up_tokenization_spaces", False))
        # transformers skips the clean-up for BPE models: it would remove real spaces.
        model_type = json.loads(self._tok.to_str()).get("model", {}).get("type")
        self._cleanup = self.clean_up_tokenization_spaces and model_type != "BPE"
        self._template = None
        self._vocab_size = self._tok.get_vocab_size(with_added_tokens=True)

    @classmethod
    def from_dir(cls, folder: str) -> "Tokenizer":
        """Reads FOLDER/tokenizer.json and, where present, tokenizer_config.json and the chat
        template files. Raises FileNotFoundError without tokenizer.json, TokenizerError on a file
        that cannot be read."""
        from tokenizers import Tokenizer as Backend

        path = os.path.join(folder, "tokenizer.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{folder}: no tokenizer.json (text input and output need a "
                                    "Hugging Face tokenizer.json beside the model)")
        try:
            backend = Backend.from_file(path)
        except Exception as e:  # tokenizers raises a bare Exception on a malformed file
            raise TokenizerError(f"{path}: cannot be read by tokenizers: {e}") from None
        config_path = os.path.join(folder, "tokenizer_config.json")
        config = _read_json(config_path) if os.path.exists(config_path) else {}
        template = _read_chat_template(folder, config, config_path)
        return cls(backend, config, template, source=config_path)

    # -- tokens ---------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """The number of ids, added tokens included (the largest id + 1)."""
        return self._vocab_size

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self._tok.id_to_token(token_id)

    def special_token_id(self, name: str) -> int | None:
        token = self.special_tokens.get(name)
        return None if token is None else self._tok.token_to_id(token)

    @property
    def bos_token_id(self) -> int | None:
        return self.special_token_id("bos_token")

    @property
    def eos_token_id(self) -> int | None:
        return self.special_token_id("eos_token")

    @property
    def all_special_ids(self) -> list[int]:
        ids = [self._tok.token_to_id(t) for t in self.special_tokens.values()]
        ids += [i for i, t in self._tok.get_added_tokens_decoder().items() if t.special]
        return sorted({i for i in ids if i is not None})

    def encoded_vocab(self) -> list[str]:
        """Every id's token as tokenizer.json writes it (byte-level tokens encoded), by id; ""
        for an id with no token."""
        vocab = self._tok.get_vocab(with_added_tokens=True)
        out = [""] * (max(vocab.values(), default=-1) + 1)
        for token, i in vocab.items():
            out[i] = token
        return out

    def backend_json(self) -> str:
        """The tokenizer as tokenizer.json holds it."""
        return self._tok.to_str()

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        ids = list(ids)
        self._check_ids(ids)
        return self._decode_checked(ids, skip_special_tokens)

    def _check_ids(self, ids: list) -> None:
        n = self._vocab_size
        for i in ids:
            if not isinstance(i, int) or i < 0 or i >= n:
                raise ValueError(f"token id {i!r} is outside the tokenizer's vocabulary "
                                 f"(0..{n - 1})")

    def _decode_checked(self, ids: list, skip_special_tokens: bool) -> str:
        text = self._tok.decode(ids, skip_special_tokens=skip_special_tokens)
        return self._clean_up(text) if self._cleanup else text

    @staticmethod
    def _clean_up(text: str) -> str:
        for a, b in _CLEANUP:
            text = text.replace(a, b)
        return text

    def detokenizer(self, skip_special_tokens: bool = True) -> "IncrementalDetokenizer":
        return IncrementalDetokenizer(self, skip_special_tokens=skip_special_tokens)

    # -- chat -----------------------------------------------------------------------------------
    def apply_chat_template(self, messages: list[dict], *, add_generation_prompt: bool = False,
                            tokenize: bool = False, tools: list[dict] | None = None,
                            documents: list[dict] | None = None, chat_template: str | None = None,
                            **kwargs) -> str | list[int]:
        """Renders MESSAGES as transformers' apply_chat_template does: the special tokens and
        KWARGS (which win over them) are template variables; tokenize=True encodes the text
        without adding special tokens. A template's raise_exception becomes TokenizerError."""
        import jinja2

        template_text = chat_template if chat_template is not None else self.chat_template
        if template_text is None:
            raise TokenizerError(f"{self.source}: the tokenizer has no chat_template, so chat "
                                 "messages cannot be turned into a prompt")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise TypeError("messages must be a list of dicts with 'role' and 'content'")
        try:
            template = self._compiled(template_text)
            text = template.render(messages=_plain(messages), tools=_plain(tools),
                                   documents=_plain(documents),
                                   add_generation_prompt=add_generation_prompt,
                                   **{**self.special_tokens, **_plain(kwargs)})
        except jinja2.TemplateError as e:
            raise TokenizerError(f"chat template: {e}") from None
        return self.encode(text, add_special_tokens=False) if tokenize else text

    def _compiled(self, template_text: str):
        if self._template is None or self._template[0] != template_text:
            self._template = (template_text, _chat_environment().from_string(template_text))
        return self._template[1]


def _plain(value: Any) -> Any:
    # The template sees only JSON-like data: the sandbox need not vet arbitrary objects' methods.
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    for base in (bool, str, int, float):  # subclasses (enums, numpy scalars) as the plain type
        if isinstance(value, base):
            return base(value)
    raise TypeError(f"chat messages may hold only JSON values, got {type(value).__name__}")


_ENV = None


def _chat_environment():
    """The jinja2 environment chat templates expect: sandboxed (templates are untrusted),
    trim_blocks and lstrip_blocks, loop controls, raise_exception, strftime_now, a tojson that
    neither escapes HTML nor sorts keys, dict() and a namespace() that refuses dunder names."""
    global _ENV
    if _ENV is not None:
        return _ENV
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    class SafeNamespace(jinja2.utils.Namespace):
        # namespace(x=...) as jinja2's, but an underscore-led name could reach CPython internals.
        def __init__(*args, **kwargs):
            self, rest = args[0], args[1:]
            attrs = dict(*rest, **kwargs)
            for key in attrs:
                SafeNamespace._check(key)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, key, value):
            SafeNamespace._check(key)
            jinja2.utils.Namespace.__setitem__(self, key, value)

        @staticmethod
        def _check(key):
            if isinstance(key, str) and key.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"chat templates cannot set underscore-prefixed attributes ({key!r})")

    class DictMaker:
        # dict(...) and dict.fromkeys(...) without handing the template the dict type itself.
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now,
                       dict=DictMaker(), namespace=SafeNamespace)
    _ENV = env
    return env


class IncrementalDetokenizer:
    """Turns a stream of token ids into text deltas whose concatenation equals
    tokenizer.decode(all ids) once finish() has been called.

    Each add() decodes the ids so far and emits what is new, holding back a trailing U+FFFD
    (the decoder's stand-in for an incomplete UTF-8 sequence, which the next byte token may
    complete) and, where the tokenizer cleans up spaces, the last few characters that a later
    token could still change. finish() emits whatever was held back."""

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool = True):
        self._tok = tokenizer
        self._skip = skip_special_tokens
        self._ids: list[int] = []
        self._emitted = ""
        self._diverged = False

    @property
    def ids(self) -> list[int]:
        return list(self._ids)

    @property
    def text(self) -> str:
        """What has been emitted so far."""
        return self._emitted

    def add(self, token_id: int) -> str:
        return self.extend((token_id,))

    def extend(self, token_ids: Iterable[int]) -> str:
        new = list(token_ids)
        self._tok._check_ids(new)  # once per id: the whole sequence is decoded each time
        self._ids.extend(new)
        full = self._tok._decode_checked(self._ids, self._skip)
        stable = full.rstrip("\ufffd")
        if self._tok._cleanup:
            stable = stable[:max(0, len(stable) - _CLEANUP_HOLD)]
        return self._take(full, stable)

    def finish(self) -> str:
        full = self._tok._decode_checked(self._ids, self._skip)
        return self._take(full, full)

    def _take(self, full: str, stable: str) -> str:
        # A decoder whose earlier text changes with later tokens cannot be streamed exactly; such
        # a stream emits nothing more (rather than text that would contradict the final decode).
        if self._diverged or not full.startswith(self._emitted):
            self._diverged = True
            return ""
        if len(stable) <= len(self._emitted):
            return ""
        delta = stable[len(self._emitted):]
        self._emitted = stable
        return delta


class TextDelta:
    """A piece of one prompt's text from TextGenerator.stream: INDEX is the prompt's place in
    the inputs; the last piece of a prompt has finished=True and its finish_reason ("eos",
    "stop" or "length")."""

    __slots__ = ("index", "text", "finished", "finish_reason")

    def __init__(self, index, text, finished, finish_reason):
        self.index, self.text, self.finished, self.finish_reason = (
            index, text, finished, finish_reason)

    def __repr__(self):
        return (f"TextDelta(index={self.index}, text={self.text!r}, finished={self.finished}, "
                f"finish_reason={self.finish_reason!r})")


class TextGenerator:
    """Text in, text out over a cbc.Engine: prompts are encoded with the tokenizer (special
    tokens added as its post-processor says), conversations rendered with its chat template,
    and the generated tokens decoded without special tokens. Generation stops at the model's
    eos ids, the tokenizer's eos_token (ChatML's <|im_end|>, say) and EXTRA_STOP_IDS.

        gen = TextGenerator.from_dir("model/")          # config.json, weights, tokenizer files
        gen.generate(["Once upon a time"], max_new_tokens=32)
        gen.chat([[{"role": "user", "content": "hi"}]])
        for d in gen.stream(["hello"]): print(d.text, end="")
    """

    def __init__(self, engine, tokenizer: Tokenizer, extra_stop_ids: Iterable[int] = ()):
        if tokenizer.vocab_size > engine.vocab_size:
            raise ValueError(f"the tokenizer has {tokenizer.vocab_size} ids but the model's "
                             f"vocabulary is {engine.vocab_size}: they do not belong together")
        self.engine = engine
        self.tokenizer = tokenizer
        stops = set(engine.eos_token_ids) | set(extra_stop_ids)
        if tokenizer.eos_token_id is not None:
            stops.add(tokenizer.eos_token_id)
        self.stop_token_ids = sorted(t for t in stops if 0 <= t < engine.vocab_size)

    @classmethod
    def from_dir(cls, model_dir: str, *, artefact: str | None = None,
                 tokenizer_dir: str | None = None, dtype: str = "bf16", **engine_kwargs):
        """MODEL_DIR's weights and tokenizer, and its artefact: ARTEFACT, else MODEL_DIR/model.fb,
        else config.json compiled into the cache (as cbc serve finds it). ENGINE_KWARGS go to
        cbc.Engine (backend, threads, max_batch_tokens, ...)."""
        import cbc
        from cbc.model_dir import find_artefact, generation_eos

        tokenizer = Tokenizer.from_dir(tokenizer_dir or model_dir)
        engine = cbc.Engine(find_artefact(model_dir, artefact, dtype), model_dir, **engine_kwargs)
        return cls(engine, tokenizer, generation_eos(model_dir))

    def encode_prompts(self, prompts) -> list[list[int]]:
        if isinstance(prompts, str):
            raise TypeError("prompts must be a list of strings (wrap one prompt in a list)")
        ids = [self.tokenizer.encode(p) for p in prompts]
        for i, p in enumerate(ids):
            if not p:
                raise ValueError(f"prompt {i} encodes to no tokens")
        return ids

    def encode_chats(self, conversations, add_generation_prompt: bool = True,
                     **template_kwargs) -> list[list[int]]:
        if not isinstance(conversations, list) or (conversations and
                                                   isinstance(conversations[0], dict)):
            raise TypeError("conversations must be a list of message lists (wrap one "
                            "conversation in a list)")
        return [self.tokenizer.apply_chat_template(c, add_generation_prompt=add_generation_prompt,
                                                   tokenize=True, **template_kwargs)
                for c in conversations]

    def _generate(self, inputs, kwargs) -> list[str]:
        out = self.engine.generate_batch(inputs, eos_token_id=self.stop_token_ids, **kwargs)
        texts = []
        for i in range(len(inputs)):
            o = out[f"req_{i}"]
            if o.error:
                raise ValueError(f"prompt {i}: {o.error}")
            texts.append(self.tokenizer.decode(o.generated_tokens, skip_special_tokens=True))
        return texts

    def generate(self, prompts, **kwargs) -> list[str]:
        """The generated text of each prompt. KWARGS as cbc.Engine.generate_batch's
        (max_new_tokens, do_sample, temperature, top_k, top_p, seed, generation_config)."""
        return self._generate(self.encode_prompts(prompts), kwargs)

    def chat(self, conversations, *, add_generation_prompt: bool = True, **kwargs) -> list[str]:
        """The assistant's reply to each conversation (a list of {"role", "content"})."""
        return self._generate(self.encode_chats(conversations, add_generation_prompt), kwargs)

    def _stream(self, inputs, kwargs):
        detoks = [self.tokenizer.detokenizer() for _ in inputs]
        for ev in self.engine.stream(inputs, eos_token_id=self.stop_token_ids, **kwargs):
            d = detoks[ev.index]
            text = d.add(ev.token) if ev.token is not None else ""
            if ev.finished:
                text += d.finish()
            if text or ev.finished:
                yield TextDelta(ev.index, text, ev.finished, ev.finish_reason)

    def stream(self, prompts, **kwargs):
        """TextDeltas as the tokens come; each prompt's pieces add up to its generate() text."""
        return self._stream(self.encode_prompts(prompts), kwargs)

    def stream_chat(self, conversations, *, add_generation_prompt: bool = True, **kwargs):
        return self._stream(self.encode_chats(conversations, add_generation_prompt), kwargs)
