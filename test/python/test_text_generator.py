"""cbc.text.TextGenerator: text in and out over cbc.Engine. Expected text is the tokenizer's
decode of the tokens cbc.Engine generates for the encoded prompt alone."""
import json
import os
import shutil

import pytest

from serve_util import ARTEFACT, MODEL, TOKENIZER

import cbc  # noqa: E402  (serve_util put the build's package on the path)
from cbc.text import TextGenerator, Tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def gen():
    return TextGenerator(cbc.Engine(ARTEFACT, MODEL, threads=1, backend="cpu"), Tokenizer.from_dir(TOKENIZER))


def expected(gen, ids, n):
    out = gen.engine.generate_batch([ids], max_new_tokens=n, eos_token_id=gen.stop_token_ids)
    return gen.tokenizer.decode(out["req_0"].generated_tokens, skip_special_tokens=True)


PROMPTS = ["hello world", "Café 🙂 über", "你好 世界"]


def test_stops_include_the_tokenizer_eos(gen):
    assert gen.tokenizer.eos_token_id in gen.stop_token_ids
    assert set(gen.engine.eos_token_ids) <= set(gen.stop_token_ids)


def test_generate_and_stream(gen):
    texts = gen.generate(PROMPTS, max_new_tokens=24)
    for p, t in zip(PROMPTS, texts):
        assert t == expected(gen, gen.tokenizer.encode(p), 24)
    pieces = {i: [] for i in range(len(PROMPTS))}
    ends = {}
    for d in gen.stream(PROMPTS, max_new_tokens=24):
        assert d.index not in ends  # nothing after a prompt's last piece
        pieces[d.index].append(d.text)
        if d.finished:
            ends[d.index] = d.finish_reason
    assert ["".join(pieces[i]) for i in range(len(PROMPTS))] == texts
    assert set(ends) == {0, 1, 2} and set(ends.values()) <= {"eos", "stop", "length"}


def test_chat(gen):
    convs = [[{"role": "user", "content": "hello there"}],
             [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]]
    replies = gen.chat(convs, max_new_tokens=16)
    for c, r in zip(convs, replies):
        ids = gen.tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=True)
        assert r == expected(gen, ids, 16)
    streamed = "".join(d.text for d in gen.stream_chat(convs[:1], max_new_tokens=16))
    assert streamed == replies[0]


def test_sampling_is_seeded(gen):
    a = gen.generate(["hello"], max_new_tokens=16, do_sample=True, temperature=1.0, seed=5)
    b = gen.generate(["hello"], max_new_tokens=16, do_sample=True, temperature=1.0, seed=5)
    assert a == b


def test_bad_input(gen):
    with pytest.raises(TypeError, match="list of strings"):
        gen.generate("hello")
    with pytest.raises(ValueError, match="encodes to no tokens"):
        gen.generate([""])
    with pytest.raises(TypeError, match="list of message lists"):
        gen.chat([{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="prompt 0"):
        gen.generate(["hello"], max_new_tokens=1000)  # beyond the model's 256 positions


def test_from_dir(tmp_path):
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(MODEL, name), tmp_path / name)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER, name), tmp_path / name)
    shutil.copy(ARTEFACT, tmp_path / "model.fb")
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 7]}))
    g = TextGenerator.from_dir(str(tmp_path), threads=1, backend="cpu")
    assert 7 in g.stop_token_ids
    assert g.generate(["hello world"], max_new_tokens=8) == \
        [expected(g, g.tokenizer.encode("hello world"), 8)]
