"""Generated decorated Python programs that call components, for the decorator's
lowering (`approx-opt --from-python MODULE:f`): a module declaring stand-in
providers (a name and the settings they support: lowering needs no model),
components of every kind (`Generate`, `Prompt`, `Embed`, `Retrieve`, `ToolCall`,
`RunTool`) with their knobs (`Tune.param`, `substitute`, `precision`, `memoize`,
`skip` with its fallbacks, `cascade`, decided ones), helper functions, decorated
callees, and `f`: loops (`for` over a range or a list, `while`),
branches, early returns, comprehensions and calls mixing component calls with
plain Python. Nothing is run.

A valid module uses only what the lowering supports and declarations the
providers accept, so approx-opt must give output (`Case.expect`); otherwise one
or more choices are wrong on purpose (an unsupported setting, a bad template or
fallback, a wrong number of arguments, keyword arguments to a component, two
components sharing a label with different knobs, a return inside a loop,
unsupported syntax, a decorator setting that does not fit) and approx-opt must
reject it in one located line."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from tests.fuzz import mutate

HEADER = '''import math

from frontends import Cascade, DecisionTree, Knob, Memoize, Param, SafetyContract, StaticTransform
from frontends.components.declare import Embed, Generate, Prompt, Retrieve, RunTool, ToolCall, Tune


class Provider:
    """A stand-in provider: the lowering reads its name and the settings it supports."""

    def __init__(self, name, supports=()):
        self.name = name
        self.supports = frozenset(supports)


pro = Provider("pro", {"max_new_tokens", "precision", "layers", "template", "token_exit"})
fast = Provider("fast", {"max_new_tokens", "template"})
small = Provider("small", {"max_new_tokens", "precision"})
minilm = Provider("minilm", {"precision"})
e5 = Provider("e5")
bm25 = Provider("bm25", {"preprocess", "terms", "docs"})
dense = Provider("dense", {"dims", "docs", "precision"})
bfcl = Provider("bfcl")
local = Provider("local")
keyword = Provider("keyword")
nameless = Provider("")


def words(text: str) -> int:
    """Count the words."""
    return len(text.split())


def spaces(text: str) -> int:
    """Count the spaces."""
    return text.count(" ")


def pair(a: str, b: str) -> str:
    """Join two texts."""
    return a + b


def untyped(a):
    """No annotation: no schema."""
    return a


def state(x) -> int:
    return len(str(x))


def confidence(r, *args) -> int:
    return 1


def helper(x):
    return x

'''

PROVIDERS = {  # kind -> (valid providers, the settings each supports)
    "generate": ("pro", "fast", "small"), "prompt": ("pro", "fast"), "embed": ("minilm", "e5"),
    "retrieve": ("bm25", "dense"), "tool_call": ("bfcl", "local"), "tool_run": ("words", "spaces", "pair"),
}
SUPPORTS = {"pro": {"max_new_tokens", "precision", "layers", "template", "token_exit"},
            "fast": {"max_new_tokens", "template"}, "small": {"max_new_tokens", "precision"},
            "minilm": {"precision"}, "e5": set(), "bm25": {"preprocess", "terms", "docs"},
            "dense": {"dims", "docs", "precision"}}
ARITY = {"words": 1, "spaces": 1, "pair": 2}
CUTS = ("passages", "sentences", "context_chars", "context_tokens", "compress_tokens")
PROVIDER_PARAMS = {"generate": ("max_new_tokens", "layers", "token_exit"), "prompt": ("max_new_tokens", "layers"),
                   "embed": (), "retrieve": ("preprocess", "terms", "docs", "dims")}
RUNTIME_PARAMS = {"generate": CUTS, "prompt": (), "embed": ("dims",), "retrieve": ("top_k",)}
TEMPLATES = ("Rewrite as a query: {question}", "{contexts}\nQ: {question}", "Topic of {question}?",
             "{question} / {draft}")
BAD_TEMPLATES = ("no fields", "{0}", "{question!r}", "{question:>3}", "{", "{a.b}", "")


@dataclass
class Comp:
    var: str
    kind: str
    arity: int
    outputs: tuple[str, ...] = ()
    decided: bool = False  # it declares a knob decided by the tree of the function that first calls it


@dataclass
class Source:
    """The module being written; `valid` turns False with the first wrong choice."""

    draw: object
    mistakes: bool = False  # whether wrong choices are made at all (about half the modules are valid)
    valid: bool = True
    comps: list[Comp] = field(default_factory=list)
    decls: list[str] = field(default_factory=list)
    lowered: set[str] = field(default_factory=set)  # components whose first call is lowered already
    direct_decided: bool = False  # a component with a decided knob is first called in f itself (f's tree decides it)
    sub_calls: str | None = None  # the component the decorated callee `sub` calls
    n: int = 0

    def pick(self, values):
        values = tuple(values)
        return values[self.draw(st.integers(0, len(values) - 1))]

    def chance(self, k: int) -> bool:
        """True one time in k."""
        return self.draw(st.integers(0, k - 1)) == 0

    def wrong(self, k: int) -> bool:
        """Make a wrong choice one time in k in a module with mistakes (it is then no longer valid)."""
        if self.mistakes and self.chance(k):
            self.valid = False
            return True
        return False

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"


def _tunes(s: Source, kind: str, provider: str, fields: tuple[str, ...], arity: int) -> tuple[list[str], bool]:
    """The knobs a component declares (valid ones for its provider, now and then a wrong
    one), and whether one of them is decided per input."""
    out = []
    supported = SUPPORTS.get(provider, set())
    for _ in range(s.draw(st.integers(0, 3))):
        what = s.pick(("param", "substitute", "precision", "memoize", "skip", "cascade", "decided"))
        if what in ("param", "decided"):
            params = [p for p in PROVIDER_PARAMS.get(kind, ()) if p in supported] + list(RUNTIME_PARAMS.get(kind, ()))
            if kind == "prompt" and "contexts" in fields:
                params += CUTS
            if s.wrong(25):
                params = ["bogus", "top_k", "layers", "precision", "model"]
            if not params:
                continue
            p = s.pick(params)
            values = [s.pick((1, 2, 3, 8, 50)) for _ in range(s.draw(st.integers(1, 3)))]
            if p == "preprocess" and s.chance(3):
                values = [0, 1]
            decided = what == "decided"
            out.append((p, f"Tune.param({p!r}, {', '.join(map(str, values))}{', decided=True' if decided else ''})"))
        elif what == "substitute":
            if kind in ("generate", "prompt", "embed", "retrieve"):
                param = {"generate": "model", "prompt": "model", "embed": "encoder", "retrieve": "retriever"}[kind]
                other = s.pick([p for p in PROVIDERS[kind] if p != provider] or [provider])
            elif kind == "tool_call":
                param = s.pick(("tools", "router"))
                other = "local" if param == "tools" else "keyword"
            else:
                param = "tool"
                same = [t for t in ARITY if ARITY[t] == arity and t != provider]
                if not same and not s.wrong(1):
                    continue  # a substitute takes the tool's parameters
                other = s.pick(same or [t for t in ARITY if t != provider])
            if s.wrong(30):
                other = s.pick(("nameless", "untyped", "3"))
            out.append((param, f"Tune.substitute({param!r}, {other})"))
        elif what == "precision":
            if kind not in ("generate", "prompt", "embed", "retrieve") or "precision" not in supported:
                if not s.wrong(10):
                    continue
            name = s.pick(("bfloat16", "float16", "float32")) if not s.wrong(30) else s.pick(("float64", "int4", ""))
            out.append(("precision", f"Tune.precision({name!r})"))
        elif what == "memoize":
            out.append(("cache", f"Tune.memoize({s.pick((1, 8, 64))})"))
        elif what == "skip":
            forms = ["None", "''", "0", "(1, 'a')"] + ([f"Tune.input({s.draw(st.integers(0, arity - 1))})"]
                                                        if arity else [])
            if kind == "prompt" and fields:
                forms.append(f"Tune.input({s.pick(fields)!r})")
            fallback = s.pick(forms)
            if s.wrong(20):
                fallback = s.pick(("Tune.input('nosuch')", f"Tune.input({arity + 2})", "object()", "[1, {}]"))
            out.append(("skip", f"Tune.skip(fallback={fallback})" if not s.wrong(40) else "Tune.skip()"))
        elif kind in ("generate", "prompt"):  # cascade
            cheaper = s.pick([p for p in PROVIDERS[kind] if p != provider] or ["fast"])
            ts = [s.pick((0.1, 0.5, 0.9)) for _ in range(s.draw(st.integers(1, 2)))]
            if s.wrong(30):
                ts = []
            out.append(("model", f"Tune.cascade([{cheaper}], {ts})"))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        if not s.wrong(4):  # else the same parameter tuned twice: refused
            seen: set[str] = set()
            out = [(n, t) for n, t in out if not (n in seen or seen.add(n))]
    return [t for _, t in out], any("decided=True" in t for _, t in out)


def declare(s: Source, kind: str, label: str) -> Comp:
    """One component declaration (a module-level statement)."""
    var = s.fresh(kind)
    provider = s.pick(PROVIDERS[kind])
    if s.wrong(60):
        provider = s.pick(("nameless", "untyped", "None", "3"))
    fields: tuple[str, ...] = ()
    arity = {"generate": 2, "embed": 1, "retrieve": 1, "tool_call": 1}.get(kind, ARITY.get(provider, 1))
    tune, decided = _tunes(s, kind, provider, fields, arity) if kind != "prompt" else ([], False)
    extra = []
    outputs: tuple[str, ...] = ()
    if kind == "generate":
        for p in ("max_new_tokens", "passages", "layers", "token_exit"):
            if s.chance(5):
                ok = p == "passages" or p in SUPPORTS.get(provider, set())
                if ok or s.wrong(3):
                    value = s.pick((1, 4, 16)) if p != "token_exit" else (101 if s.wrong(3) else s.pick((50, 90)))
                    extra.append(f"{p}={value}")
    elif kind == "prompt":
        template = s.pick(TEMPLATES)
        if s.wrong(25):
            template = s.pick(BAD_TEMPLATES)
        fields = tuple(dict.fromkeys(f for f in ("question", "contexts", "draft") if "{" + f + "}" in template))
        arity = len(fields)
        outputs = tuple(s.draw(st.lists(mutate._sampled(("text", "query", "name")), min_size=1, max_size=2,
                                        unique=True)))
        if s.wrong(40):
            outputs = s.pick(((), ("1x",), ("a", "a")))
        extra.append(f"template={template!r}, outputs={list(outputs)!r}")
        if "contexts" in fields and s.chance(4):
            extra.append("passages=2")
        elif s.wrong(40):
            extra.append("sentences=2")
        tune, decided = _tunes(s, kind, provider, fields, arity)
    elif kind == "embed" and s.chance(4):
        extra.append("dims=8")
    elif kind == "retrieve":
        extra.append(f"top_k={s.pick((1, 3, 5))}" if not s.wrong(40) else "top_k=0")
    args = [repr(label), provider]
    if kind == "tool_call":
        args.append("keyword")
    elif kind == "tool_run" and s.wrong(40):
        args[1] = "untyped"
    cls = {"generate": "Generate", "prompt": "Prompt", "embed": "Embed", "retrieve": "Retrieve",
           "tool_call": "ToolCall", "tool_run": "RunTool"}[kind]
    kw = extra + ([f"tune=[{', '.join(tune)}]"] if tune else [])
    s.decls.append(f"{var} = {cls}({', '.join(args + kw)})")
    comp = Comp(var, kind, arity, outputs, decided)
    s.comps.append(comp)
    return comp


# ---------------------------------------------------------------- f's body

def lowered(s: Source, var: str, direct: bool) -> None:
    """Note a call of component `var` (lowered in f's order: the first call of a
    component declares its knobs on the function it is in)."""
    if var not in s.lowered:
        s.lowered.add(var)
        comp = next(c for c in s.comps if c.var == var)
        s.direct_decided = s.direct_decided or (direct and comp.decided)


@dataclass
class Scope:
    names: list[str]  # obj values defined on every path to here
    loop: bool = False  # inside a loop (break / continue allowed; return is not)
    depth: int = 0


def call_expr(s: Source, scope: Scope) -> str:
    """A component call (or a plain call) on values in scope."""
    if s.comps and not s.chance(6):
        c = s.pick(s.comps) if not s.chance(3) else s.comps[-1]
        n = c.arity
        if s.wrong(40):
            n += s.pick((-1, 1))
        args = [s.pick(scope.names) for _ in range(max(n, 0))]
        if c.kind == "generate" and n == 2 and s.chance(3):
            args[1] = s.pick((f"[{args[1]}]", "[d for d in docs]" if "docs" in scope.names else f"[{args[1]}]"))
        if s.wrong(60):
            args.append("k=1")
        call = f"{c.var}({', '.join(args)})"
        lowered(s, c.var, direct=True)
        if c.kind in ("generate", "prompt") and s.chance(2):
            call += "." + (s.pick(c.outputs) if c.outputs else "text")
        elif c.kind == "retrieve" and s.chance(3):
            call += ".ids"
        return call
    plain = s.pick(("helper", "str", "len", "sub", "sub", "docs", "add", "fstring"))
    x, y = s.pick(scope.names), s.pick(scope.names)
    if plain == "sub":  # a decorated callee: lowered into the module, with its component call
        if s.sub_calls:
            lowered(s, s.sub_calls, direct=False)
        return f"sub({x})"
    if plain == "docs":
        return "[d for d in docs]" if "docs" in scope.names else f"[{x}]"
    if plain == "add":
        return f"{x} + {y}"
    if plain == "fstring":
        return f"f'{{{x}}}'"
    return f"{plain}({x})"


def block(s: Source, scope: Scope, indent: str) -> list[str]:
    """1-4 statements."""
    lines: list[str] = []
    for _ in range(s.draw(st.integers(1, 4))):
        what = s.pick(("assign", "assign", "assign", "append", "for", "for_list", "while", "if", "return",
                       "flow", "comprehension", "unsupported"))
        if what in ("for", "for_list", "while", "if") and scope.depth >= 3:
            what = "assign"
        if what == "assign":
            target = s.pick(scope.names) if scope.names and s.chance(3) and scope.depth else s.fresh("v")
            lines.append(f"{indent}{target} = {call_expr(s, scope)}")
            if target not in scope.names and not scope.depth:
                scope.names.append(target)
        elif what == "append":
            lines.append(f"{indent}out.append({call_expr(s, scope)})")
        elif what == "comprehension":
            c = next((c for c in s.comps if c.kind == "generate"), None)
            seq = "docs" if "docs" in scope.names else "range(3)"
            value = f"{c.var}(question, [d]).text" if c and "question" in scope.names else "helper(d)"
            if "question" in value:
                lowered(s, c.var, direct=True)
            target = s.fresh("v")
            lines.append(f"{indent}{target} = [{value} for d in {seq}]")
            if not scope.depth:
                scope.names.append(target)
        elif what in ("for", "for_list", "while"):
            inner = Scope(list(scope.names), True, scope.depth + 1)
            if what == "for":
                bound = "n" if "n" in scope.names and s.chance(2) else str(s.pick((0, 1, 3)))
                head = f"for i{scope.depth} in range({bound}):"
                inner.names.append(f"i{scope.depth}")
            elif what == "for_list":
                seq = "docs" if "docs" in scope.names else f"[{s.pick(scope.names)}]"
                head = f"for d{scope.depth} in {seq}:"
                inner.names.append(f"d{scope.depth}")
            else:
                lines.append(f"{indent}k{scope.depth} = 0")
                head = f"while k{scope.depth} < {s.pick((0, 2, 3))}:"
            lines.append(indent + head)
            if what == "while":
                lines.append(f"{indent}    k{scope.depth} = k{scope.depth} + 1")
            lines += block(s, inner, indent + "    ")
        elif what == "if":
            cond = s.pick((f"len(str({s.pick(scope.names)})) > 3", "n > 1" if "n" in scope.names else "True",
                           f"{s.pick(scope.names)}", f"{s.pick(scope.names)} is None"))
            lines.append(f"{indent}if {cond}:")
            lines += block(s, Scope(list(scope.names), scope.loop, scope.depth + 1), indent + "    ")
            if s.chance(2):
                lines.append(f"{indent}else:")
                lines += block(s, Scope(list(scope.names), scope.loop, scope.depth + 1), indent + "    ")
        elif what == "return":
            if scope.loop and not s.wrong(4):
                continue  # a return inside a loop is refused by the lowering
            if scope.depth:
                lines.append(f"{indent}return {s.pick(scope.names)}")
                break  # statements after it are dead: the lowering drops them, and the calls in them
        elif what == "flow":
            if scope.loop and s.wrong(2):  # the lowering runs loops to their end
                lines.append(f"{indent}{s.pick(('break', 'continue'))}")
        elif s.wrong(1):  # unsupported syntax
            lines.append(indent + s.pick(("t = lambda q: q", "try:\n{i}    t = 1\n{i}except Exception:\n{i}    t = 2",
                                          "with open('x') as fh:\n{i}    t = 1", "t = [*out]",
                                          "global G", "async def g():\n{i}    pass", "t = yield",
                                          "del out")).replace("{i}", indent))
    return lines or [f"{indent}pass"]


DECORATORS = ("Knob()", "Knob()", "Knob()", "Knob", "Knob(lowering='python')", "dt", "safety", "cascade", "memo",
              "param", "substitute", "static")


def decorator(s: Source, params: list[str], variant: str | None) -> str:
    what = s.pick(DECORATORS)
    if s.direct_decided and not s.chance(4):
        what = "dt"
    index = params.index("question") if "question" in params else 0
    if what == "dt" and ((params and s.direct_decided) or s.wrong(1)):
        ttype = "param" if s.direct_decided else s.pick(("param", "precision_reduce", "memoize"))
        thresholds = sorted(set(s.draw(st.lists(st.integers(1, 20), min_size=1, max_size=2))))
        decisions = [s.draw(st.integers(0, 1)) for _ in range(len(thresholds) + 1)]
        if s.wrong(20):
            decisions.append(1)
        return f"Knob(decision_tree=DecisionTree(state, [{index}], {thresholds}, {decisions}, {ttype!r}))"
    if what == "substitute" and variant and params:
        return (f"Knob(decision_tree=DecisionTree(state, [{index}], [3], [0, 1], 'func_substitute', "
                f"approx_kernels={{1: {variant}}}))")
    if what == "safety":
        return "Knob(safety_contract=SafetyContract(check, recover))"
    if what == "cascade" and variant:
        return f"Knob(cascade=Cascade([{variant}], confidence, [1]))"
    if what == "param" and "n" in params:
        return "Knob(param=Param('n', [1, 2]))"
    if what == "memo" and s.wrong(1):  # memoize needs scalar arguments and results: orchestration code has none
        return "Knob(memoize=Memoize(2))"
    if what == "static" and s.wrong(1):
        return s.pick(("Knob(static_transform=StaticTransform('loop_perforate', 2))",
                       "Knob(static_transform=StaticTransform('task_skipping', 1))",
                       "Knob(static_transform=StaticTransform('no_such', 1))"))
    return "Knob()"


@dataclass(frozen=True)
class PyProgram:
    text: str
    valid: bool


@st.composite
def component_sources(draw, mistakes: bool | None = None) -> PyProgram:
    """A module whose decorated `f` calls components in loops and branches (with wrong
    choices in about half of them, or as `mistakes` says)."""
    s = Source(draw, mistakes=draw(st.booleans()) if mistakes is None else mistakes)
    labels = {"generate": ("answer", "reader"), "prompt": ("rewrite",), "embed": ("query",),
              "retrieve": ("bm25", "dense"), "tool_call": ("tools",), "tool_run": ("count", "join")}
    for _ in range(draw(st.integers(1, 4))):
        kind = s.pick(labels)
        label = s.pick(labels[kind])
        if s.wrong(25):
            label = s.pick(("", "a b", "é", "answer"))
        declare(s, kind, label)
    used_labels = [d.split("(")[1].split(",")[0] for d in s.decls]
    if len(set(used_labels)) != len(used_labels):
        s.valid = False  # components sharing a label must declare the same knobs: not sure
    gen = next((c for c in s.comps if c.kind == "generate"), None)
    s.sub_calls = gen.var if gen else None
    params = draw(st.sampled_from([["question"], ["question", "docs"], ["question", "docs", "n"], ["question", "n"],
                                   []]))
    scope = Scope([p for p in params if p != "n"] + (["n"] if "n" in params else []))
    if not scope.names:
        scope.names.append("question")
        pre = ["    question = 'q'"]
    else:
        pre = []
    body = pre + ["    out = []"] + block(s, scope, "    ")
    body.append(f"    return {s.pick(['out', *scope.names])}")
    variant = None
    extra_defs = []
    sig = ", ".join(params)
    extra_defs.append(f"def check(r{', ' if params else ''}{sig}) -> bool:\n    return r is not None\n")
    extra_defs.append(f"def recover({sig}):\n    return None\n")
    extra_defs.append("def check_sub(r, question) -> bool:\n    return True\n")
    extra_defs.append("def recover_sub(question):\n    return question\n")
    sub_deco = s.pick(("Knob()", "Knob()", "Knob(safety_contract=SafetyContract(check_sub, recover_sub))"))
    sub_body = f"{gen.var}(question, [question]).text" if gen else "helper(question)"
    extra_defs.append(f"@{sub_deco}\ndef sub(question):\n    return {sub_body}\n")
    if s.chance(2):
        variant = "cheap"
        extra_defs.append(f"def cheap({sig}):\n    return {'question' if 'question' in params else 'None'}\n")
    deco = decorator(s, params, variant)
    sig = ", ".join(("n: int" if p == "n" else p) for p in params)
    text = (HEADER + "\n".join(s.decls) + "\n\n\n" + "\n\n".join(extra_defs) + "\n\n"
            f"@{deco}\ndef f({sig}):\n" + "\n".join(body) + "\n")
    return PyProgram(text, s.valid)


@st.composite
def component_source_cases(draw):
    """A generated module as an approx-opt case (`--from-python MODULE:f`)."""
    from tests.fuzz.components import PIPELINES, VALID_FLAGS
    from tests.fuzz.inputs import FLAGS, Case

    program = draw(component_sources())
    passes = draw(mutate._sampled(PIPELINES))
    flags = tuple(draw(st.lists(mutate._sampled(FLAGS), max_size=2, unique=True))) \
        if draw(st.integers(0, 5)) == 0 else ()
    sure = program.valid and passes in ("approx-pipeline", "") and set(flags) <= set(VALID_FLAGS)
    return Case("source:" + ("valid" if program.valid else "wrong"), program.text.encode(), passes, None, flags,
                python=True, expect="output" if sure else None, located=True)
