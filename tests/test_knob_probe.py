"""Knob values that pay on this machine: measured once (paired, thread CPU time), cached
per machine, and a value that does not pay is left out with one line saying why;
the run settings' `leave_out` (APPROX_LEAVE_OUT over it) leaves named precision values out
unmeasured.

The probe's decisions are tested on a clock the work advances (`Ticks`): a thread's CPU
time on a shared VM counts the host's steal, and a 10x loop measured under 4x there."""

from __future__ import annotations

import json

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.machine import PROBE_FILE, machine_key, paying_values

# work per value: a quarter, 2.5x, 10x the exact work
WORK = {None: 200_000, "half": 50_000, "bfloat16": 50_000, "slow": 500_000, "hopeless": 2_000_000}


class Ticks:
    """The probe's clock in a test: it stands still but for the work the probe runs."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, value) -> None:
        self.now += WORK[value]


def run_at(calls: list, clock: Ticks):
    """A run at `value` costing WORK[value] ticks."""
    def run(value):
        calls.append(value)
        clock.work(value)

    return run


def probe(what, candidates, calls=None, **kw):
    """`paying_values` on a fresh Ticks, its work counted into `calls`."""
    clock = Ticks()
    return paying_values(what, run_at([] if calls is None else calls, clock), candidates, clock=clock, **kw)


@pytest.fixture(autouse=True)
def probe_cache(tmp_path, monkeypatch):
    """A fresh cache, and the probe's own choice (whatever APPROX_LEAVE_OUT the run has)."""
    monkeypatch.setenv("APPROX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("APPROX_LEAVE_OUT", raising=False)


def test_a_cheaper_value_pays_and_a_slower_one_is_left_out(tmp_path):
    calls, lines = [], []
    assert probe("m.precision", ("half", "slow"), calls, log=lines.append) == ["half"]
    assert lines == [f"m.precision = slow left out on this machine: 0.40x the exact value's speed "
                     f"(needs >= 1.15x; {machine_key()})"]
    cached = json.loads((tmp_path / PROBE_FILE).read_text())[machine_key()]["m.precision"]
    assert cached == {"half": 4.0, "slow": 0.4}  # exact work / the value's
    assert calls.count("slow") == 3  # 2.5x: timed again (a warm-up, two rounds), not hopeless
    # the second time the cache answers: nothing runs
    calls.clear()
    assert probe("m.precision", ("half", "slow"), calls, log=None) == ["half"]
    assert calls == []


def test_a_value_far_slower_in_its_first_run_is_not_timed_again(tmp_path):
    """10x the exact work: its warm-up alone tells (a fresh machine's probe skips minutes of float16)."""
    calls = []
    assert probe("m.precision", ("half", "hopeless"), calls, log=None) == ["half"]
    assert calls.count("hopeless") == 1 and calls.count("half") == 3
    assert json.loads((tmp_path / PROBE_FILE).read_text())[machine_key()]["m.precision"]["hopeless"] == 0.1


def test_a_hopeless_warm_up_yielding_its_outputs_stops_at_the_input_that_tells(tmp_path):
    """A probe that yields its outputs one by one: the hopeless value (10x the exact
    work) stops once its warm-up passes 1 / HOPELESS of the exact one's, before its
    five inputs ran (the others run all five), and is still left out for its speed."""
    calls, lines, clock = [], [], Ticks()

    def run(value):
        for _ in range(5):
            calls.append(value)
            clock.now += WORK[value] / 5
            yield value is None or value == "half"  # the exact output where it equals the exact value's

    assert paying_values("m.precision", run, ("half", "hopeless"), log=lines.append, clock=clock) == ["half"]
    assert calls[:10] == [None] * 5 + ["half"] * 5
    assert calls.count("hopeless") == 3  # 3 x 2/5 of 10x passes 4x the exact warm-up; 2 x 2/5 does not
    assert len(lines) == 1 and "hopeless left out on this machine: 0.10x" in lines[0]  # scaled to five inputs
    cached = json.loads((tmp_path / PROBE_FILE).read_text())[machine_key()]
    assert cached["m.precision"]["hopeless"] == 0.1 and cached["m.precision same"]["hopeless"] == 0.0


def test_a_slow_build_is_not_counted_against_a_value_that_runs_fast():
    """An engine's int8 model takes longer to build than the exact value's warm-up runs (a
    short prompt: 0.11x, left out as hopeless though it runs faster); the build is made once,
    untimed, before the value's warm-up."""
    calls, built, clock = [], [], Ticks()

    def build(value):
        built.append(value)
        clock.work("hopeless")  # 10x the exact work

    assert paying_values("m.precision", run_at(calls, clock), ("half",), log=None, build=build, clock=clock) == ["half"]
    assert built == ["half"] and calls.count("half") == 3


def test_a_value_that_fails_in_its_warm_up_is_left_out_in_one_line_and_the_others_are_measured(tmp_path):
    """float16 Gemma 3 on a CPU with fp16 units: its activations overflow, the answer check
    raises. The probe goes on: that value is left out with its error, once, and kept so."""
    calls, lines, clock = [], [], Ticks()

    def run(value):
        run_at(calls, clock)(value)
        if value == "slow":
            raise ApproxError("model 'm[float16]' returned garbage: confidence nan", where="m[float16]")

    assert paying_values("m.precision", run, ("slow", "half"), log=lines.append, clock=clock) == ["half"]
    assert calls.count("slow") == 1 and calls.count("half") == 3
    assert lines == [f"m.precision = slow left out: it fails on this machine (model 'm[float16]' returned garbage: "
                     f"confidence nan; {machine_key()})"]
    lines.clear()
    assert paying_values("m.precision", run, ("slow", "half"), log=lines.append, clock=clock) == ["half"]
    assert calls.count("slow") == 1 and len(lines) == 1 and "it fails on this machine" in lines[0]


def test_a_new_candidate_is_measured_alone():
    probe("m.precision", ("half",), log=None)
    calls = []
    probe("m.precision", ("half", "slow"), calls, log=None)
    assert set(calls) == {None, "slow"}


def test_a_faster_value_changing_most_answers_is_left_out_in_one_line():
    """... after its warm-up, which told: it is not timed again (its warm-up's ratio stands)."""
    answers, calls, clock = {None: ["a", "b", "c"], "half": ["a", "x", "y"]}, [], Ticks()

    def run(value):
        run_at(calls, clock)(value)
        return answers[value]

    lines: list[str] = []
    assert paying_values("m.precision", run, ("half",), log=lines.append, clock=clock) == []
    assert calls.count("half") == 1 and calls.count(None) == 1
    assert lines == ["m.precision = half left out: the exact answer on 33% of the probe's questions (needs >= 50%), "
                     "though 4.00x the exact value's speed"]
    answers["half"] = ["a", "b", "y"]
    assert paying_values("m.precision", run, ("half",), log=None, refresh=True, clock=clock) == ["half"]


def test_approx_leave_out_leaves_a_paying_value_out_unmeasured(monkeypatch):
    """What a CPU without bf16 instructions offers, on any machine: bfloat16 pays here
    (a quarter of the work) and is left out in one line, never run; without the switch
    it is measured and offered."""
    monkeypatch.setenv("APPROX_LEAVE_OUT", " bfloat16 , int8")
    calls, lines = [], []
    assert probe("m.precision", ("bfloat16", "half"), calls, log=lines.append) == ["half"]
    assert lines == ["m.precision = bfloat16 left out by APPROX_LEAVE_OUT"]
    assert "bfloat16" not in calls
    monkeypatch.delenv("APPROX_LEAVE_OUT")
    calls.clear()
    assert probe("m.precision", ("bfloat16", "half"), calls, log=None) == ["bfloat16", "half"]
    assert set(calls) == {None, "bfloat16"}  # "half" was cached the first time
    monkeypatch.setenv("APPROX_LEAVE_OUT", "bfloat16")  # a cached figure is left out all the same
    assert probe("m.precision", ("bfloat16", "half"), log=None) == ["half"]


def test_approx_leave_out_naming_no_precision_is_one_error_line(monkeypatch):
    monkeypatch.setenv("APPROX_LEAVE_OUT", "bf16")
    with pytest.raises(ApproxError, match="must be float32, bfloat16, float16, int8 or int4, got 'bf16'") as err:
        probe("m.precision", ("bfloat16",), log=None)
    assert "APPROX_LEAVE_OUT" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("flags, offered", [(["avx512f", "avx512_bf16"], False),
                                            (["avx512f", "avx512_bf16", "avx512_fp16"], True)])
def test_float16_is_a_candidate_only_on_a_cpu_with_float16_arithmetic(flags, offered, monkeypatch):
    """Without avx512_fp16 / amx_fp16 torch converts float16 (its probe's first answer alone
    took 20 s here): float16 is left out unprobed, in one line; with one, it is probed."""
    from examples.systems import common
    from frontends.components import machine, run_settings
    from frontends.components.llm.policy import precision_candidates

    monkeypatch.setattr(machine, "cpu_model_and_flags", lambda: ("a CPU", flags))
    monkeypatch.delenv(run_settings.DEVICE_ENV, raising=False)
    reader = common.readers()[0]  # builds float32, bfloat16 and float16 variants (no int8: reader.py says why)
    lines = []
    with run_settings.context(device="cpu"):
        kept = precision_candidates(reader, "reader.precision", lines.append)
    assert ("float16" in kept) == offered and "bfloat16" in kept and "int8" not in kept
    assert [line for line in lines if "float16 arithmetic" in line] == \
        ([] if offered else ["reader.precision = float16 left out: this CPU has no float16 arithmetic (avx512_fp16, "
                             "amx_fp16): torch converts, slower than float32"])


@pytest.mark.parametrize("flags, offered",
                         [(["avx2", "fma"], False), (["avx2", "fma", "avx512f", "avx512_bf16"], True)])
def test_bfloat16_is_a_candidate_only_on_a_cpu_with_bfloat16_arithmetic(flags, offered, monkeypatch):
    """Without avx512_bf16 / amx_bf16 torch converts bfloat16 (0.26x float32 for Gemma on an
    AVX2-only EPYC): bfloat16 is left out unprobed, in one line, so a probe costs no minutes."""
    from examples.systems import common
    from frontends.components import machine, run_settings
    from frontends.components.llm.policy import precision_candidates

    monkeypatch.setattr(machine, "cpu_model_and_flags", lambda: ("a CPU", flags))
    monkeypatch.delenv(run_settings.DEVICE_ENV, raising=False)
    reader = common.readers()[0]
    lines = []
    with run_settings.context(device="cpu"):
        kept = precision_candidates(reader, "reader.precision", lines.append)
    assert ("bfloat16" in kept) == offered
    assert [line for line in lines if "bfloat16 arithmetic" in line] == \
        ([] if offered else ["reader.precision = bfloat16 left out: this CPU has no bfloat16 arithmetic (avx512_bf16, "
                             "amx_bf16) for bfloat16: torch converts, slower than float32"])


def test_figures_another_process_writes_during_a_probe_are_kept(tmp_path):
    """`make install` probes two models at once: the file is read again before each write."""
    other, clock = [], Ticks()

    def run(value):
        if not other:  # while this probe runs, another knob's probe ends and writes its figures
            other.extend(probe("n.precision", ("half",), log=None))
        clock.work(value)

    assert paying_values("m.precision", run, ("half",), log=None, clock=clock) == ["half"] == other
    cached = json.loads((tmp_path / PROBE_FILE).read_text())[machine_key()]
    assert {"m.precision", "n.precision"} <= set(cached)


def test_a_probe_another_process_is_running_is_waited_for_not_measured_again(monkeypatch):
    """Workers of one run, or `make install`'s parallel steps, needing one probe measure it once:
    the first probe holds on until the second has found no figures (its check before the
    lock), so the second must wait for the first's, not find them by luck."""
    import threading

    from frontends.components import machine

    started, looked, first, calls, clock = threading.Event(), threading.Event(), [], [], Ticks()
    cached = machine._cached

    def looking(*args):
        found = cached(*args)
        if threading.current_thread() is threading.main_thread():
            looked.set()
        return found

    def run(value):
        started.set()
        assert looked.wait(timeout=120)  # set within moments; the limit only keeps a broken probe from hanging
        clock.work(value)

    monkeypatch.setattr(machine, "_cached", looking)
    probing = threading.Thread(target=lambda: first.append(
        paying_values("m.precision", run, ("half",), log=None, clock=clock)))
    probing.start()
    assert started.wait(timeout=120)
    assert probe("m.precision", ("half",), calls, log=None) == ["half"]
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


def test_the_probes_own_clock_tells_work_a_hundred_times_cheaper():
    """No clock given: the probe's (this thread's CPU time) decides, on work 100x apart, a
    ratio no steal or load on any machine inverts (the decisions' thresholds are 1.15x and 4x)."""
    calls = []

    def run(value):
        calls.append(value)
        sum(i * i for i in range({None: 1_000_000, "half": 10_000}[value]))

    assert paying_values("m.precision", run, ("half",), log=None) == ["half"]
    assert calls.count("half") == 3


@pytest.mark.parametrize("env, gone", [
    ({"ONEDNN_MAX_CPU_ISA": "AVX2"}, {"avx512f", "avx512_bf16", "avx_vnni", "amx_bf16"}),
    ({"ATEN_CPU_CAPABILITY": "avx2"}, {"avx512f", "avx512_bf16", "amx_bf16"}),
    ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"}, {"avx512_bf16", "amx_bf16"})])
def test_an_isa_cap_in_the_environment_is_a_cpu_without_the_instructions_above_it(env, gone, monkeypatch, tmp_path):
    """Emulating an older CPU (ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY): the flags above the cap
    decide nothing (bfloat16 is left out by them, untimed), and the probe's machine key names the
    cap, so an emulated machine's figures never stand for the real one's."""
    from frontends.components import machine

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: A CPU\nflags\t\t: avx2 fma avx512f avx512_vnni avx512_bf16 avx_vnni amx_bf16\n")
    real_path = machine.Path
    monkeypatch.setattr(machine, "Path", lambda p: cpuinfo if p == "/proc/cpuinfo" else real_path(p))
    for name in machine.ISA_CAPS:
        monkeypatch.delenv(name, raising=False)
    native_key = machine.machine_key()
    assert set(machine.cpu_model_and_flags()[1]) >= gone
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    flags = set(machine.cpu_model_and_flags()[1])
    assert not flags & gone and {"avx2", "fma"} <= flags
    assert machine.machine_key() != native_key and all(f"{k}={v}" in machine.machine_key() for k, v in env.items())
