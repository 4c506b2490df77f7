"""The run's settings: where the models run and how their exact path and precision values
are chosen, in one object (`RunSettings`) that the library reads through `current()`.

    from frontends.components import run_settings

    run_settings.configure(device="cuda")      # this process, and the worker processes it starts
    with run_settings.context(engine="torch"):  # this block of this thread only
        lm = exact_path(SmolLM2.load(None))     # frontends.components.llm.policy

Fields (None: not set at this level):
- `device`: where the LLMs run, "cpu" (the default) or "cuda[:n]" (a setting of the run, not a knob);
- `engine`: the LLMs' exact path: unset, the machine's probe decides (`llm.policy.exact_engine`);
  "torch": eager torch; or an engine variant (`llm.engine.ENGINES`), unprobed;
- `leave_out`: precision values no probe offers, unprobed (`machine.paying_values`): what a CPU
  without bf16 instructions offers, shown on any machine.

Precedence, highest first: the environment variables APPROX_DEVICE, APPROX_LLM_ENGINE and
APPROX_LEAVE_OUT (comma-separated), where set and not empty; the innermost `context`;
`configure`; the defaults. `configure` also writes its values into those variables where they
are unset (or hold what this process wrote there): worker processes (started by spawn) read
them as their environment, so they run as the process that started them. In that process the
values it wrote count as `configure`'s, not as overrides, so a `context` still takes precedence."""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from dataclasses import dataclass, fields, replace

from approx_dialect.diagnostics import ApproxError

DEVICE_ENV, ENGINE_ENV, LEAVE_OUT_ENV = "APPROX_DEVICE", "APPROX_LLM_ENGINE", "APPROX_LEAVE_OUT"
ENV = {"device": DEVICE_ENV, "engine": ENGINE_ENV, "leave_out": LEAVE_OUT_ENV}
DEVICE = re.compile(r"cpu|cuda(:\d+)?")


@dataclass(frozen=True)
class RunSettings:
    """One level of the run's settings (None: not set here); `current()` gives them resolved."""

    device: str | None = None
    engine: str | None = None
    leave_out: tuple[str, ...] | None = None

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, checked(f.name, getattr(self, f.name), "run settings"))

    def over(self, below: RunSettings) -> RunSettings:
        """These settings where set, `below`'s elsewhere."""
        return replace(below, **{k: v for k, v in self.given().items() if v is not None})

    def given(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def checked(name: str, value, where: str):
    """`value` of the field `name` (leave_out: a comma-separated string or names), or a one-line
    ApproxError naming `where` (engine names are the engine module's to check: `engine.chosen_engine`)."""
    from approx_dialect.precision import check_backend

    if value is None:
        return None
    if name == "leave_out":
        return tuple(check_backend(v, where) for v in (names_of(value) if isinstance(value, str) else value))
    if not isinstance(value, str) or (name == "device" and not DEVICE.fullmatch(value)):
        expected = "cpu, cuda or cuda:N" if name == "device" else "torch or an engine variant"
        raise ApproxError(f"{name} {value!r}: expected {expected}", where=where)
    return value


def names_of(text: str) -> tuple[str, ...]:
    """The comma-separated names of `text`, stripped."""
    return tuple(v.strip() for v in text.split(",") if v.strip())


DEFAULTS = RunSettings(device="cpu", leave_out=())
_CONFIGURED = RunSettings()  # `configure`'s
_CONTEXT: contextvars.ContextVar[RunSettings] = contextvars.ContextVar("run_settings", default=RunSettings())
_EXPORTED: dict[str, str] = {}  # environment variable -> the value `configure` wrote there


def environment() -> RunSettings:
    """The settings the environment variables set (not those `configure` wrote there)."""
    values = {}
    for name, var in ENV.items():
        text = os.environ.get(var, "").strip()
        if text and os.environ[var] != _EXPORTED.get(var):
            values[name] = checked(name, text, var)
    return RunSettings(**values)


def current() -> RunSettings:
    """The run's settings, resolved (the precedence: the module docstring); `engine` None:
    the machine's probe decides."""
    return environment().over(_CONTEXT.get().over(_CONFIGURED.over(DEFAULTS)))


def where_set(name: str) -> str:
    """What sets the field `name` now, for a message: its environment variable or the run settings."""
    return ENV[name] if getattr(environment(), name) is not None else f"the run settings' {name}"


def _layer(settings: RunSettings | None, values: dict) -> dict:
    """The fields `settings` and `values` give (values last), checked."""
    unknown = sorted(set(values) - set(ENV))
    if unknown:
        raise ApproxError(f"no run setting {unknown[0]!r} (the settings: {', '.join(ENV)})", where="run settings")
    given = {**(settings.given() if settings is not None else {}), **values}
    made = RunSettings(**{k: v for k, v in given.items() if v is not None}).given()
    return {k: made[k] for k in given}


def configure(settings: RunSettings | None = None, **values) -> RunSettings:
    """Set this process's settings: `settings` replaces them whole, `values` (e.g. device="cuda";
    None unsets one) change those they name. Each is written into its environment variable for
    the worker processes this one starts, where that is unset or holds what this process wrote.
    Gives the resolved settings."""
    global _CONFIGURED
    given = _layer(settings, values)
    _CONFIGURED = replace(_CONFIGURED, **given)
    for name in given:
        _export(ENV[name], getattr(_CONFIGURED, name))
    return current()


def _export(var: str, value) -> None:
    """`value` into the environment variable `var`, unless something else set it (it overrides)."""
    if os.environ.get(var, "").strip() and os.environ[var] != _EXPORTED.get(var):
        return
    if value is None:
        os.environ.pop(var, None)
        _EXPORTED.pop(var, None)
        return
    text = ",".join(value) if isinstance(value, tuple) else str(value)
    os.environ[var] = _EXPORTED[var] = text


@contextlib.contextmanager
def context(settings: RunSettings | None = None, **values):
    """The settings `settings` and `values` give over the current ones, for the block (this
    thread, and the tasks it starts; worker processes see `configure`'s); yields them resolved."""
    given = {k: v for k, v in _layer(settings, values).items() if v is not None}
    token = _CONTEXT.set(RunSettings(**given).over(_CONTEXT.get()))
    try:
        yield current()
    finally:
        _CONTEXT.reset(token)
