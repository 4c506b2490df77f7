"""Loops of the Python lowering: `for` over range() (scf.for on i64, a constant
negative step counting down) or over the indices of a sequence, and `while`
(scf.while). Variables assigned in the body and defined before the loop are
carried (iter_args); their types are inferred until stable, so `s = 0` that
becomes a float is carried as a float. The loop variable is not defined after
the loop (it may not have run)."""

from __future__ import annotations

import ast

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import i64
from xdsl.ir import Block, Region

from frontends.source import assigned_names, normalize
from frontends.values import Typed, Val, discard


class LoopLowering:
    """Mixin of BodyLowering (which provides emit, vars, convert, unify_types, ...)."""

    # ------------------------------------------------------------ loops
    def carried(self, body: list[ast.stmt], exclude: set[str] = frozenset()) -> list[str]:
        return [n for n in assigned_names(body) if n in self.vars and n not in exclude]

    def loop_types(self, names: list[str], build):
        """Lower a loop body until the carried types are stable: a variable that
        starts as an int and becomes a float is carried as a float (Python's
        promotion). `build(specs)` lowers with carried (type, weak) `specs` and
        returns (blocks, yielded vals); returns (blocks, inits, yielded, specs)."""
        inits = [self.vars[n] for n in names]
        specs = [(v.type, v.weak) for v in inits]
        for _ in range(4):
            blocks, yielded = build(specs)
            new = [(self.unify_types(Val(Typed(t), w), y), w and y.weak) for (t, w), y in zip(specs, yielded)]
            if new == specs:
                return blocks, inits, yielded, specs
            for b in blocks:
                discard(b)
            specs = new
        raise self.error("the type of a loop variable does not settle (int, float, ...?)")

    def _enter(self, block: Block, env: dict[str, Val]):
        saved = (self.block, self.vars)
        self.block, self.vars = block, env
        self.loops += 1
        return saved

    def _leave(self, saved) -> None:
        self.block, self.vars = saved
        self.loops -= 1

    def emit_for(self, lb: Val, ub: Val, step: Val, body_fn, names: list[str], loop_node) -> None:
        """scf.for lb..ub step, i64 bounds; `body_fn(iv)` lowers one iteration
        (assigning the target); variables in `names` are carried."""

        def build(specs):
            block = Block(arg_types=[i64, *[t for t, _ in specs]])
            env = dict(self.vars)
            env.update({n: Val(a, w) for n, a, (_, w) in zip(names, block.args[1:], specs)})
            saved = self._enter(block, env)
            try:
                self.node = loop_node
                body_fn(Val(block.args[0], True, lb.lo if step.lo is not None and step.lo > 0 else None))
                yielded = [self.vars[n] for n in names]
            finally:
                self._leave(saved)
            return [block], yielded

        blocks, inits, yielded, specs = self.loop_types(names, build)
        (block,) = blocks
        saved, self.block = self.block, block
        self.emit(scf.YieldOp(*[self.convert(y, t).ssa for y, (t, _) in zip(yielded, specs)]))
        self.block = saved
        self.node = loop_node
        init_ssa = [self.convert(i, t).ssa for i, (t, _) in zip(inits, specs)]
        op = self.emit(scf.ForOp(lb.ssa, ub.ssa, step.ssa, init_ssa, Region(block)))
        for n, r, (_, w) in zip(names, op.results, specs):
            self.vars[n] = Val(r, w)

    def lower_for(self, target: ast.expr, iterable: ast.expr, body: list[ast.stmt]) -> None:
        stmts = normalize(body)
        bound = set(assigned_names([ast.For(target=target, iter=iterable, body=[], orelse=[])]))
        names = self.carried(stmts, exclude=bound)

        def body_fn(element) -> None:
            self.assign(target, element)
            self.lower_stmts(stmts)

        self.loop_over(iterable, body_fn, names, iterable)
        for n in bound:  # the loop variable is not defined after the loop (it may not have run)
            self.vars.pop(n, None)
            self.partial.add(n)
        for n in assigned_names(stmts):
            if n not in self.vars:
                self.partial.add(n)

    def range_loop(self, args: list[Val], body_fn, names: list[str], node) -> None:
        """for i in range(...) over i64 values; a constant negative step counts down."""
        if len(args) == 1:
            lb, ub, step = self.const_int(0), args[0], self.const_int(1)
        elif len(args) == 2:
            (lb, ub), step = args, self.const_int(1)
        elif len(args) == 3:
            lb, ub, step = args
        else:
            raise self.error(f"range takes 1 to 3 arguments, got {len(args)}", node)
        if step.lo is not None and isinstance(step.ssa.owner, arith.ConstantOp):
            s = step.ssa.owner.value.value.data
            if s == 0:
                raise self.error("range() step must not be zero", node)
            if s < 0:  # j = 0 .. ceil((lb - ub) / -s); i = lb + j*s
                span = self.emit(arith.SubiOp(lb.ssa, ub.ssa)).result
                n = self.emit(arith.CeilDivSIOp(span, self.const_int(-s).ssa)).result
                n = Val(self.emit(arith.MaxSIOp(n, self.const_int(0).ssa)).result, True, 0)

                def down(j: Val) -> None:
                    off = self.emit(arith.MuliOp(j.ssa, step.ssa)).result
                    body_fn(Val(self.emit(arith.AddiOp(lb.ssa, off)).result))

                return self.emit_for(self.const_int(0), n, self.const_int(1), down, names, node)
        return self.emit_for(lb, ub, step, body_fn, names, node)

    def lower_while(self, s: ast.While) -> None:
        stmts = normalize(s.body)
        names = self.carried(stmts)

        def build(specs):
            before = Block(arg_types=[t for t, _ in specs])
            after = Block(arg_types=[t for t, _ in specs])
            env = dict(self.vars)
            env.update({n: Val(a, w) for n, a, (_, w) in zip(names, before.args, specs)})
            saved = self._enter(before, env)
            try:
                self.node = s.test
                cond = self.truth(self.expr(s.test))
                self.emit(scf.ConditionOp(cond, *before.args))
            finally:
                self._leave(saved)
            env = dict(self.vars)
            env.update({n: Val(a, w) for n, a, (_, w) in zip(names, after.args, specs)})
            saved = self._enter(after, env)
            try:
                self.lower_stmts(stmts)
                yielded = [self.vars[n] for n in names]
            finally:
                self._leave(saved)
            return [before, after], yielded

        blocks, inits, yielded, specs = self.loop_types(names, build)
        before, after = blocks
        saved, self.block = self.block, after
        self.emit(scf.YieldOp(*[self.convert(y, t).ssa for y, (t, _) in zip(yielded, specs)]))
        self.block = saved
        self.node = s
        init_ssa = [self.convert(i, t).ssa for i, (t, _) in zip(inits, specs)]
        op = self.emit(scf.WhileOp(init_ssa, [t for t, _ in specs], Region(before), Region(after)))
        for n, r, (_, w) in zip(names, op.results, specs):
            self.vars[n] = Val(r, w)
        for n in assigned_names(stmts):
            if n not in self.vars:
                self.partial.add(n)
