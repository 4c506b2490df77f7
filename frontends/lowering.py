"""Statements and control flow of a Python function -> func/scf, shared by the
numeric-kernel lowering (`lower_kernel`) and the orchestration lowering
(`lower_python`), which supply the meaning of expressions and types.

Variables are SSA values in a name table; a branch or loop that assigns a variable
defined before it yields the new value (scf.if results, scf.for/while iter_args).
Early exits become structured first (`source.normalize`): a `return`, `continue`
or `raise` always ends its statement list, so an `if` that returns yields the
returned values. `break`, `return` inside a loop and loop `else` are errors.
"""

from __future__ import annotations

import ast

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from frontends.lower_loops import LoopLowering
from frontends.source import MISSING, FunctionSource, normalize
from frontends.values import RAISED, Returned, Val

__all__ = ["BodyLowering", "Val"]

_STATEMENTS = {"FunctionDef": "a nested function definition (define it at module level)",
               "AsyncFunctionDef": "a nested function definition", "ClassDef": "a class definition",
               "Global": "global (functions read globals; assign through an object)",
               "Nonlocal": "nonlocal", "Delete": "del", "Import": "import inside the function",
               "ImportFrom": "import inside the function", "Try": "try statement",
               "With": "with statement", "AsyncWith": "async with", "AsyncFor": "async for",
               "Match": "match statement"}


class BodyLowering(LoopLowering):
    """One Python function -> one func.func. Subclasses implement the expression
    hooks (`other_expr` and what `expr` dispatches to: `constant`, `global_value`,
    `binop`, `unaryop`, `compare`, `call`; `truth`, `unify_types`, `convert`,
    `store`, loops over values, `implicit_return`)."""

    def __init__(self, src: FunctionSource, builder, name: str):
        self.src, self.builder, self.name = src, builder, name
        self.block: Block | None = None
        self.vars: dict[str, Val] = {}
        self.partial: set[str] = set()  # assigned on some paths only, or only inside a loop
        self.loops = 0
        self.node: ast.AST | None = src.tree

    # ------------------------------------------------------------ emitting
    def emit(self, op: Operation) -> Operation:
        op.location = self.src.loc(self.node)
        self.block.add_op(op)
        return op

    def const_int(self, value: int, t: Attribute = i64) -> Val:
        return Val(self.emit(arith.ConstantOp(IntegerAttr(value, t))).result, True, value)

    def const_bool(self, value: bool) -> Val:
        return Val(self.emit(arith.ConstantOp(IntegerAttr(int(value), i1))).result, True, int(value))

    def error(self, message: str, node: ast.AST | None = None):
        return self.src.error(node or self.node, message)

    def unsupported(self, what: str, node: ast.AST | None = None):
        return self.src.unsupported(node or self.node, what)

    # ------------------------------------------------------------ function
    def lower_function(self, arg_types: list[Attribute]) -> func.FuncOp:
        """The func.func; result types come from the returns (`result_types` overrides)."""
        tree = self.src.tree
        a = tree.args
        if a.vararg or a.kwarg or a.posonlyargs:
            raise self.unsupported("*args, **kwargs and positional-only parameters", tree)
        params = [p.arg for p in a.args + a.kwonlyargs]
        if len(params) != len(arg_types):
            raise self.error(f"'{self.src.name}' takes {len(params)} parameters, {len(arg_types)} given", tree)
        entry = Block(arg_types=arg_types)
        self.block = entry
        for i, (p, arg) in enumerate(zip(params, entry.args)):
            arg.name_hint = p
            self.vars[p] = self.entry_value(i, arg)
        body = normalize(self._without_docstring(tree.body))
        out = self.lower_stmts(body)
        values = self.finish_returns(out)
        self.node = tree
        self.emit(func.ReturnOp(*[v.ssa for v in values]))
        f = func.FuncOp(self.name, (arg_types, [v.type for v in values]), Region(entry))
        f.location = self.src.loc(tree)
        return f

    def entry_value(self, index: int, arg: SSAValue) -> Val:
        return Val(arg)

    def finish_returns(self, out) -> list[Val]:
        if isinstance(out, Returned):
            return out.values
        return self.implicit_return()

    @staticmethod
    def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            return body[1:]
        return body

    # ------------------------------------------------------------ statements
    def lower_stmts(self, stmts: list[ast.stmt]):
        """None (falls through), Returned(values) or RAISED."""
        for s in stmts:
            self.node = s
            if isinstance(s, ast.Return):
                if self.loops:
                    raise self.unsupported("return inside a loop (compute a value, return after the loop)", s)
                return Returned(self.return_values(s.value))
            if isinstance(s, ast.Continue):
                return None  # normalize() made it the last statement of the loop body
            if isinstance(s, ast.Raise):
                self.lower_raise(s)
                return RAISED
            if isinstance(s, ast.If):
                out = self.lower_if(s)
                if out is not None:
                    return out
                continue
            self.lower_stmt(s)
        return None

    def lower_stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # a string used as a comment
            self.expr_statement(s.value)
        elif isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for t in s.targets:
                self.assign(t, value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is None:
                return
            self.assign(s.target, self.annotated_value(s.annotation, self.expr(s.value)))
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s)
        elif isinstance(s, ast.For):
            if s.orelse:
                raise self.unsupported("for ... else", s)
            self.lower_for(s.target, s.iter, s.body)
        elif isinstance(s, ast.While):
            if s.orelse:
                raise self.unsupported("while ... else", s)
            self.lower_while(s)
        elif isinstance(s, ast.Assert):
            self.lower_assert(s)
        elif isinstance(s, ast.Break):
            raise self.unsupported("break (loops run to their end; use while with a condition)", s)
        else:
            raise self.unsupported(_STATEMENTS.get(type(s).__name__, f"{type(s).__name__.lower()} statement"), s)

    # ------------------------------------------------------------ expressions
    def expr(self, node: ast.expr):
        """The node's value. The forms both lowerings read the same way (names,
        operators, comparisons, `and`/`or`, `x if c else y`, calls) are dispatched
        here to the subclass's hooks; any other goes to its `other_expr`."""
        self.node = node
        if isinstance(node, ast.Constant):
            return self.constant(node.value)
        if isinstance(node, ast.Name):
            v = self.lookup(node.id, node)
            if v is not None:
                return v
            value = self.src.resolve(node.id)
            if value is MISSING:
                raise self.error(f"name '{node.id}' is not defined", node)
            return self.global_value(value, node.id)
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left), self.expr(node.right)
            self.node = node
            return self.binop(node.op, left, right)
        if isinstance(node, ast.UnaryOp):
            return self.unaryop(node)
        if isinstance(node, ast.Compare):
            return self.lower_compare(node)
        if isinstance(node, ast.BoolOp):
            return self.lower_boolop(node)
        if isinstance(node, ast.IfExp):
            return self.lower_ifexp(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        return self.other_expr(node)

    def expr_statement(self, node: ast.expr) -> None:
        self.expr(node)

    def annotated_value(self, annotation: ast.expr, value: Val) -> Val:
        return value

    def lookup(self, name: str, node: ast.AST) -> Val | None:
        v = self.vars.get(name)
        if v is None and name in self.partial:
            raise self.error(f"'{name}' is not assigned on every path before this use "
                             "(assign it before the branch or loop)", node)
        return v

    def assign(self, target: ast.expr, value: Val) -> None:
        if isinstance(target, ast.Name):
            self.vars[target.id] = value
            self.partial.discard(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack_assign(target, value)
        else:
            self.store(target, value)

    def aug_assign(self, s: ast.AugAssign) -> None:
        if isinstance(s.target, ast.Name):
            old = self.lookup(s.target.id, s.target)
            if old is None:
                raise self.error(f"'{s.target.id}' is used before it is assigned", s.target)
            self.vars[s.target.id] = self.binop(s.op, old, self.expr(s.value), inplace=True)
        else:
            self.aug_store(s)

    # ------------------------------------------------------------ branches
    def _branch(self, stmts: list[ast.stmt], env: dict[str, Val]):
        block = Block()
        saved = (self.block, self.vars, set(self.partial))
        self.block, self.vars = block, dict(env)
        try:
            out = self.lower_stmts(stmts)
            return block, self.vars, out
        finally:
            branch_partial = self.partial
            self.block, self.vars, self.partial = saved
            self.partial |= branch_partial

    def lower_if(self, s: ast.If):
        cond = self.truth(self.expr(s.test))
        self.node = s
        before = dict(self.vars)
        tb, tenv, tout = self._branch(s.body, before)
        eb, eenv, eout = self._branch(s.orelse, before)
        self.node = s
        if isinstance(tout, Returned) or isinstance(eout, Returned):
            return self._returning_if(cond, (tb, tenv, tout), (eb, eenv, eout))
        if tout is RAISED and eout is RAISED:
            for b in (tb, eb):
                b.add_op(scf.YieldOp())
            self.emit(scf.IfOp(cond, [], Region(tb), Region(eb)))
            return RAISED
        # a branch that raised never reaches the join: it yields the other's values
        if tout is RAISED:
            tenv = {n: v for n, v in eenv.items()}
        if eout is RAISED:
            eenv = {n: v for n, v in tenv.items()}
        names = [n for n in dict.fromkeys([*tenv, *eenv])
                 if n in tenv and n in eenv and (tenv[n] is not before.get(n) or eenv[n] is not before.get(n))]
        for n in set(tenv) ^ set(eenv):
            self.partial.add(n)
            self.vars.pop(n, None)
        tvals = [tenv[n] if tout is not RAISED else None for n in names]
        evals = [eenv[n] if eout is not RAISED else None for n in names]
        results = self._join(cond, tb, eb, tvals, evals)
        for n, v in zip(names, results):
            self.vars[n] = v
        return None

    def _join(self, cond, tb: Block, eb: Block, tvals: list, evals: list) -> list[Val]:
        """scf.if yielding tvals / evals (None: that branch raised), types unified."""
        known = [(t if t is not None else e, e if e is not None else t) for t, e in zip(tvals, evals)]
        types = [self.unify_types(t, e) for t, e in known]
        for block, vals in ((tb, tvals), (eb, evals)):
            saved, self.block = self.block, block
            yielded = [self.convert(v, t).ssa if v is not None else self.placeholder(t).ssa
                       for v, t in zip(vals, types)]
            self.emit(scf.YieldOp(*yielded))
            self.block = saved
        op = self.emit(scf.IfOp(cond, types, Region(tb), Region(eb)))
        return [Val(r, t.weak and e.weak, min(t.lo, e.lo) if t.lo is not None and e.lo is not None else None)
                for r, (t, e) in zip(op.results, known)]

    def _returning_if(self, cond, then, other):
        outs = []
        for block, env, out in (then, other):
            if isinstance(out, Returned):
                outs.append(out.values)
            elif out is RAISED:
                outs.append(None)
            else:
                saved = (self.block, self.vars)
                self.block, self.vars = block, env
                outs.append(self.implicit_return())
                self.block, self.vars = saved
        t, e = outs
        if t is not None and e is not None and len(t) != len(e):
            raise self.error(f"the branches return {len(t)} and {len(e)} values; "
                             "every path of a kernel must return the same number of values")
        n = len(t if t is not None else e)
        tvals = t if t is not None else [None] * n
        evals = e if e is not None else [None] * n
        return Returned(self._join(cond, then[0], other[0], tvals, evals))

    def placeholder(self, t: Attribute) -> Val:
        """A value for a path that raised (never used)."""
        raise NotImplementedError

    # ------------------------------------------------------------ shared expressions
    def lower_boolop(self, node: ast.BoolOp) -> Val:
        """`a and b` / `a or b`: Python's values, short-circuit (scf.if)."""
        left = self.expr(node.values[0])
        for right_node in node.values[1:]:
            cond = self.truth(left)
            self.node = node
            other_block = Block()
            saved, self.block = self.block, other_block
            right = self.expr(right_node)
            self.block = saved
            same_block = Block()
            self.node = node
            if isinstance(node.op, ast.And):
                (left,) = self._join(cond, other_block, same_block, [right], [left])
            else:
                (left,) = self._join(cond, same_block, other_block, [left], [right])
        return left

    def lower_compare(self, node: ast.Compare) -> Val:
        """`a < b < c`: `(a < b) and (b < c)` with b evaluated once, short-circuit."""

        def chain(left, i: int) -> Val:
            right = self.expr(node.comparators[i])
            self.node = node
            r = self.compare(node.ops[i], left, right)
            if i == len(node.ops) - 1:
                return r
            cond = self.truth(r)
            rest = Block()
            saved, self.block = self.block, rest
            nxt = chain(right, i + 1)
            self.block = saved
            self.node = node
            (out,) = self._join(cond, rest, Block(), [nxt], [r])
            return out

        return chain(self.expr(node.left), 0)

    def lower_ifexp(self, node: ast.IfExp) -> Val:
        cond = self.truth(self.expr(node.test))
        blocks, vals = [], []
        for branch in (node.body, node.orelse):
            block = Block()
            saved, self.block = self.block, block
            vals.append(self.expr(branch))
            self.block = saved
            blocks.append(block)
        self.node = node
        (v,) = self._join(cond, blocks[0], blocks[1], [vals[0]], [vals[1]])
        return v
