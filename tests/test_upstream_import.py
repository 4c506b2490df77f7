"""The fast parsing path (upstream MLIR's parser, xDSL IR built from its result)
gives exactly what xDSL's parser gives: structurally equivalent modules, the same
printed text (generic and custom), locations and SSA names; where it cannot
guarantee that, it declines and `approx_opt.parsing.parse_module` uses xDSL's parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from approx_dialect.context import (
    LocatingParser,
    make_context,
    move_inherent_attributes_to_properties,
    print_module,
)
from approx_dialect.diagnostics import ApproxError
from approx_opt import parsing, upstream_import
from approx_opt.parsing import parse_module
from bench.gen_module import generate
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module, static_transform
from tests.test_dialect import ROUND_TRIP_PROGRAMS

pytest.importorskip("torch_mlir.ir")

ROOT = Path(__file__).resolve().parents[1]
SPLIT_MARKER = "// -----"


def corpus_inputs() -> list[tuple[str, str, int]]:
    """(id, text, line offset) of every .mlir input the tests use, split as
    approx-opt --split-input-file splits them, and a generated bench module."""
    out = []
    paths = sorted((ROOT / "tests" / "filecheck").glob("*.mlir"))
    paths += sorted((ROOT / "examples" / "mlir").glob("*.mlir"))
    for path in paths:
        text = path.read_text(encoding="utf-8")
        offset = 0
        for i, chunk in enumerate(text.split(SPLIT_MARKER)):
            out.append((f"{path.relative_to(ROOT)}#{i}", chunk, offset))
            offset += chunk.count("\n")
    out.append(("bench.gen_module.generate(20)", generate(20), 0))
    return out


# Custom forms of every op in upstream_convert.CUSTOM_FORM_OPS, and generic forms, written the
# ways the checks could get wrong: property order, defaults, one discardable
# attribute, multiple results, implicit terminators, names, odd spacing.
SNIPPETS = {
    "arith": """
func.func @a(%x: i32, %y: i32, %f: f32, %g: f64, %b: i1, %i: index) -> i32 {
  %0 = arith.addi %x, %y : i32
  %1 = arith.subi %x, %y overflow<nsw> : i32
  %2 = arith.muli %x, %y : i32
  %3 = arith.divsi %x, %y : i32
  %4 = arith.divui %x, %y : i32
  %5 = arith.remsi %x, %y : i32
  %6 = arith.remui %x, %y : i32
  %7 = arith.andi %x, %y : i32
  %8 = arith.ori %x, %y : i32
  %9 = arith.xori %x, %y : i32
  %c = arith.cmpi slt, %x, %y : i32
  %cf = arith.cmpf ogt, %f, %f fastmath<fast> : f32
  %cg = arith.cmpf olt, %g, %g : f64
  %s = arith.select %b, %x, %y : i32
  %af = arith.addf %f, %f fastmath<nnan,ninf> : f32
  %sf = arith.subf %f, %f : f32
  %mf = arith.mulf %f, %f : f32
  %df = arith.divf %f, %f : f32
  %nf = arith.negf %f : f32
  %mx = arith.maximumf %f, %f : f32
  %mn = arith.minimumf %f, %f : f32
  %ic = arith.index_cast %i : index to i32
  %si = arith.sitofp %x : i32 to f32
  %ui = arith.uitofp %x : i32 to f32
  %fs = arith.fptosi %f : f32 to i32
  %fu = arith.fptoui %f : f32 to i32
  %ef = arith.extf %f : f32 to f64
  %tf = arith.truncf %g : f64 to f32
  %es = arith.extsi %x : i32 to i64
  %eu = arith.extui %x : i32 to i64
  %k0 = arith.constant 0 : index
  %k1 = arith.constant -1 : i32
  %k2 = arith.constant 255 : i8
  %k3 = arith.constant true
  %k4 = arith.constant 0.1 : f32
  %k5 = arith.constant 1.0e-7 : f64
  %k6 = arith.constant -0.0 : f64
  %k7 = arith.constant 0.123456789012345678 : f64
  %k8 = arith.constant {tag = "t"} 3 : i32
  %k9 = arith.constant dense<[1, 1]> : vector<2xi32>
  %ka = arith.constant 0x7FF0000000000000 : f64
  %kb = arith.constant 1 : i1
  return %0 : i32
}""",
    "math and memref": """
func.func @m(%m: memref<4x?xf32>, %f: f32, %i: index) -> f32 {
  %a = math.sqrt %f : f32
  %b = math.exp %a fastmath<fast> : f32
  %c = math.log %b : f32
  %d = math.absf %c : f32
  %e = math.powf %d, %f : f32
  %v = memref.load %m[%i, %i] : memref<4x?xf32>
  memref.store %e, %m[%i, %i] : memref<4x?xf32>
  %n = memref.dim %m, %i : memref<4x?xf32>
  return %v : f32
}""",
    "func and scf": """
func.func private @ext(i32, i32) -> i32
func.func @g(%x: i32 {my.flag}, %n: index) -> (i32 {my.res = 1 : i32}) attributes {my.emit} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z, %b = %x) -> (i32, i32) {
    %s = arith.addi %a, %b : i32
    scf.yield %s, %b : i32, i32
  }
  scf.for %i = %c0 to %n step %c1 {
  }
  scf.for %i = %c0 to %n step %c1 {
    %u = arith.addi %x, %x : i32
  }
  %t = arith.cmpi sgt, %x, %z : i32
  scf.if %t {
    %u = arith.addi %x, %x : i32
  }
  scf.if %t {
  } else {
  }
  %w = scf.if %t -> (i32) {
    scf.yield %x : i32
  } else {
    scf.yield %z : i32
  }
  %y = func.call @ext(%r#1, %w) : (i32, i32) -> i32
  return %y : i32
}""",
    "generic forms": """
"builtin.module"() <{sym_name = "top"}> ({
  "func.func"() <{sym_name = "h", function_type = (i32, i32) -> i32}> ({
  ^bb0(%x: i32, %y: i32):
    %0 = "arith.addi"(%x, %y) : (i32, i32) -> i32
    %1 = "arith.addi"(%0, %y) <{overflowFlags = #arith.overflow<nuw>}> {note} : (i32, i32) -> i32
    %2 = "arith.constant"() {value = 7 : i32} : () -> i32
    %3:2 = "approx.knob"(%1, %2) <{id = 2 : i32, rf = 0 : i32, QoS_in = array<i32>, QoS_out = array<i32>}> ({
      "approx.transform"() <{transform_type = "loop_perforate", knob_val = 2 : i32}> : () -> ()
      "approx.yield"(%1, %2) : (i32, i32) -> ()
    }) {tag = "k"} : (i32, i32) -> (i32, i32)
    "func.return"(%3#0) : (i32) -> ()
  }) : () -> ()
  "approx.util.annotation.transform"() {func_name = "h", knob_val = 1 : i32, transform_type = "loop_perforate"} : () -> ()
  "approx.util.annotation.knob"()<{
      func_name = "h"  // the annotated function
  }>   : () -> ()
}) : () -> ()
""",  # noqa: E501 (MLIR text)
    "blocks and successors": """
func.func @cfg(%c: i1, %x: i32) -> i32 {
  "cf.cond_br"(%c, %x) [^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i1, i32) -> ()
^bb1(%a: i32):
  "cf.br"(%a) [^bb3] : (i32) -> ()
^bb2:
  "cf.br"(%x) [^bb3] : (i32) -> ()
^bb3(%r: i32):
  return %r : i32
}""",
    "module with attributes": """
module @named attributes {approx.tag = 3 : i64} {
  func.func @f() {
    return
  }
}
""",
    "non-ASCII comments": """
// Größe: the column counts differ in bytes and characters — here é
module {
  func.func @u(%x: i32) -> i32 { %y = arith.addi %x, %x : i32  // é
    return %y : i32
  }
}
""",
    "several top-level ops": STATE_OF_N + SUM_LOOP + static_transform("sum", "loop_perforate", 2),
    "decision tree": module(
        STATE_OF_N,
        SUM_LOOP,
        decision_tree("sum", "loop_perforate", "state", [5, 9], [0, 2, 3], state_indices=(1,)),
    ),
}

INPUTS = corpus_inputs() + [(f"snippet: {k}", v, 0) for k, v in SNIPPETS.items()] + [
    (f"tests.test_dialect program {i}", text, 0) for i, text in enumerate(ROUND_TRIP_PROGRAMS)
]


def xdsl_parse(text: str, name: str, offset: int):
    module = LocatingParser(make_context(), text, name, offset).parse_module()
    move_inherent_attributes_to_properties(module)
    return module


IMPORTER = upstream_import.UpstreamImporter()


def fast_parse_why(text: str, name: str, offset: int):
    """(module, None), or (None, why the fast path declined)."""
    module, reason = IMPORTER.import_module(text, name, offset)
    if module is not None:
        move_inherent_attributes_to_properties(module)
    return module, reason


def fast_parse(text: str, name: str, offset: int):
    return fast_parse_why(text, name, offset)[0]


def details(module) -> list:
    """What is_structurally_equivalent leaves out: locations, names, dict order."""
    out = []
    for op in module.walk():
        out.append((op.name, op.location, list(op.properties), list(op.attributes)))
        out.append([r.name_hint for r in op.results])
        for region in op.regions:
            for block in region.blocks:
                out.append((block.name_hint, [(a.name_hint, a.location) for a in block.args]))
    return out


def assert_same(fast, ref):
    assert fast.is_structurally_equivalent(ref)
    for generic in (False, True):
        assert print_module(fast, generic=generic) == print_module(ref, generic=generic)
    assert print_module(fast, generic=True, props_as_attrs=True) == print_module(
        ref, generic=True, props_as_attrs=True
    )
    assert details(fast) == details(ref)


# FileCheck inputs (written alongside the passes, and changing with them) may be
# declined; today these are, all for the ApproxMLIR custom form `approx.yield %x
# : i32` (upstream has no approx dialect) or for affine maps (upstream simplifies
# them): config_approx#0, decide_tree#0, finalize_approx#0, precision_reduce#5.
# Every other input must take the fast path.
MAY_FALL_BACK = "tests/filecheck/"


@pytest.mark.parametrize("name,text,offset", INPUTS, ids=[i[0] for i in INPUTS])
def test_fast_path_matches_xdsl_parser(name, text, offset):
    try:
        ref = xdsl_parse(text, "in.mlir", offset)
    except Exception:
        ref = None
    fast, reason = fast_parse_why(text, "in.mlir", offset)
    if fast is None:
        assert name.startswith(MAY_FALL_BACK), f"unexpected fallback: {reason}"
        assert not reason.startswith("conversion failed"), reason  # a bug, not a limit
        return
    assert ref is not None, "the fast path accepted what xDSL's parser rejects"
    assert_same(fast, ref)


def test_most_of_the_corpus_takes_the_fast_path():
    taken = [name for name, text, off in INPUTS if fast_parse(text, "in.mlir", off) is not None]
    assert len(taken) >= 0.7 * len(INPUTS)
    assert "bench.gen_module.generate(20)" in taken


def test_bench_module_takes_the_fast_path():
    text = generate(200)
    fast, reason = fast_parse_why(text, "bench.mlir", 3)
    assert fast is not None, reason
    assert_same(fast, xdsl_parse(text, "bench.mlir", 3))


DECLINED = {
    "custom approx.yield": (
        'func.func @f(%x: i32) -> i32 {\n  %0 = "approx.knob"(%x) <{id = 0 : i32, rf = 0 : i32, '
        "QoS_in = array<i32>, QoS_out = array<i32>}> ({\n    approx.yield %x : i32\n  }) : (i32) -> i32\n"
        "  return %0 : i32\n}\n",
        "cannot parse",
    ),
    "op unknown to xDSL": ('"test.op"() : () -> ()\n', "not an xDSL op"),
    "custom op not known to the fast path": (
        "func.func @f(%n: index) -> index {\n  %0 = arith.maxui %n, %n : index\n  return %0 : index\n}\n",
        "custom form is not known",
    ),
    "explicit location": ('"approx.transform"() <{transform_type = "loop_perforate", knob_val = 1 : i32}> : () -> () '
                          'loc("x.mlir":1:1)\n', "loc("),
    "named block": ('func.func @f() {\n  cf.br ^next\n^next:\n  return\n}\n', "^n"),
    "memref memory space": ("func.func @f(%m: memref<4xf32, 1>) {\n  return\n}\n", "memref<"),
    "string escape": ('"approx.util.annotation.knob"() <{func_name = "a\\0Ab"}> : () -> ()\n', "\\"),
    "two discardable attributes": (
        "func.func @f() attributes {b.x, a.y} {\n  return\n}\n",
        "several attributes",
    ),
    "dictionary of two entries": (
        "func.func @f(%x: i32 {a.x, b.y}) {\n  return\n}\n",
        "dictionary",
    ),
    "result list over two lines": (
        "func.func @f(%x: i32) -> i32 {\n  %y =\n    arith.addi %x, %x : i32\n  return %y : i32\n}\n",
        "results of op",
    ),
    "use before definition": (
        '"approx.util.annotation.knob"() <{func_name = "f"}> : () -> ()\n'
        "func.func @f(%x: i32) -> i32 {\n  return %x : i32\n}\n"
        '"test.user"(%v) : (i32) -> ()\n%v = "arith.constant"() <{value = 1 : i32}> : () -> i32\n',
        "",
    ),
    "empty input": ("", "empty"),
    "only a comment": ("// nothing here\n", "empty"),
    "generic module with attributes after its region": (
        '"builtin.module"() ({\n  "approx.util.annotation.knob"() <{func_name = "x"}> : () -> ()\n'
        '}) {sym_name = "m"} : () -> ()\n',
        "has attributes",
    ),
    "deep nesting (upstream's parser would crash)": (
        '"approx.knob"() ({\n' * 3000 + '}) : () -> ()\n' * 3000,
        "nest deeper",
    ),
    "upstream verifier rejects": ("func.func @f(%x: i32) -> i64 {\n  return %x : i32\n}\n", "cannot parse"),
}


@pytest.mark.parametrize("case", DECLINED, ids=list(DECLINED))
def test_fast_path_declines(case):
    text, why = DECLINED[case]
    module, reason = IMPORTER.import_module(text, "in.mlir")
    assert module is None and why in reason


def test_parse_module_falls_back_with_xdsl_behaviour(monkeypatch):
    """Large or small, parse_module gives xDSL's result and xDSL's errors."""
    monkeypatch.setattr(upstream_import, "FAST_PATH_MIN_CHARS", 0)
    text, _ = DECLINED["custom approx.yield"]
    assert parse_module(text).is_structurally_equivalent(xdsl_parse(text, "<stdin>", 0))
    # Rejected by upstream: the error is xDSL's, with its location.
    bad = "func.func @f(%x: i32) -> i64 {\n  return %x : i32\n}\n"
    with pytest.raises(ApproxError) as fast_err:
        parse_module(bad, "t.mlir", line_offset=10)
    monkeypatch.setattr(upstream_import, "FAST_PATH_MIN_CHARS", 10**12)
    monkeypatch.setattr(upstream_import, "worth_trying", lambda text: False)
    with pytest.raises(ApproxError) as slow_err:
        parse_module(bad, "t.mlir", line_offset=10)
    assert fast_err.value.line() == slow_err.value.line()


def test_verifier_errors_come_from_the_xdsl_path(monkeypatch):
    """Upstream parses it, xDSL's verifier rejects it: same message and location."""
    monkeypatch.setattr(upstream_import, "FAST_PATH_MIN_CHARS", 0)
    text = '\n"approx.transform"() <{transform_type = "loop_unroll", knob_val = 1 : i32}> : () -> ()\n'
    module, reason = IMPORTER.import_module(text, "e.mlir")
    assert module is not None and reason is None
    with pytest.raises(ApproxError) as fast_err:
        parse_module(text, "e.mlir", line_offset=4)
    monkeypatch.setattr(upstream_import, "worth_trying", lambda text: False)
    with pytest.raises(ApproxError) as slow_err:
        parse_module(text, "e.mlir", line_offset=4)
    assert fast_err.value.line() == slow_err.value.line()
    assert "e.mlir:6:1:" in fast_err.value.line()


def test_parse_module_uses_the_fast_path_for_large_inputs(monkeypatch):
    calls = []
    real = parsing.IMPORTER.import_module

    def spy(*args, **kwargs):
        module, reason = real(*args, **kwargs)
        calls.append(module is not None)
        return module, reason

    monkeypatch.setattr(parsing.IMPORTER, "import_module", spy)
    text = generate(200)
    assert len(text) >= upstream_import.FAST_PATH_MIN_CHARS
    module = parse_module(text, "big.mlir")
    assert calls == [True]
    assert print_module(module) == print_module(xdsl_parse(text, "big.mlir", 0))


def test_the_dialect_parses_with_xdsl_alone(monkeypatch):
    """`approx_dialect.context.parse_module` is xDSL's parser at any size; only
    `approx_opt.parsing` tries upstream MLIR's."""
    from approx_dialect import context

    def fail(*args, **kwargs):
        raise AssertionError("the upstream parser was tried")

    monkeypatch.setattr(parsing.IMPORTER, "import_module", fail)
    text = generate(200)
    assert print_module(context.parse_module(text, "big.mlir")) == print_module(xdsl_parse(text, "big.mlir", 0))


def test_an_importer_owns_its_caches():
    """The types and attributes read for one input serve the next, in that importer only."""
    importer, other = upstream_import.UpstreamImporter(), upstream_import.UpstreamImporter()
    text = generate(20)
    module, reason = importer.import_module(text, "a.mlir")
    assert module is not None and reason is None
    assert importer.type_cache and importer.attr_cache
    assert not other.type_cache and not other.attr_cache
    seen = dict(importer.type_cache)
    assert importer.import_module(text, "b.mlir")[0] is not None
    assert importer.type_cache == seen  # nothing new to read

