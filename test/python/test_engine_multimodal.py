"""Embeddings through the Python API: a multimodal fixture's image rows (what transformers'
vision tower and projector scattered into the placeholder rows) given as cbc.EmbeddingSegments to
generate_batch, stream and add_request give transformers' greedy tokens (tokens_i of
test/parity/fixtures_mm/<family>), batched, in every data form the segment takes; so does
transformers' inputs_embeds (every prompt row given). Every refusal is a clear error."""
import math
import struct
from array import array

import pytest

import cbc
from mm_util import REPO, Fixture, compile_fixture

# Multimodal fixtures; each reproduces transformers exactly through the engine (nemo_speechlm's
# prompts name its audio placeholder past the table; inkling_mm_model mixes images and audio).
FAMILIES = ["llama4", "qwen3_5", "gemma3", "gemma4_audio", "nemo_speechlm", "inkling_mm_model"]


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """family -> (Fixture, Engine); one engine per family for the module."""
    out = {}
    folder = tmp_path_factory.mktemp("mm")
    for family in FAMILIES:
        fx = Fixture(family)
        artefact = compile_fixture(family, folder / f"{family}.fb")
        out[family] = (fx, cbc.Engine(artefact, fx.dir, backend="cpu", threads=2))
    return out


def segments(fx, i, form="rows"):
    """Prompt i's segments as cbc.EmbeddingSegments, the data in the given form."""
    out = []
    for s in fx.segments(i):
        if form == "rows":
            data = s.row_lists(fx.width)
        elif form == "bytes":
            data = s.data
        elif form == "array":
            data = array("f")
            data.frombytes(s.data)
        elif form == "memoryview":
            data = memoryview(s.data).cast("f", (s.rows, fx.width))
        elif form == "float64":
            a = array("f")
            a.frombytes(s.data)
            data = memoryview(array("d", a).tobytes()).cast("d")
        elif form == "tuple":
            out.append((s.start, s.row_lists(fx.width), s.grid, s.modality))
            continue
        else:
            raise ValueError(form)
        out.append(cbc.EmbeddingSegment(s.start, data, grid=s.grid, modality=s.modality))
    return out or None


def greedy(eng, **kw):
    # The fixture's tokens run past the model's eos: an empty eos list generates all 16.
    return eng.generate_batch(max_new_tokens=16, eos_token_id=[], **kw)


def tokens_of(outs):
    return [outs[f"req_{i}"].generated_tokens for i in range(len(outs))]


@pytest.mark.parametrize("family", FAMILIES)
def test_generate_batch_gives_the_fixture_tokens(engines, family):
    fx, eng = engines[family]
    assert eng.embedding_width == fx.width
    n = fx.count
    outs = greedy(eng, inputs=[fx.prompt(i) for i in range(n)], embeds=[segments(fx, i) for i in range(n)])
    assert [o.status for o in outs.values()] == ["finished"] * n
    assert tokens_of(outs) == [fx.tokens(i) for i in range(n)]


@pytest.mark.parametrize("form", ["bytes", "array", "memoryview", "float64", "tuple"])
def test_every_data_form_gives_the_same_tokens(engines, form):
    fx, eng = engines["qwen3_5"]
    n = fx.count
    outs = greedy(eng, inputs=[fx.prompt(i) for i in range(n)], embeds=[segments(fx, i, form) for i in range(n)])
    assert tokens_of(outs) == [fx.tokens(i) for i in range(n)]


def test_numpy_arrays(engines):
    np = pytest.importorskip("numpy")
    fx, eng = engines["llama4"]
    embeds = []
    for i in range(fx.count):
        segs = [cbc.EmbeddingSegment(s.start, np.frombuffer(s.data, dtype=np.float32).reshape(s.rows, fx.width)
                                     .astype(np.float64)) for s in fx.segments(i)]
        embeds.append(segs)
    outs = greedy(eng, inputs=[fx.prompt(i) for i in range(fx.count)], embeds=embeds)
    assert tokens_of(outs) == [fx.tokens(i) for i in range(fx.count)]
    # inputs_embeds as transformers takes it: one [batch, n, hidden] array.
    ids = fx.prompt(0)
    rows = np.frombuffer(fx.token_rows(ids), dtype=np.float32).reshape(1, len(ids), fx.width).copy()
    for s in fx.segments(0):
        rows[0, s.start:s.start + s.rows] = np.frombuffer(s.data, dtype=np.float32).reshape(s.rows, fx.width)
    assert tokens_of(greedy(eng, inputs_embeds=rows)) == [fx.tokens(0)]


def test_stream_and_add_request(engines):
    fx, eng = engines["llama4"]
    got = {}
    for ev in eng.stream([fx.prompt(1), fx.prompt(0)], max_new_tokens=16, eos_token_id=[],
                         embeds=[segments(fx, 1), segments(fx, 0)]):
        if ev.token is not None:
            got.setdefault(ev.index, []).append(ev.token)
    assert got == {0: fx.tokens(1), 1: fx.tokens(0)}

    ids = {eng.add_request(fx.prompt(i), max_new_tokens=16, ignore_eos=True, embeds=segments(fx, i)): i
           for i in range(fx.count)}
    done = {}
    while len(done) < len(ids):
        eng.step()
        for o in eng.take_finished():
            done[ids[o.id]] = o.tokens
    assert done == {i: fx.tokens(i) for i in range(fx.count)}


def test_forks_share_the_images(engines):
    fx, eng = engines["qwen3_5"]
    outs = greedy(eng, inputs=[fx.prompt(1)], embeds=[segments(fx, 1)], num_return_sequences=2)
    assert outs["req_0"].generated_tokens == outs["req_0__child#0"].generated_tokens == fx.tokens(1)


def test_inputs_embeds_gives_every_row(engines):
    """transformers' inputs_embeds: the token rows of the model's own embedding table (Llama 4
    scales none) with the image rows in place."""
    fx, eng = engines["llama4"]
    rows = []
    for i in range(fx.count):
        ids = fx.prompt(i)
        data = bytearray(fx.token_rows(ids))
        for s in fx.segments(i):
            data[s.start * fx.width * 4:(s.start + s.rows) * fx.width * 4] = s.data
        a = array("f")
        a.frombytes(bytes(data))
        rows.append([list(a[r * fx.width:(r + 1) * fx.width]) for r in range(len(ids))])
    want = [fx.tokens(i) for i in range(fx.count)]
    # The prompts left out: placeholder ids stand for them.
    outs = greedy(eng, inputs_embeds=rows)
    assert tokens_of(outs) == want
    assert outs["req_0"].prompt_ids == [0] * len(fx.prompt(0))
    # Given too: the rows still win.
    outs = greedy(eng, inputs=[fx.prompt(i) for i in range(fx.count)], inputs_embeds=rows)
    assert tokens_of(outs) == want
    got = [ev.token for ev in eng.stream(max_new_tokens=16, eos_token_id=[], inputs_embeds=rows[:1])
           if ev.token is not None]
    assert got == want[0]


# --- refusals ---------------------------------------------------------------------------------

def test_a_text_model_takes_no_embeddings():
    eng = cbc.Engine(str(REPO / "test" / "artefacts" / "llama.fb"), str(REPO / "test" / "parity" / "fixtures" / "llama"),
                     backend="cpu", threads=1)
    assert eng.embedding_width == 0
    with pytest.raises(ValueError, match="this model takes no embeddings"):
        eng.add_request([1, 2, 3], embeds=[cbc.EmbeddingSegment(0, [[1.0, 2.0]])])
    outs = eng.generate_batch([[1, 2, 3], [4, 5]], max_new_tokens=2,
                              embeds=[[cbc.EmbeddingSegment(1, b"\0" * 8)], None])
    assert outs["req_0"].status == "failed" and "takes no embeddings" in outs["req_0"].error
    assert outs["req_1"].status == "finished" and len(outs["req_1"].generated_tokens) == 2
    with pytest.raises(ValueError, match="takes no embeddings"):
        eng.generate_batch(inputs_embeds=[[[1.0, 2.0]]])


def test_the_engine_refusals_raise_or_fail(engines):
    fx, eng = engines["qwen3_5"]
    p = fx.prompt(0)
    s = fx.segments(0)[0]
    rows = s.row_lists(fx.width)
    cases = [
        # rows of another width
        ([cbc.EmbeddingSegment(s.start, [r[:-1] for r in rows], s.grid)], "has 282 values; 6 rows of the model's width 48 are 288"),
        # a flat buffer that is not whole rows
        ([cbc.EmbeddingSegment(s.start, s.data[:-4], s.grid)], "has 287 values; 5 rows of the model's width 48"),
        # no grid on a model with multimodal RoPE
        ([cbc.EmbeddingSegment(s.start, rows)], "needs its grid"),
        # past the prompt's end
        ([cbc.EmbeddingSegment(len(p) - 2, rows, s.grid)], "within the prompt's 20 rows"),
        # overlapping segments
        ([cbc.EmbeddingSegment(s.start, rows, s.grid), cbc.EmbeddingSegment(s.start + 1, rows, s.grid)],
         "after the previous segment"),
        # a value that is not finite
        ([cbc.EmbeddingSegment(s.start, [[math.nan] + r[1:] for r in rows], s.grid)], "not finite"),
    ]
    for embeds, why in cases:
        with pytest.raises(ValueError, match=why):
            eng.add_request(p, embeds=embeds)
    outs = greedy(eng, inputs=[p] * (len(cases) + 1), embeds=[e for e, _ in cases] + [segments(fx, 0)])
    for k, (_, why) in enumerate(cases):
        assert outs[f"req_{k}"].status == "failed" and why in outs[f"req_{k}"].error
    assert outs[f"req_{len(cases)}"].generated_tokens == fx.tokens(0)
    assert eng.idle()


def test_bad_arguments_raise_at_once(engines):
    fx, eng = engines["llama4"]
    p = fx.prompt(0)
    good = segments(fx, 0)
    with pytest.raises(TypeError, match="not both"):
        eng.generate_batch([p], embeds=[good], inputs_embeds=[[[0.0] * 64] * len(p)])
    with pytest.raises(ValueError, match="embeds has 1 entries for 2 prompts"):
        eng.generate_batch([p, p], embeds=[good])
    with pytest.raises(ValueError, match=r"inputs_embeds\[0\] has 3 rows for prompt 0's 22 tokens"):
        eng.generate_batch([p], inputs_embeds=[[[0.0] * 64] * 3])
    with pytest.raises(TypeError, match="needs inputs"):
        eng.generate_batch()
    with pytest.raises(TypeError, match="list of EmbeddingSegments"):
        eng.add_request(p, embeds=good[0])
    with pytest.raises(TypeError, match="cbc.EmbeddingSegment or a"):
        eng.add_request(p, embeds=[{"start": 2}])
    with pytest.raises(ValueError, match="start must be >= 0"):
        cbc.EmbeddingSegment(-1, [[0.0]])
    with pytest.raises(TypeError, match="start must be an int"):
        cbc.EmbeddingSegment(1.5, [[0.0]])
    with pytest.raises(TypeError, match="grid must be"):
        cbc.EmbeddingSegment(0, [[0.0]], grid=(1, 2))
    with pytest.raises(ValueError, match="grid must be three sizes >= 1"):
        cbc.EmbeddingSegment(0, [[0.0]], grid=(1, 0, 2))
    with pytest.raises(ValueError, match="modality must be one of image, video, audio, got 'speech'"):
        cbc.EmbeddingSegment(0, [[0.0]], modality="speech")
    with pytest.raises(ValueError, match="row 1 has 1 values, row 0 has 2"):
        cbc.EmbeddingSegment(0, [[0.0, 1.0], [2.0]])
    with pytest.raises(TypeError, match="not a number"):
        cbc.EmbeddingSegment(0, [[0.0, "x"]])
    with pytest.raises(TypeError, match="not a str"):
        cbc.EmbeddingSegment(0, "0.5")
    with pytest.raises(ValueError, match="not whole float32 values"):
        cbc.EmbeddingSegment(0, b"\0" * 6)
    with pytest.raises(TypeError, match="float32 or float64"):
        cbc.EmbeddingSegment(0, array("i", [1, 2]))
    # The engine is still usable: nothing was queued.
    assert eng.idle()


def test_segment_repr_and_shape():
    s = cbc.EmbeddingSegment(3, [[1.0, 2.0], [3.0, 4.0]], grid=[1, 1, 2])
    assert (s.start, s.rows, s.values, s.grid) == (3, 2, 4, (1, 1, 2))
    assert "start=3, rows=2" in repr(s) and "modality" not in repr(s)
    clip = cbc.EmbeddingSegment(0, [[1.0, 2.0]], modality="audio")
    assert clip.modality == "audio" and "modality='audio'" in repr(clip)
    flat = cbc.EmbeddingSegment(0, struct.pack("<4f", 1, 2, 3, 4))
    assert flat.rows is None and flat.values == 4
    raw = cbc.EmbeddingSegment(0, memoryview(bytearray(struct.pack("<4f", 1, 2, 3, 4))))
    assert raw.rows is None and raw.values == 4
    with pytest.raises(ValueError, match="not whole float32 values"):
        cbc.EmbeddingSegment(0, memoryview(b"\0" * 6))
