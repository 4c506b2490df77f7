"""Generated programs of component ops (`approx_dialect/component.py`: generate,
prompts, embed, retrieve, tool_call, tool_run, confidence, fallback) with the knob
annotations of each (`approx.util.annotation.component`: param, func_substitute,
precision_reduce, memoize, task_skipping with its fallbacks, cascade, decided by a
decision tree), for approx-opt.

A valid program is built from what the verifiers and the passes accept (ops in
straight lines, `scf.if` on a confidence, `scf.for` carrying a value, calls between
functions), so approx-opt must give output for it (`Case.expect`); a mutated one
has one to three component-aware mutations (one attribute of an op or annotation
given a hostile value, dropped or added; operands, result types, labels, op names,
annotations moved or duplicated) or the generic text mutations, and must end in
output or one located error line."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

from tests.fuzz import mutate
from tests.fuzz.inputs import COMMON_PIPELINES

OBJ = "!pyobj.obj"
GEN_INTS = ("max_new_tokens", "passages", "sentences", "context_chars", "context_tokens", "compress_tokens",
            "layers", "token_exit")


@dataclass(frozen=True)
class Kind:
    """One kind of call site: its op, the attribute naming its provider, its integer
    parameters, whether it has a precision, and its symbol parameters."""

    op: str
    provider: str
    ints: tuple[str, ...]
    precision: bool
    symbols: tuple[str, ...]
    labels: tuple[str, ...]


KINDS = {
    "generate": Kind("component.generate", "model", GEN_INTS, True, ("model",), ("answer", "reader")),
    "prompt": Kind("component.generate", "model", GEN_INTS, True, ("model",), ("rewrite", "extract")),
    "embed": Kind("component.embed", "encoder", ("dims",), True, ("encoder",), ("query", "doc_vec")),
    "retrieve": Kind("component.retrieve", "retriever", ("top_k", "preprocess", "terms", "docs", "dims"), True,
                     ("retriever",), ("bm25", "dense")),
    "tool_call": Kind("component.tool_call", "tools", (), False, ("tools", "router"), ("tools",)),
    "tool_run": Kind("component.tool_run", "tool", (), False, ("tool",), ("count", "lookup")),
}
SYMBOLS = {"model": ("pro", "fast", "small"), "encoder": ("minilm", "e5"), "retriever": ("bm25", "dense"),
           "tools": ("bfcl", "local"), "router": ("keyword", "embedding"), "tool": ("words", "spaces")}
PRECISIONS = ("f32", "bf16", "f16", "i8")
FIELDS = ("question", "contexts", "draft", "topic")
SEPARATORS = ("", "Q: ", "\n", " and ")
CONSTS = ("unit", '"x"', "3 : i64")
FALLBACK_VALUES = ('""', "0 : i64", "unit", '[1 : i64, "a"]')
DECIDABLE = ("param", "func_substitute", "precision_reduce", "memoize")


@dataclass
class Label:
    kind: str
    func: str  # the function of its first call site (the knobs' func_name)
    arity: int  # the fewest operands of its ops (a skip's fallback input must be below)


@dataclass
class Gen:
    """The state of one generated module: labels, functions and their signatures."""

    draw: object
    labels: dict[str, Label] = field(default_factory=dict)
    funcs: list[str] = field(default_factory=list)
    callable_: list[str] = field(default_factory=list)  # functions (obj) -> obj, callable from later ones
    decided: dict[str, str] = field(default_factory=dict)  # function -> transform_type of its decision tree
    n: int = 0

    def fresh(self, base: str = "v") -> str:
        self.n += 1
        return f"%{base}{self.n}"

    def pick(self, values):
        return self.draw(mutate._sampled(tuple(values)))

    def num(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


def _int_value(name: str, g: Gen) -> int:
    if name == "preprocess":
        return g.num(0, 3)
    if name == "token_exit":
        return g.num(1, 100)
    return g.pick((1, 2, 3, 4, 8, 16, 64, 256))


def _props(entries: dict[str, str]) -> str:
    return "<{" + ", ".join(f"{k} = {v}" for k, v in entries.items()) + "}>"


def component_op(g: Gen, func: str, avail: list[str], indent: str) -> tuple[list[str], str]:
    """One component call on values in scope: its lines and its result."""
    kind_name = g.pick(KINDS)
    kind = KINDS[kind_name]
    label = g.pick(kind.labels)
    if label in g.labels and g.labels[label].kind != kind_name:
        kind_name = g.labels[label].kind
        kind = KINDS[kind_name]
    props = {"component": f'"{label}"', kind.provider: "@" + g.pick(SYMBOLS[kind.provider])}
    if kind_name == "tool_call":
        props["router"] = "@" + g.pick(SYMBOLS["router"])
    if kind_name == "retrieve":
        props["top_k"] = f"{_int_value('top_k', g)} : i64"
    for name in kind.ints:
        if name != "top_k" and g.num(0, 4) == 0:
            props[name] = f"{_int_value(name, g)} : i64"
    if kind.precision and g.num(0, 4) == 0:
        props["precision"] = g.pick(PRECISIONS)
    if g.num(0, 6) == 0:
        props["cache"] = f"{g.pick((1, 4, 64))} : i64"
    if kind_name == "generate":
        arity = 2
    elif kind_name == "prompt":
        fields = g.draw(st.lists(mutate._sampled(FIELDS), min_size=1, max_size=3, unique=True))
        template = "".join(g.pick(SEPARATORS) + "{" + f + "}" for f in fields)
        if g.num(0, 3) == 0:
            template += " {{literal}}"
        props["template"] = json.dumps(template)
        props["inputs"] = "[" + ", ".join(f'"{f}"' for f in fields) + "]"
        outputs = g.draw(st.lists(mutate._sampled(("text", "query", "name", "year")), min_size=1, max_size=2,
                                  unique=True))
        props["outputs"] = "[" + ", ".join(f'"{o}"' for o in outputs) + "]"
        arity = len(fields)
    elif kind_name == "tool_run":
        arity = g.num(0, 3)
    else:
        arity = 1
    operands = [g.pick(avail) for _ in range(arity)]
    info = g.labels.setdefault(label, Label(kind_name, func, arity))
    info.arity = min(info.arity, arity)
    result = g.fresh()
    types = ", ".join([OBJ] * arity)
    line = f'{indent}{result} = "{kind.op}"({", ".join(operands)}) {_props(props)} : ({types}) -> {OBJ}'
    return [line], result


def statements(g: Gen, func: str, avail: list[str], indent: str, depth: int) -> list[str]:
    """1-4 statements: component calls mostly, a branch on a confidence, a loop
    carrying a value, a call of an earlier function, a constant or a written fallback."""
    lines: list[str] = []
    for _ in range(g.num(1, 4)):
        what = g.pick(("op", "op", "op", "op", "if", "for", "call", "const", "fallback"))
        if what in ("if", "for") and depth >= 3:
            what = "op"
        if what == "call" and not g.callable_:
            what = "op"
        if what == "op":
            new, value = component_op(g, func, avail, indent)
        elif what == "const":
            value = g.fresh("c")
            new = [f'{indent}{value} = "pyobj.const"() <{{value = {g.pick(CONSTS)}}}> : () -> {OBJ}']
        elif what == "fallback":
            value = g.fresh("f")
            of = KINDS[g.pick(KINDS)].op
            if g.draw(st.booleans()):
                new = [f'{indent}{value} = "component.fallback"({g.pick(avail)}) <{{component = "skipped", '
                       f'of = "{of}"}}> : ({OBJ}) -> {OBJ}']
            else:
                new = [f'{indent}{value} = "component.fallback"() <{{component = "skipped", of = "{of}", '
                       f'value = {g.pick(FALLBACK_VALUES)}}}> : () -> {OBJ}']
        elif what == "call":
            value = g.fresh("r")
            new = [f"{indent}{value} = func.call @{g.pick(g.callable_)}({g.pick(avail)}) : ({OBJ}) -> {OBJ}"]
        elif what == "if":
            conf, limit, cond, value = g.fresh("conf"), g.fresh("t"), g.fresh("ok"), g.fresh("sel")
            new = [f'{indent}{conf} = "component.confidence"({g.pick(avail)}) : ({OBJ}) -> f64',
                   f"{indent}{limit} = arith.constant {g.pick(('0.0', '0.5', '1.0'))} : f64",
                   f"{indent}{cond} = arith.cmpf oge, {conf}, {limit} : f64",
                   f"{indent}{value} = scf.if {cond} -> ({OBJ}) {{"]
            for branch in range(2):
                inner = list(avail)
                body = statements(g, func, inner, indent + "  ", depth + 1)
                new += body + [f"{indent}  scf.yield {g.pick(inner)} : {OBJ}"]
                new.append(f"{indent}}} else {{" if branch == 0 else f"{indent}}}")
        else:  # a loop carrying a value
            lb, ub, step, value = g.fresh("lb"), g.fresh("ub"), g.fresh("st"), g.fresh("acc")
            iv, carried = g.fresh("i"), g.fresh("a")
            new = [f"{indent}{lb} = arith.constant 0 : index", f"{indent}{ub} = arith.constant {g.num(0, 4)} : index",
                   f"{indent}{step} = arith.constant 1 : index",
                   f"{indent}{value} = scf.for {iv} = {lb} to {ub} step {step} iter_args({carried} = "
                   f"{g.pick(avail)}) -> ({OBJ}) {{"]
            inner = [*avail, carried]
            body = statements(g, func, inner, indent + "  ", depth + 1)
            new += body + [f"{indent}  scf.yield {g.pick(inner)} : {OBJ}", f"{indent}}}"]
        lines += new
        avail.append(value)
    return lines


def function(g: Gen, name: str, decided: bool) -> str:
    args = [f"%q_{name}: {OBJ}"] + ([f"%s_{name}: i32"] if decided else [])
    avail = [f"%q_{name}"]
    body = statements(g, name, avail, "    ", 0)
    ret = g.pick(avail)
    return (f"  func.func @{name}({', '.join(args)}) -> {OBJ} {{\n" + "\n".join(body)
            + f"\n    func.return {ret} : {OBJ}\n  }}\n")


def _knob_types(kind_name: str) -> list[str]:
    kind = KINDS[kind_name]
    types = ["func_substitute", "memoize", "task_skipping"]
    if kind.ints:
        types.append("param")
    if kind.precision:
        types.append("precision_reduce")
    if kind.op == "component.generate":
        types.append("cascade")
    return types


def knob(g: Gen, label: str, info: Label, ttype: str, used: set[str], decided: bool) -> dict[str, str] | None:
    """One valid knob of `label` with transform `ttype` (None when its parameter is taken)."""
    kind = KINDS[info.kind]
    entries = {"func_name": f'"{info.func}"', "component": f'"{label}"'}
    thresholds = None
    if ttype == "param":
        parameter = g.pick(kind.ints)
        values = [f"{_int_value(parameter, g)} : i64" for _ in range(g.num(1, 3))]
    elif ttype == "func_substitute":
        parameter = g.pick(kind.symbols)
        values = ["@" + g.pick(SYMBOLS[parameter]) for _ in range(g.num(1, 2))]
    elif ttype == "precision_reduce":
        parameter, values = "precision", [g.pick(PRECISIONS) for _ in range(g.num(1, 3))]
    elif ttype == "memoize":
        parameter, values = "cache", [f"{g.pick((1, 8, 128))} : i64" for _ in range(g.num(1, 2))]
    elif ttype == "cascade":
        parameter = "model"
        values = ["@" + m for m in g.draw(st.lists(mutate._sampled(SYMBOLS["model"]), min_size=1, max_size=2,
                                                   unique=True))]
        thresholds = [g.pick(("0.0", "0.1", "0.5", "0.9", "1.0")) for _ in range(g.num(1, 3))]
    else:
        parameter = g.pick(("skip", "skip", "drop"))
        fallback = g.num(0, 2) if info.arity else g.num(1, 2)
        values = [] if fallback != 1 else [g.pick(('""', "0 : i64", "unit", '"n/a"', "[1 : i64, 2 : i64]"))]
    if parameter in used:
        return None
    used.add(parameter)
    entries |= {"parameter": f'"{parameter}"', "transform_type": f'"{ttype}"', "values": f"[{', '.join(values)}]"}
    n = len(values) * (len(thresholds) if thresholds else 1) if ttype != "task_skipping" else 1
    entries["knob_val"] = f"{0 if decided else g.num(0, n)} : i32"
    if thresholds:
        entries["thresholds"] = f"[{', '.join(thresholds)}]"
    if decided:
        entries["decided"] = "unit"
        entries["#values"] = str(len(values))  # read by decision_tree(), not printed
    if ttype == "task_skipping" and fallback == 0:
        entries["input"] = f"{g.num(0, info.arity - 1)} : i64"
    return entries


def annotation(entries: dict[str, str]) -> str:
    shown = {k: v for k, v in entries.items() if not k.startswith("#")}
    if "decided" in shown:
        del shown["decided"]
        return ('  "approx.util.annotation.component"() <{' + ", ".join(f"{k} = {v}" for k, v in shown.items())
                + ", decided}> : () -> ()")
    return f'  "approx.util.annotation.component"() {_props(shown)} : () -> ()'


def decision_tree(g: Gen, func: str, ttype: str, most: int) -> str:
    """The decision tree of `func` choosing a knob value in 0..most for its decided knobs."""
    thresholds = sorted(g.draw(st.lists(st.integers(1, 99), min_size=1, max_size=3, unique=True)))
    decisions = [g.num(0, most) for _ in range(len(thresholds) + 1)]
    arr = lambda xs: f"array<i32: {', '.join(map(str, xs))}>"  # noqa: E731
    return ('  "approx.util.annotation.decision_tree"() <{'
            f'func_name = "{func}", transform_type = "{ttype}", state_indices = array<i64: 1>, '
            f'state_function = "state", num_thresholds = {len(thresholds)} : i32, '
            f"thresholds_uppers = array<i32: 100>, thresholds_lowers = array<i32: 0>, "
            f"decision_values = {arr(range(most + 1))}, thresholds = {arr(thresholds)}, "
            f"decisions = {arr(decisions)}}}> : () -> ()")


@dataclass(frozen=True)
class Program:
    text: str
    knobs: tuple[tuple[str, int], ...]  # static knobs: (name, largest knob value)
    decided_funcs: tuple[str, ...]


@st.composite
def component_programs(draw) -> Program:
    """A valid module: 1-3 functions of component calls and the knobs of their labels."""
    g = Gen(draw)
    decided_at = draw(st.integers(-2, 2))  # the function with a decision tree (none when negative)
    for i in range(draw(st.integers(1, 3))):
        name = f"f{i}"
        g.funcs.append(function(g, name, i == decided_at))
        if i != decided_at:
            g.callable_.append(name)
    anns, knobs, trees = [], [], []
    for label, info in g.labels.items():
        used: set[str] = set()
        types = _knob_types(info.kind)
        for _ in range(draw(st.integers(0, 3))):
            ttype = g.pick(types)
            decided = (info.func == f"f{decided_at}" and ttype in DECIDABLE
                       and g.decided.setdefault(info.func, ttype) == ttype and draw(st.booleans()))
            entries = knob(g, label, info, ttype, used, decided)
            if entries is None:
                continue
            anns.append(entries)
            if not decided:
                knobs.append((f"{label}.{entries['parameter'][1:-1]}", _largest(entries)))
    for func, ttype in g.decided.items():
        mine = [int(e["#values"]) for e in anns if "decided" in e]
        if mine:
            trees.append(decision_tree(g, func, ttype, min(mine)))
    header = [annotation(e) for e in anns] + trees
    state = "  func.func @state(%s: i32) -> i32 {\n    func.return %s : i32\n  }\n" if trees else ""
    text = "module {\n" + "".join(h + "\n" for h in header) + state + "".join(g.funcs) + "}\n"
    return Program(text, tuple(knobs), tuple(g.decided))


def _largest(entries: dict[str, str]) -> int:
    """The largest value of a static knob (its knob_val range is 0..this)."""
    if entries["transform_type"] == '"task_skipping"':
        return 1
    n_values = len(_entries(entries["values"][1:-1]))
    if "thresholds" in entries:
        return n_values * len(entries["thresholds"].split(","))
    return n_values


# ---------------------------------------------------------------- mutations

INT_KEYS = ("top_k", "preprocess", "terms", "docs", "dims", "cache", "knob_val", "input", *GEN_INTS)
HOSTILE = {
    "int": ("0 : i64", "-1 : i64", "101 : i64", "2147483648 : i64", "9223372036854775807 : i64", "1 : i32",
            "1 : i1", "true", "1.5 : f64", '"3"', "@pro", "[1 : i64]", "unit", "3 : index",
            "-9223372036854775808 : i64", "0 : i32", "7 : i32", "2 : ui8", "1 : si64"),
    "symbol": ("@nosuch", '@"é"', '"pro"', "1 : i64", "@pro::@x", "[@pro]", "f32", "@", "unit"),
    "precision": ("f64", "i32", "bf16", "f16", "i8", '"bf16"', "index", "i1", "tf32", "f8E4M3FN", "complex<f32>",
                  "1 : i64", "!pyobj.obj", "vector<2xf32>"),
    "template": ('"{"', '"}"', '"{0}"', '"{question!r}"', '"{question:>4}"', '"no fields"', '""', '"{a}{a}"',
                 '"{a.b}"', '"{a[0]}"', '"{{}}"', '"{é}"', '"{question}{contexts}{draft}{topic}{extra}"', "1 : i64"),
    "names": ("[]", '["a"]', '["a", "a"]', '["1x"]', "[1 : i64]", '"a"', '["question", "contexts"]', '[""]',
              '["question"]', '["text", "é"]', "[unit]"),
    "values": ("[]", "[1 : i64]", "[@fast]", "[bf16]", "[0 : i64]", "[-1 : i64]", '["s"]', "[[1 : i64]]",
               "array<i64: 1, 2>", "[1.5 : f64]", "[unit]", "[9223372036854775807 : i64]", "[101 : i64]",
               "[@fast, 2 : i64]", "[f64]", "[@fast, @small, @pro]", "[1 : i64, 2 : i64, 3 : i64, 4 : i64]",
               "[dense<1> : tensor<1xi64>]", "[0 : i1]", '[""]'),
    "thresholds": ("[]", "[2.0 : f64]", "[-0.5 : f64]", "[0x7FF8000000000000 : f64]", "[1 : i64]", "[0.5 : f32]",
                   "array<f64: 0.5>", '["x"]', "[0.5, 0.5, 0.5, 0.5]", "[1.0e+300 : f64]", "[unit]"),
    "transform_type": tuple(f'"{t}"' for t in (
        "param", "func_substitute", "precision_reduce", "memoize", "task_skipping", "cascade", "loop_perforate",
        "loop_truncate", "", "PARAM", "é")),
    "parameter": tuple(f'"{p}"' for p in (
        *INT_KEYS, "model", "encoder", "retriever", "tools", "router", "tool", "precision", "cache", "template",
        "inputs", "outputs", "component", "skip", "", "é", "of", "value")),
    "label": ('"answer"', '"bm25"', '"query"', '"tools"', '"count"', '"rewrite"', '"nosuch"', '""', '"é"',
              '"a\\22b"', '"skipped"', "1 : i64", "@answer"),
    "func_name": ('"nosuch"', '""', '"@f0"', '"state"', '"f0"', '"f2"', "@f0", "1 : i32"),
    "of": ('"component.generate"', '"component.nosuch"', '""', '"func.func"', '"component.confidence"',
           '"component.tool_run"', "@x"),
    "value": ("unit", "0 : i64", '"s"', '[1 : i64, "a"]', "@sym", "array<i64: 1>", "dense<1> : tensor<1xi64>",
              "f32", "1.5 : f64", "true", "[[unit]]", "0x7FF8000000000000 : f64"),
    "unit": ("unit", "1 : i64", '"x"', "false"),
}
KEY_CLASS = {**{k: "int" for k in INT_KEYS}, **{k: "symbol" for k in SYMBOLS}, "precision": "precision",
             "template": "template", "inputs": "names", "outputs": "names", "values": "values",
             "thresholds": "thresholds", "transform_type": "transform_type", "parameter": "parameter",
             "component": "label", "func_name": "func_name", "of": "of", "value": "value", "decided": "unit"}
NEW_KEYS = (*KEY_CLASS, "bogus", "state_function", "variants", "id")
COMPONENT_LINE = re.compile(r'"(?:component\.\w+|approx\.util\.annotation\.component)"')
OP_NAMES = ("component.generate", "component.embed", "component.retrieve", "component.tool_call",
            "component.tool_run", "component.confidence", "component.fallback", "component.rerank", "pyobj.const",
            "approx.util.annotation.component", "approx.util.annotation.transform")


def _entries(props: str) -> list[tuple[int, int]]:
    """Spans of the top-level `key = value` entries inside a `<{...}>` body."""
    spans, depth, start, quoted, i = [], 0, 0, False, 0
    while i < len(props):
        c = props[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "[<({":
            depth += 1
        elif c in "]>)}":
            depth -= 1
        elif c == "," and depth == 0:
            spans.append((start, i))
            start = i + 1
        i += 1
    spans.append((start, len(props)))
    return [(a, b) for a, b in spans if props[a:b].strip()]


def _hostile(draw, key: str) -> str:
    cls = KEY_CLASS.get(key)
    if cls is None or draw(st.integers(0, 5)) == 0:
        return draw(mutate.attr_values(["f0", "f1", "state"]))
    return draw(mutate._sampled(HOSTILE[cls]))


def prop_mutation(draw, text: str) -> str:
    """One attribute of a component op or annotation: a hostile value, dropped, or one added."""
    lines = text.split("\n")
    targets = [i for i, ln in enumerate(lines) if COMPONENT_LINE.search(ln) and "<{" in ln]
    if not targets:
        return text
    i = draw(mutate._sampled(tuple(targets)))
    line = lines[i]
    a, b = line.index("<{") + 2, line.rindex("}>")
    props = line[a:b]
    spans = _entries(props)
    how = draw(st.sampled_from(["value", "value", "value", "drop", "add"]))
    if how == "add" or not spans:
        key = draw(mutate._sampled(NEW_KEYS))
        props = props + (", " if props.strip() else "") + f"{key} = {_hostile(draw, key)}"
    else:
        s, e = spans[draw(st.integers(0, len(spans) - 1))]
        entry = props[s:e]
        key = entry.split("=")[0].strip()
        if how == "drop":
            props = props[:s] + props[e + 1:] if e < len(props) else props[:max(s - 1, 0)]
        else:
            props = props[:s] + f" {key} = {_hostile(draw, key)}" + props[e:]
    lines[i] = line[:a] + props + line[b:]
    return "\n".join(lines)


_OPERANDS = re.compile(r'("component\.\w+")\(([^()]*)\)(.*): \(([^()]*)\) -> (.*)$')


def operand_mutation(draw, text: str) -> str:
    """A component op with an operand more or fewer, its type list kept in step or not,
    or a result type that is not !pyobj.obj."""
    lines = text.split("\n")
    targets = [i for i, ln in enumerate(lines) if _OPERANDS.search(ln)]
    if not targets:
        return text
    i = draw(mutate._sampled(tuple(targets)))
    m = _OPERANDS.search(lines[i])
    ops = [o for o in m.group(2).split(", ") if o]
    types = [t for t in m.group(4).split(", ") if t]
    how = draw(st.sampled_from(["more", "fewer", "types", "result", "both"]))
    result = m.group(5)
    if how in ("more", "both"):
        name = re.search(r"%q_\w+", text)
        ops.append(name.group(0) if name else "%q")
        types.append(OBJ)
    if how in ("fewer", "both") and ops:
        ops.pop(draw(st.integers(0, len(ops) - 1)))
        types.pop()
    if how == "types":
        types = [draw(mutate._sampled(("i32", "f64", OBJ, "index", "i1"))) for _ in types] or ["i32"]
    if how == "result":
        result = draw(mutate._sampled(("i32", "f64", "()", "(!pyobj.obj, !pyobj.obj)", "i1", "none")))
    lines[i] = (lines[i][:m.start()] + f"{m.group(1)}({', '.join(ops)}){m.group(3)}: ({', '.join(types)}) -> "
                f"{result}")
    return "\n".join(lines)


def structure_mutation(draw, text: str) -> str:
    """An annotation duplicated, dropped, moved into a function or made generic; an op
    renamed; a label changed across the module; a function or the state function dropped."""
    lines = text.split("\n")
    anns = [i for i, ln in enumerate(lines) if "approx.util.annotation" in ln]
    ops = [i for i, ln in enumerate(lines) if '"component.' in ln]
    how = draw(st.sampled_from(["dup", "drop", "move", "rename", "relabel", "drop_func", "op_out"]))
    if how in ("dup", "drop", "move") and anns:
        i = draw(mutate._sampled(tuple(anns)))
        if how == "dup":
            lines.insert(i, lines[i])
        elif how == "drop":
            del lines[i]
        else:
            j = next((k for k in range(len(lines)) if "func.func" in lines[k]), len(lines) - 1)
            lines.insert(j + 1, "    " + lines.pop(i).strip())
    elif how == "rename" and ops:
        i = draw(mutate._sampled(tuple(ops)))
        lines[i] = re.sub(r'"component\.\w+"', f'"{draw(mutate._sampled(OP_NAMES))}"', lines[i], count=1)
    elif how == "relabel":
        labels = sorted(set(re.findall(r'component = ("[^"]*")', text)))
        if labels:
            old = draw(mutate._sampled(tuple(labels)))
            new = draw(mutate._sampled(HOSTILE["label"]))
            return text.replace(f"component = {old}", f"component = {new}")
    elif how == "drop_func":
        names = re.findall(r"func\.func @(\w+)", text)
        if names:
            name = draw(mutate._sampled(tuple(names)))
            return re.sub(rf"  func\.func @{name}\(.*?\n  }}\n", "", text, flags=re.S)
    elif how == "op_out" and ops:
        i = draw(mutate._sampled(tuple(ops)))
        lines.insert(1, "  " + lines[i].strip())  # a component op at module level
    return "\n".join(lines)


COMPONENT_MUTATIONS = ("prop", "prop", "prop", "operands", "structure", "tokens", "lines", "numbers", "unicode",
                       "annotation")


@st.composite
def mutated_component_programs(draw) -> tuple[str, str]:
    """(mutations, text): a valid program after 1-3 stacked mutations."""
    from tests.fuzz.corpus import function_names
    from tests.fuzz.inputs import annotations, insert_in_module

    text = draw(component_programs()).text
    kinds = draw(st.lists(mutate._sampled(COMPONENT_MUTATIONS), min_size=1, max_size=3))
    for k in kinds:
        if k == "prop":
            text = prop_mutation(draw, text)
        elif k == "operands":
            text = operand_mutation(draw, text)
        elif k == "structure":
            text = structure_mutation(draw, text)
        elif k == "tokens":
            text = mutate.token_mutation(draw, text)
        elif k == "lines":
            text = mutate.line_mutation(draw, text)
        elif k == "numbers":
            text = mutate.number_mutation(draw, text)
        elif k == "unicode":
            text = mutate.unicode_mutation(draw, text)
        else:
            text = insert_in_module(text, draw(annotations(function_names(text))))
    return "+".join(kinds), text


@st.composite
def component_config(draw, program: Program) -> tuple[str, bool]:
    """(`--apply-config` JSON, whether it is valid): the program's component knobs at
    values in or out of range, tree settings on them, unknown names, bad JSON."""
    names = [n for n, _ in program.knobs]
    config: dict = {}
    valid = True
    for name, largest in program.knobs:
        if draw(st.booleans()):
            config[name] = {"knob_val": draw(st.integers(0, largest))}
    if draw(st.integers(0, 2)) == 0:
        valid = False
        name = draw(st.sampled_from([*names, *program.decided_funcs, "nosuch.top_k", "answer", "", "é.x"]))
        config[name] = draw(st.one_of(
            st.fixed_dictionaries({"knob_val": st.one_of(mutate.ints(), st.sampled_from([None, "1", 1.5, [1], True]))}),
            st.fixed_dictionaries({"thresholds": st.lists(mutate.ints(), max_size=3),
                                   "decisions": st.lists(mutate.ints(), max_size=4)}),
            st.sampled_from([3, None, [], "x", {}])))
    out = json.dumps(config)
    if draw(st.integers(0, 9)) == 0:
        valid = False
        out = out[:draw(st.integers(0, len(out)))]
    return out, valid


PIPELINES = ("approx-pipeline",) * 6 + ("",) + COMMON_PIPELINES
"""The whole pipeline mostly (valid programs must then give output), the others now and then."""
VALID_FLAGS = ("--print-op-generic", "--print-no-properties", "--no-verify-each", "--list-knobs")


@st.composite
def component_cases(draw):
    """A component program as an approx-opt case: valid (output expected under the
    whole pipeline) or mutated; with a configuration of its knobs now and then."""
    from tests.fuzz.inputs import FLAGS, Case

    flags = tuple(draw(st.lists(mutate._sampled(FLAGS), max_size=2, unique=True))) \
        if draw(st.integers(0, 5)) == 0 else ()
    passes = draw(mutate._sampled(PIPELINES))
    if draw(st.booleans()):
        program = draw(component_programs())
        config, valid = (draw(component_config(program)) if draw(st.integers(0, 2)) == 0 else (None, True))
        sure = valid and passes in ("approx-pipeline", "") and set(flags) <= set(VALID_FLAGS)
        return Case("component:valid" + (":config" if config else ""), program.text.encode(), passes, config, flags,
                    expect="output" if sure else None, located=True)
    kinds, text = draw(mutated_component_programs())
    return Case(f"component:{kinds}", text.encode("utf-8", "surrogatepass"), passes, None, flags, located=True)
