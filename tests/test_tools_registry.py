"""Tool schemas from annotations + docstrings (BFCL's shape), registries of
Python tools and of BFCL's descriptions, and argument validation."""

from __future__ import annotations

from typing import Literal, Optional

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.tools.bfcl import bfcl_registry, load_bfcl
from frontends.components.tools.registry import ToolRegistry
from frontends.components.tools.schema import parse_docstring, tool_schema


def triangle_area(base: float, height: float, unit: str = "units") -> float:
    """Calculate the area of a triangle given its base and height.

    Args:
        base: The base of the triangle.
        height (float): The height of the
            triangle.
        unit: The unit of measure.
    """
    return 0.5 * base * height


def search(query: str, tags: list[str], mode: Literal["fast", "full"] = "fast",
           limit: Optional[int] = None, filters: dict | None = None) -> list:
    """Search the catalogue.

    :param query: words to look for
    :param tags: tags that must all match
    """
    return [query, tags, mode, limit, filters]


def test_schema_from_annotations_and_google_docstring():
    assert tool_schema(triangle_area) == {
        "name": "triangle_area",
        "description": "Calculate the area of a triangle given its base and height.",
        "parameters": {"type": "dict", "required": ["base", "height"], "properties": {
            "base": {"type": "float", "description": "The base of the triangle."},
            "height": {"type": "float", "description": "The height of the triangle."},
            "unit": {"type": "string", "description": "The unit of measure.", "default": "units"},
        }},
    }


def test_schema_types_enums_optionals_and_sphinx_docstring():
    props = tool_schema(search)["parameters"]["properties"]
    assert props["query"] == {"type": "string", "description": "words to look for"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "description": "tags that must all match"}
    assert props["mode"] == {"type": "string", "enum": ["fast", "full"], "description": "", "default": "fast"}
    assert props["limit"] == {"type": "integer", "description": ""}
    assert props["filters"] == {"type": "dict", "description": ""}
    assert tool_schema(search)["parameters"]["required"] == ["query", "tags"]


def test_schema_errors_name_the_tool_and_parameter():
    def untyped(x):
        return x

    def variadic(*xs: int):
        return xs

    def mixed(x: int | str):
        return x

    with pytest.raises(ApproxError, match="tool untyped: error: parameter 'x' has no type annotation"):
        tool_schema(untyped)
    with pytest.raises(ApproxError, match=r"parameter \*xs has no BFCL schema"):
        tool_schema(variadic)
    with pytest.raises(ApproxError, match="tool mixed, parameter 'x': error: union type"):
        tool_schema(mixed)


def test_docstring_without_sections():
    assert parse_docstring("One line.\n\nMore text.") == ("One line.", {})
    assert parse_docstring(None) == ("", {})


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(triangle_area, default=0.0, substitutes=[lambda base, height, unit="units": base * height / 2.0])
    reg.register(search)
    return reg


def test_registry_validates_before_calling():
    reg = registry()
    assert reg.call("triangle_area", {"base": 4, "height": 5}) == 10.0  # ints accepted for floats
    assert reg.validate("triangle_area", {"base": 4, "height": 5}) == {"base": 4.0, "height": 5.0}
    cases = [
        ({"base": 4}, "missing required parameter 'height'"),
        ({"base": 4, "height": 5, "colour": "red"}, "unknown parameter 'colour'"),
        ({"base": "4", "height": 5}, "parameter 'base': error: expected float, got str"),
        ({"base": True, "height": 5}, "expected float, got bool"),
    ]
    for args, message in cases:
        with pytest.raises(ApproxError, match=message):
            reg.call("triangle_area", args)
    with pytest.raises(ApproxError, match=r"'slow' is not one of \['fast', 'full'\]"):
        reg.call("search", {"query": "x", "tags": [], "mode": "slow"})
    with pytest.raises(ApproxError, match=r"parameter 'tags'\[1\]: error: expected string, got int"):
        reg.call("search", {"query": "x", "tags": ["a", 2]})
    with pytest.raises(ApproxError, match="no tool named 'nope'"):
        reg.call("nope", {})


def test_substitutes_and_described_only_tools():
    reg = registry()
    assert reg.call("triangle_area", {"base": 3, "height": 2}, substitute=1) == 3.0
    with pytest.raises(ApproxError, match="substitute 2 does not exist"):
        reg.call("triangle_area", {"base": 3, "height": 2}, substitute=2)
    with pytest.raises(ApproxError, match="already registered"):
        reg.register(triangle_area)
    bfcl = load_bfcl("simple_python")[0]
    described = bfcl.registry()
    with pytest.raises(ApproxError, match="described only"):
        described.call("calculate_triangle_area", {"base": 10, "height": 5})
    assert described.validate("calculate_triangle_area", {"base": 10, "height": 5}) == {"base": 10, "height": 5}


def test_python_tools_and_bfcl_functions_have_the_same_schema_shape():
    ours = tool_schema(triangle_area)
    theirs = load_bfcl("simple_python")[0].functions[0]
    assert set(ours) == set(theirs) and set(ours["parameters"]) == set(theirs["parameters"])
    assert ours["parameters"]["type"] == theirs["parameters"]["type"] == "dict"


def test_bfcl_registries():
    items = load_bfcl("simple_python")
    reg = bfcl_registry(items)
    assert len(reg) == len({f["name"] for it in items for f in it.functions}) == 370
    for tool in reg:
        assert set(tool.required) <= set(tool.properties), tool.name
    assert len(load_bfcl("multiple")[0].registry()) == len(load_bfcl("multiple")[0].functions)
