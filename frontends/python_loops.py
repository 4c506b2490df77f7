"""Loops of orchestration code (`lower_python`): `for i in range(...)` with a
literal step is an scf.for over i64; any other `for x in xs` is an scf.for over
the indices of `xs` (materialised once with `as_sequence`); a list / set / dict
comprehension or generator expression is such loops appending to a fresh
container. Kept apart from the expression lowering so each stays one job."""

from __future__ import annotations

import ast
import builtins
import operator

from xdsl.dialects import scf
from xdsl.dialects.builtin import i64
from xdsl.ir import Block, Region

from frontends import pyruntime as rt
from frontends.values import Val


class PythonLoops:
    """Mixin of `PythonLowering`: loops over values and comprehensions (it uses the
    lowering's `pycall`, `expr`, `truth`, `assign` and `range_loop`)."""

    def _literal_int(self, node: ast.expr):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self._literal_int(node.operand)
            return -inner if inner is not None else None
        return None

    def loop_over(self, iterable: ast.expr, body_fn, names, node) -> None:
        if isinstance(iterable, ast.Call) and self.resolve_static(iterable.func) is builtins.range \
                and not iterable.keywords and 1 <= len(iterable.args) <= 3 \
                and not any(isinstance(a, ast.Starred) for a in iterable.args):
            step = self._literal_int(iterable.args[2]) if len(iterable.args) == 3 else 1
            if step is not None and step != 0:  # else: the generic path (exact for any step)
                args = []
                for a in iterable.args:
                    lit = self._literal_int(a)
                    args.append(self.const_int(lit) if lit is not None else self.convert(self.expr(a), i64))
                self.node = node
                return self.range_loop(args, lambda iv: body_fn(iv), names, node)
        seq = self.pycall(rt.as_sequence, [self.expr(iterable)])
        n = self.convert(self.pycall(builtins.len, [seq]), i64)

        def element(iv: Val) -> None:
            body_fn(self.pycall(operator.getitem, [seq, iv]))

        self.range_loop([n], element, names, node)

    def comprehension(self, node) -> Val:
        """[elt for x in xs if c ...] as loops appending to a fresh list (set, dict);
        a generator expression gives a list."""
        self.node = node
        if isinstance(node, ast.SetComp):
            acc, add = self.pycall(rt.build_set, []), set.add
        elif isinstance(node, ast.DictComp):
            acc, add = self.pycall(rt.build_dict, []), operator.setitem
        else:
            acc, add = self.pycall(rt.build_list, []), list.append
        saved_vars, saved_partial = dict(self.vars), set(self.partial)

        def level(i: int) -> None:
            gen = node.generators[i]
            if gen.is_async:
                raise self.unsupported("async comprehension", gen)

            def body(element: Val) -> None:
                self.assign(gen.target, element)
                self._guarded(list(gen.ifs), lambda: level(i + 1) if i + 1 < len(node.generators) else emit_item())

            self.loop_over(gen.iter, body, [], gen)

        def emit_item() -> None:
            if isinstance(node, ast.DictComp):
                k, v = self.expr(node.key), self.expr(node.value)
                self.pycall(add, [acc, k, v])
            else:
                self.pycall(add, [acc, self.expr(node.elt)])

        level(0)
        self.vars, self.partial = saved_vars, saved_partial
        return acc

    def _guarded(self, conds: list, inner) -> None:
        if not conds:
            return inner()
        ok = self.truth(self.expr(conds[0]))
        then = Block()
        saved, self.block = self.block, then
        self._guarded(conds[1:], inner)
        self.emit(scf.YieldOp())
        self.block = saved
        other = Block()
        other.add_op(scf.YieldOp())
        self.emit(scf.IfOp(ok, [], Region(then), Region(other)))
