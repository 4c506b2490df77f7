"""A setting of a component op is declared once (`SETTINGS` of its op class) and is
then everywhere: the op's attribute, the settings object's field, the keyword of the
declaring class, `approx-opt --list-knobs`, the docs table, the generation options a
backend passes on. Shown by adding a dummy setting in one line of a copy of the
toolchain, and by `repetition_penalty` (one declaration) on real models: absent, the
exact program's output is what it was; set, the hand-written decoding loops pick the
tokens transformers' `generate` picks under the same option."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from approx_dialect.component import GenerateOp
from approx_dialect.diagnostics import ApproxError
from approx_dialect.docs import settings_table
from frontends import Generate, Knob, OpenAIAnswerModel, Prompt, Tune
from tests.test_llm_support import (  # noqa: F401 (fixtures: lm, autouse)
    CONTEXTS,
    QUESTION,
    causal,
    fine_tuned_smollm,
    one_torch_thread,
    untrained_reader,
)

ROOT = Path(__file__).resolve().parents[1]
PENALTY = 1.5


def test_the_docs_table_is_the_declaration():
    doc = (ROOT / "docs" / "components.md").read_text()
    assert "\n".join(settings_table()) in doc, "run: python -m approx_dialect settings (into docs/components.md)"


DUMMY = 'Setting("dummy_knob", "int", "call", "a setting added in one line"),'
PROGRAM = '''
from frontends import Generate, Knob, OpenAIAnswerModel, Tune

llm = OpenAIAnswerModel("http://127.0.0.1:9/v1", "m", timeout=5, name="llm")
answer = Generate("answer", llm, max_new_tokens=4, dummy_knob=7, tune=[Tune.param("dummy_knob", 3, 1)])


@Knob()
def ask(question, contexts):
    return answer(question, contexts).text
'''
PROBE = '''
import inspect, json
from dataclasses import fields
import approx_dialect, prog
from frontends import Generate, Prompt, CausalLM, OpenAIAnswerModel
from frontends.components.settings import GenerateSettings
s = GenerateSettings(model="llm", max_new_tokens=4, dummy_knob=3)
print(json.dumps({"file": approx_dialect.__file__, "fields": [f.name for f in fields(GenerateSettings)],
                  "generate": list(inspect.signature(Generate).parameters),
                  "prompt": list(inspect.signature(Prompt).parameters), "options": s.generation(),
                  "endpoint": sorted(OpenAIAnswerModel.supports), "transformers": sorted(CausalLM.supports),
                  "ir": prog.ask.ir(after=True, config={"answer.dummy_knob": {"knob_val": 1}})}))
'''


def test_a_setting_declared_in_one_line_is_everywhere(tmp_path):
    """One line added to the generate op's declaration (in a copy of the toolchain) makes a
    settings field, a keyword of Generate and Prompt, a knob `approx-opt --list-knobs`
    lists, an attribute the pipeline rewrites and a generation option an endpoint is sent;
    transformers' models do not know it, so they do not claim it."""
    for package in ("approx_dialect", "passes", "approx_opt", "frontends"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "approx_dialect" / "component.py"
    text = source.read_text()
    anchor = "GENERATE_SETTINGS = (\n"
    assert text.count(anchor) == 1
    source.write_text(text.replace(anchor, anchor + "    " + DUMMY + "\n"))
    (tmp_path / "prog.py").write_text(PROGRAM)
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def run(*args: str) -> str:
        proc = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    knobs = json.loads(run("-c", "from approx_opt.main import main; main()", "--from-python", "prog:ask",
                           "--list-knobs"))
    assert [(k["name"], k["values"]) for k in knobs] == [("answer.dummy_knob", [0, 1, 2])]
    got = json.loads(run("-c", PROBE))
    assert got["file"].startswith(str(tmp_path))  # the copy, not the checkout
    assert "dummy_knob" in got["fields"] and "dummy_knob" in got["generate"] and "dummy_knob" in got["prompt"]
    assert got["options"] == {"max_new_tokens": 4, "dummy_knob": 3}
    assert "dummy_knob" in got["endpoint"] and "dummy_knob" not in got["transformers"]
    generate = [line for line in got["ir"].splitlines() if "component.generate" in line]
    assert len(generate) == 1 and "dummy_knob = 3 : i64" in generate[0]


def test_repetition_penalty_is_a_keyword_and_a_knob_and_checked():
    llm = OpenAIAnswerModel("http://127.0.0.1:9/v1", "m", timeout=5, name="llm")
    answer = Generate("answer", llm, repetition_penalty=1.2, tune=[Tune.param("repetition_penalty", 1.5, 2)])

    def ask(question, contexts):
        return answer(question, contexts).text

    program = Knob()(ask)
    assert [k.name for k in program.knobs()] == ["answer.repetition_penalty"]
    written = program.ir(after=True)
    tuned = program.ir(after=True, config={"answer.repetition_penalty": {"knob_val": 2}})
    assert "repetition_penalty = 1.200000e+00 : f64" in written and "repetition_penalty = 2.000000e+00 : f64" in tuned
    with pytest.raises(ApproxError, match=r"'repetition_penalty' must be a number > 0, got 0"):
        Generate("answer", llm, repetition_penalty=0)
    reader = untrained_reader(0)  # an extractive reader: no generation option but its span length
    with pytest.raises(ApproxError, match=rf"'repetition_penalty' is not supported by its provider {reader.name}$"):
        Generate("answer", reader, repetition_penalty=1.2)
    with pytest.raises(ApproxError, match=r"Prompt has no setting 'temperature' \(its settings: max_new_tokens, "):
        Prompt("p", llm, template="{question}", temperature=0.5)
    assert "repetition_penalty" in {s.name for s in GenerateOp.SETTINGS}


def hf_tokens(model, ids, n: int, **options) -> list[int]:
    """transformers' greedy `generate` (the reference), `n` tokens, no stop."""
    import torch
    from transformers import GenerationConfig

    config = GenerationConfig(max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1, pad_token_id=0,
                              eos_token_id=None, **options)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=config)
    return out[0, ids.shape[1]:].tolist()


def test_the_causal_loop_picks_generates_tokens_under_a_penalty():
    from frontends.components.llm.base import build_prompt

    lm = causal(0)
    prompt = build_prompt(QUESTION, CONTEXTS)
    ids = lm.tokenizer(prompt, return_tensors="pt")["input_ids"]
    plain, penalised = lm.generate(prompt, 10), lm.generate(prompt, 10, repetition_penalty=PENALTY)
    assert list(plain.token_ids) == hf_tokens(lm.model, ids, 10)  # absent: as before
    assert list(penalised.token_ids) == hf_tokens(lm.model, ids, 10, repetition_penalty=PENALTY)
    assert penalised.token_ids != plain.token_ids


def program(model, tokens: int):
    """A decorated function asking `model` through its generate op, `repetition_penalty` its knob."""
    answer = Generate("answer", model, max_new_tokens=tokens, tune=[Tune.param("repetition_penalty", PENALTY)])

    def ask(question, contexts):
        return answer(question, contexts)

    return Knob()(ask)


def same(a, b) -> bool:
    return (a.text, a.new_tokens, a.tokens_used, a.confidence) == (b.text, b.new_tokens, b.tokens_used, b.confidence)


def test_the_knob_reaches_the_model_and_at_zero_is_exact():
    lm = causal(0)
    ask = program(lm, 10)
    exact = ask.build({"answer.repetition_penalty": {"knob_val": 0}})
    penalised = ask.build({"answer.repetition_penalty": {"knob_val": 1}})
    assert same(exact(QUESTION, CONTEXTS), lm.answer(QUESTION, CONTEXTS, 10))
    assert same(penalised(QUESTION, CONTEXTS), lm.answer(QUESTION, CONTEXTS, 10, repetition_penalty=PENALTY))
    assert penalised(QUESTION, CONTEXTS).text != exact(QUESTION, CONTEXTS).text


TOKENS = 8


@pytest.fixture(scope="module")
def questions():
    """Two SQuAD evaluation questions with the gold paragraph and the next one."""
    from examples import squad

    pars = squad.paragraphs()
    return [(q.question, [pars[q.paragraph], pars[q.paragraph + 1]]) for q in
            (squad.questions_of("eval")[i] for i in (0, 2))]


def test_smollm2_exact_is_unchanged_and_every_loop_takes_the_penalty(lm, questions):
    """The fine-tuned SmolLM2: knob 0 is the plain model's answer; knob 1 is `generate`'s
    under the penalty, and the per-token exit loop (never exiting) picks those tokens too."""
    from frontends.components.llm.generation import processors
    from frontends.components.llm.smollm import chat_turn
    from frontends.components.llm.token_exit import greedy

    ask = program(lm, TOKENS)
    exact = ask.build({"answer.repetition_penalty": {"knob_val": 0}})
    penalised = ask.build({"answer.repetition_penalty": {"knob_val": 1}})
    changed = 0
    for question, contexts in questions:
        plain = lm.answer(question, contexts, TOKENS)
        assert same(exact(question, contexts), plain)
        got = penalised(question, contexts)
        assert same(got, lm.answer(question, contexts, TOKENS, repetition_penalty=PENALTY))
        changed += got.text != plain.text
        new, logps, _ = lm.generate(question, contexts, TOKENS, stop_at_line_end=False, repetition_penalty=PENALTY)
        ids = lm.tokenizer(chat_turn(lm.tokenizer, lm.prompt(question, contexts)), return_tensors="pt")["input_ids"]
        loop = greedy(lm.model, ids, TOKENS, None, lm.exits, lm.stop_rule(False),
                      processors=processors(lm.model, {"repetition_penalty": PENALTY}, ids.shape[1]))
        assert loop.tokens == new and loop.logps == pytest.approx(logps, abs=1e-4)
    assert changed  # the penalty reached the model
