"""Random small kernels (loop nests over memrefs) and the annotations that apply to
them, for the semantic property tests and as generated fuzz inputs.

A kernel `@k(%a: memref<?xf64>, %b: memref<?xf64>, %n: index, %s: i64) -> f64`
is in bounds by construction for any arrays of length >= n: the outer loop runs
over [lb, min(ub, n)) with a random step and bound type (index, i32, i64), an
optional inner loop over [0, i+1), an optional store to b[i], an optional
`scf.if` chain whose branches store to b[i] (for task_skipping), and a sum over
the iterations (for the rescaling perforations). Any transformation that makes
it read or write out of bounds is a bug of the transformation."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

LOOP_TRANSFORMS = ("loop_perforate", "loop_truncate", "loop_perforate_modulo", "loop_perforate_rescale",
                   "loop_perforate_modulo_rescale")
TRANSFORMS = (*LOOP_TRANSFORMS, "task_skipping", "func_substitute", "precision_reduce", "param")
ARGS = "%a: memref<?xf64>, %b: memref<?xf64>, %n: index, %s: i64"
BIG_KNOBS = (2, 3, 4, 5, 7, 16, 17, 18, 33, 100, 1000, 2**15, 2**16 + 1, 2**30, 2**31 - 1)


@dataclass(frozen=True)
class Shape:
    iv: str  # bound type of the outer loop: index | i32 | i64
    lb: int
    ub: int | None  # None: n; else min(ub, n)
    step: int
    inner_step: int | None  # None: no inner loop
    store: bool
    branches: int  # 0: no scf.if chain; else its number of branches (2..3)
    scale: bool  # multiply by sitofp(%s) (the param knob's target)


def _body(name: str, sh: Shape) -> str:
    t = sh.iv
    L = []
    e = L.append
    e(f"  func.func @{name}({ARGS}) -> f64 {{")
    e("    %c0 = arith.constant 0 : index")
    e("    %c1 = arith.constant 1 : index")
    e("    %z = arith.constant 0.0 : f64")
    e(f"    %lb = arith.constant {sh.lb} : {t}")
    e(f"    %st = arith.constant {sh.step} : {t}")
    n = "%n"
    if t != "index":
        e(f"    %nt = arith.index_cast %n : index to {t}")
        n = "%nt"
    if sh.ub is None:
        ub = n
    else:
        e(f"    %u = arith.constant {sh.ub} : {t}")
        e(f"    %ub = arith.minsi %u, {n} : {t}")
        ub = "%ub"
    suffix = "" if t == "index" else f" : {t}"
    e(f"    %r = scf.for %i = %lb to {ub} step %st iter_args(%acc = %z) -> (f64){suffix} {{")
    ii = "%i"
    if t != "index":
        e(f"      %ii = arith.index_cast %i : {t} to index")
        ii = "%ii"
    e(f"      %v = memref.load %a[{ii}] : memref<?xf64>")
    x = "%v"
    if sh.scale:
        e("      %sf = arith.sitofp %s : i64 to f64")
        e("      %vs = arith.mulf %v, %sf : f64")
        x = "%vs"
    if sh.inner_step is not None:
        e(f"      %js = arith.constant {sh.inner_step} : index")
        e(f"      %jub = arith.addi {ii}, %c1 : index")
        e("      %r2 = scf.for %j = %c0 to %jub step %js iter_args(%acc2 = %z) -> (f64) {")
        e("        %w = memref.load %a[%j] : memref<?xf64>")
        e(f"        %t2 = arith.mulf %w, {x} : f64")
        e("        %q = arith.addf %acc2, %t2 : f64")
        e("        scf.yield %q : f64")
        e("      }")
        e(f"      %x2 = arith.addf {x}, %r2 : f64")
        x = "%x2"
    if sh.store:
        e(f"      memref.store {x}, %b[{ii}] : memref<?xf64>")
    if sh.branches:
        e("      %c3 = arith.constant 3 : index")
        e(f"      %m3 = arith.remui {ii}, %c3 : index")
        for k in range(sh.branches - 1):
            e(f"      %k{k} = arith.constant {k} : index")
            e(f"      %is{k} = arith.cmpi eq, %m3, %k{k} : index")
            e(f"      %f{k} = arith.constant {k + 10}.5 : f64")
            e(f"      scf.if %is{k} {{")
            e(f"        memref.store %f{k}, %b[{ii}] : memref<?xf64>")
            e("      } else {")
        e("        %fl = arith.constant -1.25 : f64")
        e(f"        memref.store %fl, %b[{ii}] : memref<?xf64>")
        for _ in range(sh.branches - 1):
            e("      }")
    e(f"      %s2 = arith.addf %acc, {x} : f64")
    e("      scf.yield %s2 : f64")
    e("    }")
    e("    return %r : f64")
    e("  }")
    return "\n".join(L)


STATE = """  func.func @state(%n: index) -> i32 {
    %c = arith.index_cast %n : index to i32
    return %c : i32
  }"""


@dataclass(frozen=True)
class Kernel:
    shape: Shape
    variants: tuple[Shape, ...]  # approx_k_1.. for func_substitute

    def text(self, *annotations: str) -> str:
        funcs = [_body("k", self.shape), STATE] + [_body(f"approx_k_{i + 1}", v) for i, v in enumerate(self.variants)]
        return "module {\n" + "\n".join(funcs + [f"  {a}" for a in annotations]) + "\n}\n"

    def knob_values(self, transform: str) -> list[int]:
        """Every knob value the transformation accepts on this kernel (0 first)."""
        if transform in LOOP_TRANSFORMS:
            return [0, 1, *BIG_KNOBS]
        if transform == "task_skipping":
            return list(range(self.shape.branches + 2)) if self.shape.branches else []
        if transform == "func_substitute":
            return list(range(len(self.variants) + 1))
        if transform == "precision_reduce":
            return [0, 1, 2]
        return [0, 1, 2, 3]  # param: PARAM_VALUES

    def applicable(self) -> list[str]:
        return [t for t in TRANSFORMS if self.knob_values(t)]


PARAM_VALUES = "array<i64: 0, 3, -2>"


def annotations_for(transform: str, setting: int | tuple[list[int], list[int], list[int]]) -> list[str]:
    """Annotations applying `transform` to @k: a static knob value, or a ladder
    (thresholds, decisions, decision_values) on the state n."""
    extra = []
    if transform == "func_substitute":
        extra.append('"approx.util.annotation.convert_to_call"() <{func_name = "k"}> : () -> ()')
    if transform == "param":
        extra.append('"approx.util.annotation.param"() <{func_name = "k", arg_index = 3 : i64, name = "scale", '
                     f"values = {PARAM_VALUES}}}> : () -> ()")
    if isinstance(setting, int):
        return extra + [f'"approx.util.annotation.transform"() <{{func_name = "k", transform_type = "{transform}", '
                        f"knob_val = {setting} : i32}}> : () -> ()"]
    thresholds, decisions, values = setting
    arr = lambda xs, t="i32": f"array<{t}: {', '.join(map(str, xs))}>" if xs else f"array<{t}>"  # noqa: E731
    return extra + [
        f'"approx.util.annotation.decision_tree"() <{{func_name = "k", transform_type = "{transform}", '
        f'state_indices = array<i64: 2>, state_function = "state", num_thresholds = {len(thresholds)} : i32, '
        f"thresholds_uppers = array<i32: 1000>, thresholds_lowers = array<i32: 0>, "
        f"decision_values = {arr(values)}, thresholds = {arr(thresholds)}, decisions = {arr(decisions)}}}> : () -> ()"
    ]


def shapes() -> st.SearchStrategy[Shape]:
    return st.builds(
        Shape,
        iv=st.sampled_from(["index", "index", "i32", "i64"]),
        lb=st.integers(0, 4),
        ub=st.one_of(st.none(), st.integers(0, 40)),
        step=st.integers(1, 4),
        inner_step=st.one_of(st.none(), st.integers(1, 3)),
        store=st.booleans(),
        branches=st.sampled_from([0, 0, 2, 3]),
        scale=st.booleans(),
    )


def kernels() -> st.SearchStrategy[Kernel]:
    return st.builds(Kernel, shapes(), st.lists(shapes(), max_size=2).map(tuple))


@st.composite
def settings(draw, kernel: Kernel, transform: str):
    """A static knob value or a decision ladder for `transform` on `kernel`."""
    values = kernel.knob_values(transform)
    if draw(st.booleans()):
        return draw(st.sampled_from(values))
    thresholds = sorted(draw(st.lists(st.integers(0, 1000), min_size=0, max_size=3)))
    decision_values = sorted(set(draw(st.lists(st.sampled_from(values), min_size=1, max_size=4))) | {0})
    decisions = draw(st.lists(st.sampled_from(decision_values), min_size=len(thresholds) + 1,
                              max_size=len(thresholds) + 1))
    return thresholds, decisions, decision_values


@st.composite
def exact_settings(draw, kernel: Kernel, transform: str):
    """Knob 0: static, or a ladder whose every decision is 0 (other values allowed)."""
    if draw(st.booleans()):
        return 0
    thresholds = sorted(draw(st.lists(st.integers(0, 1000), max_size=3)))
    values = sorted({0, *draw(st.lists(st.sampled_from(kernel.knob_values(transform)), max_size=3))})
    return thresholds, [0] * (len(thresholds) + 1), values


@st.composite
def exact_cases(draw) -> tuple[Kernel, str, object]:
    """(kernel, transform, knob-0 setting)."""
    kernel = draw(kernels())
    transform = draw(st.sampled_from(kernel.applicable()))
    return kernel, transform, draw(exact_settings(kernel, transform))


@st.composite
def annotated_kernels(draw) -> tuple[Kernel, str, object, str]:
    """(kernel, transform, setting, annotated module text)."""
    kernel = draw(kernels())
    transform = draw(st.sampled_from(kernel.applicable()))
    setting = draw(settings(kernel, transform))
    return kernel, transform, setting, kernel.text(*annotations_for(transform, setting))


@st.composite
def generated_cases(draw):
    """A generated, well-formed annotated kernel as a fuzz case (reaches every pass)."""
    from tests.fuzz.inputs import Case

    _, transform, _, text = draw(annotated_kernels())
    return Case(f"generated:{transform}", text.encode(), "approx-pipeline")
