"""Fast parsing: upstream MLIR's C++ parser reads the text, and the xDSL IR is
built directly from the upstream objects (`upstream_convert`).

`approx_opt.parsing.parse_module` tries this first on large inputs. It gives
exactly the module that xDSL's own parser (`approx_dialect.context.LocatingParser`)
gives: same ops, operands, properties and attributes (in the same dictionary
order), `file:line:col` locations and SSA name hints, so that verification,
passes and printing cannot tell the difference. Whenever that
cannot be guaranteed, `UpstreamImporter.import_module` returns no module and the
reason, and the caller parses with xDSL instead. Errors never come from here: an
input upstream MLIR rejects, or that does not verify, is parsed again by xDSL,
whose messages and locations the toolchain reports.

Here: which inputs are worth it (`worth_trying`), upstream's Context, and the
reason for each fallback. Texts spelling what upstream rewrites while parsing are
left to xDSL (`op_text.TEXT_GUARDS`); `upstream_convert` builds the ops.
"""

from __future__ import annotations

import sys
import types

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.utils.exceptions import ParseError

from approx_dialect.context import make_context
from approx_opt.op_text import Unsupported, left_to_xdsl
from approx_opt.upstream_convert import convert_module

# Upstream's parser recurses on the C stack and crashes (SIGSEGV) on inputs
# nested a few thousand deep; xDSL's reports "input nests too deeply". Deeper
# inputs than this (in brackets of any kind) are left to xDSL.
MAX_NESTING = 200

# Inputs shorter than this are parsed by xDSL unless upstream MLIR is loaded
# already: importing it (~0.1 s) costs more than xDSL spends on a small module.
FAST_PATH_MIN_CHARS = 20_000

# Upstream keeps every type, attribute and location it has seen for the life of
# its Context: a long-running process (the autotuner) gets a fresh one now and then.
RENEW_AFTER_CHARS = 50_000_000
_NS_PREFIX = __name__ + "._upstream_dialects"
_UNREGISTERED_UPSTREAM = ("approx",)


def worth_trying(text: str) -> bool:
    return len(text) >= FAST_PATH_MIN_CHARS or "torch_mlir.ir" in sys.modules


class UpstreamImporter:
    """Builds xDSL modules from upstream MLIR's parse. Owns what outlives one input:
    upstream's Context (renewed after RENEW_AFTER_CHARS of text) and the attributes
    and types xDSL read from their spellings (the same spellings recur across inputs)."""

    def __init__(self) -> None:
        self._upstream: tuple | None = None  # (the bindings' ir module, its Context)
        self._chars = 0  # text parsed in that Context
        self.attr_cache: dict[str, Attribute] = {}
        self.type_cache: dict[str, Attribute] = {}

    def import_module(
        self, text: str, filename: str = "<stdin>", line_offset: int = 0, ctx: Context | None = None
    ) -> tuple[ModuleOp | None, str | None]:
        """(the module xDSL's LocatingParser would build from `text`, built from
        upstream MLIR's parse, None); or (None, why not) where that cannot be
        guaranteed or upstream MLIR cannot parse the text."""
        reason = left_to_xdsl(text, MAX_NESTING)
        if reason is not None:
            return None, reason
        try:
            ir, up_ctx = self._context(len(text))
        except Exception as err:  # torch_mlir missing or broken
            return None, f"upstream MLIR unavailable: {type(err).__name__}: {err}"
        try:
            up_module = ir.Module.parse(text, context=up_ctx)
        except Exception as err:  # MLIRError: left to xDSL, which reports its own error
            first = (str(err).strip().splitlines() or [""])
            return None, f"upstream MLIR cannot parse it: {' '.join(first[:2])}"
        ctx = ctx or make_context()
        try:
            with up_ctx:
                module = convert_module(up_module.operation, ctx, text, filename, line_offset,
                                        self.attr_cache, self.type_cache)
                return module, None
        except Unsupported as err:
            return None, str(err)
        except ParseError as err:  # an attribute or type xDSL does not read
            return None, f"xDSL cannot read an attribute: {err.msg}"
        except Exception as err:  # anything unforeseen: xDSL's parser decides
            return None, f"conversion failed: {type(err).__name__}: {err}"
        finally:
            del up_module

    def _context(self, chars: int):
        self._chars += chars
        if self._upstream is None or self._chars > RENEW_AFTER_CHARS:
            self._chars = chars
            from torch_mlir import ir
            from torch_mlir._mlir_libs import _mlir

            # For each op of a dialect it has no Python module for (`approx`), the
            # bindings try to import one, and do not remember that it failed (~5 us
            # an op). An empty module under a prefix of ours answers instead.
            for dialect in _UNREGISTERED_UPSTREAM:
                name = f"{_NS_PREFIX}.{dialect}"
                sys.modules.setdefault(name, types.ModuleType(name))
            if _NS_PREFIX not in _mlir.globals.dialect_search_modules:
                _mlir.globals.append_dialect_search_prefix(_NS_PREFIX)
            up_ctx = ir.Context()
            up_ctx.allow_unregistered_dialects = True
            self._upstream = (ir, up_ctx)
        return self._upstream
