"""What the autotuner asks of a decorated program besides building it: where its
time goes (`profile`), the context of its untimed passes (`untimed`: kept component
outputs are read there), and keeping those outputs on disk (`keep_outputs`). Mixed
into `KnobFunction`, whose `build`, `reuse` and `times` it uses."""

from __future__ import annotations

import contextlib
import time
import typing

from approx_dialect.diagnostics import ApproxError


class Measured:
    """Measurement hooks of a decorated program (see the module docstring)."""

    def profile(self, inputs: typing.Sequence, config: dict | None = None) -> dict[str, dict[str, float]]:
        """Where the time goes: label -> {"share", "seconds", "calls"} of its component
        calls over `inputs` (each an argument tuple, or the one argument), the rest of
        the wall time under "(program)" (the Python between calls), with `config`'s
        knobs (default: every knob 0, the exact program); after an untimed run of the
        first input (the first call of a model or kernel compiles it). Where a later
        input was the first to call a component (a tool only some inputs call), its
        first call was timed: the inputs are timed once more, every component warm. Where
        the first input reaches every component, as an LLM system's reaches its model, the
        profile costs one run more than its timed pass, not one more of each input."""
        from approx_opt.program import exact_config

        run = self.build(dict(config) if config is not None else exact_config(self))
        calls = [x if isinstance(x, tuple) else (x,) for x in inputs]
        if not calls:
            raise ApproxError("profile: no inputs", where=self.name)
        with self.times.measuring() as first:
            run(*calls[0])
        warm = set(first.calls)
        while True:
            t0 = time.perf_counter()
            with self.times.measuring() as times:
                for args in calls:
                    run(*args)
            total = time.perf_counter() - t0
            if set(times.calls) <= warm:
                break
            warm |= set(times.calls)
        seconds = {**times.seconds, "(program)": max(0.0, total - sum(times.seconds.values()))}
        return {k: {"share": v / total if total > 0 else 0.0, "seconds": v, "calls": times.calls.get(k, len(calls))}
                for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])}

    def untimed(self):
        """The context of the tuner's untimed (QoS) passes: a call of a kept provider
        (`reuse.keep`) made before with equal settings and operands returns its kept
        result (`frontends.components.runtime.Reuse`); timed passes run every call."""
        return self.reuse.reading() if self.reuse.providers else contextlib.nullcontext()

    def kept_only(self):
        """`untimed`, where a kept provider's call not kept before raises `NotKept`
        instead of running (the tuner scores configurations from kept outputs alone)."""
        return self.reuse.reading(only=True) if self.reuse.providers else contextlib.nullcontext()

    def reuse_counts(self) -> dict[str, int]:
        """{'reused': untimed calls answered from kept results, 'run': calls run and kept},
        and where the program has endpoint components (those counting `requests_sent`):
        'requests_sent' (requests they sent in this process, timed passes' included) and
        'requests_kept' (their calls answered from kept results instead)."""
        counts = self.reuse.counts()
        endpoints = [p for p in self._components.values() if isinstance(getattr(p, "requests_sent", None), int)]
        if endpoints:
            counts["requests_sent"] = sum(p.requests_sent for p in endpoints)
            counts["requests_kept"] = sum(self.reuse.read_of(p) for p in endpoints)
        return counts

    def keep_outputs(self, path) -> bool:
        """Keep the kept providers' call outputs on disk in `path` too (the tuner's
        cost model and its resumed studies read them): those `reuse.keep` chose, else
        every provider of the program that is `deterministic` (an in-process model
        decoding greedily, an endpoint's greedy requests unless made with `keep=False`);
        False when nothing is kept."""
        if not self.reuse.providers:  # none chosen: those that say they are deterministic
            self.knobs()  # lowered: its component registry is known
            chosen = [p for p in self._components.values() if getattr(p, "deterministic", False)]
            if not chosen:
                return False
            self.reuse.keep(chosen)
        self.reuse.attach(path)
        return True
