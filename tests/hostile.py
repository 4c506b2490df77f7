"""Hostile strings and the paths they take to generated Python.

Why: Python generated from IR must treat every symbol name, string attribute,
location and Python string as data. Each hostile string carries live payloads
(create a canary file, set a builtins flag) that run if any path ever executes
the text; `naive_control` shows they do fire under a careless generator.
Used by tests/test_no_injection.py (a curated set) and
bench/reliability_injection.py (1,000+ generated ones).

Each `run_*` returns "data" (ran; the string came back intact) or "error" (one
clear ApproxError/KnobError line), and raises `Finding` for anything else.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import io
import keyword
import random
import sys
import warnings
from pathlib import Path

FLAG = "__approx_pwned__"
GENERATOR_NAMES = ["f0", "f1", "v0", "v1", "E", "K", "_index", "_divsi", "_remsi", "_ceildivsi", "_divf",
                   "_wrap", "__builtins__", "namespace", "source", "exec", "eval", "compile", "__import__",
                   "__class__", "__init__", "__dict__", "self", "None", "True", "def", "class", "lambda",
                   "return", "import", "from", "yield", "await", "async", "pass", "global", "nonlocal",
                   "match", "case", "_", "__name__", "__main__", "print", "open", "os", "sys"]
BREAKERS = ['"', "'", '"""', "'''", '\\"', "\\'", "\\", "\n", "\r", "\r\n", "\u2028", "\u2029", "\x0c", "\x0b",
            "\x85", "\x1c", "\x00", "#", ")", "]", "}", "}}", "{", "{{", '")', "')", '"}>', '" : i64}>', "%",
            "${", "`", ";", "\t", "\x1b[31m", "</script>", "*/", "-->", "@", "\u202e", "\u200b", "é", "\U0001F600"]
SUFFIXES = ["", "#", '("', "('", "\n", '"""', "'''", "\\", " #\u2028", "(", "\x00"]


class Finding(AssertionError):
    """The hostile string was not handled as data or as one clear error."""


def payloads(canary: Path) -> list[str]:
    """Code that leaves a trace if it ever runs."""
    c = str(canary)
    return [f"__import__('pathlib').Path({c!r}).touch()",
            f"__import__('builtins').__setattr__({FLAG!r}, 1)",
            f"open({c!r}, 'w').close()",
            f"__import__('os').system('touch {c}')",
            f"setattr(__import__('builtins'), {FLAG!r}, 1)"]


def curated(canary: Path) -> list[str]:
    """The hand-picked set the tests run: every breaker with a payload, plus names."""
    p = payloads(canary)
    out = [f"{b}; {p[i % len(p)]} #" for i, b in enumerate(BREAKERS)]
    out += [f'\\"); {p[0]} #', f"'''\n{p[1]}\n'''", f'"""\n{p[0]}\n"""', f"\u2028{p[1]}\u2028",
            f"\r{p[0]}\r", f"\x0c{p[1]}", f"#\n{p[0]}", f"\n{p[2]}\n#", "__import__", "__builtins__", "f0", "E",
            "K", "v0", "<script>window.__pwned=1</script>", "é\u202eabc", "", "a\x00b"]
    return list(dict.fromkeys(out))


def generated(canary: Path, n: int, seed: int = 0) -> list[str]:
    """`n` distinct hostile strings: breaker + payload + suffix, names, random unicode."""
    rng = random.Random(seed)
    p = payloads(canary)
    out = dict.fromkeys(curated(canary) + GENERATOR_NAMES)
    while len(out) < n:
        k = rng.random()
        if k < 0.75:
            s = "".join(rng.choice(BREAKERS) for _ in range(rng.randint(1, 2))) + rng.choice(["; ", "\n", ""]) \
                + rng.choice(p) + rng.choice(SUFFIXES)
        elif k < 0.85:
            s = rng.choice(GENERATOR_NAMES) + rng.choice(["", "_", "0", rng.choice(BREAKERS)])
        else:
            s = "".join(chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0x2FFF), 0x2028, 0x85, 0xFEFF,
                                        rng.randint(0x10000, 0x1F9FF)])) for _ in range(rng.randint(1, 12)))
        out[s] = None
    return list(out)[:n]


def fired(canary: Path) -> bool:
    return canary.exists() or getattr(builtins, FLAG, None) is not None


def reset(canary: Path) -> None:
    canary.unlink(missing_ok=True)
    if hasattr(builtins, FLAG):
        delattr(builtins, FLAG)


def naive_control(s: str) -> None:
    """Positive control: `s` pasted into source text, as a careless generator would (then `fired`)."""
    for template in ("x = '{}'", 'x = "{}"', "x = '''{}'''", 'x = """{}"""', "# {}", "{}", "x = f({})"):
        with contextlib.suppress(BaseException), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(template.format(s), {})  # noqa: S102 - the point of the control: the unsafe way


# ------------------------------------------------------------------ .mlir text -> approx-pipeline -> pygen

def mlir_literal(s: str) -> str:
    """`s` as an MLIR string literal (MLIR's escapes: \\\\, \\", \\XX for the rest)."""
    out = []
    for b in s.encode("utf-8", "surrogatepass"):
        out.append("\\\\" if b == 0x5C else f"\\{b:02X}" if b < 0x20 or b > 0x7E or b == 0x22 else chr(b))
    return '"' + "".join(out) + '"'


MLIR = """module {{
  "approx.util.annotation.decision_tree"() <{{func_name = {name}, transform_type = "loop_perforate",
    state_indices = array<i64: 1>, state_function = {state}, num_thresholds = 1 : i32,
    thresholds_uppers = array<i32: 100>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 2>,
    thresholds = array<i32: 5>, decisions = array<i32: 0, 2>}}> : () -> ()
  func.func @{state}(%n: i64) -> i32 {{
    %c = arith.trunci %n : i64 to i32
    func.return %c : i32
  }}
  func.func @{helper}(%a: !pyobj.obj) -> !pyobj.obj {{
    %s = "pyobj.const"() <{{value = [{s}, 1 : i64]}}> {{note = {s}}} : () -> !pyobj.obj loc({s}:1:2)
    %r = "pyobj.call"(%a, %s) <{{callee = 0 : i64, name = {s}, kwnames = [{s}]}}> : (!pyobj.obj, !pyobj.obj) -> !pyobj.obj
    func.return %r : !pyobj.obj
  }}
  func.func @{name}(%log: !pyobj.obj, %n: i64) -> !pyobj.obj {{
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %g = "pyobj.global"() <{{index = 1 : i64, name = {s}}}> : () -> !pyobj.obj
    scf.for %i = %c0 to %n step %c1 : i64 {{
      %x = func.call @{helper}(%log) : (!pyobj.obj) -> !pyobj.obj
    }}
    func.return %g : !pyobj.obj
  }}
}}
"""  # noqa: E501 (MLIR text)


def mlir_text(s: str, raw: bool = False) -> str:
    """The program with `s` as entry symbol, string constant, call/global/keyword name, discardable
    attribute and location; the state function and helper are named after `s` too. `raw`: `s`
    pasted between quotes unescaped, as a hostile file would."""
    q = (lambda t: f'"{t}"') if raw else mlir_literal
    return MLIR.format(name=q(s), state=q("state:" + s), helper=q(s + ":helper"), s=q(s))


def _record(log, **kw):
    log.append(kw)


def _expected_log(s: str, n: int) -> list:
    return [{s: (s, 1)}] * len(range(0, n, 2 if n >= 5 else 1))


def run_mlir(s: str, raw: bool = False) -> str:
    """Parse, run the approx pipeline, generate Python, call the entry (n = 7: perforated by 2)."""
    from approx_dialect.context import parse_module
    from approx_dialect.diagnostics import ApproxError
    from approx_opt.driver import run_pipeline
    from frontends.pygen import generate

    log, marker = [], object()
    try:
        lowered = run_pipeline(mlir_text(s, raw), "approx-pipeline", "hostile.mlir")
        module = generate(parse_module(lowered), [_record, marker], label=s)
        out = module.fn(s)(log, 7)
    except ApproxError as err:
        return _one_line(str(err))
    except Exception as err:
        raise Finding(f"{type(err).__name__}: {err}") from err
    if not raw and (out is not marker or log != _expected_log(s, 7)):
        raise Finding(f"wrong result: {out!r}, log {log[:2]!r}")
    return "data"


def _one_line(msg: str) -> str:
    if "\n" in msg.rstrip("\n") or "\r" in msg or "error:" not in msg:
        raise Finding(f"not one clear error line: {msg!r}")
    return "error"


def run_approx_opt(s: str, tmp: Path) -> str:
    """`approx-opt FILE -p approx-pipeline` in-process on the program; its output must read back
    with the string intact, or it exits 1 with one error line."""
    from xdsl.dialects.builtin import StringAttr

    from approx_dialect.context import parse_module
    from approx_opt.main import main

    src, dst = tmp / "in.mlir", tmp / "out.mlir"
    src.write_text(mlir_text(s), encoding="utf-8")
    dst.unlink(missing_ok=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            rc = main([str(src), "-p", "approx-pipeline", "-o", str(dst)])
        except SystemExit as e:
            rc = e.code
    if rc == 1:
        return _one_line(err.getvalue())
    if rc != 0 or err.getvalue():
        raise Finding(f"approx-opt exit {rc}, stderr {err.getvalue()!r}")
    module = parse_module(dst.read_text(encoding="utf-8"))
    strings = {a.data for op in module.walk() for a in op.properties.values() if isinstance(a, StringAttr)}
    names = {op.sym_name.data for op in module.ops if hasattr(op, "sym_name")}
    if s not in strings or s not in names:
        raise Finding("approx-opt output lost the string")
    return "data"


# ------------------------------------------------------------------ Python source -> decorator -> pygen

RESERVED = ("__builtins__", "S", "NAMED", "Named", "hk", "out", "i", "n", "str", "range")
PY = '''from frontends import Knob, StaticTransform

S = {lit}


class Named:
    def __call__(*a, **kw):
        return (a[1], tuple(kw))


NAMED = Named()
NAMED.__qualname__ = NAMED.__name__ = S


@Knob(static_transform=StaticTransform("loop_perforate", 2))
def {fname}(n):
    out = []
    for i in range(n):
        out.append({lit} + str(i))
    hk = {lit}
    {var} = {{{lit}: NAMED({lit}, {kw}=1)}}
    out.append(f"<{{{var}[hk][0]}}>")
    return out, {var}
'''


def py_source(s: str) -> str:
    ident = s.isidentifier() and not keyword.iskeyword(s) and s not in RESERVED
    return PY.format(lit=repr(s), fname=s if ident else "entry", var=s if ident else "d", kw=s if ident else "key")


def run_python(s: str, tmp: Path, n: int = 5) -> str:
    """A module file (named after `s` where the file system allows) with `s` as string constant,
    dict key, f-string part, callee `__qualname__`, and (if an identifier) function, variable and
    keyword name; imported, lowered, run through the pipeline and generated Python."""
    from approx_dialect.diagnostics import ApproxError
    from frontends import KnobError

    stem = "".join(c for c in s if c not in "/\x00" and not 0xD800 <= ord(c) <= 0xDFFF)[:60] or "x"
    path = tmp / f"{stem}.py"
    try:
        path.write_text(py_source(s), encoding="utf-8", errors="surrogatepass")
    except (OSError, UnicodeError):
        path = tmp / "plain.py"
        path.write_text(py_source(s), encoding="utf-8", errors="surrogatepass")
    name = f"hostile_{abs(hash(s))}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)  # the user's own module: importing it is meant to run it
    except SyntaxError:
        return "error"  # e.g. a lone surrogate: not valid source; Python's own error
    entry = next(v for k, v in vars(mod).items() if hasattr(v, "knob_config"))
    try:
        out = entry(n)
    except (ApproxError, KnobError) as err:
        return _one_line(str(err))
    except Exception as err:
        raise Finding(f"{type(err).__name__}: {err}") from err
    finally:
        sys.modules.pop(name, None)
    kw = entry.python.__name__ if entry.python.__name__ != "entry" else "key"
    want = ([s + str(i) for i in range(0, n, 2)] + [f"<{s}>"], {s: (s, (kw,))})
    if out != want:
        raise Finding(f"wrong result {out!r}")
    return "data"


# ------------------------------------------------------------------ the HTML report

def run_report(s: str, tmp: Path) -> str:
    """The report with `s` as program, knob, metric, notes and IR: no markup of `s` survives."""
    from html.parser import HTMLParser

    from autotuner.report import write_report
    from tests.test_report import sample_result

    r = sample_result(program=s, knob=s)
    r.qos_metric, r.notes = s, [s]
    r.front[0].ir = f"func.func @{mlir_literal(s)}() {{ return }}"
    page = write_report(r, tmp / "report").read_text(encoding="utf-8")
    tags: list = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, [a for a, _ in attrs]))

    P().feed(page)
    if sum(t == "script" for t, _ in tags) != 2 or any(t in ("img", "iframe", "object") for t, _ in tags) \
            or any(a.startswith("on") for _, attrs in tags for a in attrs):
        raise Finding("markup from the string reached the page")
    return "data"
