"""Which knob values pay on the machine at hand, measured once and remembered.

A precision value's cost is a property of the CPU, not of the program: bfloat16
runs prefill 3.2x faster than float32 on a Xeon with AMX, 1.28x on an EPYC with
AVX-512 bf16, and 5x slower on an EPYC without bf16 instructions. So an LLM
program offers the tuner only the values measured to pay here (a short paired
probe when the program is set up), and says in one line why each other value is
left out; a value that changes most of the probe's answers (int8 that breaks the
model) is left out too, in one line. The figures are cached per machine (CPU model, its decisive
instructions, torch version) under the cache dir, so the probe runs once.

The run settings' `leave_out` (`run_settings`; APPROX_LEAVE_OUT, comma-separated precision
values, e.g. `bfloat16`, overrides it) leaves those values out whatever they measure, in one
line each, unprobed: what a CPU without bf16 instructions offers, shown on any machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from frontends.components import run_settings
from frontends.components.folders import cache_dir, exclusive_lock

# CPU flags (as /proc/cpuinfo names them) that decide which LLM precisions pay
DECISIVE_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_bf16", "amx_int8",
                  "avx512_fp16", "amx_fp16")
FP16_FLAGS = ("avx512_fp16", "amx_fp16")  # float16 arithmetic; without, torch converts (0.04-0.23x float32, EPYC)
BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # bfloat16 arithmetic; without, torch converts (0.26x float32 for
# Gemma 3 270M, 0.32x for SmolLM2 on an AVX2-only EPYC), and so does an int8 variant with bfloat16 activations (0.76x)
MIN_GAIN = 1.15  # a value pays when the probe runs at least this much faster than the exact one
MIN_SAME = 0.5  # ... and gives the exact output on at least this share of the probe's inputs
HOPELESS = 0.25  # a value whose first run is 4x slower than the exact one is not timed again
PROBE_FILE = "knob_probe.json"


# Emulating an older CPU on this one: the libraries' own ISA caps, and the decisive flags above each cap.
# ATEN_CPU_CAPABILITY caps torch's own vector kernels, ONEDNN_MAX_CPU_ISA oneDNN's (torch's bf16 / int8
# matrix products, OpenVINO's CPU plugin); ONNX Runtime's MLAS kernels follow cpuid alone (not capped).
# Measured on an AVX-512 bf16 EPYC: ONEDNN_MAX_CPU_ISA=AVX2 makes a bf16 matrix product 300x slower
# (a reference kernel), far beyond a real AVX2-only CPU's 0.26-0.32x, so bf16 is left out by its flags,
# untimed, as on such a CPU; float32 products ran as fast as without the cap.
ABOVE_AVX2 = ("avx512", "amx", "avx_vnni")
ISA_CAPS = {  # variable -> its value (upper case) -> the decisive flags' prefixes above that cap
    "ATEN_CPU_CAPABILITY": {"DEFAULT": ("avx2", "fma", *ABOVE_AVX2), "AVX2": ("avx512", "amx")},
    "ONEDNN_MAX_CPU_ISA": {"SSE41": ("avx2", "fma", *ABOVE_AVX2), "AVX": ("avx2", "fma", *ABOVE_AVX2),
                           "AVX2": ABOVE_AVX2, "AVX2_VNNI": ("avx512", "amx"), "AVX2_VNNI_2": ("avx512", "amx"),
                           "AVX512_CORE": ("avx512_vnni", "avx512_bf16", "avx512_fp16", "amx"),
                           "AVX512_CORE_VNNI": ("avx512_bf16", "avx512_fp16", "amx"),
                           "AVX512_CORE_BF16": ("avx512_fp16", "amx"), "AVX512_CORE_FP16": ("amx",)},
}


def isa_caps() -> dict[str, str]:
    """The ISA caps set in this process's environment (ISA_CAPS' variables), as set."""
    return {name: os.environ[name] for name in ISA_CAPS if os.environ.get(name)}


def _capped(flags: set[str]) -> set[str]:
    """`flags` less those above an ISA cap of the environment (an AVX2 cap: avx512*, amx*,
    avx_vnni), so the decisions are those of a CPU without them."""
    for name, value in isa_caps().items():
        above = ISA_CAPS[name].get(value.upper(), ())  # an unknown value caps nothing
        flags = {f for f in flags if not f.startswith(above)}
    return flags


def cpu_model_and_flags() -> tuple[str, list[str]]:
    """(the CPU's model name, the decisive flags it has), from /proc/cpuinfo where there is one,
    less those above an ISA cap of the environment (`isa_caps`: emulating an older CPU)."""
    model, flags = platform.processor() or platform.machine(), set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model in ("", platform.machine(), platform.processor()):
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    flags = _capped(flags)
    return model, [f for f in DECISIVE_FLAGS if f in flags]


def cpu_has(flags: Sequence[str]) -> bool:
    """Whether this CPU has any of `flags` (names from DECISIVE_FLAGS)."""
    return bool(set(flags) & set(cpu_model_and_flags()[1]))


def machine_key(device: str = "cpu") -> str:
    """What decides a probe's figures: the CPU, its decisive instructions, torch's
    version (on one thread, as `measure_speedups` runs it, with builds untimed), and the
    GPU when the model runs on one."""
    import torch

    model, flags = cpu_model_and_flags()
    caps = "".join(f", {k}={v}" for k, v in isa_caps().items())  # an emulated CPU is a machine of its own
    key = f"{model} [{' '.join(flags)}{caps}] torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()})"
    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(device)} ({key})"
    return f"{key}, one thread, builds untimed"


def _clock(device: str) -> Callable[[], float]:
    """Thread CPU time on the CPU (it sees only this thread's work on a shared
    machine); on a GPU wall time after the device has finished its queued work."""
    if not device.startswith("cuda"):
        return time.thread_time
    import torch

    def wall() -> float:
        torch.cuda.synchronize(device)
        return time.perf_counter()

    return wall


@contextlib.contextmanager
def _on_the_clocks_thread(device: str):
    """Torch on one thread while a CPU probe runs: its clock is the calling thread's CPU
    time, and work on torch's other threads would go unseen (eager torch on two threads
    measured 0.83-1.06x against an engine on one that is 1.4-1.5x faster than torch on one)."""
    import torch

    if device.startswith("cuda"):
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _probe_path() -> Path:
    return cache_dir() / PROBE_FILE


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _cached(path: Path, key: str, what: str, candidates: Sequence[str], refresh: bool):
    """(speedups, shares of equal outputs, candidates not probed yet, {value: the error its
    probe failed with}) of knob `what` on machine `key`."""
    data = _read(path).get(key, {})
    known, agree = data.get(what, {}), data.get(f"{what} same", {})
    return (known, agree, [v for v in candidates if refresh or v not in known or v not in agree],
            data.get(f"{what} failed", {}))


@contextlib.contextmanager
def _probing(path: Path, what: str):
    """Held while this process probes knob `what`: a process needing the same probe waits
    and reads its figures (a run's workers, `make install`'s parallel steps) instead of
    measuring it again beside it. Without a writable cache dir, nothing is held."""
    lock = path.parent / f"{path.stem}.{hashlib.sha256(what.encode()).hexdigest()[:16]}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.touch()
    except OSError:
        yield
        return
    with exclusive_lock(lock):
        yield


def _remember(path: Path, key: str, figures: dict) -> None:
    """Add `figures` under the machine `key` of the probe file, read again under a lock:
    processes probing other knobs at the same time (`make install`'s, a run's workers)
    keep each other's figures."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(path.with_suffix(".lock")):
            data = _read(path)
            data.setdefault(key, {}).update(figures)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs the probe next time


def left_out() -> frozenset[str]:
    """The precision values the run settings leave out (`run_settings`: APPROX_LEAVE_OUT over
    `leave_out`); a name that is no precision value is an ApproxError, not a switch that
    silently does nothing."""
    return frozenset(run_settings.current().leave_out)


def measure_speedups(run_at: Callable[[str | None], Iterable | None], candidates: Sequence[str],
                     rounds: int = 2, device: str = "cpu",
                     build: Callable[[str], object] | None = None, min_same: float = 0.0,
                     clock: Callable[[], float] | None = None) -> tuple[dict, dict, dict]:
    """({value: exact time / time at value}, {value: share of its outputs equal to the
    exact value's}, {value: the error it failed with}): `run_at(None)` (exact) and
    `run_at(value)` timed side by side (`_clock`) in `rounds` rounds, each timing the exact
    value once and every value after it, the next in reverse order; the best of `rounds`
    each (one warm-up run of each first, its outputs, a sequence, compared; none: all
    equal). `build(value)`, where given, makes the value's variant before its warm-up,
    untimed: a build is made once and cached (an engine's int8 model: 20 s), not a cost of
    each run. A value whose warm-up took over 1 / HOPELESS times the exact warm-up's time
    is not timed again: its warm-up ratio stands (float16 on a CPU without fp16 units:
    0.13x, minutes of a fresh machine's probe); where `run_at` yields its outputs one by
    one, such a warm-up stops at the input where it passes that time (its ratio and its
    share of equal outputs then come from the inputs it ran). A value whose warm-up gave
    the exact output on less than `min_same` of the inputs is not timed again either (it
    is left out whatever its speed); one whose build or warm-up fails (an ApproxError:
    garbage out, float16 overflowing) is 0.0x with no output equal. On the CPU torch runs
    on one thread meanwhile (`_on_the_clocks_thread`). `clock`, where given, replaces
    `_clock(device)` (a test's clock that the work it times advances: the decisions, on
    any machine)."""
    with _on_the_clocks_thread(device):
        return _measure(run_at, candidates, rounds, clock or _clock(device), build, min_same)


def _measure(run_at, candidates, rounds, clock, build, min_same) -> tuple[dict, dict, dict]:
    outputs: dict[str | None, list] = {}
    warm: dict[str | None, float] = {}
    failed: dict[str, str] = {}
    for v in (None, *candidates):
        t0, outs = clock(), []
        try:
            if v is not None and build is not None:
                build(v)
            t0 = clock()
            for out in run_at(v) or ():
                outs.append(out)
                if v is not None and clock() - t0 > warm[None] / HOPELESS:
                    break  # hopeless already: its other inputs would only cost time
        except ApproxError as err:
            if v is None:
                raise
            failed[v], outs = err.message, []  # e.g. float16 overflowing in a model trained in bfloat16
        outputs[v], warm[v] = outs, clock() - t0
    n = len(outputs[None])
    same = {v: round(sum(a == b for a, b in zip(outputs[v], outputs[None])) / len(outputs[v]), 3)
            if n and outputs[v] else 1.0 for v in candidates}
    # a warm-up cut short: its time over the inputs it ran, scaled to all of them
    spent = {v: warm[v] * n / len(outputs[v]) if 0 < len(outputs[v]) < n else warm[v] for v in candidates}
    untimed = {v: round(warm[None] / max(spent[v], 1e-9), 3) for v in candidates  # their warm-up ratio stands
               if warm[None] < HOPELESS * spent[v] or same[v] < min_same}
    untimed.update({v: 0.0 for v in failed})
    same.update({v: 0.0 for v in failed})
    timed = [v for v in candidates if v not in untimed]
    best: dict = {}
    order = (None, *timed)  # each round: the exact value, then every value (the next reversed: the exact value last)
    for r in range(rounds if timed else 0):
        for which in order if r % 2 == 0 else order[::-1]:
            t0 = clock()
            list(run_at(which) or ())  # a generator runs only when read
            dt = clock() - t0
            best[which] = min(best.get(which, dt), dt)
    return ({v: untimed[v] if v in untimed else round(best[None] / max(best[v], 1e-9), 3) for v in candidates}, same,
            failed)


def paying_values(what: str, run_at: Callable[[str | None], Iterable | None], candidates: Sequence[str],
                  min_gain: float = MIN_GAIN, log: Callable[[str], None] | None = print,
                  refresh: bool = False, min_same: float = MIN_SAME, device: str = "cpu",
                  build: Callable[[str], object] | None = None,
                  clock: Callable[[], float] | None = None) -> list[str]:
    """The `candidates` of knob `what` (e.g. "smollm2.precision") that run at least
    `min_gain` times faster than the exact value on this machine and give the exact
    value's output on at least `min_same` of the probe's inputs (`run_at` returns
    its outputs, one per input): measured by `measure_speedups` on the first call,
    then read from the cache. `log` gets one line per value left out, saying why.
    `device`: where the model runs; `build`: makes a value's variant, untimed, before
    it is measured; `clock`: `measure_speedups`'. Values the run settings leave out
    (`left_out`) are left out unmeasured."""
    path, key = _probe_path(), machine_key(device)
    skip = left_out()
    if log is not None:
        for v in candidates:
            if v in skip:
                log(f"{what} = {v} left out by {run_settings.where_set('leave_out')}")
    candidates = [v for v in candidates if v not in skip]
    known, agree, todo, failed = _cached(path, key, what, candidates, refresh)
    if todo:
        with _probing(path, what):  # another process probing this knob now: its figures, once it ends
            known, agree, todo, failed = _cached(path, key, what, candidates, refresh)
            if todo:
                speedups, same, errors = measure_speedups(run_at, todo, device=device, build=build,
                                                          min_same=min_same, clock=clock)
                known, agree = {**known, **speedups}, {**agree, **same}
                failed = {**{v: e for v, e in failed.items() if v not in todo}, **errors}
                _remember(path, key, {what: known, f"{what} same": agree, f"{what} failed": failed})
    keep = [v for v in candidates if known[v] >= min_gain and agree[v] >= min_same]
    if log is not None:
        for v in candidates:
            if v in failed:
                log(f"{what} = {v} left out: it fails on this machine ({failed[v]}; {key})")
            elif known[v] < min_gain:
                log(f"{what} = {v} left out on this machine: {known[v]:.2f}x the exact value's speed "
                    f"(needs >= {min_gain:.2f}x; {key})")
            elif agree[v] < min_same:
                log(f"{what} = {v} left out: the exact answer on {agree[v]:.0%} of the probe's questions "
                    f"(needs >= {min_same:.0%}), though {known[v]:.2f}x the exact value's speed")
    return keep
