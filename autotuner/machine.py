"""Which machine a figure comes from, and how quiet it was while measuring.

The front of an LLM program depends on the machine: bfloat16 is 5x slower than
float32 on a CPU without bf16 instructions and faster on one with them; int8
kernels need VNNI to pay; on a GPU the time goes to decode instead of prefill.
So every recorded row names the CPU and the instructions that decide its front
(or the GPU), and says whether other processes shared its cores: a speedup is
paired and robust to load, the seconds per query beside it are not.
"""

from __future__ import annotations

import os
import platform
import resource
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from frontends.components.machine import DECISIVE_FLAGS, cpu_model_and_flags, isa_caps

QUIET_SHARE = 0.05  # other processes' share of the machine's CPU time under which a run counts as quiet


def describe_machine(device: str = "cpu", threads: int = 1) -> str:
    """One line: the CPU (with its decisive instructions, or 'none of ...'), cores, and the GPU
    when `device` is cuda; the library versions that decide kernel choice."""
    model, flags = cpu_model_and_flags()
    have = ", ".join(flags) if flags else "none of " + ", ".join(DECISIVE_FLAGS)
    caps = isa_caps()  # an older CPU emulated: the figures are of the caps, said so
    emulated = f", emulated by {' '.join(f'{k}={v}' for k, v in caps.items())}" if caps else ""
    parts = [f"{model} ({have}{emulated}), {os.cpu_count()} cores"]
    try:
        import torch

        if device.startswith("cuda") and torch.cuda.is_available():
            parts.insert(0, f"GPU {torch.cuda.get_device_name(0)}")
        parts.append(f"torch {torch.__version__}" + ("" if device.startswith("cuda") else
                                                     f" ({torch.backends.cpu.get_cpu_capability()} kernels) on "
                                                     f"{threads} thread" + ("s" if threads != 1 else "")))
    except ImportError:
        pass
    parts.append(f"{platform.system()} {platform.release()}, Python {platform.python_version()}")
    return "; ".join(parts)


def _busy_seconds() -> float | None:
    """CPU seconds all processes spent busy since boot (user + nice + system + irq + softirq + steal)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _own_seconds() -> float:
    """CPU seconds of this process and its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


@dataclass
class Load:
    """How busy the machine was: load averages at the start and the end, and the share of
    the machine's CPU time that other processes took over the run (0: alone; 1: every core)."""

    load_start: list[float] | None
    load_end: list[float] | None
    other_share: float | None
    seconds: float
    cores: int

    @property
    def quiet(self) -> bool | None:
        return None if self.other_share is None else self.other_share < QUIET_SHARE

    def to_dict(self) -> dict:
        return {**asdict(self), "quiet": self.quiet}

    def describe(self) -> str:
        if self.other_share is None:
            return "load not measured (no /proc/stat)"
        verdict = "quiet" if self.quiet else "SHARED: other processes ran beside it"
        return (f"{verdict} (other processes took {100 * self.other_share:.0f} % of the {self.cores} cores' time "
                f"over {self.seconds / 60:.1f} min; load average {self.load_start} at the start, "
                f"{self.load_end} at the end)")


class LoadProbe:
    """Started before a measured run, `finish()` after it: the run's `Load`."""

    def __init__(self):
        self.t0, self.busy0, self.own0 = time.monotonic(), _busy_seconds(), _own_seconds()
        self.load_start = load_average()

    def finish(self) -> Load:
        seconds, cores = time.monotonic() - self.t0, os.cpu_count() or 1
        busy = _busy_seconds()
        share = None
        if busy is not None and self.busy0 is not None and seconds > 0:
            other = (busy - self.busy0) - (_own_seconds() - self.own0)
            share = round(min(1.0, max(0.0, other / (seconds * cores))), 3)
        return Load(self.load_start, load_average(), share, round(seconds, 1), cores)
