"""Knob values that pay on this machine: measured once (paired, thread CPU time), cached
per machine, and a value that does not pay is left out with one line saying why;
APPROX_LEAVE_OUT leaves named precision values out unmeasured."""

from __future__ import annotations

import json
import re

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.machine import PROBE_FILE, machine_key, paying_values

# loop length per value: a quarter, 2.5x, 10x the exact work
WORK = {None: 200_000, "half": 50_000, "bfloat16": 50_000, "slow": 500_000, "hopeless": 2_000_000}


def run_at(calls: list):
    """Work on this thread alone (a BLAS call would spread it over threads that the thread
    CPU clock does not see, spinning while they are descheduled on a busy machine)."""
    def run(value):
        calls.append(value)
        sum(i * i for i in range(WORK[value]))

    return run


@pytest.fixture(autouse=True)
def probe_cache(tmp_path, monkeypatch):
    """A fresh cache, and the probe's own choice (whatever APPROX_LEAVE_OUT the run has)."""
    monkeypatch.setenv("APPROX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("APPROX_LEAVE_OUT", raising=False)


def test_a_cheaper_value_pays_and_a_slower_one_is_left_out(tmp_path):
    calls, lines = [], []
    assert paying_values("m.precision", run_at(calls), ("half", "slow"), log=lines.append) == ["half"]
    assert len(lines) == 1 and lines[0].startswith("m.precision = slow left out on this machine")
    assert machine_key() in lines[0]
    cached = json.loads((tmp_path / PROBE_FILE).read_text())[machine_key()]["m.precision"]
    assert cached["half"] > 1.15 > cached["slow"]
    # the second time the cache answers: nothing runs
    calls.clear()
    assert paying_values("m.precision", run_at(calls), ("half", "slow"), log=None) == ["half"]
    assert calls == []


def test_a_value_far_slower_in_its_first_run_is_not_timed_again():
    """10x the exact work: its warm-up alone tells (a fresh machine's probe skips minutes of float16)."""
    calls = []
    assert paying_values("m.precision", run_at(calls), ("half", "hopeless"), log=None) == ["half"]
    assert calls.count("hopeless") == 1 and calls.count("half") == 3


def test_a_hopeless_warm_up_yielding_its_outputs_stops_at_the_input_that_tells():
    """A probe that yields its outputs one by one: the hopeless value (10x the exact
    work) stops once its warm-up passes 1 / HOPELESS of the exact one's, before its
    five inputs ran (the others run all five), and is still left out for its speed."""
    calls, lines = [], []

    def run(value):
        for _ in range(5):
            calls.append(value)
            sum(i * i for i in range(WORK[value] // 5))
            yield value is None or value == "half"  # the exact output where it equals the exact value's

    assert paying_values("m.precision", run, ("half", "hopeless"), log=lines.append) == ["half"]
    assert calls[:10] == [None] * 5 + ["half"] * 5
    assert 1 <= calls.count("hopeless") < 5
    assert len(lines) == 1 and "hopeless left out on this machine" in lines[0]


def test_a_slow_build_is_not_counted_against_a_value_that_runs_fast():
    """An engine's int8 model takes longer to build than the exact value's warm-up runs (a
    short prompt: 0.11x, left out as hopeless though it runs faster); the build is made once,
    untimed, before the value's warm-up."""
    calls, built = [], []

    def build(value):
        built.append(value)
        run_at([])("hopeless")  # 10x the exact work

    assert paying_values("m.precision", run_at(calls), ("half",), log=None, build=build) == ["half"]
    assert built == ["half"] and calls.count("half") == 3


def test_a_new_candidate_is_measured_alone():
    paying_values("m.precision", run_at([]), ("half",), log=None)
    calls = []
    paying_values("m.precision", run_at(calls), ("half", "slow"), log=None)
    assert set(calls) == {None, "slow"}


def test_a_faster_value_changing_most_answers_is_left_out_in_one_line():
    """... after its warm-up, which told: it is not timed again (its warm-up's ratio stands)."""
    answers, calls = {None: ["a", "b", "c"], "half": ["a", "x", "y"]}, []

    def run(value):
        run_at(calls)(value)
        return answers[value]

    lines: list[str] = []
    assert paying_values("m.precision", run, ("half",), log=lines.append) == []
    assert calls.count("half") == 1 and calls.count(None) == 1
    assert len(lines) == 1 and re.fullmatch(r"m\.precision = half left out: the exact answer on 33% of the probe's "
                                            r"questions \(needs >= 50%\), though \d+\.\d\dx the exact value's speed",
                                            lines[0])
    answers["half"] = ["a", "b", "y"]
    assert paying_values("m.precision", run, ("half",), log=None, refresh=True) == ["half"]


def test_approx_leave_out_leaves_a_paying_value_out_unmeasured(monkeypatch):
    """What a CPU without bf16 instructions offers, on any machine: bfloat16 pays here
    (a quarter of the work) and is left out in one line, never run; without the switch
    it is measured and offered."""
    monkeypatch.setenv("APPROX_LEAVE_OUT", " bfloat16 , int8")
    calls, lines = [], []
    assert paying_values("m.precision", run_at(calls), ("bfloat16", "half"), log=lines.append) == ["half"]
    assert lines == ["m.precision = bfloat16 left out by APPROX_LEAVE_OUT"]
    assert "bfloat16" not in calls
    monkeypatch.delenv("APPROX_LEAVE_OUT")
    calls.clear()
    assert paying_values("m.precision", run_at(calls), ("bfloat16", "half"), log=None) == ["bfloat16", "half"]
    assert set(calls) == {None, "bfloat16"}  # "half" was cached the first time
    monkeypatch.setenv("APPROX_LEAVE_OUT", "bfloat16")  # a cached figure is left out all the same
    assert paying_values("m.precision", run_at([]), ("bfloat16", "half"), log=None) == ["half"]


def test_approx_leave_out_naming_no_precision_is_one_error_line(monkeypatch):
    monkeypatch.setenv("APPROX_LEAVE_OUT", "bf16")
    with pytest.raises(ApproxError, match="must be float32, bfloat16, float16, int8 or int4, got 'bf16'") as err:
        paying_values("m.precision", run_at([]), ("bfloat16",), log=None)
    assert "APPROX_LEAVE_OUT" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("flags, offered", [(["avx512f", "avx512_bf16"], False), (["avx512f", "avx512_fp16"], True)])
def test_float16_is_a_candidate_only_on_a_cpu_with_float16_arithmetic(flags, offered, monkeypatch):
    """Without avx512_fp16 / amx_fp16 torch converts float16 (its probe's first answer alone
    took 20 s here): float16 is left out unprobed, in one line; with one, it is probed."""
    from examples.systems import common
    from frontends.components import machine

    monkeypatch.setattr(machine, "cpu_model_and_flags", lambda: ("a CPU", flags))
    monkeypatch.setattr(common, "device", lambda: "cpu")
    reader = common.readers()[0]  # builds float32, bfloat16 and float16 variants (no int8: reader.py says why)
    lines = []
    kept = common.precision_candidates(reader, "reader.precision", lines.append)
    assert ("float16" in kept) == offered and "bfloat16" in kept and "int8" not in kept
    assert [line for line in lines if "float16 arithmetic" in line] == \
        ([] if offered else ["reader.precision = float16 left out: this CPU has no float16 arithmetic (avx512_fp16, "
                             "amx_fp16): torch converts, slower than float32"])


def test_figures_another_process_writes_during_a_probe_are_kept(tmp_path):
    """`make install` probes two models at once: the file is read again before each write."""
    other = []

    def run(value):
        if not other:  # while this probe runs, another knob's probe ends and writes its figures
            other.extend(paying_values("n.precision", run_at([]), ("half",), log=None))
        sum(i * i for i in range(WORK[value]))

    assert paying_values("m.precision", run, ("half",), log=None) == ["half"] == other
    cached = json.loads((tmp_path / PROBE_FILE).read_text())[machine_key()]
    assert {"m.precision", "n.precision"} <= set(cached)


def test_a_probe_another_process_is_running_is_waited_for_not_measured_again():
    """Workers of one run, or `make install`'s parallel steps, needing one probe measure it once."""
    import threading

    started, first, calls = threading.Event(), [], []

    def run(value):
        started.set()
        sum(i * i for i in range(WORK[value]))

    probing = threading.Thread(target=lambda: first.append(paying_values("m.precision", run, ("half",), log=None)))
    probing.start()
    started.wait()
    assert paying_values("m.precision", run_at(calls), ("half",), log=None) == ["half"]
    probing.join()
    assert calls == [] and first == [["half"]]


def test_torch_runs_on_one_thread_while_a_cpu_probe_is_timed_and_gets_its_threads_back():
    """The probe's clock sees the calling thread alone: torch on its other threads would look
    faster than it is (an engine on one thread measured 0.83-1.06x eager torch on two, 1.4-1.5x on one)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = []

        def run(value):
            seen.append(torch.get_num_threads())
            sum(i * i for i in range(WORK[value]))

        paying_values("m.precision", run, ("half",), log=None)
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
