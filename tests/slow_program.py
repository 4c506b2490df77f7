"""A program whose exact run of one input lasts over a second (as an LLM pipeline's does),
each run noted in a file the input names: what the held-out workers run can be counted.
Its knob `nap` (0: exact) shortens the wait; the output is the input's number either way."""

from __future__ import annotations

import time
from pathlib import Path

from passes.knobs import KnobSpec

EXACT_SECONDS = 1.05  # over autotuner.measure.DEFER_SECONDS: outputs come from the first paired round


class SlowProgram:
    name = "slow"

    def knobs(self) -> list[KnobSpec]:
        return [KnobSpec("nap", "nap", "nap", "static", (0, 1))]

    def build(self, config: dict):
        knob = config.get("nap", {}).get("knob_val", 0)

        def run(log: str, number: int) -> str:
            with Path(log).open("a") as f:
                f.write(f"{knob} {number}\n")
            time.sleep(EXACT_SECONDS / (1 + knob))
            return str(number)

        return run


program = SlowProgram()
