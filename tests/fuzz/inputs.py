"""What the fuzzer feeds approx-opt: a `Case` (input file bytes, pipeline string,
`--apply-config` JSON, flags) and the hypothesis strategies that make them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from hypothesis import strategies as st

from passes import ALL_PASSES, APPROX_PIPELINE_NAME
from tests.fuzz import mutate
from tests.fuzz.corpus import ANNOTATIONS, KNOWN_TRANSFORMS, UNKNOWN_TRANSFORMS, function_names, seeds

FLAGS = ("--print-op-generic", "--print-no-properties", "--split-input-file", "--verify-each", "--no-verify-each",
         "--list-knobs", "--allow-unregistered-dialect")
PASS_NAMES = (APPROX_PIPELINE_NAME, *ALL_PASSES)


@dataclass(frozen=True)
class Case:
    """One approx-opt invocation: `approx-opt FILE --passes=P [--apply-config C] FLAGS`."""

    kind: str
    data: bytes
    passes: str = APPROX_PIPELINE_NAME
    config: str | None = None
    flags: tuple[str, ...] = ()
    python: bool = False  # `data` is a Python module: `approx-opt --from-python MODULE:f`
    expect: str | None = None  # "output": a valid input, an error is a finding
    located: bool = False  # each error line must say where (`FILE:LINE:COL`, or the config / pipeline / command line)

    def describe(self) -> str:
        head = self.data[:2000].decode("utf-8", "replace")
        return (f"kind={self.kind} passes={self.passes!r} flags={self.flags} config={self.config!r}\n"
                f"--- input ({len(self.data)} bytes) ---\n{head}")


# ---------------------------------------------------------------- annotations

ATTRS = {
    "knob": ("func_name",),
    "convert_to_call": ("func_name",),
    "transform": ("func_name", "transform_type", "knob_val"),
    "try": ("func_name", "recover", "checker"),
    "decision_tree": ("func_name", "transform_type", "state_indices", "state_function", "num_thresholds",
                      "thresholds_uppers", "thresholds_lowers", "decision_values", "thresholds", "decisions"),
    "decision_tree_multi": ("func_name", "transform_type", "state_indices", "state_function", "num_features",
                            "tree_features", "tree_thresholds", "tree_left", "tree_right", "tree_decisions",
                            "thresholds_lowers", "thresholds_uppers", "decision_values"),
    "cascade": ("func_name", "confidence", "variants", "thresholds"),
    "param": ("func_name", "arg_index", "name", "values"),
}
FUNC_ATTRS = {"func_name", "recover", "checker", "state_function", "confidence"}


def _array(elt: str, values: list[int]) -> str:
    return f"array<{elt}: {', '.join(map(str, values))}>" if values else f"array<{elt}>"


@st.composite
def well_typed_value(draw, attr: str, funcs: list[str]) -> str:
    """A value of the type the attribute wants, with random (often out-of-range) content."""
    small = st.integers(-3, 12)
    if attr in FUNC_ATTRS:
        name = draw(st.one_of(st.sampled_from(funcs or ["f"]), st.sampled_from(["missing", "", "@", "approx_f_1"]),
                              st.text(max_size=6)))
        name = name.replace("\\", "").replace('"', "")
        return f'"{draw(st.sampled_from(["", "@"]))}{name}"'
    if attr == "transform_type":
        return f'"{draw(st.sampled_from(KNOWN_TRANSFORMS + UNKNOWN_TRANSFORMS))}"'
    if attr == "name":
        return f'"{draw(st.sampled_from(["top_k", "", "é"]))}"'
    if attr in ("knob_val", "num_thresholds", "num_features", "variants"):
        return f"{draw(st.one_of(small, mutate.ints()))} : i32"
    if attr == "arg_index":
        return f"{draw(st.one_of(small, mutate.ints()))} : i64"
    if attr == "state_indices":
        return _array("i64", draw(st.lists(st.one_of(small, mutate.ints()), max_size=4)))
    if attr == "values":
        elt = draw(st.sampled_from(["i64", "f64", "i32"]))
        return _array(elt, draw(st.lists(small, max_size=5)))
    return _array("i32", draw(st.lists(st.one_of(small, mutate.ints()), max_size=7)))


@st.composite
def annotations(draw, funcs: list[str]) -> str:
    """A random `approx.util.annotation.*` op: right or wrong attribute names, types and values."""
    kind = draw(st.sampled_from(ANNOTATIONS + ("bogus",)))
    names = list(ATTRS.get(kind, ("func_name",)))
    if names and draw(st.integers(0, 5)) == 0:
        names.pop(draw(st.integers(0, len(names) - 1)))  # one attribute missing
    if draw(st.integers(0, 5)) == 0:
        names.append(draw(st.sampled_from(["extra", "knob_val", "transform_type", "id", "é"])))
    parts = []
    for attr in names:
        wrong = draw(st.integers(0, 4)) == 0
        value = draw(mutate.attr_values(funcs)) if wrong else draw(well_typed_value(attr, funcs))
        parts.append(f"{attr} = {value}")
    body = ", ".join(parts)
    form = draw(st.sampled_from(["props", "props", "attrs", "operands"]))
    if form == "props":
        return f'"approx.util.annotation.{kind}"() <{{{body}}}> : () -> ()'
    if form == "attrs":
        return f'"approx.util.annotation.{kind}"() {{{body}}} : () -> ()'
    return f'%x = "approx.util.annotation.{kind}"() <{{{body}}}> ({{}}) : () -> i32'


def insert_in_module(text: str, extra: str) -> str:
    i = text.find("module {")
    if i < 0:
        return text + "\n" + extra + "\n"
    i += len("module {")
    return text[:i] + "\n  " + extra + text[i:]


# ---------------------------------------------------------------- mlir inputs

MUTATIONS = ("bytes", "tokens", "lines", "attrs", "numbers", "unicode", "nesting", "annotation", "bare_types",
             "approxmlir")


@st.composite
def mutated_mlir(draw) -> tuple[str, bytes]:
    """A seed program after 1-3 stacked mutations."""
    name, text = draw(st.sampled_from(seeds()))
    funcs = function_names(text)
    kinds = draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3))
    data: str | bytes = text
    for k in kinds:
        if isinstance(data, bytes):
            break  # byte mutations end the chain: the text may no longer be UTF-8
        if k == "bytes":
            data = mutate.byte_mutation(draw, data)
        elif k == "tokens":
            data = mutate.token_mutation(draw, data)
        elif k == "lines":
            data = mutate.line_mutation(draw, data)
        elif k == "attrs":
            data = mutate.attr_mutation(draw, data, funcs)
        elif k == "numbers":
            data = mutate.number_mutation(draw, data)
        elif k == "unicode":
            data = mutate.unicode_mutation(draw, data)
        elif k == "nesting":
            data = mutate.nesting_mutation(draw, data)
        elif k == "bare_types":
            data = mutate.bare_result_types(draw, data)
        elif k == "approxmlir":
            data = mutate.approxmlir_attributes(draw, data)
        else:
            data = insert_in_module(data, draw(annotations(funcs)))
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    return "+".join(kinds), raw


@st.composite
def pipelines(draw) -> str:
    """Random pass names, orders and options, with malformed braces now and then."""
    items = []
    for _ in range(draw(st.integers(0, 7))):
        name = draw(st.one_of(st.sampled_from(PASS_NAMES), st.sampled_from(
            ["", "no-such-pass", "builtin.module", "func.func", "canonicalize", "cse", "dce", "emit_approx",
             "é", " "])))
        if draw(st.integers(0, 3)) == 0:
            opts = draw(st.lists(st.tuples(st.sampled_from(["opt", "x", "knob-val", "", "a b", "{"]),
                                           st.sampled_from(["1", "true", "", "x", "{}", "[1,2]", "'q'", '"q"', "é"])),
                                 max_size=3))
            name += "{" + " ".join(f"{k}={v}" for k, v in opts) + "}"
        items.append(name)
    text = ",".join(items)
    if text and draw(st.integers(0, 3)) == 0:
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from(["{", "}", "(", ")", ",", "{{", "}}", "=", '"', "\\"])) + text[i:]
    if draw(st.integers(0, 9)) == 0:
        text = "builtin.module(" + text + ")"
    return text.replace("\x00", "")


def knob_names(text: str) -> list[str]:
    return re.findall(r'annotation\.(?:transform|decision_tree(?:_multi)?)"\(\) <\{func_name = "@?([\w$.]+)"', text)


@st.composite
def config_json(draw, text: str) -> str:
    """An `--apply-config` file: good and bad knob names, settings, values and JSON."""
    names = knob_names(text) + ["missing", "", "é"]
    value = st.one_of(mutate.ints(), st.sampled_from([None, True, "2", "x", 1.5, float("nan"), [], {}, [2], 1e300]))
    setting = st.one_of(
        st.fixed_dictionaries({"knob_val": value}),
        st.fixed_dictionaries({"thresholds": st.one_of(st.lists(value, max_size=4), value),
                               "decisions": st.one_of(st.lists(value, max_size=5), value)}),
        st.fixed_dictionaries({"tree_thresholds": st.lists(value, max_size=5),
                               "tree_decisions": st.lists(value, max_size=5)}),
        value, st.dictionaries(st.text(max_size=5), value, max_size=2),
    )
    config = draw(st.dictionaries(st.sampled_from(names), setting, max_size=3))
    if draw(st.integers(0, 5)) == 0:
        config = {"knobs": config}
    out = json.dumps(config)
    how = draw(st.integers(0, 9))
    if how == 0:
        out = out[:draw(st.integers(0, len(out)))]  # cut short
    elif how == 1:
        out = draw(st.sampled_from(["[]", "null", "3", '"x"', "", "{", '{"a": NaN}', "\ufeff{}", '{"knobs": 3}']))
    return out


# ---------------------------------------------------------------- whole cases

def _flags() -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(FLAGS), max_size=2, unique=True).map(tuple)


COMMON_PIPELINES = (APPROX_PIPELINE_NAME, APPROX_PIPELINE_NAME, "", "emit-approx,emit-management",
                    "pre-emit-transform,emit-approx,emit-management,config-approx", "transform-approx",
                    "config-approx", "finalize-approx")


@st.composite
def mlir_cases(draw) -> Case:
    kind, data = draw(mutated_mlir())
    passes = draw(st.sampled_from(COMMON_PIPELINES))
    flags = draw(_flags()) if draw(st.integers(0, 4)) == 0 else ()
    return Case(f"mlir:{kind}", data, passes, None, flags)


@st.composite
def pipeline_cases(draw) -> Case:
    _, text = draw(st.sampled_from(seeds()))
    return Case("pipeline", text.encode(), draw(pipelines()), None, draw(_flags()))


@st.composite
def config_cases(draw) -> Case:
    candidates = [s for s in seeds() if knob_names(s[1])]
    _, text = draw(st.sampled_from(candidates))
    return Case("config", text.encode(), APPROX_PIPELINE_NAME, draw(config_json(text)), ())


@st.composite
def python_cases(draw) -> Case:
    from tests.fuzz.pysource import python_modules

    passes = draw(st.sampled_from([APPROX_PIPELINE_NAME, "", "emit-approx"]))
    return Case("python", draw(python_modules()).encode(), passes, None, draw(_flags()), python=True)


SPLIT_MARKER = "// -----"


@st.composite
def split_cases(draw) -> Case:
    """`--split-input-file` on 2-5 chunks (seeds, some mutated) between marker lines,
    and marker look-alikes that must not split: one error line per bad chunk."""
    chunks = []
    for _ in range(draw(st.integers(2, 5))):
        if draw(st.booleans()):
            chunks.append(draw(st.sampled_from(seeds()))[1])
        else:
            data = draw(mutated_mlir())[1]
            chunks.append(data.decode("utf-8", "replace"))
    decoys = ["", "// ----- not a marker", "  // -----  ", "%x = arith.constant 1 : i32 // -----"]
    joined = ""
    for i, chunk in enumerate(chunks):
        if i:
            joined += SPLIT_MARKER + "\n"
            decoy = draw(st.sampled_from(decoys))
            joined += decoy + "\n" if decoy else ""
        joined += chunk if chunk.endswith("\n") else chunk + "\n"
    passes = draw(st.sampled_from(COMMON_PIPELINES))
    return Case("split", joined.encode("utf-8", "surrogatepass"), passes, None, ("--split-input-file",))


@st.composite
def size_cases(draw) -> Case:
    """A seed with upstream-only syntax (bare result types) and other mutations: the
    oracle runs it as it is and padded past the size where the upstream parser takes
    over, and the answers must be the same (one parser behaviour, whatever the size)."""
    name, text = draw(st.sampled_from(seeds()))
    text = mutate.bare_result_types(draw, text)
    for k in draw(st.lists(st.sampled_from(["approxmlir", "numbers", "tokens", "annotation"]), max_size=2)):
        if k == "approxmlir":
            text = mutate.approxmlir_attributes(draw, text)
        elif k == "numbers":
            text = mutate.number_mutation(draw, text)
        elif k == "tokens":
            text = mutate.token_mutation(draw, text)
        else:
            text = insert_in_module(text, draw(annotations(function_names(text))))
    return Case("size", text.encode("utf-8", "surrogatepass"), draw(st.sampled_from(COMMON_PIPELINES)))


@st.composite
def deep_cases(draw) -> Case:
    """A valid program nested hundreds to 1,500 regions deep: output, not an error."""
    text, depth = mutate.deep_program(draw)
    return Case(f"deep:{depth}", text.encode(), draw(st.sampled_from(["", APPROX_PIPELINE_NAME])), expect="output")


def cases() -> st.SearchStrategy[Case]:
    """Every kind of input, mutated MLIR most often (it reaches the most code)."""
    from tests.fuzz.generated_kernels import generated_cases

    return st.one_of(mlir_cases(), mlir_cases(), mlir_cases(), pipeline_cases(), config_cases(), generated_cases(),
                     python_cases(), split_cases(), size_cases(), deep_cases())
