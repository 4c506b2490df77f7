"""Component outputs kept on disk (`frontends.components.kept`): a kept result is
read only for an equal op, settings, providers and operands, only in an untimed
pass, by any program of the same declaration (another process, a later study); a
torn row is detected and its call run again; a failing call is never kept; a kept
call's seconds are what the cost model reads (real MiniLM reader)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from frontends import Knob
from frontends.components.declare import Generate, Tune
from frontends.components.kept import KeptOutputs, call_key
from frontends.components.settings import GenerateSettings
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

QUESTION = "Which NFL team represented the AFC at Super Bowl 50?"
OTHER = "Who won Super Bowl 50?"


@pytest.fixture(scope="module")
def parts():
    from examples import squad
    from examples.systems.common import readers

    corpus = tuple(squad.paragraphs()[:3])
    return list(corpus), readers()[1]


def program_of(pro, path):
    answer = Generate("answer", pro, tune=[Tune.precision("bfloat16")])

    def ask(question, passages):
        return answer(question, passages).text

    f = Knob()(ask)
    f.reuse.keep([pro])
    f.reuse.attach(path)
    return f


def test_a_kept_output_is_read_only_for_equal_op_settings_and_operands(parts, tmp_path):
    passages, pro = parts
    path = tmp_path / "kept.db"
    first = program_of(pro, path)
    exact = first.build({})
    with first.reuse.reading():
        text = exact(QUESTION, passages)
    assert first.reuse.counts() == {"reused": 0, "run": 1} and len(KeptOutputs(path)) == 1

    second = program_of(pro, path)  # a new declaration, as a worker process or a later study builds it
    with second.reuse.reading():
        assert second.build({})(QUESTION, passages) == text  # equal: read from disk
        assert second.reuse.counts() == {"reused": 1, "run": 0}
        second.build({})(OTHER, passages)  # other operands: run
        second.build({})(QUESTION, passages[:2])
        second.build({"answer.precision": {"knob_val": 1}})(QUESTION, passages)  # other settings: run
    assert second.reuse.counts() == {"reused": 1, "run": 3} and len(KeptOutputs(path)) == 4
    second.build({})(QUESTION, passages)  # a timed pass (not reading) runs its call
    assert second.reuse.counts()["run"] == 4


def test_a_torn_row_is_run_again_never_read(parts, tmp_path):
    passages, pro = parts
    path = tmp_path / "kept.db"
    f = program_of(pro, path)
    with f.reuse.reading():
        text = f.build({})(QUESTION, passages)
    with sqlite3.connect(path) as db:  # the row's bytes cut short, as a write torn by a kill would leave them
        db.execute("UPDATE kept SET result = substr(result, 1, 10)")
    g = program_of(pro, path)
    with g.reuse.reading():
        assert g.build({})(QUESTION, passages) == text
    assert g.reuse.counts() == {"reused": 0, "run": 1} and g.reuse.store.corrupt == 1
    h = program_of(pro, path)
    with h.reuse.reading():
        h.build({})(QUESTION, passages)
    assert h.reuse.counts() == {"reused": 1, "run": 0}  # the call run again was kept whole


def test_a_failing_call_is_never_kept(parts, tmp_path):
    _, pro = parts
    path = tmp_path / "kept.db"
    f = program_of(pro, path)
    with f.reuse.reading(), pytest.raises(Exception):
        f.build({})(QUESTION, [None])
    assert len(KeptOutputs(path)) == 0 and f.reuse.counts() == {"reused": 0, "run": 0}


def test_reads_add_the_seconds_the_calls_took(parts, tmp_path):
    passages, pro = parts
    path = tmp_path / "kept.db"
    f = program_of(pro, path)
    with f.reuse.reading():
        f.build({})(QUESTION, passages)
    wall = f.reuse.results[next(iter(f.reuse.results))][1]
    g = program_of(pro, path)
    with g.reuse.reading() as reuse:
        g.build({})(QUESTION, passages)
        g.build({})(QUESTION, passages)
    assert wall > 0 and reuse.costed["wall"] == pytest.approx(2 * wall)  # what the two calls cost when run
    assert g.reuse.counts() == {"reused": 2, "run": 0}  # read, not run (counted, not timed)


def test_keys_differ_with_each_part():
    s = GenerateSettings(model="pro")
    base = call_key("component.generate", s, ("pro=x",), ("q", ("p",)))
    assert base == call_key("component.generate", GenerateSettings(model="pro", label="other"), ("pro=x",),
                            ("q", ("p",)))  # the label is not a setting
    assert len({base, call_key("component.embed", s, ("pro=x",), ("q", ("p",))),
                call_key("component.generate", GenerateSettings(model="pro", max_new_tokens=4), ("pro=x",),
                         ("q", ("p",))),
                call_key("component.generate", s, ("pro=y",), ("q", ("p",))),
                call_key("component.generate", s, ("pro=x",), ("q", ("p", "r")))}) == 5


def test_a_program_keeps_the_outputs_of_its_deterministic_providers_only(parts, tmp_path):
    """`keep_outputs` with no providers chosen keeps those that say they are
    deterministic (an in-process reader or LLM, an endpoint's greedy requests), never
    an endpoint's made with `keep=False`."""
    from frontends.components.llm.openai_backend import OpenAIAnswerModel

    _, pro = parts
    local = Generate("answer", pro)
    remote = Generate("remote", OpenAIAnswerModel("http://127.0.0.1:9/v1", "m", name="remote", keep=False))

    def ask(question, passages):
        return local(question, passages).text

    def ask_remote(question, passages):
        return remote(question, passages).text

    kept, served = Knob()(ask), Knob()(ask_remote)
    assert kept.keep_outputs(tmp_path / "a.db") and kept.reuse.providers == {id(pro)}
    assert not served.keep_outputs(tmp_path / "b.db") and not (tmp_path / "b.db").exists()


def test_results_are_kept_as_data_and_read_back_equal():
    """Kept results are JSON (nothing unpickled): answers, text, numbers, arrays and
    their containers come back equal; anything else is not kept."""
    import numpy as np

    from frontends.components.kept import decode, encode
    from frontends.components.llm.base import Answer

    answer = Answer("Denver Broncos", 0.9, 120, 0.5, "pro", 3, (("fast", 0.2), ("pro", 0.9)), None, (("q", "x"),))
    for value in (answer, "text", 3, 2.5, None, [1, (2, "a")], {"k": (1.5,)}, np.arange(3, dtype=np.int64)):
        back = decode(json.loads(json.dumps(encode(value))))
        assert type(back) is type(value) and (np.array_equal(back, value) if isinstance(value, np.ndarray)
                                               else back == value)
    with pytest.raises(TypeError):
        encode(object())
