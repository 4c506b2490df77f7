"""Mutators of MLIR text, written as hypothesis draws so failures shrink: bytes,
tokens, lines, attribute values, huge numbers, unicode and deep nesting.

Each takes `draw` (from `st.composite`) and the text, and returns the new text
(or bytes, for byte-level mutations that may leave UTF-8)."""

from __future__ import annotations

import re
from functools import lru_cache

from hypothesis import strategies as st

from tests.fuzz.corpus import TOKEN, token_pool

INTERESTING_INTS = (0, 1, -1, 2, 3, 7, 64, 127, 128, 255, 256, 1023, 1024, 2**15, 2**16, 2**31 - 1, 2**31,
                    -(2**31), -(2**31) - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30, 10**400)
INTERESTING_FLOATS = ("0.0", "-0.0", "1.5", "1e308", "1e400", "-1e400", "nan", "inf", "0x7FF8000000000000", "1e-320")
INTERESTING_TOKENS = ("{", "}", "(", ")", "<", ">", "[", "]", "<{", "}>", '"', ":", ",", "=", "->", "^bb0", "%",
                      "@", "#", "!", "\\", "\x00", "module", "func.func", "scf.for", "approx.yield", "index", "i32",
                      "memref<?xf64>", "array<i32>", "dense<0>", "unit", "affine_map<(d0) -> (d0)>", "loc(unknown)",
                      "\u202e", "é", "💥", "\ufeff", "\r", "\t")
UNICODE = ("é", "ß", "Ω", "字", "💥", "\u202e", "\u200b", "\ufeff", "\U0010ffff", "Ａ", "ﬁ", "\u0301", "\x7f", "\x01")


_INTS = st.one_of(st.sampled_from(INTERESTING_INTS), st.integers(-5, 70))


def ints() -> st.SearchStrategy[int]:
    return _INTS


@lru_cache(maxsize=None)
def _sampled(values: tuple) -> st.SearchStrategy:
    """Strategies are built once: hypothesis validates each new one (slow in a loop)."""
    return st.sampled_from(values)


def _pos(draw, n: int) -> int:
    return draw(st.integers(0, max(n - 1, 0)))


def byte_mutation(draw, text: str) -> bytes:
    data = bytearray(text.encode())
    op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "invalid_utf8"]))
    i = _pos(draw, len(data))
    if op == "flip" and data:
        data[i] ^= 1 << draw(st.integers(0, 7))
    elif op == "insert":
        data[i:i] = draw(st.binary(min_size=1, max_size=8))
    elif op == "delete":
        del data[i:i + draw(st.integers(1, 64))]
    elif op == "truncate":
        del data[i:]
    else:
        data[i:i] = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00"]))
    return bytes(data)


def token_mutation(draw, text: str) -> str:
    spans = [m.span() for m in TOKEN.finditer(text)]
    if not spans:
        return text + draw(st.sampled_from(INTERESTING_TOKENS))
    a, b = spans[_pos(draw, len(spans))]
    op = draw(st.sampled_from(["delete", "duplicate", "replace", "interesting", "swap"]))
    if op == "delete":
        return text[:a] + text[b:]
    if op == "duplicate":
        return text[:b] + " " + text[a:b] + text[b:]
    if op == "replace":
        return text[:a] + draw(_sampled(token_pool())) + text[b:]
    if op == "interesting":
        return text[:a] + draw(st.sampled_from(INTERESTING_TOKENS)) + text[b:]
    c, d = spans[_pos(draw, len(spans))]
    if c < a:
        (a, b), (c, d) = (c, d), (a, b)
    if c < b:
        return text
    return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]


def line_mutation(draw, text: str) -> str:
    lines = text.splitlines()
    if not lines:
        return text
    i, j = _pos(draw, len(lines)), _pos(draw, len(lines))
    op = draw(st.sampled_from(["delete", "duplicate", "swap", "move", "truncate", "delete_block"]))
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(j, lines[i])
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "move":
        lines.insert(j, lines.pop(i))
    elif op == "truncate":
        del lines[i:]
    else:
        del lines[min(i, j):max(i, j) + 1]
    return "\n".join(lines) + "\n"


#: `name = value` inside attribute dictionaries: arrays, strings, typed integers, words.
ATTR = re.compile(r'(\b[A-Za-z_]\w*) = (array<[^>]*>|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)? : \w+|[\w.]+)')


def attr_values(funcs: list[str]) -> st.SearchStrategy[str]:
    """Any attribute value, of the right type or not."""
    return _attr_values(tuple(funcs or ["f"]))


@lru_cache(maxsize=256)
def _attr_values(names: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(
        ints().map(lambda n: f"{n} : i32"),
        st.tuples(ints(), st.sampled_from(["i64", "i1", "index", "i8", "si32", "ui32"]))
        .map(lambda t: f"{t[0]} : {t[1]}"),
        st.sampled_from(INTERESTING_FLOATS).map(lambda f: f"{f} : f64"),
        st.sampled_from(names).map(lambda f: f'"{f}"'),
        st.sampled_from(names).map(lambda f: f'"@{f}"'),
        st.text(min_size=0, max_size=12).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
        st.sampled_from(UNICODE).map(lambda u: f'"{u}"'),
        st.tuples(st.sampled_from(["i32", "i64", "f64", "i1"]), st.lists(ints(), max_size=9)).map(
            lambda t: f"array<{t[0]}: {', '.join(map(str, t[1]))}>" if t[1] else f"array<{t[0]}>"),
        st.sampled_from(["unit", "[1, 2]", "{a = 1}", "dense<[1, 2]> : tensor<2xi32>", "@f", "i32",
                         "#approx", '"x" : i32', "array<i32: 1, 2", "true", "none", "affine_map<() -> ()>"]),
    )


def attr_mutation(draw, text: str, funcs: list[str]) -> str:
    found = list(ATTR.finditer(text))
    if not found:
        return text
    m = found[_pos(draw, len(found))]
    if draw(st.booleans()) and len(found) > 1:
        other = found[_pos(draw, len(found))].group(2)  # another attribute's value
    else:
        other = draw(attr_values(funcs))
    if draw(st.integers(0, 9)) == 0:
        return text[:m.start()] + text[m.end():]  # the attribute dropped
    return text[:m.start(2)] + other + text[m.end(2):]


NUMBER = re.compile(r"(?<![\w%@#^])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def number_mutation(draw, text: str) -> str:
    found = list(NUMBER.finditer(text))
    if not found:
        return text
    m = found[_pos(draw, len(found))]
    new = draw(st.one_of(ints().map(str), st.sampled_from(INTERESTING_FLOATS)))
    return text[:m.start()] + new + text[m.end():]


def unicode_mutation(draw, text: str) -> str:
    i = _pos(draw, len(text) + 1)
    return text[:i] + draw(st.text(st.sampled_from(UNICODE), min_size=1, max_size=4)) + text[i:]


def nesting_mutation(draw, text: str) -> str:
    """Deep nesting in the places a recursive parser or walker descends."""
    depth = draw(st.one_of(st.integers(2, 60), st.sampled_from([200, 999, 1000, 3000, 20000])))
    where = draw(st.sampled_from(["regions", "attr", "type", "modules", "parens"]))
    if where == "regions":
        close = '"scf.yield"() : () -> ()\n}) : () -> ()\n'
        body = "func.func @deep() {\n" + '"scf.execute_region"() ({\n' * depth + close * depth + "return\n}\n"
    elif where == "attr":
        body = f'func.func @deep() attributes {{x = {"[" * depth}1{"]" * depth}}} {{\nreturn\n}}\n'
    elif where == "type":
        body = f"func.func private @deep(%a: {'tuple<' * depth}i32{'>' * depth})\n"
    elif where == "modules":
        body = "module {\n" * depth + "}\n" * depth
    else:
        body = "(" * depth + ")" * draw(st.integers(0, depth))
    i = text.find("{") + 1 if "module" in text[:200] and draw(st.booleans()) else len(text)
    return text[:i] + "\n" + body + text[i:]


_PAREN_RESULT = re.compile(r"(iter_args\([^()]*\)\s*->\s*|scf\.if\s+%[\w$.-]+\s*->\s*)\(([^(),]+)\)")


def bare_result_types(draw, text: str) -> str:
    """`-> (f32)` after iter_args / an scf.if condition written `-> f32`, as upstream
    MLIR (and ApproxMLIR's inputs) allow; some or all occurrences."""
    every = draw(st.booleans())
    return _PAREN_RESULT.sub(lambda m: m.group(1) + m.group(2) if every or draw(st.booleans()) else m.group(0), text)


_DECISION_TREE = re.compile(r'("approx\.util\.annotation\.decision_tree"\(\)\s*<\{)([^}]*)(\}>)')


def approxmlir_attributes(draw, text: str) -> str:
    """A decision_tree annotation as ApproxMLIR's inputs write it: without
    state_indices / state_function (its runtime's defaults), decisions outside the
    decision_values range, one attribute per line."""

    def rewrite(m: re.Match) -> str:
        entries = [e.strip() for e in re.split(r",\s*(?=[A-Za-z_]+\s*=)", m.group(2)) if e.strip()]
        if draw(st.booleans()):
            drop = draw(st.sampled_from([("state_indices",), ("state_function",), ("state_indices", "state_function")]))
            entries = [e for e in entries if e.split("=")[0].strip() not in drop]
        if draw(st.booleans()):
            entries = [f"decision_values = {_array_i32(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))}"
                       if e.startswith("decision_values") else e for e in entries]
        if draw(st.booleans()):
            return m.group(1) + "\n    " + ",\n    ".join(entries) + "\n" + m.group(3)
        return m.group(1) + ", ".join(entries) + m.group(3)

    return _DECISION_TREE.sub(rewrite, text)


def _array_i32(values: list[int]) -> str:
    return f"array<i32: {', '.join(map(str, values))}>"


def deep_program(draw) -> tuple[str, int]:
    """A valid program nested `depth` regions deep (upstream MLIR accepts such depths):
    approx-opt must give output, up to approx_dialect.nesting.MAX_NESTING levels."""
    depth = draw(st.one_of(st.integers(100, 400), st.sampled_from([999, 1000, 1500])))
    kind = draw(st.sampled_from(["if", "execute_region", "for"]))
    if kind == "execute_region":  # two brackets a level: `({`
        depth = min(depth, 1000)
    if kind == "if":
        body = "scf.if %c {\n" * depth + "}\n" * depth
    elif kind == "execute_region":
        body = '"scf.execute_region"() ({\n' * depth + '"scf.yield"() : () -> ()\n}) : () -> ()\n' * depth
    else:
        body = "".join(f"scf.for %i{k} = %l to %u step %s {{\n" for k in range(depth)) + "}\n" * depth
    text = ("func.func @deep(%c: i1, %l: index, %u: index, %s: index) {\n" + body + "return\n}\n")
    return text, depth
