"""The fine-tuned SmolLM2 of the systems (`examples/systems/common.smollm`) with its exact
path through the inference engine: knob 0 gives eager torch float32's answers on fixed
questions, compared with torch on this machine (never with a recording); each precision
value an engine runs decodes another build; a worker process (the tuner's) loads the same
engine; the LLM RAG system's IR (Gemma 3 answering) lists the precision values its probe offers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from approx_dialect.precision import PRECISIONS
from approx_opt.main import list_knobs
from examples import squad
from examples.systems import common
from examples.systems.rag.program import llm_precisions
from frontends.components.kept import provider_identity
from frontends.components.llm import engine, policy
from frontends.components.llm.policy import PROBE_QUESTIONS

pytestmark = pytest.mark.skipif(not engine.available(), reason="onnxruntime-genai not installed (.[engine])")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def llm():
    model = common.smollm()
    if policy.exact_engine(model) is None:
        pytest.skip(f"{engine.ENV}=torch, a GPU run, or eager torch is faster here: the exact path is torch's")
    return model


def fixed_questions():
    """The knob probe's first question on three SQuAD passages (the probe itself compares
    all three, `policy.exact_engine`), and two evaluation questions with their gold
    paragraph and the two after it (prompts of ~350-700 tokens)."""
    paragraphs = squad.paragraphs()
    cases = [(q, list(paragraphs[:3])) for q in PROBE_QUESTIONS[:1]]
    for q in squad.questions_of("eval")[20:22]:
        cases.append((q.question, [paragraphs[(q.paragraph + k) % len(paragraphs)] for k in range(3)]))
    return cases


def test_knob_zero_gives_eager_torch_answers(llm):
    from frontends.components.llm.smollm import SmolLM2

    torch_llm = SmolLM2(llm.model, llm.tokenizer, name=llm.name, exits=llm.exits)  # the same weights, eager
    assert type(llm).__name__ == "EngineSmolLM2" and llm.engine == engine.EXACT
    for question, passages in fixed_questions():
        tokens, _, prompt = llm.generate(question, passages, 16)
        assert (tokens, prompt) == torch_llm.generate(question, passages, 16)[::2], question
    assert provider_identity(llm) != provider_identity(torch_llm)  # kept outputs of one never read for the other


def test_each_engine_value_runs_another_build(llm):
    question, passages = fixed_questions()[0]
    decoders = {id(llm.decoder)}
    for precision, name in llm.engines.items():
        value = llm.with_precision(precision)
        assert value._engine_runs({}) and engine.build_info(value.build)["precision"] == engine.ENGINES[name][1]
        kinds = {"ort": "OrtGreedy", "ov": "OvGreedy", "ov+ort": "OvOrtGreedy"}
        assert type(value.decoder).__name__ == kinds[engine.ENGINES[name][0]]
        decoders.add(id(value.decoder))
        assert value.answer(question, passages, 16).text.strip()
    assert len(decoders) == 1 + len(llm.engines) and "int8" in llm.engines


def test_a_worker_process_loads_the_same_engine(llm):
    code = ("from examples.systems import common; from frontends.components.kept import provider_identity; "
            "print(provider_identity(common.smollm()))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-500:]
    assert run.stdout.strip().splitlines()[-1] == provider_identity(llm)


def test_the_ir_lists_the_int8_value_where_it_pays(llm):
    """The LLM RAG system's answer model (Gemma 3, on its own exact path: `policy.exact_path`)."""
    from examples.systems.rag import bm25 as rag_bm25
    from frontends.components.folders import cache_dir
    from frontends.components.machine import MIN_GAIN, MIN_SAME, PROBE_FILE, machine_key

    answer = common.gemma()
    offered = llm_precisions(answer)
    # probed under the model's own name (an engine model's: never torch's figures), each
    # offered value faster and keeping most of the probe's answers
    figures = json.loads((cache_dir() / PROBE_FILE).read_text())[machine_key()]
    name = getattr(answer, "probe_name", answer.name)
    speed, same = figures[f"{name}.precision"], figures[f"{name}.precision same"]
    assert all(speed[v] >= MIN_GAIN and same[v] >= MIN_SAME for v in offered)
    system = rag_bm25.llm_system()
    knobs = {k["name"]: k for k in json.loads(list_knobs(system.ir(), system.name))}
    if not offered:
        assert "answer.precision" not in knobs
        return
    assert len(knobs["answer.precision"]["values"]) == 1 + len(offered)
    ir = {p.backend: p.ir for p in PRECISIONS}  # the precision table's IR names
    types = []
    for k in knobs["answer.precision"]["values"][1:]:
        text = system.ir(after=True, config={"answer.precision": {"knob_val": k}})
        types += [t for t in ir.values() if f"precision = {t}" in text]
    assert types == [ir[p] for p in offered]


@pytest.mark.parametrize("speedup, same, chosen", [(1.88, 1.0, engine.EXACT), (0.91, 1.0, None), (2.0, 2 / 3, None)])
def test_the_engine_takes_the_exact_path_only_where_the_probe_finds_it_faster_and_the_same(
        speedup, same, chosen, tmp_path, monkeypatch, capsys):
    """`policy.exact_engine` reads the machine's probe (its figures written here, as a
    probe on an AMD EPYC and on a Xeon with AMX measured them): the engine where it runs
    faster than eager torch with torch's answers, torch elsewhere, in one line."""
    from frontends.components.machine import PROBE_FILE, machine_key

    monkeypatch.delenv(engine.ENV, raising=False)
    monkeypatch.setenv("APPROX_CACHE_DIR", str(tmp_path))  # only the probe's figures: no model is loaded
    (tmp_path / PROBE_FILE).write_text(json.dumps({machine_key(): {"smollm2.exact_path": {engine.EXACT: speedup},
                                                                   "smollm2.exact_path same": {engine.EXACT: same}}}))
    assert policy.exact_engine("smollm2") == chosen
    out = capsys.readouterr().out
    assert ("the exact path stays eager torch" in out) == (chosen is None), out
    assert common.smollm_weights().endswith("exact path through ort-fp32)" if chosen else "float32)")
    assert not (tmp_path / "engines").exists()
