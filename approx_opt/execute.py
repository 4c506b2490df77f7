"""Run transformed (approx-free) IR: lower it with upstream MLIR, JIT it, call it from Python.

`compile_module(ir)` gives a `CompiledModule` whose functions are plain Python callables
taking ints/floats/bools and numpy arrays. Frontends and the autotuner call these in tight
loops, so everything that can be decided from the signature is decided once at compile
time, and calls go straight to the native `_mlir_ciface_*` entry point through ctypes
(the stock `ExecutionEngine.invoke` looks the symbol up and packs pointers on every call).
"""

from __future__ import annotations

import ctypes
import hashlib
import operator
import re
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
from torch_mlir import execution_engine, ir, passmanager

from approx_dialect.diagnostics import ApproxError

#: Upstream lowering to the LLVM dialect. `convert-math-to-funcs` gives ipowi/fpowi bodies,
#: `arith-expand` the ceil/floor divisions, `convert-math-to-llvm` the intrinsics and
#: `convert-math-to-libm` the rest (tanh, erf, atan2: resolved from the process's libm);
#: `convert-scf-to-cf` covers scf.for/if/while/index_switch/parallel.
PIPELINE = (
    "builtin.module(lower-affine,convert-math-to-funcs{convert-ctlz=false},"
    "func.func(arith-expand),convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,"
    "expand-strided-metadata,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)"
)

#: Run first when the module has tensors or linalg (torch-mlir's linalg-on-tensors):
#: elementwise arith on tensors -> linalg, bufferization with identity-layout memrefs at
#: function boundaries (so callables take and return numpy arrays), linalg -> loops, and
#: deallocation of the temporaries (returned buffers are left to the caller).
TENSOR_PIPELINE = (
    "builtin.module(func.func(convert-elementwise-to-linalg),one-shot-bufferize{"
    "bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
    "func.func(convert-linalg-to-loops),buffer-deallocation-pipeline,convert-bufferization-to-memref)"
)

CACHE_SIZE = 256
_CACHE: OrderedDict[tuple[str, int, bool], "CompiledModule"] = OrderedDict()
_LOCK = threading.Lock()

_DYN = ir.ShapedType.get_dynamic_size()
_DEADBEEF = 0xDEADBEEF  # the "allocated" pointer memref.get_global puts in its descriptor
_libc = ctypes.CDLL(None)
_free = _libc.free
_free.argtypes = [ctypes.c_void_p]


def _boolean(x):
    if isinstance(x, (bool, np.bool_, int, np.integer)):
        return bool(x)
    raise TypeError


def _integer(bits: int):
    """Coercion to a signed integer of `bits`: ctypes would wrap a wider one silently."""
    lo, hi = -(1 << (bits - 1)), 1 << (bits - 1)

    def coerce(x) -> int:
        v = operator.index(x)
        if not lo <= v < hi:
            raise OverflowError(f"{v} does not fit in {bits} bits")
        return v

    coerce.bounds = (lo, hi)
    return coerce


def _f16_bits(x) -> int:
    return int(np.array(float(x), np.float16).view(np.uint16))


def _f16_value(bits: int) -> float:
    return float(np.array(bits, np.uint16).view(np.float16))


# MLIR scalar type -> (ctypes type at the C interface, coercion, result conversion)
_SCALARS: dict[str, tuple[Any, Callable, Callable | None]] = {
    "i1": (ctypes.c_bool, _boolean, None),
    "i8": (ctypes.c_int8, _integer(8), None),
    "i16": (ctypes.c_int16, _integer(16), None),
    "i32": (ctypes.c_int32, _integer(32), None),
    "i64": (ctypes.c_int64, _integer(64), None),
    "index": (ctypes.c_int64, _integer(64), None),
    "f32": (ctypes.c_float, float, None),
    "f64": (ctypes.c_double, float, None),
    "f16": (ctypes.c_uint16, _f16_bits, _f16_value),  # no ctypes half: passed as bits, packed
}
_DTYPES = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
           "index": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64}


class NoSuchFunction(ApproxError, AttributeError):
    """Unknown function name; an AttributeError too so `getattr(cm, name, None)` works."""


def _first_diag(stage: str, e: Exception, diags: list = ()) -> ApproxError:
    """ApproxError from upstream's first error diagnostic (in `e`, else collected by a handler)."""
    diags = [(d.message, str(d.location)) for d in getattr(e, "error_diagnostics", None) or []] or diags
    msg = diags[0][0] if diags else str(e)
    where = None
    if diags:
        m = re.match(r'loc\("([^"]+)":(\d+):(\d+)\)', diags[0][1])
        if m:
            where = ":".join(("<execute>" if m[1] == "-" else m[1], m[2], m[3]))
    return ApproxError(f"{stage}: {msg}", where=where)


# ---------------------------------------------------------------- memrefs <-> numpy

class _MemRef:
    """One memref type of a signature: its numpy dtype, rank, static sizes and strides."""

    def __init__(self, t: ir.MemRefType):
        elt = str(t.element_type)
        if elt not in _DTYPES:
            raise ValueError(f"memref element type {elt}")
        self.text, self.dtype, self.rank = str(t), np.dtype(_DTYPES[elt]), t.rank
        self.shape = list(t.shape)
        strides, off = t.get_strides_and_offset()
        self.identity = isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)
        self.strides = strides
        self.offset = 0 if off == _DYN else off
        fields = [("allocated", ctypes.c_size_t), ("aligned", ctypes.c_size_t), ("offset", ctypes.c_int64)]
        if self.rank:
            self.dims = ctypes.c_int64 * self.rank
            fields += [("shape", self.dims), ("strides", self.dims)]
        self.desc = type("MemRefDescriptor", (ctypes.Structure,), {"_fields_": fields})

    def fits(self, x: np.ndarray) -> bool:
        if self.identity:
            return x.flags.c_contiguous
        isz = x.itemsize
        return all(s == _DYN or n <= 1 or s * isz == xs for s, n, xs in zip(self.strides, x.shape, x.strides))

    def to_desc(self, x, fname: str, i: int, back: list):
        """A descriptor over `x`'s data (a contiguous copy, written back later, if needed)."""
        if not isinstance(x, np.ndarray):
            raise ApproxError(f"@{fname} argument {i}: expected a numpy array for {self.text}, got {type(x).__name__}")
        if x.dtype != self.dtype or x.ndim != self.rank:
            raise ApproxError(f"@{fname} argument {i}: expected {self.text} ({self.dtype}, rank {self.rank}), "
                              f"got {x.dtype} array of rank {x.ndim}")
        for d, (s, n) in enumerate(zip(self.shape, x.shape)):
            if s != _DYN and s != n:
                raise ApproxError(f"@{fname} argument {i}: expected {self.text}, got shape {x.shape} (dim {d})")
        if not self.fits(x):
            tmp = np.ascontiguousarray(x)
            if not self.fits(tmp):
                raise ApproxError(f"@{fname} argument {i}: array strides {x.strides} do not fit {self.text}")
            back.append((x, tmp))
            x = tmp
        ptr = x.ctypes.data
        if not self.rank:
            return self.desc(ptr, ptr, 0)
        isz = x.itemsize
        return self.desc(ptr, ptr - self.offset * isz, self.offset, self.dims(*x.shape),
                         self.dims(*[s // isz for s in x.strides]))

    def to_numpy(self, d) -> np.ndarray:
        """Copy a result descriptor's data into a fresh numpy array."""
        shape = tuple(d.shape) if self.rank else ()
        strides = tuple(d.strides) if self.rank else ()
        isz = self.dtype.itemsize
        if 0 in shape:
            return np.empty(shape, self.dtype)
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
        start = d.aligned + (d.offset + lo) * isz
        buf = (ctypes.c_char * ((hi - lo + 1) * isz)).from_address(start)
        view = np.ndarray(shape, self.dtype, buffer=buf, offset=-lo * isz, strides=[s * isz for s in strides])
        return view.copy()


def _view(addr: int, elt: int) -> np.ndarray:
    """A byte view of an unranked memref {rank, descriptor*} (for `memrefCopy`)."""
    rank, desc = ctypes.cast(addr, ctypes.POINTER(ctypes.c_int64 * 2)).contents
    f = list(ctypes.cast(desc, ctypes.POINTER(ctypes.c_int64 * (3 + 2 * rank))).contents)
    shape, strides = f[3:3 + rank], f[3 + rank:]
    if 0 in shape:
        return np.empty(shape, f"V{elt}")
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    buf = (ctypes.c_char * ((hi - lo + 1) * elt)).from_address(f[1] + (f[2] + lo) * elt)
    return np.ndarray(shape, f"V{elt}", buffer=buf, offset=-lo * elt, strides=[s * elt for s in strides])


@ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
def _memref_copy(elt, src, dst):
    """`memrefCopy` from MLIR's runner utils (not in the wheel): non-contiguous memref.copy."""
    np.copyto(_view(dst, elt), _view(src, elt))


def _readonly_tensor_args(module) -> None:
    """Tensors are values: bufferization must not write into the caller's arrays."""
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or not op.regions[0].blocks:
            continue
        inputs = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs
        if not any(isinstance(t, ir.RankedTensorType) for t in inputs):
            continue
        old = ir.ArrayAttr(op.attributes["arg_attrs"]) if "arg_attrs" in op.attributes else None
        attrs = []
        for i, t in enumerate(inputs):
            d = {a.name: a.attr for a in ir.DictAttr(old[i])} if old is not None else {}
            if isinstance(t, ir.RankedTensorType):
                d["bufferization.writable"] = ir.BoolAttr.get(False)
            attrs.append(ir.DictAttr.get(d))
        op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def _truncdfhf2():
    """libgcc's f64 -> f16 conversion (x86 has no such instruction; LLVM calls it)."""
    try:
        return ctypes.cast(ctypes.CDLL("libgcc_s.so.1").__truncdfhf2, ctypes.c_void_p)
    except (OSError, AttributeError):
        return None


# ---------------------------------------------------------------- callables

def _kind(t: ir.Type):
    return _MemRef(ir.MemRefType(t)) if isinstance(t, ir.MemRefType) else str(t)


def _check(k) -> None:
    if not isinstance(k, _MemRef) and k not in _SCALARS:
        raise ValueError(f"type {k}")


def _make_callable(name: str, ins: list, outs: list, ee, addr: int) -> Callable:
    """A Python function calling `_mlir_ciface_<name>`; all type decisions made here, once."""
    n = len(ins)
    sret = len(outs) > 1 or any(isinstance(k, _MemRef) for k in outs)
    packed = any(k == "f16" for k in ins) or (not sret and outs == ["f16"])
    params = [ctypes.POINTER(k.desc) if isinstance(k, _MemRef) else _SCALARS[k][0] for k in ins]
    if sret:
        fields = [(f"r{j}", k.desc if isinstance(k, _MemRef) else _SCALARS[k][0]) for j, k in enumerate(outs)]
        res_t = type("Results", (ctypes.Structure,), {"_fields_": fields})
        params.insert(0, ctypes.POINTER(res_t))
    restype = _SCALARS[outs[0]][0] if outs and not sret else None

    if packed:  # the packed wrapper takes void*[] of pointers to each argument (and result)
        pfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(ee.raw_lookup("_mlir_ciface_" + name))

        def cfn(*cargs):
            slots = [ctypes.c_void_p(ctypes.addressof(c)) if isinstance(c, ctypes.Structure) else t(c)
                     for t, c in zip(params, cargs)]
            if restype is not None:
                slots.append(restype())
            pfn((ctypes.c_void_p * len(slots))(*map(ctypes.addressof, slots)))
            return slots[-1].value if restype is not None else None
    else:
        cfn = ctypes.CFUNCTYPE(restype, *params)(addr)

    coerce = [None if isinstance(k, _MemRef) else _SCALARS[k][1] for k in ins]
    memrefs = [(i, k) for i, k in enumerate(ins) if isinstance(k, _MemRef)]

    def bad_count(args):
        return ApproxError(f"@{name} takes {n} argument(s), got {len(args)}")

    def coerced(args: list) -> list:
        for i, c in enumerate(coerce):
            if c is not None:
                try:
                    args[i] = c(args[i])
                except OverflowError:
                    raise ApproxError(f"@{name} argument {i}: {args[i]!r} does not fit in {ins[i]}"[:200]) from None
                except (TypeError, ValueError):
                    raise ApproxError(f"@{name} argument {i}: expected {ins[i]}, got "
                                      f"{type(args[i]).__name__} {args[i]!r}"[:200]) from None
        return args

    # Python ints ctypes would wrap: checked on every call (a range test per integer argument)
    int_bounds = [(i, *c.bounds) for i, c in enumerate(coerce) if hasattr(c, "bounds")]

    if not memrefs and not sret and not packed:  # the common scalar case: little per-call Python work
        def call(*args):
            if len(args) != n:
                raise bad_count(args)
            try:
                for i, lo, hi in int_bounds:
                    if not lo <= args[i] < hi:
                        raise OverflowError
                return cfn(*args)
            except (ctypes.ArgumentError, TypeError, OverflowError):
                return cfn(*coerced(list(args)))  # converts, or raises the one-line error
    else:
        out_conv = [k.to_numpy if isinstance(k, _MemRef) else _SCALARS[k][2] for k in outs]
        single = len(outs) == 1

        def call(*args):
            if len(args) != n:
                raise bad_count(args)
            args = coerced(list(args))
            back: list = []
            for i, k in memrefs:
                args[i] = k.to_desc(args[i], name, i, back)
            if sret:
                res = res_t()
                args.insert(0, res)
            r = cfn(*args)
            for orig, tmp in back:
                if orig.flags.writeable:
                    np.copyto(orig, tmp)
            if not sret:
                return out_conv[0](r) if outs and out_conv[0] else r
            inputs = {a.allocated for a in args if isinstance(a, ctypes.Structure) and a is not res}
            vals, owned = [], set()
            for j, conv in enumerate(out_conv):
                v = getattr(res, f"r{j}")
                if isinstance(outs[j], _MemRef):
                    vals.append(conv(v))
                    if v.allocated not in (0, _DEADBEEF) and v.allocated not in inputs:
                        owned.add(v.allocated)  # a fresh memref.alloc: copied out above, freed here
                else:
                    vals.append(conv(v) if conv else v)
            for p in owned:
                _free(p)
            return vals[0] if single else tuple(vals)

    call.__name__ = call.__qualname__ = name
    call._keep = (ee, cfn)  # the engine must outlive the callable
    return call


def _refuse(name: str, why: str) -> Callable:
    def call(*args):
        raise ApproxError(f"@{name} {why}")

    call.__name__ = call.__qualname__ = name
    return call


# ---------------------------------------------------------------- modules

class CompiledModule:
    """The JIT-compiled functions of one module; `cm.fn("f")(...)` or `cm.f(...)`."""

    def __init__(self, engine, functions: dict[str, Callable], signatures: dict[str, str]):
        self.engine = engine
        self.functions = functions
        self.signatures = signatures
        # plain attributes, so `cm.f` costs a dict lookup rather than a __getattr__ call
        self.__dict__.update({n: f for n, f in functions.items()
                              if n not in self.__dict__ and not hasattr(type(self), n)})

    def fn(self, name: str) -> Callable:
        try:
            return self.functions[name]
        except KeyError:
            raise NoSuchFunction(f"no function @{name} in the module "
                                 f"(have: {', '.join(sorted(self.functions)) or 'none'})") from None

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("__") or name in ("engine", "functions", "signatures"):
            raise AttributeError(name)
        return self.fn(name)

    def __dir__(self):
        return [*super().__dir__(), *self.functions]


def _text_of(ir_or_text) -> str:
    if isinstance(ir_or_text, str):
        return ir_or_text
    from approx_dialect.context import print_module

    return print_module(ir_or_text, generic=True)


def _external_callback(name: str, ftype, fn: Callable, raised: list):
    """A C function calling the Python `fn` with the declaration's scalar signature; an
    exception is kept in `raised` (the module's caller raises it) and 0 returned."""
    try:
        ins, outs = [_kind(t) for t in ftype.inputs], [_kind(t) for t in ftype.results]
    except ValueError as e:
        raise ApproxError(f"external @{name}: unsupported signature ({e})") from None
    if len(outs) > 1 or any(not isinstance(k, str) or k == "f16" for k in ins + outs):
        raise ApproxError(f"external @{name}: only scalar arguments and at most one scalar result "
                          f"(i1 ... i64, index, f32, f64) can be given by a Python function, not {ftype}")
    restype = _SCALARS[outs[0]][0] if outs else None

    def call(*args):
        if raised:
            return restype().value if restype else None
        try:
            result = fn(*args)
            return _SCALARS[outs[0]][1](result) if outs else None
        except BaseException as err:  # noqa: BLE001 - re-raised by the caller of the module
            raised.append(err)
            return restype().value if restype else None

    return ctypes.CFUNCTYPE(restype, *[_SCALARS[k][0] for k in ins])(call)


def _raising(fn: Callable, raised: list) -> Callable:
    """`fn`, raising what an external raised during the call."""

    def call(*args):
        raised.clear()
        result = fn(*args)
        if raised:
            err = raised[0]
            raised.clear()
            raise err
        return result

    return call


def compile_module(ir_or_text, opt_level: int = 2, check_bounds: bool = False,
                   externals: dict[str, Callable] | None = None) -> CompiledModule:
    """Lower and JIT a module (text or xDSL ModuleOp); the same text is compiled only once.

    `check_bounds=True` inserts MLIR's runtime verification (`generate-runtime-verification`):
    an out-of-bounds memref access prints the op and aborts the process (run it in a child).
    `externals`: Python functions for the module's external declarations with scalar
    signatures (`func.func private @checker(f32, i32) -> i1`), as a runtime links them
    (an exception raised in one is raised by the call into the module)."""
    text = _text_of(ir_or_text)
    externals = dict(externals or {})
    key = (hashlib.sha256(text.encode()).hexdigest(), opt_level, check_bounds,
           tuple(sorted((n, id(f)) for n, f in externals.items())))
    with _LOCK:
        cm = _CACHE.get(key)
        if cm is None:
            cm = _compile(text, opt_level, check_bounds, externals)
            _CACHE[key] = cm
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(key)
        return cm


def _compile(text: str, opt_level: int, check_bounds: bool = False,
             externals: dict[str, Callable] | None = None) -> CompiledModule:
    ctx, diags = ir.Context(), []
    ctx.attach_diagnostic_handler(lambda d: diags.append((d.message, str(d.location))) or True)
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise _first_diag("cannot parse the module for execution", e) from None
        if "tensor<" in text or "linalg." in text:
            try:
                _readonly_tensor_args(module)
                passmanager.PassManager.parse(TENSOR_PIPELINE).run(module.operation)
            except ir.MLIRError as e:
                raise _first_diag("bufferizing tensors failed", e) from None
        sigs, callable_, refused, decls = {}, [], {}, []
        linked: dict[str, Any] = {}  # external declaration -> ctypes callback (kept alive with the module)
        raised: list[BaseException] = []  # an exception an external raised during the current call
        for op in module.body.operations:
            if op.operation.name != "func.func":
                continue
            op = op.operation
            name = ir.StringAttr(op.attributes["sym_name"]).value
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            sigs[name] = str(ftype)
            if not op.regions[0].blocks:
                decls.append(name)
                refused[name] = "is an external declaration (private, no body): it cannot be called"
                if externals and name in externals:
                    linked[name] = _external_callback(name, ftype, externals[name], raised)
                continue
            try:
                ins, outs = [_kind(t) for t in ftype.inputs], [_kind(t) for t in ftype.results]
                for k in ins + outs:
                    _check(k)
            except ValueError as e:
                refused[name] = f"has a signature the executor does not support ({e}): {ftype}"
                continue
            op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            callable_.append((name, ins, outs))
        try:
            pipeline = PIPELINE.replace("(", "(generate-runtime-verification,", 1) if check_bounds else PIPELINE
            passmanager.PassManager.parse(pipeline).run(module.operation)
        except ir.MLIRError as e:
            raise _first_diag("lowering to LLVM failed", e) from None
        # Tiny functions returning each `_mlir_ciface_*` address, so calls can skip `invoke`.
        stubs = "\n".join(f'llvm.func @"_mlir_ciface_{n}"()' for n, _, _ in callable_)
        addrs = "\n".join(
            f'llvm.func @__approx_addr_{i}() -> i64 {{\n%0 = llvm.mlir.addressof @"_mlir_ciface_{n}" : !llvm.ptr\n'
            f"%1 = llvm.ptrtoint %0 : !llvm.ptr to i64\nllvm.return %1 : i64\n}}"
            for i, (n, _, _) in enumerate(callable_))
        snippet = ir.Module.parse(stubs + "\n" + addrs)
        for op in list(snippet.body.operations)[len(callable_):]:
            module.body.append(op)
        try:
            ee = execution_engine.ExecutionEngine(module, opt_level=opt_level)
        except Exception as e:
            raise _first_diag("JIT compilation failed", e, diags) from None
        unknown = sorted(set(externals or {}) - set(linked))
        if unknown:
            raise ApproxError(f"externals given for @{unknown[0]}, which is not an external declaration of the module")
        for name, callback in linked.items():
            ee.raw_register_runtime(name, ctypes.cast(callback, ctypes.c_void_p))
        if "@memrefCopy" in str(module):
            ee.raw_register_runtime("memrefCopy", ctypes.cast(_memref_copy, ctypes.c_void_p))
        if "f16" in text and _truncdfhf2() is not None:  # f64 -> f16 is a libcall the JIT misses
            ee.raw_register_runtime("__truncdfhf2", _truncdfhf2())
        functions: dict[str, Callable] = {n: _refuse(n, why) for n, why in refused.items()}
        for i, (name, ins, outs) in enumerate(callable_):
            wrapper = ee.raw_lookup(f"__approx_addr_{i}")
            if not wrapper:
                raise ApproxError(f"JIT linking failed for @{name}: unresolved external symbol "
                                  f"(declarations: {', '.join(decls) or 'none'})")
            out = ctypes.c_int64()
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(wrapper)((ctypes.c_void_p * 1)(ctypes.addressof(out)))
            functions[name] = _make_callable(name, ins, outs, ee, out.value)
            if linked:
                functions[name] = _raising(functions[name], raised)
    cm = CompiledModule(ee, functions, sigs)
    cm._ctx = ctx
    cm._externals = linked
    return cm
