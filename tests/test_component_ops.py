"""Component ops (`component.*`) and component knobs: they round-trip, verify with
one clear message, export to IRDL that upstream MLIR checks, list as knobs, and
each transformation rewrites exactly its attribute (knob 0: the program as written)."""

from __future__ import annotations

import pytest

from approx_dialect.context import parse_module, print_module
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from passes.knobs import knob_specs

OBJ = "!pyobj.obj"
BODY = f"""
  func.func @rag(%q: {OBJ}) -> {OBJ} {{
    %e = "component.embed"(%q) <{{component = "query", encoder = @minilm, dims = 384 : i64}}> : ({OBJ}) -> {OBJ}
    %hits = "component.retrieve"(%e) <{{component = "bm25", retriever = @bm25, top_k = 3 : i64}}> : ({OBJ}) -> {OBJ}
    %a = "component.generate"(%q, %hits) <{{component = "answer", model = @pro, max_new_tokens = 16 : i64}}> : ({OBJ}, {OBJ}) -> {OBJ}
    %calls = "component.tool_call"(%a) <{{component = "tools", tools = @bfcl, router = @embedding}}> : ({OBJ}) -> {OBJ}
    func.return %calls : {OBJ}
  }}"""  # noqa: E501 (MLIR text)

KNOBS = {
    "answer.max_new_tokens": ('parameter = "max_new_tokens", transform_type = "param", values = [8 : i64, 4 : i64]',
                              "max_new_tokens = 4 : i64"),
    "answer.passages": ('parameter = "passages", transform_type = "param", values = [2 : i64, 1 : i64]',
                        "passages = 1 : i64"),
    "answer.model": ('parameter = "model", transform_type = "func_substitute", values = [@fast, @tiny]',
                     "model = @tiny"),
    "answer.precision": ('parameter = "precision", transform_type = "precision_reduce", values = [bf16, f16]',
                         "precision = f16"),
    "answer.cache": ('parameter = "cache", transform_type = "memoize", values = [64 : i64, 1024 : i64]',
                     "cache = 1024 : i64"),
    "bm25.top_k": ('parameter = "top_k", transform_type = "param", values = [2 : i64, 1 : i64]', "top_k = 1 : i64"),
    "bm25.retriever": ('parameter = "retriever", transform_type = "func_substitute", values = [@bm25_lite, @x]',
                       "retriever = @x"),
    "query.dims": ('parameter = "dims", transform_type = "param", values = [128 : i64, 64 : i64]', "dims = 64 : i64"),
    "query.precision": ('parameter = "precision", transform_type = "precision_reduce", values = [bf16, f16]',
                        "precision = f16"),
    "tools.router": ('parameter = "router", transform_type = "func_substitute", values = [@keyword, @none]',
                     "router = @none"),
}


def annotation(knob: str, spec: str, k: int) -> str:
    component = knob.split(".")[0]
    return (f'"approx.util.annotation.component"() <{{func_name = "rag", component = "{component}", {spec}, '
            f"knob_val = {k} : i32}}> : () -> ()")


def program(k: int = 0, knobs=KNOBS) -> str:
    return "module {\n" + "\n".join(annotation(n, knobs[n][0], k) for n in knobs) + BODY + "\n}\n"


def rag_op(text: str, name: str) -> str:
    return next(line.strip() for line in text.splitlines() if f'"{name}"' in line)


def test_ops_round_trip_and_verify():
    text = program()
    module = parse_module(text)
    printed = print_module(module)
    assert print_module(parse_module(printed)) == printed
    generic = print_module(module, generic=True, props_as_attrs=True)
    assert parse_module(generic).is_structurally_equivalent(module)
    assert 'top_k = 3 : i64' in printed and "model = @pro" in printed


def test_knobs_are_named_component_dot_parameter():
    specs = knob_specs(parse_module(program()))
    assert [s.name for s in specs] == list(KNOBS)
    assert all(s.values == (0, 1, 2) and s.kind == "static" for s in specs)


def test_knob_zero_is_the_unannotated_program():
    plain = run_pipeline("module {" + BODY + "}", "approx-pipeline")
    assert run_pipeline(program(0), "approx-pipeline") == plain


@pytest.mark.parametrize("knob", list(KNOBS))
def test_each_knob_rewrites_its_attribute(knob):
    exact = run_pipeline(program(0), "approx-pipeline")
    tuned = run_pipeline(program(0), "approx-pipeline", config={knob: {"knob_val": 2}})
    changed = [b for a, b in zip(exact.splitlines(), tuned.splitlines()) if a != b]
    assert len(changed) == 1 and KNOBS[knob][1] in changed[0]


def test_task_skipping_drops_the_step():
    knobs = {"query.embed": ('parameter = "encoder", transform_type = "task_skipping", values = []', "")}
    out = run_pipeline(program(1, knobs), "approx-pipeline")
    assert "component.embed" not in out
    none = rag_op(out, "pyobj.const").split(" = ")[0]
    assert rag_op(out, "component.retrieve").split("(")[1].startswith(none + ")")  # retrieval reads None


def test_cascade_lowers_to_an_escalation_chain():
    knobs = {"answer.model": ('parameter = "model", transform_type = "cascade", values = [@tiny, @fast], '
                              "thresholds = [0.5, 0.2]", "")}
    assert [s.values for s in knob_specs(parse_module(program(0, knobs)))] == [(0, 1, 2, 3, 4)]
    out = run_pipeline(program(0, knobs), "approx-pipeline", config={"answer.model": {"knob_val": 2}})
    models = [line.split("model = ")[1].split(",")[0].split("}")[0] for line in out.splitlines()
              if "component.generate" in line]
    assert models == ["@tiny", "@fast", "@pro"]  # k = 2: from the first cheap model, threshold 0.2
    assert out.count("component.confidence") == 2 and "2.000000e-01" in out
    out = run_pipeline(program(0, knobs), "approx-pipeline", config={"answer.model": {"knob_val": 3}})
    assert out.count("component.generate") == 2 and "model = @fast" in out and "5.000000e-01" in out


@pytest.mark.parametrize("text,message", [
    (BODY.replace("top_k = 3", "top_k = 0"), "'top_k' must be an integer >= 1"),
    (BODY.replace("dims = 384 : i64", "precision = i32"), "'precision' must be f32, bf16, f16, i8 or i4"),
    (BODY.replace("dims = 384 : i64", "precision = i3"), "'precision' must be f32, bf16, f16, i8 or i4, got i3"),
    (BODY.replace('component = "answer", ', 'component = "", '), "needs a non-empty 'component' label"),
    (annotation("answer.model", 'parameter = "model", transform_type = "func_substitute", values = [8 : i64]', 0)
     + BODY, "values are symbols"),
    (annotation("answer.max_new_tokens", KNOBS["answer.max_new_tokens"][0], 3) + BODY,
     "knob_val 3 is out of range 0..2"),
    (annotation("answer.x", 'parameter = "x", transform_type = "loop_perforate", values = [2 : i64]', 0) + BODY,
     "does not apply to component ops"),
])
def test_bad_ops_and_annotations_say_what_and_where(text, message):
    with pytest.raises(ApproxError, match=message) as err:
        parse_module("module {\n" + text + "\n}", "prog.mlir")
    assert str(err.value).startswith("prog.mlir:")


def test_int4_is_a_row_of_the_precision_table():
    """i4 (int4 weights) is a precision the ops take and precision_reduce sets; i3 is none, in one line."""
    text = "module {\n" + BODY.replace("16 : i64}", "16 : i64, precision = i4}") + "\n}"
    assert "precision = i4" in rag_op(print_module(parse_module(text)), "component.generate")
    spec = 'parameter = "precision", transform_type = "precision_reduce", values = '
    knobs = {"answer.precision": (spec + "[i8, i4]", "")}
    out = run_pipeline(program(0, knobs), "approx-pipeline", config={"answer.precision": {"knob_val": 2}})
    assert "precision = i4" in rag_op(out, "component.generate")
    knobs = {"answer.precision": (spec + "[i3]", "")}
    with pytest.raises(ApproxError, match="values are f32, bf16, f16, i8 or i4") as err:
        parse_module(program(0, knobs), "prog.mlir")
    assert "\n" not in str(err.value)


def test_knob_on_a_parameter_the_op_lacks_is_a_pipeline_error():
    knobs = {"bm25.max_new_tokens": ('parameter = "max_new_tokens", transform_type = "param", values = [4 : i64]', "")}
    with pytest.raises(ApproxError, match="component.retrieve has no parameter 'max_new_tokens'"):
        run_pipeline(program(1, knobs), "approx-pipeline", "prog.mlir")


def test_upstream_mlir_verifies_component_ops_through_irdl():
    ir = pytest.importorskip("torch_mlir.ir")
    from approx_dialect.irdl_export import load_upstream

    ctx = ir.Context()
    keep = load_upstream(ctx)  # noqa: F841 (keeps the IRDL module alive)
    text = print_module(parse_module(program()), generic=True, props_as_attrs=True)
    assert ir.Module.parse(text, context=ctx).operation.verify()
    bad = text.replace('retriever = @bm25', 'retriever = "bm25"', 1)
    with pytest.raises(ir.MLIRError):
        ir.Module.parse(bad, context=ctx).operation.verify()
