"""BFCL's AST checker (Python categories), the QoS of the tool-calling system.

A model output is a list of calls `[{function_name: {param: value}}]`; the
ground truth (`possible_answer/`) lists, per expected call, the allowed values
of each parameter ("" among them = the parameter may be left out). Rules, as
the Berkeley Function Calling Leaderboard's `ast_checker` applies them:
- simple: exactly one call; multiple: as many calls as expected, the first is
  checked against the expected function; parallel / parallel_multiple: as many
  calls as expected, matched to the expected calls in any order (each expected
  call takes the first unmatched output call that passes);
- one call passes when the function name is the expected one, every required
  parameter is present, every given parameter is known and allowed, its type is
  the schema's (an int passes for a float; a value of the ground truth's own type
  passes as a "variable"), its value is among the allowed ones (strings compared
  after removing spaces and ,./-_*^ and lowering case; inside lists too; dicts key
  by key), and every parameter it omits may be omitted."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

PY_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
            "dict": dict, "any": str}
NESTED = ("array", "tuple")


@dataclass(frozen=True)
class CheckResult:
    valid: bool
    error: str = ""
    error_type: str = ""

    def __bool__(self) -> bool:
        return self.valid


OK = CheckResult(True)


def standardize(s: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", s).lower().replace("'", '"')


def _std(v: Any) -> Any:
    return standardize(v) if isinstance(v, str) else v


def _answer_type(allowed: list) -> type | None:
    return next((type(a) for a in allowed if a != ""), None)


def _type_check(value: Any, allowed: list, expected: type[Any], nested: type | None) -> tuple[bool, bool]:
    """(valid, is_variable), BFCL's one-level type check."""
    answer_type = _answer_type(allowed)
    is_variable = answer_type is not None and answer_type != expected
    if type(value) == expected:  # noqa: E721 (exact type: True is not an int)
        if nested is None:
            return True, is_variable
        for item in allowed:
            # as BFCL: a non-list option (the optional marker "") passes the nested check
            if type(item) != list or all(_type_check(v, item, nested, None)[0] for v in value):  # noqa: E721
                return True, is_variable
    if answer_type is not None and type(value) == answer_type:  # noqa: E721
        return True, True
    return False, False


def _dict_check(value: dict, allowed: list) -> bool:
    for option in allowed:
        if option == "":
            continue
        if all(k in option and _std(v) in [_std(a) for a in option[k]] for k, v in value.items()) and \
                all(k in value or "" in opts for k, opts in option.items()):
            return True
    return False


def _list_dict_check(value: list, allowed: list) -> bool:
    return any(len(value) == len(option) and all(_dict_check(v, [o]) for v, o in zip(value, option))
               for option in allowed)


def check_call(func: dict, call: dict, expected: dict) -> CheckResult:
    """One output call against one function description and its expected call."""
    allowed_by_param = next(iter(expected.values()))
    name, props = func["name"], func["parameters"]["properties"]
    if not isinstance(call, dict) or name not in call:
        return CheckResult(False, f"function {name!r} not called", "simple_function_checker:wrong_func_name")
    args = call[name]
    for p in func["parameters"].get("required", []):
        if p not in args:
            return CheckResult(False, f"missing required parameter {p!r}", "simple_function_checker:missing_required")
    for p, value in args.items():
        if p not in props or p not in allowed_by_param:
            return CheckResult(False, f"unexpected parameter {p!r}", "simple_function_checker:unexpected_param")
        allowed, kind = allowed_by_param[p], props[p]["type"]
        expected_type = PY_TYPES[kind]
        nested = PY_TYPES[props[p]["items"]["type"]] if kind in NESTED else None
        if kind == "tuple" and type(value) == tuple:  # noqa: E721
            value = list(value)
        if kind == "float" and type(value) == int:  # noqa: E721
            value = float(value)
        ok, is_variable = _type_check(value, allowed, expected_type, nested)
        if not ok:
            return CheckResult(False, f"parameter {p!r}: expected {kind}, got {type(value).__name__} {value!r}",
                               "type_error:simple")
        if not is_variable:
            if expected_type is dict:
                ok, etype = _dict_check(value, allowed), "value_error:dict_value"
            elif expected_type is list and nested is dict:
                ok, etype = _list_dict_check(value, allowed), "value_error:list_dict"
            elif expected_type is str:
                ok, etype = standardize(value) in [standardize(a) for a in allowed if isinstance(a, str)], \
                    "value_error:string"
            elif expected_type is list:
                options = [[_std(a) for a in opt] if isinstance(opt, list) else [] for opt in allowed]
                ok, etype = [_std(v) for v in value] in options, "value_error:list/tuple"
            else:
                ok, etype = value in allowed, "value_error:others"
            if not ok:
                return CheckResult(False, f"parameter {p!r}: {value!r} is not among {allowed}", etype)
        elif value not in allowed:
            return CheckResult(False, f"parameter {p!r}: {value!r} is not among {allowed}", "value_error:others")
    for p, allowed in allowed_by_param.items():
        if p not in args and "" not in allowed:
            return CheckResult(False, f"parameter {p!r} is needed (not optional here)",
                               "simple_function_checker:missing_optional")
    return OK


def _description(functions: list[dict], name: str) -> dict | None:
    return next((f for f in functions if f["name"] == name), None)


def check(category: str, functions: list[dict], calls: list[dict], ground_truth: list[dict]) -> CheckResult:
    """BFCL's `ast_checker` for one item (category: simple_python, multiple,
    parallel, parallel_multiple)."""
    if not isinstance(calls, list):
        return CheckResult(False, "the output is not a list of calls", "ast_decoder:decoder_wrong_output_format")
    if len(calls) != len(ground_truth):
        return CheckResult(False, f"{len(calls)} calls, expected {len(ground_truth)}", f"{category}:wrong_count")
    if "parallel" in category:
        matched: set[int] = set()
        for i, expected in enumerate(ground_truth):
            func = _description(functions, next(iter(expected)))
            hit = next((j for j, c in enumerate(calls) if j not in matched and func is not None
                        and check_call(func, c, expected)), None)
            if hit is None:
                return CheckResult(False, f"no output call matches expected call {i} ({next(iter(expected))})",
                                   "parallel_function_checker_no_order:cannot_find_match")
            matched.add(hit)
        return OK
    if "multiple" in category:
        func = _description(functions, next(iter(ground_truth[0])))
    else:  # simple: the item's one function
        func = functions[0] if functions else None
    if func is None:
        return CheckResult(False, "the expected function is not among the item's functions", "data_error")
    return check_call(func, calls[0], ground_truth[0])
