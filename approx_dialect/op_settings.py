"""The settings of a component op, each declared once (`Setting`): the op's
attribute, the values it takes, who applies it and what it means.

Why one declaration: a setting used to be listed in the op, its verifier, the
knob table, the frontends' settings object, the keywords of each declaring class,
each provider's `supports` and the docs. Now the op's properties and verifier
(`approx_dialect.component`), the knob table (`component_knobs`), the settings
objects and keywords (`frontends.components`), which generation options a
provider passes on, and the docs table (`docs.settings_table`) are read from the
op's `SETTINGS`; a new setting is one line there plus whatever implements it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Attribute, TypeAttribute
from xdsl.irdl import opt_prop_def, prop_def

from approx_dialect.precision import ir_names, is_precision

APPLIES = {
    "call": "the provider, per call",  # a generate op's: its generation options, passed to the model whole
    "variant": "the provider, by a variant",  # of its weights, built once and kept
    "contexts": "the runtime, on the contexts",  # it cuts the input named contexts before the model reads it
    "runtime": "the runtime",  # the same for every provider
}
"""Who applies a setting, and how."""

KINDS = {"int": IntegerAttr, "float": FloatAttr, "precision": TypeAttribute}


@dataclass(frozen=True)
class Setting:
    """One setting of a component op: its attribute `name` of `kind` ("int": an i64 >=
    `low` [and <= `high`]; "float": an f64 > `low`; "precision": a float type of
    `approx_dialect.precision`), applied as `applies` (a key of APPLIES) and meaning `doc`.
    Absent = knob 0 = exact (the provider's own), unless `required`."""

    name: str
    kind: str
    applies: str
    doc: str
    low: float = 1
    high: float | None = None
    required: bool = False

    def __post_init__(self):
        if self.kind not in KINDS or self.applies not in APPLIES or not self.name.isidentifier():
            raise ValueError(f"setting {self.name!r}: kind is one of {list(KINDS)}, applies one of {list(APPLIES)}")

    def property(self) -> Any:
        """The op's property definition."""
        return (prop_def if self.required else opt_prop_def)(KINDS[self.kind])

    def python_type(self) -> type:
        return {"int": int, "float": float, "precision": str}[self.kind]

    def values(self) -> str:
        """The values it takes, in words."""
        if self.kind == "precision":
            return ir_names()
        low = f"{self.low:g}"
        if self.kind == "float":
            return f"a number > {low}" + (f" and <= {self.high:g}" if self.high is not None else "")
        return f"an integer in {low}..{self.high:g}" if self.high is not None else f"an integer >= {low}"

    def accepts(self, value) -> bool:
        """Whether the Python `value` is of this setting's kind (a knob's value, a keyword)."""
        if isinstance(value, bool):
            return False
        return {"int": isinstance(value, int), "float": isinstance(value, int | float),
                "precision": isinstance(value, str)}[self.kind]

    def value_error(self, value) -> str | None:
        """Why the Python `value` (a keyword as written) is not one of this setting's
        values (None: it is one, or None); a precision name is checked where it becomes a type."""
        ok = value is None or self.accepts(value) and (
            self.kind == "precision" or (value >= self.low if self.kind == "int" else value > self.low)
            and (self.high is None or value <= self.high))
        return None if ok else f"'{self.name}' must be {self.values()}, got {value!r}"

    def error(self, attr: Attribute) -> str | None:
        """Why the attribute `attr` is not a value of this setting (None: it is one)."""
        if self.kind == "precision":
            ok = is_precision(attr)
        else:
            ok = isinstance(attr, KINDS[self.kind]) and self.value_error(attr.value.data) is None
        return None if ok else f"'{self.name}' must be {self.values()}, got {attr}"


def properties(settings: tuple[Setting, ...]) -> dict[str, Any]:
    """The property definitions of `settings`, in their order (an op's class body adds
    them with `vars().update(properties(SETTINGS))`)."""
    return {s.name: s.property() for s in settings}


def named(settings: tuple[Setting, ...], applies: str | None = None) -> tuple[str, ...]:
    """The names of `settings` (those applied as `applies`, when given)."""
    return tuple(s.name for s in settings if applies is None or s.applies == applies)
