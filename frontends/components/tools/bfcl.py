"""BFCL v4 (Berkeley Function Calling Leaderboard) items: the question, the
described functions and the ground-truth calls; registries of the descriptions;
Python-syntax calls as BFCL models write them; and the AST-match QoS.

Data: `$APPROX_DATA_DIR/bfcl` (default `<repo>/../shared/data/bfcl`), files
`BFCL_v4_<category>.json` and `possible_answer/BFCL_v4_<category>.json`, one JSON
object per line, same ids in the same order (checked)."""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from approx_dialect.diagnostics import ApproxError
from frontends.components.folders import data_dir
from frontends.components.tools.ast_check import CheckResult, check
from frontends.components.tools.registry import ToolRegistry

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")


@dataclass(frozen=True)
class BfclItem:
    id: str
    category: str
    question: str
    functions: tuple[dict, ...]
    ground_truth: tuple[dict, ...]

    def registry(self) -> ToolRegistry:
        """The item's own candidate functions."""
        reg = ToolRegistry()
        for f in self.functions:
            reg.add_schema(f)
        return reg

    def check(self, calls: list[dict]) -> CheckResult:
        return check(self.category, list(self.functions), calls, list(self.ground_truth))


def _read_lines(path: Path) -> list[dict]:
    try:
        text = path.read_text()
    except OSError as err:
        raise ApproxError(f"cannot read BFCL data: {err.strerror} (set APPROX_DATA_DIR to the data folder)",
                          where=str(path)) from None
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as err:
        raise ApproxError(f"not one JSON object per line: {err.msg}", where=f"{path}:{err.lineno}") from None


@lru_cache(maxsize=8)
def load_bfcl(category: str, directory: str | None = None) -> tuple[BfclItem, ...]:
    """Every item of `category`, with its ground truth."""
    if category not in CATEGORIES:
        raise ApproxError(f"unknown BFCL category {category!r} (categories: {', '.join(CATEGORIES)})", where="bfcl")
    base = Path(directory) if directory else data_dir() / "bfcl"
    items = _read_lines(base / f"BFCL_v4_{category}.json")
    answers = _read_lines(base / "possible_answer" / f"BFCL_v4_{category}.json")
    if [i["id"] for i in items] != [a["id"] for a in answers]:
        raise ApproxError("items and possible answers do not have the same ids in the same order", where=str(base))
    out = []
    for item, ans in zip(items, answers):
        turns = item["question"]
        question = "\n".join(m["content"] for m in turns[0] if m.get("role") == "user")
        out.append(BfclItem(item["id"], category, question, tuple(item["function"]), tuple(ans["ground_truth"])))
    return tuple(out)


def bfcl_registry(items: Sequence[BfclItem]) -> ToolRegistry:
    """One registry of all the items' function descriptions; where two items
    describe a function of the same name differently, the first description is kept."""
    reg = ToolRegistry()
    for item in items:
        for f in item.functions:
            if f["name"] not in reg:
                reg.add_schema(f)
    return reg


def _literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ApproxError(f"argument {ast.unparse(node)!r} is not a literal", where=where) from None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ApproxError(f"{ast.unparse(node)!r} is not a function name", where="parse_calls")


def parse_calls(text: str) -> list[dict]:
    """`[f(a=1), pkg.g(b='x')]` (or one call without brackets) -> BFCL's output
    format `[{"f": {"a": 1}}, {"pkg.g": {"b": "x"}}]`; keyword arguments only."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise ApproxError(f"not Python call syntax: {err.msg}", where="parse_calls") from None
    nodes = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            raise ApproxError(f"{ast.unparse(node)!r} is not a call", where="parse_calls")
        name = _dotted(node.func)
        if node.args:
            raise ApproxError(f"call of {name} has positional arguments (BFCL calls name every argument)",
                              where="parse_calls")
        calls.append({name: {kw.arg: _literal(kw.value, f"parse_calls: {name}") for kw in node.keywords}})
    return calls


def format_calls(calls: list[dict]) -> str:
    """The inverse of `parse_calls`."""
    return "[" + ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
                           for call in calls for name, args in call.items()) + "]"


def ast_accuracy(items: Sequence[BfclItem], outputs: Sequence[list[dict]]) -> float:
    """Fraction of items whose output calls pass BFCL's AST check (the QoS)."""
    if len(items) != len(outputs):
        raise ApproxError(f"{len(items)} items but {len(outputs)} outputs", where="ast_accuracy")
    return sum(bool(item.check(out)) for item, out in zip(items, outputs)) / max(1, len(items))
