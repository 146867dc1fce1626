"""Structured outputs (xgrammar in the engine): sampled outputs of the trained example model
(examples/kjv-llama) keep to a JSON schema, any JSON object, a regex and an EBNF grammar, for
200 sampled requests batched together and for forks; bad specs are ValueErrors."""
import json
import re

import pytest

import cbc
from cbc.text import Tokenizer

from test_engine_example import EXAMPLE, compiled

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["book", "chapter", "words"],
          "properties": {"book": {"enum": ["Genesis", "Exodus", "Psalms"]},
                         "chapter": {"type": "integer", "minimum": 1, "maximum": 150},
                         "words": {"type": "string", "maxLength": 12}}}


def valid(value) -> bool:
    """SCHEMA, checked by hand (no jsonschema package in the test venv)."""
    return (isinstance(value, dict) and set(value) == {"book", "chapter", "words"}
            and value["book"] in SCHEMA["properties"]["book"]["enum"]
            and isinstance(value["chapter"], int) and not isinstance(value["chapter"], bool)
            and 1 <= value["chapter"] <= 150 and isinstance(value["words"], str) and len(value["words"]) <= 12)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_dir(str(EXAMPLE))


@pytest.fixture(scope="module")
def artefact(tmp_path_factory):
    return compiled(tmp_path_factory.mktemp("kjv") / "kjv-llama.fb")


@pytest.fixture(scope="module")
def engine(artefact, tok):
    eng = cbc.Engine(artefact, str(EXAMPLE), backend="cpu", threads=1)
    eng.set_structured_vocab(tok)
    return eng


def run(eng, requests):
    """(text, finish reason) per request: [(prompt, kwargs)], all in one batch."""
    ids = [eng.add_request(p, **kw) for p, kw in requests]
    while not eng.idle():
        eng.step()
    outs = {o.id: o for o in eng.take_finished()}
    return [outs[i] for i in ids]


def text(tok, eng, out) -> str:
    toks = out.tokens[:-1] if out.tokens and out.tokens[-1] in eng.eos_token_ids else out.tokens
    return tok.decode(toks)


def test_200_sampled_outputs_keep_to_a_json_schema(engine, tok):
    prompt = tok.encode("And God said", add_special_tokens=False)
    reqs = [(prompt, dict(max_new_tokens=64, temperature=1.0, seed=s, structured=("json_schema", SCHEMA)))
            for s in range(200)]
    outs = run(engine, reqs)
    texts = [text(tok, engine, o) for o in outs]
    assert all(o.finish_reason in ("stop", "eos") for o in outs), [o.finish_reason for o in outs]
    values = [json.loads(t) for t in texts]
    assert all(valid(v) for v in values), [t for t, v in zip(texts, values) if not valid(v)]
    assert len(set(texts)) > 20  # sampled, not one forced string
    # Unconstrained, the same requests write no JSON.
    free = run(engine, [(prompt, dict(max_new_tokens=16, temperature=1.0, seed=s)) for s in range(5)])
    assert not any(text(tok, engine, o).lstrip().startswith("{") for o in free)


def test_json_object_regex_grammar_and_forks(engine, tok):
    prompt = tok.encode("In the beginning", add_special_tokens=False)
    grammar = 'root ::= "The " ("LORD" | "people") " " ("spake" | "went") "."'
    outs = run(engine, [
        (prompt, dict(max_new_tokens=16, temperature=1.0, seed=2, structured=("regex", r"(yea|nay), [0-9]{1,3}"))),
        (prompt, dict(max_new_tokens=16, temperature=0.0, structured=("grammar", grammar))),
    ] + [(prompt, dict(max_new_tokens=64, temperature=1.0, seed=s, structured=("json", ""))) for s in range(16)])
    # Any JSON object: its keys and strings are free text, which this model may write at length;
    # those that end are objects, and the others are still inside one.
    objects = [text(tok, engine, o) for o in outs[2:] if o.finish_reason in ("stop", "eos")]
    assert objects and all(isinstance(json.loads(t), dict) for t in objects), objects
    assert all(text(tok, engine, o).startswith("{") for o in outs[2:])
    assert re.fullmatch(r"(yea|nay), [0-9]{1,3}", text(tok, engine, outs[0])), text(tok, engine, outs[0])
    assert re.fullmatch(r"The (LORD|people) (spake|went)\.", text(tok, engine, outs[1])), text(tok, engine, outs[1])
    # n = 4: each fork keeps its own place in the schema.
    rid = engine.add_request(prompt, max_new_tokens=64, temperature=1.0, seed=7, n=4,
                             structured=("json_schema", SCHEMA))
    while not engine.idle():
        engine.step()
    forks = [o for o in engine.take_finished() if o.id == rid or o.parent == rid]
    assert len(forks) == 4 and all(valid(json.loads(text(tok, engine, o))) for o in forks)


def test_bad_specs_are_value_errors(engine, artefact):
    with pytest.raises(ValueError, match="cannot compile the regex"):
        engine.add_request([1], structured=("regex", "(unclosed"))
    with pytest.raises(ValueError, match="cannot compile the json_schema"):
        engine.add_request([1], structured=("json_schema", "{not json"))
    with pytest.raises(ValueError, match="kind one of"):
        engine.add_request([1], structured=("xml", "<a/>"))
    with pytest.raises(TypeError, match="must be a str"):
        engine.add_request([1], structured=("regex", 5))
    fresh = cbc.Engine(artefact, str(EXAMPLE), backend="cpu", threads=1)
    with pytest.raises(ValueError, match="set_structured_vocab first"):
        fresh.add_request([1], structured=("json", ""))
