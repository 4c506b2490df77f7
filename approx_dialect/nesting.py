"""Deeply nested IR.

xDSL's parser, verifier, passes and printer recurse a few Python frames per level of
nesting, so Python's defaults (1,000 frames; the main thread's 8 MB C stack) stop
at about 120 levels, where upstream MLIR goes far deeper. A call that runs out of
recursion (`deep_retry`) is run again on a thread with a large stack and a high
recursion limit; there, inputs nested up to MAX_NESTING levels work, and deeper ones
are a located one-line error (`check_nesting`). Walks (`walk`, `post_order`) and xDSL's
IsolatedFromAbove check are replaced by loops linear in the depth (xDSL's nested
generators and parent chains are quadratic in it)."""

from __future__ import annotations

import functools
import re
import sys
import threading

from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import VerifyException

from approx_dialect.diagnostics import ApproxError

MAX_NESTING = 2048  # levels of brackets ({ ( [) an input may nest: 1,000 levels of generic-form regions `({`
_STACK_BYTES = 1 << 30  # virtual; only the pages used are touched
_RECURSION_LIMIT = 100 * MAX_NESTING + 10_000

_state = threading.local()

# Brackets outside strings and comments.
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[{}()\[\]]')
_OPEN = {"{": "}", "(": ")", "[": "]"}


def walk(op) -> list:
    """`op` and every op nested in it, in pre-order, as a list. Unlike xDSL's
    `Operation.walk` (generators nested once per level, so quadratic in the depth),
    linear at any depth."""
    out, stack = [], [op]
    while stack:
        cur = stack.pop()
        out.append(cur)
        children = [child for region in cur.regions for block in region.blocks for child in block.ops]
        stack.extend(reversed(children))
    return out


def post_order(op) -> list:
    """`op` and every op nested in it, innermost first (children before their parent)."""
    out, stack = [], [(op, False)]
    while stack:
        cur, expanded = stack.pop()
        if expanded:
            out.append(cur)
            continue
        stack.append((cur, True))
        children = [child for region in cur.regions for block in region.blocks for child in block.ops]
        stack.extend((child, False) for child in reversed(children))
    return out


def verify_isolated_from_above(self, op) -> None:
    """xDSL's IsolatedFromAbove check, linear in the size of `op`: xDSL walks up from
    every operand's owner to `op` (quadratic in the depth). As there, ops nested in
    another isolated op are left to that op's own check. Installed by `xdsl_compat`."""
    inside: set[int] = set()
    checked = []
    stack = [b for region in op.regions for b in region.blocks]
    while stack:
        block = stack.pop()
        inside.add(id(block))
        for child in block.ops:
            inside.add(id(child))
            checked.append(child)
            if not child.has_trait(IsolatedFromAbove):
                stack.extend(b for region in child.regions for b in region.blocks)
    for child in checked:
        for operand in child.operands:
            if id(operand.owner) not in inside:
                raise VerifyException(f"Operation using value defined out of its IsolatedFromAbove parent: {child}")



def in_deep_mode() -> bool:
    return getattr(_state, "deep", False)


def check_nesting(text: str, filename: str, line_offset: int = 0, limit: int = MAX_NESTING) -> None:
    """Raise a located ApproxError at the first bracket nested more than `limit` deep."""
    depth = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok in _OPEN:
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                raise ApproxError(f"input nests too deeply (more than {limit} levels)",
                                  where=f"{filename}:{line + line_offset}:{col}")
        elif tok in "})]":
            depth = max(depth - 1, 0)


def deep_retry(fn):
    """`fn`, run again with room for deep recursion when it runs out (it must not have
    changed anything it was given by then: parsing, or a pipeline from text)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if in_deep_mode():
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            pass
        return run_deep(fn, *args, **kwargs)

    return wrapper


def run_deep(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` on a thread with a large stack and recursion limit."""
    outcome: dict = {}

    def body():
        _state.deep = True
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as err:  # re-raised in the caller's thread
            outcome["error"] = err

    old_stack = threading.stack_size(_STACK_BYTES)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
    try:
        worker = threading.Thread(target=body, name="approx-deep-nesting", daemon=True)
        worker.start()
    finally:
        threading.stack_size(old_stack)
    try:
        while worker.is_alive():
            worker.join(0.1)  # in slices, so that Ctrl-C reaches the main thread
    finally:
        sys.setrecursionlimit(old_limit)
    if "error" in outcome:
        err = outcome["error"]
        if isinstance(err, RecursionError):
            raise ApproxError(f"input nests too deeply (more than {MAX_NESTING} levels)") from None
        raise err
    return outcome["value"]
