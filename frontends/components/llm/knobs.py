"""Knobs of Python components (answer models, tools), in the autotuner's terms.

A component lists its knobs (name, transform_type, integer values with 0 = exact)
and is set with the same settings as an annotated program (`{"knob_val": k}`, see
`passes/knobs.py`), so it is also an `approx_opt.program.Program`: `knobs()`
gives `KnobSpec`s named `<component>.<knob>`, `build(config)` a configured copy.
The decorator maps each knob onto the approx transformation named by its
transform_type (`func_substitute`, `cascade`, `param`, `precision_reduce`,
`memoize`, `task_skipping`), whose knob-value meaning it shares:
- `param`: k = 0 keeps the component's own value, k >= 1 uses values[k-1];
- `func_substitute`: k >= 1 calls substitute k; `task_skipping`: 1 skips.

Configured copies are shallow: they share models, caches and memo tables."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from approx_dialect.diagnostics import ApproxError
from passes.knobs import KnobSpec

T = TypeVar("T", bound="Knobbed")


@dataclass(frozen=True)
class Knob:
    name: str
    transform_type: str
    values: tuple[int, ...]
    meaning: str


def param_value(k: int, values: Sequence[Any], default: Any) -> Any:
    """The `param` transformation's rule: 0 -> default, k -> values[k-1]."""
    return default if k == 0 else values[k - 1]


class Knobbed:
    """Mixin for components with knobs. Subclasses set `name` and implement
    `knob_table()`; `self.knob(name)` reads a knob's current value (0 by default)."""

    name: str = "component"
    _knob_values: dict[str, int] | None = None

    def knob_table(self) -> list[Knob]:
        raise NotImplementedError

    def knob(self, name: str) -> int:
        return (self._knob_values or {}).get(name, 0)

    def knobs(self) -> list[KnobSpec]:
        return [KnobSpec(f"{self.name}.{k.name}", self.name, k.transform_type, "static", k.values,
                         current={"knob_val": self.knob(k.name)}) for k in self.knob_table()]

    def configure(self: T, config: dict[str, Any]) -> T:
        """A copy with the knobs of `config` set: keys `knob` or `<name>.knob`,
        settings `{"knob_val": k}` or k; knobs not named keep their value."""
        table = {k.name: k for k in self.knob_table()}
        values = dict(self._knob_values or {})
        for key, setting in config.items():
            short = key.removeprefix(f"{self.name}.")
            if short not in table:
                names = ", ".join(f"{self.name}.{n}" for n in table) or "none"
                raise ApproxError(f"unknown knob '{key}' (knobs: {names})", where="<config>")
            k = setting.get("knob_val") if isinstance(setting, dict) else setting
            if isinstance(k, bool) or not isinstance(k, int):
                raise ApproxError(f"knob '{key}': setting must be {{\"knob_val\": int}} or an int, got {setting!r}",
                                  where="<config>")
            if k not in table[short].values:
                raise ApproxError(f"knob '{key}': knob value {k} is not among its values {list(table[short].values)}",
                                  where="<config>")
            values[short] = k
        clone = copy.copy(self)
        clone._knob_values = values
        return clone

    def build(self: T, config: dict[str, Any]) -> T:
        """`Program.build`: the component configured (it is the callable)."""
        return self.configure(config)

    def exact(self: T) -> T:
        return self.configure({k.name: 0 for k in self.knob_table()})
