"""memoize: reuse a pure function's results for inputs that agree after quantisation.

Why: expensive scalar kernels (and the components built on them) are often called
again on inputs that differ only in their last bits; a small table turns those calls
into a load. The knob trades reuse for accuracy (see `approx_dialect/quantize.py`,
the definition the Python side shares): k >= 1 clears the k low mantissa bits of
each float input (integers are compared exactly); 0 leaves the program unchanged.

Lowering (inside the IR, so JIT-compiled kernels keep it): the ops after the
`approx.transform` (the knob body, or one decision's case) become

    words = quantised inputs as i64; slot = hash(words) (top 10 bits)
    hit = valid[slot] and key_i[slot] == words_i for every input
    results = scf.if hit { load val_j[slot] } else { body; store keys, values, valid }

with the table in `memref.global`s of MEMO_CAPACITY (1024) entries per memoized
region. Direct-mapped: a miss overwrites the slot of its hash, so the table never
grows; tables live as long as the compiled module (across calls). The stored
results are those of the first input of a key, returned for every later input
that quantises to the same key.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from approx_dialect import TransformOp
from approx_dialect.diagnostics import ApproxError
from approx_dialect.quantize import (
    HASH_GOLDEN,
    HASH_PRIME,
    HASH_SEED,
    HASH_SHIFT,
    MAX_DROP_BITS,
    MEMO_CAPACITY,
    dropped_bits,
    signed64,
    slot_bits,
)
from passes.ir_utils import ModuleSymbols, parent_func

_FLOATS = {Float16Type: 16, BFloat16Type: 16, Float32Type: 32, Float64Type: 64}
_MANTISSA = {Float16Type: 10, BFloat16Type: 7, Float32Type: 23, Float64Type: 52}
# Ops that write memory: a body containing one is not a function of its inputs.
WRITES = frozenset(
    {"memref.store", "memref.copy", "memref.atomic_rmw", "memref.generic_atomic_rmw",
     "memref.dealloc", "affine.store", "llvm.store", "func.call_indirect"}
)


def scalar_width(t: Attribute) -> int | None:
    """Bit width of an int/index/float type; None for anything else."""
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, IndexType):
        return 64
    return _FLOATS.get(type(t))


def _check_scalars(values, what: str, fname: str, transform: TransformOp) -> None:
    for i, t in enumerate(values):
        if scalar_width(t) is None:
            raise ApproxError(
                f"memoize needs scalar {what}: '{fname}' {what[:-1]} {i} is {t} "
                "(int, index, f16, bf16, f32 or f64 only)",
                transform,
            )


def check_pure(ops: list[Operation], fname: str, symbols: ModuleSymbols, transform: TransformOp) -> None:
    """No op that writes memory and no call to a declaration, in `ops` and in every
    function of the module they call (transitively)."""
    seen: set[str] = set()
    todo = list(ops)
    while todo:
        for op in todo.pop().walk():
            if op.name in WRITES:
                raise ApproxError(
                    f"memoize needs a pure function: '{fname}' (or a function it calls) contains {op.name}",
                    transform,
                )
            if isinstance(op, CallOp):
                callee = op.callee.string_value()
                target = symbols.get(callee)
                if target is None or target.is_declaration:
                    raise ApproxError(
                        f"memoize needs a pure function: '{fname}' calls the external declaration "
                        f"'{callee}', which may have side effects",
                        transform,
                    )
                if callee not in seen:
                    seen.add(callee)
                    todo.append(target)


def free_values(ops: list[Operation], results) -> list[SSAValue]:
    """Values the ops (and the results) read from outside them, in order of first
    use; constants are left out (equal on every call)."""
    inside: set[Operation] = {inner for op in ops for inner in op.walk()}
    found: dict[SSAValue, None] = {}

    def outside(v: SSAValue) -> bool:
        owner = v.owner
        if isinstance(owner, Block):
            owner = owner.parent_op()
        return owner not in inside and not isinstance(owner, arith.ConstantOp)

    for op in ops:
        for inner in op.walk():
            for v in inner.operands:
                if outside(v):
                    found.setdefault(v)
    for v in results:
        if outside(v):
            found.setdefault(v)
    return list(found)


class _Emitter:
    """Appends ops before an anchor (or at the end of a block) and returns results."""

    def __init__(self, block: Block, anchor: Operation | None = None):
        self.block, self.anchor = block, anchor

    def __call__(self, op: Operation) -> SSAValue:
        if self.anchor is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.anchor)
        return op.results[0] if op.results else None

    def i64(self, value: int) -> SSAValue:
        return self(arith.ConstantOp(IntegerAttr(signed64(value), i64)))

    def index(self, value: int) -> SSAValue:
        return self(arith.ConstantOp(IntegerAttr(value, IndexType())))


def key_word(emit: _Emitter, v: SSAValue, k: int) -> SSAValue:
    """The input as an i64 key word (quantize.int_word / float_word in IR): floats
    lose their low mantissa bits, integers are kept exact."""
    t = v.type
    width = scalar_width(t)
    is_float = type(t) in _FLOATS
    mantissa = _MANTISSA.get(type(t), 0)
    if isinstance(t, IndexType):
        v = emit(arith.IndexCastOp(v, i64))
    elif is_float:
        t = IntegerType(width)
        v = emit(arith.BitcastOp(v, t))
        bits = dropped_bits(k, mantissa)
        if bits:
            mask = emit(arith.ConstantOp(IntegerAttr(-1 << bits, t)))
            v = emit(arith.AndIOp(v, mask))
    if width < 64:
        v = emit((arith.ExtUIOp if is_float or width == 1 else arith.ExtSIOp)(v, i64))
    return v


def slot_index(emit: _Emitter, words: list[SSAValue]) -> SSAValue:
    """quantize.slot_of in IR: mix the words, Fibonacci-hash, keep the top bits."""
    h = emit.i64(HASH_SEED)
    prime = emit.i64(HASH_PRIME)
    for w in words:
        h = emit(arith.MuliOp(emit(arith.XOrIOp(h, w)), prime))
    h = emit(arith.XOrIOp(h, emit(arith.ShRUIOp(h, emit.i64(HASH_SHIFT)))))
    h = emit(arith.MuliOp(h, emit.i64(HASH_GOLDEN)))
    h = emit(arith.ShRUIOp(h, emit.i64(64 - slot_bits(MEMO_CAPACITY))))
    return emit(arith.IndexCastOp(h, IndexType()))


def _fresh_base(module: ModuleOp, fname: str) -> str:
    taken = {op.properties["sym_name"].data for op in module.ops
             if isinstance(op.properties.get("sym_name"), StringAttr)}
    taken |= {op.sym_name.data for op in module.ops if isinstance(op, FuncOp)}
    n = 0
    while any(name.startswith(f"__approx_memo_{fname}_{n}_") for name in taken):
        n += 1
    return f"__approx_memo_{fname}_{n}"


def add_table(func: FuncOp, emit: _Emitter, name: str, elt: Attribute) -> SSAValue:
    """A zero-initialised `memref.global` of MEMO_CAPACITY entries, and its get_global."""
    mtype = MemRefType(elt, [MEMO_CAPACITY])
    zero = DenseIntOrFPElementsAttr.from_list(TensorType(elt, [MEMO_CAPACITY]), [0.0 if type(elt) in _FLOATS else 0])
    func.parent_block().insert_op_before(memref.GlobalOp.get(StringAttr(name), mtype, zero), func)
    return emit(memref.GetGlobalOp(name, mtype))


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    k = transform.knob_val.value.data
    func = parent_func(transform)
    fname = func.sym_name.data
    if k > MAX_DROP_BITS:
        raise ApproxError(
            f"memoize: knob {k} is out of range (0 is exact, 1..{MAX_DROP_BITS} low mantissa bits "
            "of each float input dropped)",
            transform,
        )
    _check_scalars(func.function_type.inputs.data, "arguments", fname, transform)
    block = transform.parent_block()
    terminator = block.last_op
    body: list[Operation] = []
    op = transform.next_op
    while op is not None and op is not terminator:
        body.append(op)
        op = op.next_op
    results = list(terminator.operands)
    _check_scalars([v.type for v in results], "results", fname, transform)
    check_pure(body, fname, symbols, transform)
    inputs = free_values(body, results)
    _check_scalars([v.type for v in inputs], "arguments", fname, transform)
    if k == 0:
        return

    emit = _Emitter(block, transform)
    base = _fresh_base(symbols.module, fname)
    words = [key_word(emit, v, k) for v in inputs]
    slot = slot_index(emit, words)
    valid = add_table(func, emit, f"{base}_valid", i1)
    keys = [add_table(func, emit, f"{base}_key{i}", i64) for i in range(len(words))]
    vals = [add_table(func, emit, f"{base}_val{j}", v.type) for j, v in enumerate(results)]
    hit = emit(memref.LoadOp.get(valid, [slot]))
    for table, w in zip(keys, words):
        stored = emit(memref.LoadOp.get(table, [slot]))
        hit = emit(arith.AndIOp(hit, emit(arith.CmpiOp(stored, w, "eq"))))

    then_block = Block()
    load = _Emitter(then_block)
    load(scf.YieldOp(*[load(memref.LoadOp.get(t, [slot])) for t in vals]))
    else_block = Block()
    for op in body:
        op.detach()
        else_block.add_op(op)
    store = _Emitter(else_block)
    for table, w in zip(keys, words):
        store(memref.StoreOp.get(w, table, [slot]))
    for table, v in zip(vals, results):
        store(memref.StoreOp.get(v, table, [slot]))
    store(memref.StoreOp.get(store(arith.ConstantOp(IntegerAttr(1, i1))), valid, [slot]))
    store(scf.YieldOp(*results))
    if_op = scf.IfOp(hit, [v.type for v in results], Region(then_block), Region(else_block))
    if_op.location = transform.location
    emit(if_op)
    terminator.operands = tuple(if_op.results)
