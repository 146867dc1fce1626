"""cbc.text against what transformers makes of the same tokenizer folders
(fixtures from tools/oracle/make_text_fixtures.py)."""
import json
import os
import random
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# The package as the build assembles it (build/python), unless PYTHONPATH already finds one.
sys.path.append(os.environ.get("CBC_PYTHON_DIR", os.path.join(HERE, "..", "..", "build", "python")))

from cbc.text import IncrementalDetokenizer, Tokenizer, TokenizerError  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures")
with open(os.path.join(FIXTURES, "text_expected.json"), encoding="utf-8") as _f:
    EXPECTED = json.load(_f)
NAMES = sorted(EXPECTED)


@pytest.fixture(scope="module", params=NAMES)
def case(request):
    return Tokenizer.from_dir(os.path.join(FIXTURES, request.param)), EXPECTED[request.param]


def test_fixture_vocab_fits_the_test_models(case):
    tok, _ = case
    assert tok.vocab_size <= 256


def test_encode_matches_transformers(case):
    tok, exp = case
    assert exp["encode"]
    for e in exp["encode"]:
        assert tok.encode(e["text"]) == e["ids"], e["text"]
        assert tok.encode(e["text"], add_special_tokens=False) == e["ids_plain"], e["text"]


def test_decode_matches_transformers(case):
    tok, exp = case
    for e in exp["decode"]:
        assert tok.decode(e["ids"]) == e["text"], e["ids"]
        assert tok.decode(e["ids"], skip_special_tokens=True) == e["text_skip"], e["ids"]


def test_chat_template_matches_transformers(case):
    tok, exp = case
    if tok.chat_template is None:  # the WordPiece fixture has none
        assert exp["chat"] == []
        with pytest.raises(TokenizerError, match="no chat_template"):
            tok.apply_chat_template([{"role": "user", "content": "x"}])
        return
    rendered = 0
    for e in exp["chat"]:
        gen = e["add_generation_prompt"]
        if "error" in e:
            with pytest.raises(TokenizerError, match="roles must alternate"):
                tok.apply_chat_template(e["messages"], add_generation_prompt=gen)
            continue
        assert tok.apply_chat_template(e["messages"], add_generation_prompt=gen) == e["text"]
        assert tok.apply_chat_template(e["messages"], add_generation_prompt=gen,
                                       tokenize=True) == e["ids"]
        rendered += 1
    assert rendered >= 6


def test_special_tokens_from_strings_and_added_token_dicts():
    chatml = Tokenizer.from_dir(os.path.join(FIXTURES, "tok_chatml"))  # AddedToken dicts
    bos = Tokenizer.from_dir(os.path.join(FIXTURES, "tok_bos"))        # plain strings
    assert chatml.special_tokens["eos_token"] == "<|im_end|>"
    assert chatml.eos_token_id == chatml.token_to_id("<|im_end|>")
    assert bos.special_tokens["eos_token"] == "</s>"
    assert bos.bos_token_id == bos.token_to_id("<s>")
    # The template sees them: the Llama-2 style one writes bos_token itself.
    text = bos.apply_chat_template([{"role": "user", "content": "hi"}])
    assert text.startswith("<s>[INST]")


def test_template_kwargs_override_special_tokens_and_tojson():
    tok = Tokenizer.from_dir(os.path.join(FIXTURES, "tok_chatml"))
    t = "{{ eos_token }}|{{ tools | tojson }}|{{ strftime_now('%Y') | length }}"
    out = tok.apply_chat_template([], chat_template=t, eos_token="X",
                                  tools=[{"name": "f", "café": "<b>"}])
    assert out == 'X|[{"name": "f", "café": "<b>"}]|4'


def test_template_loop_controls_and_trimming():
    tok = Tokenizer.from_dir(os.path.join(FIXTURES, "tok_chatml"))
    t = "{% for m in messages %}\n  {% if loop.index0 == 1 %}{% continue %}{% endif %}\n" \
        "{{ m.content }};\n{% endfor %}"
    msgs = [{"role": "user", "content": c} for c in "abc"]
    assert tok.apply_chat_template(msgs, chat_template=t) == "a;\nc;\n"


def test_template_sandbox_refuses_internals():
    tok = Tokenizer.from_dir(os.path.join(FIXTURES, "tok_chatml"))
    with pytest.raises(TokenizerError):
        tok.apply_chat_template([], chat_template="{{ ''.__class__.__mro__ }}")
    with pytest.raises(TokenizerError, match="underscore"):
        tok.apply_chat_template([], chat_template="{% set ns = namespace(_x=1) %}")


def test_missing_template_and_bad_messages():
    tok = Tokenizer.from_dir(os.path.join(FIXTURES, "tok_chatml"))
    bare = Tokenizer(tok._tok, {}, None, source="bare")
    with pytest.raises(TokenizerError, match="no chat_template"):
        bare.apply_chat_template([{"role": "user", "content": "x"}])
    with pytest.raises(TypeError, match="list of dicts"):
        tok.apply_chat_template("hello")
    with pytest.raises(TypeError, match="JSON values"):
        tok.apply_chat_template([{"role": "user", "content": object()}])


def test_bad_folders(tmp_path):
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        Tokenizer.from_dir(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="cannot be read"):
        Tokenizer.from_dir(str(tmp_path))
    src = os.path.join(FIXTURES, "tok_chatml", "tokenizer.json")
    (tmp_path / "tokenizer.json").write_bytes(open(src, "rb").read())
    (tmp_path / "tokenizer_config.json").write_text('{"eos_token": 5}')
    with pytest.raises(TokenizerError, match="eos_token must be a string or an AddedToken"):
        Tokenizer.from_dir(str(tmp_path))
    (tmp_path / "tokenizer_config.json").write_text('[1]')
    with pytest.raises(TokenizerError, match="expected a JSON object"):
        Tokenizer.from_dir(str(tmp_path))


def test_chat_template_jinja_file_wins(tmp_path):
    for name in ("tokenizer.json", "tokenizer_config.json"):
        src = os.path.join(FIXTURES, "tok_chatml", name)
        (tmp_path / name).write_bytes(open(src, "rb").read())
    (tmp_path / "chat_template.jinja").write_text("{{ messages | length }}")
    tok = Tokenizer.from_dir(str(tmp_path))
    assert tok.apply_chat_template([{"role": "user", "content": "x"}]) == "1"


def test_decode_rejects_ids_outside_the_vocabulary(case):
    tok, _ = case
    with pytest.raises(ValueError, match="outside the tokenizer's vocabulary"):
        tok.decode([1, tok.vocab_size])


def _stream(tok, ids, skip, chunk_rng=None):
    detok = IncrementalDetokenizer(tok, skip_special_tokens=skip)
    deltas = []
    i = 0
    while i < len(ids):
        n = 1 if chunk_rng is None else chunk_rng.randint(1, 3)
        deltas.append(detok.extend(ids[i:i + n]))
        i += n
    deltas.append(detok.finish())
    return deltas


def test_incremental_detokenisation_equals_decode_of_all(case):
    tok, exp = case
    rng = random.Random(1234)
    seqs = [e["ids"] for e in exp["decode"]]
    seqs += [[rng.randrange(tok.vocab_size) for _ in range(rng.randrange(1, 60))]
             for _ in range(300)]
    # Multi-byte characters split over byte tokens: every byte its own token where it can be.
    for text in ("Café 🙂 你好 世界", "über Straße 👋"):
        seqs.append([t for ch in text for t in tok.encode(ch, add_special_tokens=False)])
    split_seen = 0
    for ids in seqs:
        for skip in (True, False):
            deltas = _stream(tok, ids, skip, chunk_rng=rng if len(ids) % 2 else None)
            assert "".join(deltas) == tok.decode(ids, skip_special_tokens=skip), ids
            # No delta ends inside a character the next token completes.
            for d in deltas[:-1]:
                assert not d.endswith("\ufffd")
            split_seen += sum(1 for d in deltas if d == "")
    assert split_seen > 0  # some tokens completed no character: the hold-back was exercised


def test_incremental_detokenisation_of_a_split_emoji():
    tok = Tokenizer.from_dir(os.path.join(FIXTURES, "tok_chatml"))
    ids = tok.encode("a🙂b", add_special_tokens=False)
    byte_ids = [tok.token_to_id(piece) for piece in
                (tok.id_to_token(i) for i in ids)]  # the pieces as the vocabulary has them
    assert byte_ids == ids
    emoji = [i for i in ids if tok.decode([i]) not in ("a", "b")]
    assert len(emoji) >= 2  # the fixture's vocabulary splits the emoji over byte tokens
    detok = tok.detokenizer()
    out = [detok.add(i) for i in ids]
    assert out[0] == "a"
    assert "".join(out[1:len(emoji)]) == ""  # nothing while the emoji is incomplete
    assert out[len(emoji)] == "🙂"
    assert detok.finish() == "" and detok.text == "a🙂b"
