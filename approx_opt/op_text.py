"""Reading an op's own text, for the fast parse (`upstream_import`, `upstream_convert`).

Upstream MLIR drops what xDSL's parser keeps from the text: SSA names, the order
of attribute dictionaries, the properties of ops it does not know. This module
recovers them by scanning the source at the places upstream locates things
(each op at its name, each block argument at its `%`): result names, block
argument names, the `<{...}>` and `{...}` dictionaries of generic-form ops. It
also holds the checks that leave a text to xDSL before upstream sees it
(`left_to_xdsl`). Converting ops and attribute values to xDSL is
`upstream_convert`'s job (it passes in the function that reads a value).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute


class Unsupported(Exception):
    """The fast path cannot guarantee the xDSL parser's result for this input."""


# Texts containing any of these are left to xDSL: upstream would canonicalize
# what they spell (identity layouts / memory space 0 of memrefs, affine
# expressions, string escapes, dialect resources), explicit locations replace
# the ones we compute, and named blocks keep names upstream does not report.
TEXT_GUARDS = re.compile(
    r"affine_map<|affine_set<|\{-#|\\|\bloc\s*\(|(?:memref|tensor)<[^<>]*,|\^(?!bb\d+\b)[\w$.-]"
    r"|\d[eE][+]?\d{3}"  # a float exponent of 100 or more: one too large is an error xDSL's parser gives
)

# Generic op head after its name: operands, successors, then `<{` if properties.
_GENERIC_HEAD_RE = re.compile(r"\s*\([^()]*\)\s*(?:\[[^\[\]]*\]\s*)?(<\s*\{)?")
_KEY_RE = re.compile(r'(?:([A-Za-z_][\w$.]*)|"([^"\\\n]*)")\s*(=)?\s*')
_VALUE_TOKEN_RE = re.compile(r'"[^"\\\n]*"|//[^\n]*|->|[<>(){}\[\],]')
_OPENERS = frozenset("<({[")
_CLOSERS = frozenset(">)}]")
_SPACE_RE = re.compile(r"\s*")
_STRINGS_COMMENTS_ARROWS_RE = re.compile(r'"[^"\n]*"|//[^\n]*|->')
_BRACKET_RE = re.compile(r"[{}()\[\]<>]")
_UNIT = UnitAttr()

_LOC_RE = re.compile(r'loc\("-":(\d+):(\d+)\)')
_OP_NAME_RE = re.compile(r'"([^"\\]*)"|([A-Za-z_][\w$.]*)')
_RESULTS_RE = re.compile(r"((?:%[\w$.-]+(?::\d+)?\s*,\s*)*%[\w$.-]+(?::\d+)?)\s*=\s*$")
_RESULT_RE = re.compile(r"%([\w$.-]+)(?::(\d+))?")
_ARG_NAME_RE = re.compile(r"%([\w$.-]+)")
_VALID_NAME_RE = re.compile(r"[A-Za-z_$.-][\w$.-]*")


class SourceText:
    """The text being imported, with its line table: turns upstream locations
    into offsets and offsets into `line:col` for messages."""

    def __init__(self, text: str, line_offset: int):
        self.text = text
        self.ascii = text.isascii()
        self.line_offset = line_offset
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def offset(self, loc: str, what: str) -> tuple[int, int, int]:
        """(line, offset of that line, offset) in the text of an upstream
        `loc("-":line:col)`."""
        m = _LOC_RE.fullmatch(loc)
        if m is None:
            raise Unsupported(f"{what} has location {loc}")
        line, col = int(m.group(1)), int(m.group(2))
        if not 0 < line <= len(self.line_starts):
            raise Unsupported(f"{what} has location {loc}")
        start = self.line_starts[line - 1]
        if self.ascii:
            return line, start, start + col - 1
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        text = self.text[start:end]
        if text.isascii():
            return line, start, start + col - 1
        # upstream counts columns in bytes
        return line, start, start + len(text.encode()[: col - 1].decode(errors="replace"))

    def where(self, off: int) -> str:
        line = bisect_right(self.line_starts, off)
        return f"{line + self.line_offset}:{off - self.line_starts[line - 1] + 1}"


def op_name_end(text: str, off: int, name: str) -> tuple[int, bool] | None:
    """Where the name of op `name`, written at `off`, ends, and whether it is in
    the generic (quoted) form; None if `off` does not hold that op's name (a
    custom form may leave out the dialect)."""
    m = _OP_NAME_RE.match(text, off)
    if m is None:
        return None
    if m.group(1) is not None:
        return (m.end(), True) if m.group(1) == name else None
    return (m.end(), False) if name == m.group(2) or name.endswith("." + m.group(2)) else None


def result_names(src: SourceText, line_start: int, off: int, op_name: str) -> tuple[int, list]:
    """The `%a, %b:2 =` before the op written at `off`: its start, and for each
    group its name hint (None where xDSL keeps none) and result count."""
    rm = _RESULTS_RE.search(src.text, line_start, off)
    if rm is None:
        raise Unsupported(f"results of op '{op_name}' not found before {src.where(off)}")
    return rm.start(1), [
        (name if _VALID_NAME_RE.fullmatch(name) else None, int(size) if size else 1)
        for name, size in _RESULT_RE.findall(rm.group(1))
    ]


def block_arg_name(src: SourceText, loc: str) -> str | None:
    """The name hint of the block argument upstream locates at `loc` (None where
    xDSL keeps none)."""
    off = src.offset(loc, "block argument")[2]
    m = _ARG_NAME_RE.match(src.text, off)
    if m is None:
        raise Unsupported(f"no block argument name at {src.where(off)}")
    return m.group(1) if _VALID_NAME_RE.fullmatch(m.group(1)) else None


def generic_dicts(
    src: SourceText, pos: int, op_name: str, has_regions: bool, value: Callable[[str], Attribute]
) -> tuple[dict[str, Attribute], dict[str, Attribute] | None]:
    """The properties and attributes of a generic-form op whose name ends at
    `pos`, read from its text (source order) as xDSL's generic parser reads them;
    `value` converts the spelling of each value. The attributes are None where
    the op has regions: the dictionary follows them, and is not read here."""
    text = src.text
    m = _GENERIC_HEAD_RE.match(text, pos)
    if m is None:
        raise Unsupported(f"cannot read the operands of op '{op_name}' at {src.where(pos)}")
    pos = m.end()
    properties: dict[str, Attribute] = {}
    if m.group(1):
        properties, pos = dictionary(src, pos - 1, op_name, value)
        if text.startswith(">", pos):
            pos += 1
        else:
            raise Unsupported(f"properties of op '{op_name}' not closed at {src.where(pos)}")
    pos = skip_space(text, pos)
    if has_regions:
        if not text.startswith("(", pos):
            raise Unsupported(f"regions of op '{op_name}' not found at {src.where(pos)}")
        return properties, None
    attributes: dict[str, Attribute] = {}
    if text.startswith("{", pos):
        attributes, pos = dictionary(src, pos, op_name, value)
        pos = skip_space(text, pos)
    if not text.startswith(":", pos):
        raise Unsupported(f"op '{op_name}' not read up to its type at {src.where(pos)}")
    return properties, attributes


def dictionary(
    src: SourceText, pos: int, op_name: str, value: Callable[[str], Attribute]
) -> tuple[dict[str, Attribute], int]:
    """The `{key = value, ...}` at `pos` (after spaces): entries in order, values
    converted one by one by `value`; and the position after the `}`."""
    text = src.text
    assert text[pos] == "{"
    pos = skip_space(text, pos + 1)
    entries: dict[str, Attribute] = {}
    if text.startswith("}", pos):
        return entries, pos + 1
    while True:
        km = _KEY_RE.match(text, pos)
        if km is None:
            raise Unsupported(f"cannot read a key in op '{op_name}' at {src.where(pos)}")
        key = km.group(1) if km.group(1) is not None else km.group(2)
        if key in entries:
            raise Unsupported(f"duplicate key '{key}' in op '{op_name}'")
        pos = km.end()
        if km.group(3):  # `=`: a value follows
            end = value_end(text, pos)
            if end is None:
                raise Unsupported(f"cannot find the end of '{key}' in op '{op_name}'")
            entries[key] = value(text[pos:end])
            pos = end
        else:
            entries[key] = _UNIT
        pos = skip_space(text, pos)
        if text.startswith(",", pos):
            pos = skip_space(text, pos + 1)
        elif text.startswith("}", pos):
            return entries, pos + 1
        else:
            raise Unsupported(f"cannot read the dictionary of op '{op_name}' at {src.where(pos)}")


def left_to_xdsl(text: str, max_nesting: int) -> str | None:
    """Why `text` must not be given to upstream (None where it may be)."""
    guard = TEXT_GUARDS.search(text)
    if guard:
        return f"text contains {guard.group(0)!r}"
    if nesting_depth(text) > max_nesting:
        return f"brackets nest deeper than {max_nesting}"
    return None


def nesting_depth(text: str) -> int:
    """How deep brackets nest in `text`, strings and comments aside."""
    depth = deepest = 0
    for c in _BRACKET_RE.findall(_STRINGS_COMMENTS_ARROWS_RE.sub("", text)):
        if c in _OPENERS:
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def skip_space(text: str, pos: int) -> int:
    return _SPACE_RE.match(text, pos).end()


def value_end(text: str, pos: int) -> int | None:
    """End of the attribute value starting at `pos`: the `,` or `}` that closes
    it, brackets and strings skipped."""
    depth = 0
    for m in _VALUE_TOKEN_RE.finditer(text, pos):
        tok = m.group(0)
        if tok in _OPENERS:
            depth += 1
        elif tok in _CLOSERS:
            if depth == 0:
                return m.start() if tok == "}" else None
            depth -= 1
        elif tok == "," and depth == 0:
            return m.start()
    return None
