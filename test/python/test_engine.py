"""The Python package against `cbc run`: the same requests give the same tokens, greedy and
sampled, through generate_batch, stream and add_request/step; and every refusal is a clear error.

Expected tokens come from running the cbc executable on the committed parity fixtures
(test/parity/fixtures/<family>, test/artefacts/<family>.fb), never from typed-in values.
The package is imported from PYTHONPATH (build/python) or from an installed wheel; the cbc
executable is CBC_EXECUTABLE, else $CBC_BUILD_DIR/bin/cbc (default build/bin/cbc).
"""

import json
import os
import random
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

import cbc

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "test" / "parity" / "fixtures"
ARTEFACTS = REPO / "test" / "artefacts"
CBC = Path(os.environ.get("CBC_EXECUTABLE") or
           Path(os.environ.get("CBC_BUILD_DIR", REPO / "build")) / "bin" / "cbc")

# Families with both a committed artefact and a fixture checkpoint: attention, MoE, a hybrid
# with recurrent state, sliding windows with sinks, and MLA.
FAMILIES = ["llama", "qwen3_moe", "olmo_hybrid", "gpt_oss", "deepseek_v3"]


def artefact(family):
    return str(ARTEFACTS / f"{family}.fb")


def checkpoint(family):
    return str(FIXTURES / family)


def prompts(vocab, n=6, seed=0, longest=24):
    rng = random.Random(seed)
    return [[rng.randrange(vocab) for _ in range(rng.randrange(1, longest))] for _ in range(n)]


def cbc_run(family, lines, *flags, weights=True):
    """`cbc run` on JSONL lines: the results in input order."""
    if not CBC.exists():
        pytest.fail(f"the cbc executable is not at {CBC} (set CBC_EXECUTABLE or CBC_BUILD_DIR)")
    src = ["--weights", checkpoint(family)] if weights else ["--random-weights"]
    cmd = [str(CBC), "run", artefact(family), *src, "--backend", "cpu", "--threads", "1", "--quiet", *flags]
    text = "".join(json.dumps(l) + "\n" for l in lines)
    r = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    results = [json.loads(l) for l in r.stdout.splitlines()]
    return sorted(results, key=lambda x: x["index"])


def engine(family, **kw):
    kw.setdefault("threads", 1)
    return cbc.Engine(artefact(family), checkpoint(family), **{"backend": "cpu", **kw})


def tokens_of(outs):
    return [outs[f"req_{i}"].generated_tokens for i in range(len(outs))]


# --- parity with cbc run ----------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_generate_batch_greedy_equals_cbc_run(family):
    eng = engine(family)
    ps = prompts(eng.vocab_size)
    expected = cbc_run(family, ps, "--max-new-tokens", "10")
    outs = eng.generate_batch(ps, max_new_tokens=10)
    assert list(outs) == [f"req_{i}" for i in range(len(ps))]
    for i, p in enumerate(ps):
        o = outs[f"req_{i}"]
        assert o.request_id == f"req_{i}"
        assert o.prompt_ids == p
        assert o.status == "finished" and o.error is None
        assert o.generated_tokens == expected[i]["tokens"], (family, i)
        assert o.finish_reason == expected[i]["finish_reason"]


@pytest.mark.parametrize("family", ["llama", "qwen3_moe", "olmo_hybrid"])
def test_generate_batch_sampled_equals_cbc_run(family):
    """Request i samples with seed S + i in both, so the same seed gives the same tokens."""
    eng = engine(family)
    ps = prompts(eng.vocab_size, seed=1)
    expected = cbc_run(family, ps, "--max-new-tokens", "12", "--temperature", "0.9", "--top-k", "40",
                       "--top-p", "0.95", "--seed", "7")
    outs = eng.generate_batch(ps, max_new_tokens=12, do_sample=True, temperature=0.9, top_k=40,
                              top_p=0.95, seed=7)
    assert tokens_of(outs) == [e["tokens"] for e in expected]
    # Another seed gives other tokens: the seed reaches the sampler.
    other = eng.generate_batch(ps, max_new_tokens=12, do_sample=True, temperature=0.9, top_k=40,
                               top_p=0.95, seed=8)
    assert tokens_of(other) != tokens_of(outs)


def test_random_weights_equal_cbc_run():
    eng = cbc.Engine(artefact("llama"), random_weights=True, seed=3, threads=1, backend="cpu")
    ps = prompts(eng.vocab_size, seed=2)
    expected = cbc_run("llama", ps, "--max-new-tokens", "8", "--seed", "3", weights=False)
    assert tokens_of(eng.generate_batch(ps, max_new_tokens=8)) == [e["tokens"] for e in expected]
    fixture = engine("llama").generate_batch(ps, max_new_tokens=8)
    assert tokens_of(fixture) != [e["tokens"] for e in expected]


@pytest.mark.parametrize("family", ["llama", "olmo_hybrid"])
def test_stream_yields_the_same_tokens(family):
    eng = engine(family)
    ps = prompts(eng.vocab_size, seed=3)
    expected = cbc_run(family, ps, "--max-new-tokens", "9")
    got = {i: [] for i in range(len(ps))}
    ends = {}
    for ev in eng.stream(ps, max_new_tokens=9):
        assert isinstance(ev, cbc.StreamEvent)
        assert ev.index not in ends, "an event after the request's last one"
        got[ev.index].append(ev.token)
        if ev.finished:
            ends[ev.index] = ev.finish_reason
    assert [got[i] for i in range(len(ps))] == [e["tokens"] for e in expected]
    assert ends == {i: e["finish_reason"] for i, e in enumerate(expected)}
    assert eng.idle()


def test_add_request_step_equals_cbc_run():
    eng = engine("gpt_oss")
    ps = prompts(eng.vocab_size, seed=4)
    expected = cbc_run("gpt_oss", ps, "--max-new-tokens", "7")
    ids = [eng.add_request(p, max_new_tokens=7) for p in ps]
    streamed = {rid: [] for rid in ids}
    while not eng.idle():
        for ev in eng.step():
            assert isinstance(ev, cbc.TokenEvent)
            streamed[ev.id].append(ev.token)
    outs = {o.id: o for o in eng.take_finished()}
    assert sorted(outs) == sorted(ids)
    for rid, p, e in zip(ids, ps, expected):
        assert outs[rid].tokens == e["tokens"] == streamed[rid]
        assert outs[rid].prompt == p
        assert outs[rid].finish_reason == e["finish_reason"]
        assert outs[rid].latency_s >= outs[rid].ttft_s > 0
    assert eng.take_finished() == []
    s = eng.stats
    assert s["finished"] == len(ps)
    assert s["generated_tokens"] == sum(len(e["tokens"]) for e in expected)


def test_logprobs_equal_cbc_run():
    eng = engine("llama")
    ps = prompts(eng.vocab_size, n=3, seed=5)
    lines = [{"prompt": p, "logprobs": True, "temperature": 0.7, "seed": 11 + i} for i, p in enumerate(ps)]
    expected = cbc_run("llama", lines, "--max-new-tokens", "5")
    ids = [eng.add_request(p, max_new_tokens=5, temperature=0.7, seed=11 + i, logprobs=True)
           for i, p in enumerate(ps)]
    while not eng.idle():
        eng.step()
    outs = {o.id: o for o in eng.take_finished()}
    for rid, e in zip(ids, expected):
        assert outs[rid].tokens == e["tokens"]
        assert outs[rid].logprobs == pytest.approx(e["logprobs"], abs=1e-5)


# --- cancel -------------------------------------------------------------------------------------

def test_cancel_finishes_cancelled_and_frees_the_cache():
    eng = engine("llama")
    a = eng.add_request([1, 2, 3], max_new_tokens=50)
    b = eng.add_request([4, 5, 6], max_new_tokens=5)
    eng.step()
    assert eng.num_running == 2
    assert eng.cache_usage > 0
    assert eng.cancel(a) is True
    assert eng.cancel(a) is False, "cancelling twice"
    assert eng.cancel(12345) is False, "an unknown id"
    assert eng.num_running == 1
    while not eng.idle():
        for ev in eng.step():
            assert ev.id == b, "a cancelled request generated a token"
    outs = {o.id: o for o in eng.take_finished()}
    assert outs[a].finish_reason == "cancelled" and len(outs[a].tokens) == 1
    assert outs[b].finish_reason == "length" and len(outs[b].tokens) == 5
    assert eng.cache_usage == 0.0
    assert eng.stats["cancelled"] == 1


def test_cancel_a_waiting_request_and_reuse_its_slot():
    """With room for one request per step, a cancelled waiting request never runs, and the
    next one still gets served."""
    eng = engine("llama", max_requests=1)
    a = eng.add_request([1, 2], max_new_tokens=3)
    b = eng.add_request([3, 4], max_new_tokens=3)
    assert eng.num_waiting == 2
    assert eng.cancel(b)
    assert eng.num_waiting == 1
    c = eng.add_request([3, 4], max_new_tokens=3)
    while not eng.idle():
        eng.step()
    outs = {o.id: o for o in eng.take_finished()}
    assert outs[b].finish_reason == "cancelled" and outs[b].tokens == []
    assert outs[a].finish_reason == outs[c].finish_reason == "length"


def test_leaving_a_stream_early_cancels_its_requests():
    eng = engine("llama")
    it = eng.stream([[1, 2, 3], [4, 5]], max_new_tokens=40)
    next(it)
    it.close()
    assert eng.idle()
    assert eng.stats["cancelled"] == 2
    assert eng.take_finished() == [], "the stream's requests are its own"


def test_cancel_from_another_thread_ends_a_stream():
    eng = engine("llama")
    ps = [[1, 2, 3], [4, 5]]
    alone = eng.generate_batch(ps, max_new_tokens=30)
    seen = []
    for ev in eng.stream(ps, max_new_tokens=30):
        seen.append(ev)
        if len(seen) == 3:
            t = threading.Thread(target=eng.cancel, args=(ev.request_id,))
            t.start()
            t.join()
    last = {ev.index: ev for ev in seen}
    cancelled = seen[2].index
    assert last[cancelled].finished and last[cancelled].finish_reason == "cancelled"
    assert last[cancelled].token is None
    other = alone[f"req_{1 - cancelled}"]
    assert last[1 - cancelled].finish_reason == other.finish_reason
    assert [ev.token for ev in seen if ev.index == 1 - cancelled] == other.generated_tokens


# --- refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt,kwargs,reason", [
    ([], {}, "empty prompt"),
    ([1, 99999], {}, "token id 99999 at position 1 is outside the vocabulary"),
    ([-1], {}, "token id -1 at position 0"),
    ([1], {"max_new_tokens": 0}, "max_new_tokens must be >= 1"),
    ([1], {"temperature": -1.0}, "temperature must be a finite number >= 0"),
    ([1], {"temperature": float("nan")}, "temperature must be a finite number >= 0"),
    ([1], {"top_p": 0.0}, "top_p must be in (0, 1]"),
    ([1], {"min_p": 2.0}, "min_p must be in [0, 1]"),
    ([1], {"top_k": -2}, "top_k must be >= 0"),
    ([1], {"max_new_tokens": 10 ** 6}, "exceeds the"),
    ([1], {"repetition_penalty": 0.0}, "repetition_penalty must be a finite number > 0"),
    ([1], {"presence_penalty": 3.0}, "presence_penalty must be in [-2, 2]"),
    ([1], {"logit_bias": {256: 1.0}}, "logit_bias names token id 256"),
    ([1], {"min_tokens": 20, "max_new_tokens": 4}, "min_tokens must be in [0, max_new_tokens]"),
    ([1], {"top_logprobs": 21}, "top_logprobs must be in [0, 20]"),
    ([1], {"prompt_logprobs": 21}, "prompt_logprobs must be -1 (none) or in [0, 20]"),
    ([1], {"prompt_logprobs": -1}, "prompt_logprobs must be None (off) or in [0, 20]"),
])
def test_rejected_request_raises_value_error(prompt, kwargs, reason):
    eng = engine("llama")
    with pytest.raises(ValueError) as e:
        eng.add_request(prompt, **kwargs)
    assert reason in str(e.value)
    assert eng.take_finished() == [], "a request refused with an exception leaves no result"
    ok = eng.add_request([1, 2], max_new_tokens=2)
    while not eng.idle():
        eng.step()
    assert [o.id for o in eng.take_finished()] == [ok]


def test_bad_argument_types_raise_type_error():
    eng = engine("llama")
    with pytest.raises(TypeError):
        eng.add_request("hello")
    with pytest.raises(ValueError, match="seed must be >= 0"):
        eng.add_request([1], seed=-1)
    with pytest.raises(TypeError):
        eng.generate_batch("hello")


def test_inputs_may_be_any_iterables_of_ints():
    eng = engine("llama")
    ps = [[1, 2, 3], [4, 5]]
    want = tokens_of(eng.generate_batch(ps, max_new_tokens=4))
    got = eng.generate_batch((tuple(p) for p in ps), max_new_tokens=4)
    assert tokens_of(got) == want
    assert got["req_0"].prompt_ids == [1, 2, 3]


def test_a_bad_prompt_in_the_inputs_raises_before_any_work():
    eng = engine("llama")
    with pytest.raises(TypeError, match="each prompt must be a sequence of token ids"):
        eng.generate_batch([[1, 2], None], max_new_tokens=4)
    with pytest.raises(TypeError):
        list(eng.stream([[1, 2], "text"], max_new_tokens=4))
    assert eng.idle() and eng.stats["prompt_tokens"] == 0 and eng.take_finished() == []


def test_generate_batch_reports_a_rejected_prompt_and_serves_the_rest():
    eng = engine("llama")
    outs = eng.generate_batch([[1, 2], [], [3, 4]], max_new_tokens=3)
    assert outs["req_1"].status == "failed"
    assert outs["req_1"].error == "empty prompt"
    assert outs["req_1"].finish_reason == "rejected"
    assert outs["req_1"].generated_tokens == []
    for k in ("req_0", "req_2"):
        assert outs[k].status == "finished" and len(outs[k].generated_tokens) == 3
    assert eng.idle() and eng.take_finished() == []


def test_stream_reports_a_rejected_prompt():
    eng = engine("llama")
    evs = list(eng.stream([[1, 2], [1, 99999]], max_new_tokens=2))
    bad = [ev for ev in evs if ev.index == 1]
    assert bad == [cbc.StreamEvent(1, bad[0].request_id, None, True, "rejected")]
    assert [ev.token is not None for ev in evs if ev.index == 0] == [True, True]


def test_missing_paths_raise_file_not_found():
    with pytest.raises(FileNotFoundError, match="artefact '/nonexistent.fb' does not exist"):
        cbc.Engine("/nonexistent.fb", checkpoint("llama"))
    with pytest.raises(FileNotFoundError, match="weights '/nonexistent' does not exist"):
        cbc.Engine(artefact("llama"), "/nonexistent")


def test_bad_artefact_and_weights_raise_value_error(tmp_path):
    """The runtime's one-line messages: what is wrong and with which file."""
    junk = tmp_path / "junk.fb"
    junk.write_bytes(b"not an artefact at all")
    with pytest.raises(ValueError, match=r"junk.fb: not a cbc artefact"):
        cbc.Engine(str(junk), checkpoint("llama"))
    with pytest.raises(ValueError, match=r"differs from the compiled model at \"model_type\""):
        cbc.Engine(artefact("llama"), checkpoint("qwen3_moe"))
    with pytest.raises(ValueError, match=r"checkpoint file '.*junk.fb' has a bad header"):
        cbc.Engine(artefact("llama"), str(junk))
    with pytest.raises(ValueError, match=r"has neither model.safetensors nor model.safetensors.index.json"):
        cbc.Engine(artefact("llama"), str(tmp_path))
    with pytest.raises(ValueError, match="either weights=CHECKPOINT or random_weights=True"):
        cbc.Engine(artefact("llama"))
    with pytest.raises(ValueError, match="either weights=CHECKPOINT or random_weights=True"):
        cbc.Engine(artefact("llama"), checkpoint("llama"), random_weights=True)


@pytest.mark.parametrize("kwargs,message", [
    ({"backend": "gpu"}, "backend must be"),
    ({"cache_memory_mib": 0}, "cache_memory_mib must be >= 1"),
    ({"cache_memory_mib": 1 << 30}, "cache_memory_mib must be at most"),
    ({"max_batch_tokens": 0}, "max_batch_tokens must be >= 1"),
    ({"max_requests": 0}, "max_requests must be >= 1"),
    ({"threads": -1}, "threads must be >= 0"),
    ({"seed": -5}, "seed must be >= 0"),
    ({"snapshot_interval": 65}, "multiple of 64"),
    ({"snapshot_memory_mib": -2}, "snapshot_memory_mib must be >= 0"),
    ({"swap_space_mib": -1}, "swap_space_mib must be >= 0"),
    ({"swap_space_mib": 1 << 25}, "swap_space_mib must be at most"),
    ({"speculative": "eagle"}, "unknown speculative method 'eagle'"),
    ({"speculative": "draft:x.fb"}, "--speculative draft:x.fb is not supported yet"),
    ({"speculative": "ngram", "num_speculative_tokens": 0}, "num_speculative_tokens must be >= 1"),
    ({"speculative": "ngram", "num_speculative_tokens": 65}, "num_speculative_tokens must be at most 64"),
    ({"speculative": "ngram", "speculative_max_tokens": 0}, "speculative_max_tokens must be >= 1"),
])
def test_bad_engine_options_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        engine("llama", **kwargs)


def test_max_model_len_bounds_requests():
    eng = engine("llama", max_model_len=20)
    assert eng.max_model_len == 20
    with pytest.raises(ValueError, match=r"exceeds the 20 positions allowed \(max_model_len\)"):
        eng.add_request([1] * 10, max_new_tokens=11)
    eng.add_request([1] * 10, max_new_tokens=10)


def test_properties():
    eng = engine("llama")
    meta = json.loads((FIXTURES / "llama" / "config.json").read_text())
    assert eng.vocab_size == meta["vocab_size"]
    assert eng.max_model_len == meta["max_position_embeddings"]
    eos = meta["eos_token_id"]
    assert eng.eos_token_ids == (eos if isinstance(eos, list) else [eos])
    assert eng.backend == "cpu"
    assert eng.num_waiting == eng.num_running == 0 and eng.idle()
    assert set(eng.stats) >= {"steps", "prompt_tokens", "generated_tokens", "finished", "rejected",
                              "cancelled", "preemptions", "step_seconds"}


# --- generation settings --------------------------------------------------------------------

def test_generation_config_is_duck_typed():
    eng = engine("llama")
    ps = prompts(eng.vocab_size, seed=6)
    config = types.SimpleNamespace(max_new_tokens=6, do_sample=True, temperature=0.8, top_k=20,
                                   top_p=0.9, eos_token_id=None)
    expected = cbc_run("llama", ps, "--max-new-tokens", "6", "--temperature", "0.8", "--top-k", "20",
                       "--top-p", "0.9", "--seed", "4")
    assert tokens_of(eng.generate_batch(ps, config, seed=4)) == [e["tokens"] for e in expected]
    # Keywords win over the config's attributes; missing attributes take the defaults.
    greedy = cbc_run("llama", ps, "--max-new-tokens", "3")
    assert tokens_of(eng.generate_batch(ps, config, do_sample=False, max_new_tokens=3)) == \
        [e["tokens"] for e in greedy]
    assert tokens_of(eng.generate_batch(ps, types.SimpleNamespace(max_new_tokens=3))) == \
        [e["tokens"] for e in greedy]


def test_do_sample_false_is_greedy_whatever_the_temperature():
    eng = engine("llama")
    ps = prompts(eng.vocab_size, seed=7)
    greedy = [e["tokens"] for e in cbc_run("llama", ps, "--max-new-tokens", "8")]
    assert tokens_of(eng.generate_batch(ps, max_new_tokens=8, temperature=5.0, top_k=3)) == greedy
    assert tokens_of(eng.generate_batch(ps, max_new_tokens=8, do_sample=False, temperature=5.0)) == greedy
    sampled = eng.generate_batch(ps, max_new_tokens=8, do_sample=True, temperature=5.0)
    assert tokens_of(sampled) != greedy


def test_eos_token_id_stops():
    eng = engine("llama")
    p = [5, 6, 7, 8]
    full = eng.generate_batch([p], max_new_tokens=12)["req_0"].generated_tokens
    stop = full[4]
    cut = full[:full.index(stop) + 1]
    assert len(cut) < len(full)
    out = eng.generate_batch([p], max_new_tokens=12, eos_token_id=stop)["req_0"]
    assert out.generated_tokens == cut and out.finish_reason == "eos"
    out = eng.generate_batch([p], max_new_tokens=12, eos_token_id=[999, stop])["req_0"]
    assert out.generated_tokens == cut and out.finish_reason == "eos"
    evs = list(eng.stream([p], max_new_tokens=12, eos_token_id=stop))
    assert [ev.token for ev in evs] == cut and evs[-1].finish_reason == "eos"
    # The same through add_request's stop_token_ids, reported as "stop".
    rid = eng.add_request(p, max_new_tokens=12, stop_token_ids=[stop])
    while not eng.idle():
        eng.step()
    (o,) = eng.take_finished()
    assert o.id == rid and o.tokens == cut and o.finish_reason == "stop"


# --- threads and the GIL --------------------------------------------------------------------

def long_batch(eng, n=48, length=160):
    rng = random.Random(9)
    return [[rng.randrange(eng.vocab_size) for _ in range(length)] for _ in range(n)]


def test_step_releases_the_gil():
    """With the interpreter's switch interval made huge, another thread runs only when the
    stepping thread gives the GIL up on its own. Every engine call does, briefly (it waits for
    the engine's mutex without it): a couple of ticks a step. Only a step that runs without the
    GIL lets the ticker go on for the step's whole length (each step here prefills 2048 tokens)."""
    eng = engine("llama", max_batch_tokens=2048)
    batch = long_batch(eng, n=64, length=200)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0002)  # gives the GIL back, so the stepping thread is never starved

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        for p in batch:
            eng.add_request(p, max_new_tokens=1)
        t = threading.Thread(target=ticker)
        t.start()
        time.sleep(0.01)
        before = len(ticks)
        steps = 0
        while not eng.idle():
            eng.step()
            steps += 1
        during = len(ticks) - before
        stop.set()
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert steps >= 6
    assert during >= 20 * steps, (during, steps)


def test_two_threads_share_one_engine():
    """generate_batch from several threads at once, and a raw add_request/step loop beside them:
    each gets exactly its own results, equal to a run alone."""
    eng = engine("llama")
    batches = [prompts(eng.vocab_size, n=8, seed=20 + k) for k in range(3)]
    alone = [tokens_of(eng.generate_batch(b, max_new_tokens=20)) for b in batches]
    results = [None] * len(batches)
    errors = []

    def worker(k):
        try:
            results[k] = tokens_of(eng.generate_batch(batches[k], max_new_tokens=20))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(batches))]
    for t in threads:
        t.start()
    raw = [eng.add_request(p, max_new_tokens=20) for p in batches[0]]
    got, streamed = {}, {rid: [] for rid in raw}
    deadline = time.monotonic() + 60
    while len(got) < len(raw) and time.monotonic() < deadline:
        for ev in eng.step():
            streamed[ev.id].append(ev.token)
        for o in eng.take_finished():
            assert o.id not in got
            got[o.id] = o.tokens
    for t in threads:
        t.join()
    # Events of the raw requests that another thread's step produced wait for step().
    while not eng.idle():
        for ev in eng.step():
            streamed[ev.id].append(ev.token)
    assert not errors, errors
    assert results == alone
    assert [got[rid] for rid in raw] == alone[0] == [streamed[rid] for rid in raw]
    assert eng.take_finished() == [] and eng.step() == []


def test_two_engines_step_concurrently():
    engines = [engine("llama"), engine("olmo_hybrid")]
    ps = [prompts(e.vocab_size, n=8, seed=30) for e in engines]
    alone = [tokens_of(e.generate_batch(p, max_new_tokens=10)) for e, p in zip(engines, ps)]
    results = [None, None]

    def worker(k):
        results[k] = tokens_of(engines[k].generate_batch(ps[k], max_new_tokens=10))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == alone


# --- prefix caching, forks and swapping -----------------------------------------------------------

@pytest.mark.parametrize("family", ["llama", "olmo_hybrid"])
def test_num_return_sequences_equal_cbc_run_n(family):
    """generate_batch(num_return_sequences=3) names the sequences as transformers does and gives
    cbc run's "n": 3 tokens, greedy (all equal) and sampled (seeded, each its own)."""
    eng = engine(family)
    ps = prompts(eng.vocab_size, n=2, seed=5, longest=30)
    for temperature in (0.0, 0.9):
        outs = eng.generate_batch(ps, max_new_tokens=6, do_sample=temperature > 0, temperature=temperature,
                                  seed=11, num_return_sequences=3)
        assert list(outs) == ["req_0__child#0", "req_0__child#1", "req_0",
                              "req_1__child#0", "req_1__child#1", "req_1"]
        lines = [{"prompt": p, "max_new_tokens": 6, "temperature": temperature, "seed": 11 + i, "n": 3}
                 for i, p in enumerate(ps)]
        want = cbc_run(family, lines)
        for i in range(2):
            runs = {r["sequence"]: r["tokens"] for r in want if r["index"] == i}
            assert outs[f"req_{i}"].generated_tokens == runs[0]
            assert [outs[f"req_{i}__child#{k}"].generated_tokens for k in range(2)] == [runs[1], runs[2]]
            if temperature == 0:
                assert runs[0] == runs[1] == runs[2]
    assert eng.stats["forks"] > 0


def test_prefix_cache_hits_and_can_be_turned_off():
    eng = engine("llama")
    p = list(range(1, 50))
    first = eng.generate_batch([p], max_new_tokens=4)["req_0"].generated_tokens
    again = eng.generate_batch([p], max_new_tokens=4)["req_0"].generated_tokens
    assert again == first
    s = eng.stats
    assert s["prefix_queries"] == 2 * len(p) and s["prefix_hits"] == 48
    rid = eng.add_request(p, max_new_tokens=1, cache_salt="other tenant")
    while not eng.idle():
        eng.step()
    (out,) = eng.take_finished()
    assert out.id == rid and out.cached_tokens == 0, "another salt finds nothing"
    off = engine("llama", prefix_caching=False)
    off.generate_batch([p], max_new_tokens=4)
    assert off.generate_batch([p], max_new_tokens=4)["req_0"].generated_tokens == first
    assert off.stats["prefix_hits"] == 0


def test_speculative_ngram_keeps_greedy_tokens():
    """Prompt lookup on a repetitive prompt for a hybrid model: greedy tokens equal those without
    it, and stats count the guesses, per position, and the steps undone."""
    p = list(range(1, 11)) * 3
    plain = engine("olmo_hybrid").generate_batch([p, p[:7]], max_new_tokens=10)
    # Chunks of 8 tokens: the prompt's last chunk verifies lookup's guess of its continuation.
    spec = engine("olmo_hybrid", speculative="ngram", num_speculative_tokens=4, max_batch_tokens=8)
    got = spec.generate_batch([p, p[:7]], max_new_tokens=10)
    assert [o.generated_tokens for o in got.values()] == [o.generated_tokens for o in plain.values()]
    s = spec.stats
    assert s["draft_tokens"] > 0 and len(s["drafted_at"]) == 4 and len(s["accepted_at"]) == 4
    assert s["draft_tokens"] == sum(s["drafted_at"]) and s["accepted_tokens"] == sum(s["accepted_at"])
    assert s["spec_rollbacks"] > 0, "a rejected guess undoes the hybrid's step"


def test_add_forked_request_and_swap_space():
    eng = engine("olmo_hybrid", swap_space_mib=16, max_batch_tokens=16, cache_memory_mib=1)
    ids = eng.add_forked_request(list(range(3, 40)), 3, max_new_tokens=5)
    assert len(ids) == 3
    while not eng.idle():
        eng.step()
    outs = {o.id: o for o in eng.take_finished()}
    assert [outs[i].fork_index for i in ids] == [0, 1, 2]
    assert [outs[i].parent for i in ids] == [None, ids[0], ids[0]]
    assert outs[ids[1]].tokens == outs[ids[0]].tokens
    for key in ("swaps_out", "swaps_in", "swap_fallbacks", "swap_bytes", "snapshots", "cached_snapshots"):
        assert key in eng.stats
    with pytest.raises(TypeError):
        eng.add_forked_request([1, 2], 2, colour="red")
    with pytest.raises(ValueError, match="n must be"):
        eng.add_forked_request([1, 2], 0)


# --- logits processing ----------------------------------------------------------------------------

def processor_cases():
    return json.loads((REPO / "test" / "parity" / "processors" / "llama.json").read_text())["cases"]


def test_logits_processing_equals_transformers_processors():
    """add_request's fields and generate_batch's generation_config give transformers' greedy
    tokens under its processors (tools/oracle/make_processor_fixture.py)."""
    eng = engine("llama")
    for case in processor_cases():
        f = case["fields"]
        rid = eng.add_request(case["prompt"], max_new_tokens=case["max_new_tokens"],
                              logit_bias={int(k): v for k, v in f.get("logit_bias", {}).items()},
                              repetition_penalty=f.get("repetition_penalty", 1.0),
                              min_tokens=f.get("min_tokens", 0), bad_words=f.get("bad_words"))
        while not eng.idle():
            eng.step()
        (out,) = eng.take_finished()
        assert out.id == rid and out.tokens == case["tokens"], f
        config = types.SimpleNamespace(
            max_new_tokens=case["max_new_tokens"], repetition_penalty=f.get("repetition_penalty"),
            sequence_bias={(int(k),): v for k, v in f.get("logit_bias", {}).items()},
            min_new_tokens=f.get("min_tokens"), bad_words_ids=f.get("bad_words"))
        got = eng.generate_batch([case["prompt"]], config)
        assert got["req_0"].generated_tokens == case["tokens"], f


def test_logits_processing_argument_errors():
    eng = engine("llama")
    with pytest.raises(TypeError, match="logit_bias must be a dict"):
        eng.add_request([1], logit_bias=[5])
    with pytest.raises(ValueError, match="logit_bias must map token ids"):
        eng.add_request([1], logit_bias={"five": 1.0})
    with pytest.raises(TypeError, match="min_tokens must be an int"):
        eng.add_request([1], min_tokens=1.5)
    with pytest.raises(TypeError, match="bad_words must be a list of token id sequences"):
        eng.add_request([1], bad_words=[5, 6])
    with pytest.raises(ValueError, match="bad_words sequences must not be empty"):
        eng.add_request([1], bad_words=[[]])
    config = types.SimpleNamespace(sequence_bias={(5, 6): 1.0})
    with pytest.raises(ValueError, match="only one-token sequences"):
        eng.generate_batch([[1, 2]], config)
    # add_forked_request takes them too: every fork samples from the processed logits.
    ids = eng.add_forked_request([1, 2], 2, max_new_tokens=3, logit_bias={7: 100.0})
    while not eng.idle():
        eng.step()
    outs = {o.id: o.tokens for o in eng.take_finished()}
    assert [outs[i] for i in ids] == [[7, 7, 7], [7, 7, 7]]


def test_top_logprobs_in_events_and_outputs():
    """top_logprobs: each token's best ids with their log-probabilities, best first, in the step's
    events and in the finished output; the sampled (greedy) token leads."""
    eng = engine("llama")
    rid = eng.add_request([5, 17, 200, 33], max_new_tokens=4, top_logprobs=3)
    events = []
    while not eng.idle():
        events += [ev for ev in eng.step() if ev.id == rid]
    (out,) = eng.take_finished()
    assert out.top_logprobs == [ev.top_logprobs for ev in events]
    for token, lp, top in zip(out.tokens, out.logprobs, out.top_logprobs):
        assert len(top) == 3 and top[0] == (token, lp)
        assert top[0][1] >= top[1][1] >= top[2][1]
    with pytest.raises(TypeError, match="top_logprobs must be an int"):
        eng.add_request([1], top_logprobs=2.0)


def test_prompt_logprobs_equal_the_generated_tokens_logprobs():
    """prompt_logprobs: a prompt extended by a request's greedy tokens gets, for those tokens,
    the log-probabilities and best ids that request reported while generating them; the first
    prompt token has none, and the prefix cache is not used."""
    eng = engine("llama")
    first = eng.add_request([5, 17, 200, 33], max_new_tokens=5, top_logprobs=2, ignore_eos=True)
    while not eng.idle():
        eng.step()
    (gen,) = eng.take_finished()
    assert gen.id == first and gen.prompt_logprobs == []
    prompt = [5, 17, 200, 33] + gen.tokens[:-1]
    rid = eng.add_request(prompt, max_new_tokens=1, prompt_logprobs=2, ignore_eos=True)
    while not eng.idle():
        eng.step()
    (out,) = eng.take_finished()
    assert out.id == rid and out.tokens == gen.tokens[-1:] and out.cached_tokens == 0
    assert len(out.prompt_logprobs) == len(prompt) - 1 == len(out.prompt_top_logprobs)
    assert out.prompt_logprobs[3:] == pytest.approx(gen.logprobs[:-1], abs=1e-4)
    for top, want in zip(out.prompt_top_logprobs[3:], gen.top_logprobs):
        assert [t for t, _ in top] == [t for t, _ in want]
    with pytest.raises(TypeError, match="prompt_logprobs must be an int"):
        eng.add_request([1], prompt_logprobs=1.5)
