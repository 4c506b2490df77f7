"""Tools: a registry of typed Python tools and BFCL's described
functions (BFCL-style JSON schemas), triage routers (MiniLM embedding similarity,
keyword scoring), validated execution with skip / substitute / memo per call
(`ToolRunner`), and BFCL's AST checker as the QoS metric."""

from frontends.components.tools.ast_check import CheckResult, check, check_call
from frontends.components.tools.bfcl import (
    CATEGORIES,
    BfclItem,
    ast_accuracy,
    bfcl_registry,
    format_calls,
    load_bfcl,
    parse_calls,
)
from frontends.components.tools.registry import Tool, ToolRegistry, tool_of
from frontends.components.tools.runner import ToolRunner
from frontends.components.tools.schema import tool_schema
from frontends.components.tools.triage import EmbeddingTriage, KeywordTriage

__all__ = [
    "CheckResult", "check", "check_call", "CATEGORIES", "BfclItem", "ast_accuracy", "bfcl_registry",
    "format_calls", "load_bfcl", "parse_calls", "ToolRunner", "Tool", "ToolRegistry", "tool_of", "tool_schema",
    "EmbeddingTriage", "KeywordTriage",
]
