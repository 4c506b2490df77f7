"""Arrays in numeric kernels: numpy arrays are memrefs (`memref<?x...xT>`); `a[i, j]`
loads, `a[i, j] = v` stores (converted to the element type as NumPy does),
`len(a)`, `a.shape[d]`, `for x in a` (1-D). Negative indices count from the end
(a select, skipped where the index is known to be >= 0); indices are not
bounds-checked."""

from __future__ import annotations

import ast

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i64

from frontends.values import Val


class KernelArrays:
    """Mixin of KernelLowering."""

    def dim(self, base: Val, d: int) -> Val:
        rank = len(base.type.shape)
        if not -rank <= d < rank:
            raise self.error(f"dimension {d} is out of range for an array of rank {rank}")
        idx = self.emit(arith.ConstantOp(IntegerAttr(d % rank, IndexType()))).result
        n = self.emit(memref.DimOp(base.ssa, idx)).result
        return Val(self.emit(arith.IndexCastOp(n, i64)).result, True, 0)

    def indices(self, base: Val, node: ast.Subscript) -> list:
        rank = len(base.type.shape)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(e, ast.Slice) for e in items):
            raise self.unsupported("slices in a kernel (index single elements: a[i, j])", node)
        if len(items) != rank:
            raise self.error(f"an array of rank {rank} needs {rank} indices, got {len(items)}", node)
        out = []
        for d, e in enumerate(items):
            i = self.as_int(self.expr(e), "an index")
            self.node = node
            if i.lo is None or i.lo < 0:  # Python's negative indices count from the end
                neg = self.emit(arith.CmpiOp(i.ssa, self.constant(0).ssa, "slt")).result
                wrapped = self.emit(arith.AddiOp(i.ssa, self.dim(base, d).ssa)).result
                i = Val(self.emit(arith.SelectOp(neg, wrapped, i.ssa)).result)
            out.append(self.emit(arith.IndexCastOp(i.ssa, IndexType())).result)
        return out

    def subscript(self, node: ast.Subscript) -> Val:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            base = self.expr(node.value.value)
            d = node.slice
            if isinstance(base, Val) and isinstance(base.type, MemRefType):
                if isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub) and isinstance(d.operand, ast.Constant):
                    return self.dim(base, -d.operand.value)
                if isinstance(d, ast.Constant) and isinstance(d.value, int):
                    return self.dim(base, d.value)
                raise self.error("array.shape takes a constant index in a kernel", node)
        base = self.expr(node.value)
        if isinstance(base, tuple):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
                return base[node.slice.value]
            raise self.error("a tuple is indexed by a constant in a kernel", node)
        if not isinstance(base.type, MemRefType):
            raise self.error(f"cannot index a {base.type} value", node)
        idx = self.indices(base, node)
        self.node = node
        return Val(self.emit(memref.LoadOp.get(base.ssa, idx)).results[0], False)

    def store(self, target: ast.expr, value) -> None:
        if not isinstance(target, ast.Subscript):
            raise self.unsupported(f"assignment to {type(target).__name__} in a kernel", target)
        base = self.expr(target.value)
        if not isinstance(base, Val) or not isinstance(base.type, MemRefType):
            raise self.error("only array elements can be assigned by index in a kernel", target)
        idx = self.indices(base, target)
        v = self.convert(self.scalar(value, "a stored value"), base.type.element_type)
        self.node = target
        self.emit(memref.StoreOp.get(v.ssa, base.ssa, idx))

    def aug_store(self, s: ast.AugAssign) -> None:
        load = self.subscript(s.target)
        self.store(s.target, self.binop(s.op, load, self.expr(s.value), inplace=True))

    def unpack_assign(self, target, value) -> None:
        values = value if isinstance(value, tuple) else None
        if values is None or len(values) != len(target.elts):
            raise self.error(f"cannot unpack into {len(target.elts)} names here", target)
        for t, v in zip(target.elts, values):
            self.assign(t, v)

    def loop_over(self, iterable: ast.expr, body_fn, names, node) -> None:
        if isinstance(iterable, ast.Call) and self.resolve_static(iterable.func) is range:
            if iterable.keywords:
                raise self.error("range() takes no keyword arguments", iterable)
            args = [self.as_int(self.expr(a), "a range() bound") for a in iterable.args]
            return self.range_loop(args, body_fn, names, iterable)
        seq = self.expr(iterable)
        if isinstance(seq, Val) and isinstance(seq.type, MemRefType) and len(seq.type.shape) == 1:
            n = self.dim(seq, 0)

            def element(i: Val) -> None:
                idx = self.emit(arith.IndexCastOp(i.ssa, IndexType())).result
                body_fn(Val(self.emit(memref.LoadOp.get(seq.ssa, [idx])).results[0], False))

            return self.range_loop([n], element, names, iterable)
        raise self.unsupported("a kernel loops over range(...) or a 1-D array", iterable)

