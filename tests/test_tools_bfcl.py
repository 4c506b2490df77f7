"""BFCL v4 data and the AST checker: right and wrong calls built from
possible_answer, every category, and the Python call syntax BFCL models write."""

from __future__ import annotations

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.tools.bfcl import (
    CATEGORIES,
    ast_accuracy,
    format_calls,
    load_bfcl,
    parse_calls,
)


def item(category: str, index: int):
    return load_bfcl(category)[index]


def test_all_categories_load_with_aligned_answers():
    assert {c: len(load_bfcl(c)) for c in CATEGORIES} == {
        "simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200}
    it = item("simple_python", 0)
    assert it.id == "simple_python_0" and it.question.startswith("Find the area of a triangle")
    with pytest.raises(ApproxError, match="unknown BFCL category 'java'"):
        load_bfcl("java")


def test_simple_right_and_wrong_calls():
    it = item("simple_python", 0)  # calculate_triangle_area: base [10], height [5], unit ["units", ""]
    right = [
        [{"calculate_triangle_area": {"base": 10, "height": 5}}],
        [{"calculate_triangle_area": {"base": 10, "height": 5, "unit": "units"}}],
        [{"calculate_triangle_area": {"base": 10, "height": 5, "unit": " Units"}}],  # strings normalised
    ]
    for calls in right:
        assert it.check(calls).valid, calls
    wrong = {
        "simple_function_checker:wrong_func_name": [{"triangle_area": {"base": 10, "height": 5}}],
        "simple_function_checker:missing_required": [{"calculate_triangle_area": {"base": 10}}],
        "simple_function_checker:unexpected_param": [{"calculate_triangle_area": {"base": 10, "height": 5, "x": 1}}],
        "value_error:others": [{"calculate_triangle_area": {"base": 11, "height": 5}}],
        "value_error:string": [{"calculate_triangle_area": {"base": 10, "height": 5, "unit": "cm"}}],
        "type_error:simple": [{"calculate_triangle_area": {"base": 10.0, "height": 5}}],
        "simple_python:wrong_count": [{"calculate_triangle_area": {"base": 10, "height": 5}}] * 2,
    }
    for error_type, calls in wrong.items():
        result = it.check(calls)
        assert not result.valid and result.error_type == error_type, (error_type, result)


def test_float_parameters_take_ints_and_bools_are_not_ints():
    it = next(i for i in load_bfcl("simple_python")
              if any(p["type"] == "float" for f in i.functions for p in f["parameters"]["properties"].values())
              and all(len(v) == 1 for v in i.ground_truth[0][next(iter(i.ground_truth[0]))].values()))
    (name, allowed), = it.ground_truth[0].items()
    call = {p: v[0] for p, v in allowed.items()}
    props = it.functions[0]["parameters"]["properties"]
    float_param = next(p for p in call if props[p]["type"] == "float")
    if float(call[float_param]).is_integer():
        assert it.check([{name: {**call, float_param: int(call[float_param])}}]).valid
    assert not it.check([{name: {**call, float_param: True}}]).valid


def test_parallel_calls_match_in_any_order_and_must_all_be_there():
    it = item("parallel", 0)  # spotify.play: Taylor Swift 20, Maroon 5 15
    a = {"spotify.play": {"artist": "Taylor Swift", "duration": 20}}
    b = {"spotify.play": {"artist": "Maroon 5", "duration": 15}}
    assert it.check([a, b]).valid and it.check([b, a]).valid
    assert it.check([a]).error_type == "parallel:wrong_count"
    assert it.check([a, a]).error_type == "parallel_function_checker_no_order:cannot_find_match"


def test_multiple_checks_the_expected_function_among_several():
    it = item("multiple", 0)
    (name, allowed), = it.ground_truth[0].items()
    assert len(it.functions) > 1
    call = {p: v[0] for p, v in allowed.items() if v[0] != ""}
    assert it.check([{name: call}]).valid
    other = next(f["name"] for f in it.functions if f["name"] != name)
    assert it.check([{other: call}]).error_type == "simple_function_checker:wrong_func_name"


def _first(allowed):
    return next((a for a in allowed if a != ""), None)


def _canonical_value(v):
    if isinstance(v, dict):  # a dict parameter: each key's allowed values
        return {k: _canonical_value(_first(vs)) for k, vs in v.items() if _first(vs) is not None}
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        return [_canonical_value(x) for x in v]
    return v


def canonical_calls(ground_truth) -> list[dict]:
    """The first allowed value of every parameter, optional ones left out."""
    return [{name: {p: _canonical_value(_first(a)) for p, a in params.items() if _first(a) is not None}}
            for call in ground_truth for name, params in call.items()]


def test_every_ground_truth_call_passes_the_checker():
    # two parallel_multiple items list a ground-truth parameter that their function
    # description lacks; BFCL's checker rejects those calls as "unexpected_param" too
    known_bad = {"parallel_multiple_12", "parallel_multiple_26"}
    for category in CATEGORIES:
        items = load_bfcl(category)
        outputs = [canonical_calls(i.ground_truth) for i in items]
        failing = {i.id for i, out in zip(items, outputs) if not i.check(out).valid}
        assert failing == (known_bad if category == "parallel_multiple" else set()), category
        assert ast_accuracy(items, outputs) == (len(items) - len(failing)) / len(items)
        assert ast_accuracy(items, [[] for _ in items]) == 0.0


def test_python_call_syntax_round_trips():
    text = "[math.hypot(x=4, y=5), spotify.play(artist='Maroon 5', duration=15, tags=['a', 1.5], d={'k': None})]"
    calls = parse_calls(text)
    assert calls == [{"math.hypot": {"x": 4, "y": 5}},
                     {"spotify.play": {"artist": "Maroon 5", "duration": 15, "tags": ["a", 1.5], "d": {"k": None}}}]
    assert parse_calls(format_calls(calls)) == calls
    assert parse_calls("f(a=1)") == [{"f": {"a": 1}}]
    for bad, message in [("f(1)", "positional"), ("f(a=x)", "not a literal"), ("f(", "not Python call syntax"),
                         ("[1]", "is not a call")]:
        with pytest.raises(ApproxError, match=message):
            parse_calls(bad)
