"""The C interface of JIT-compiled functions: Python values <-> the arguments and
results of `_mlir_ciface_*` entry points (scalars through ctypes, numpy arrays as
memref descriptors), with every decision made once per signature, and Python
functions given to a module as its external declarations."""

from __future__ import annotations

import ctypes
import operator
from typing import Any, Callable

import numpy as np
from torch_mlir import ir

from approx_dialect.diagnostics import ApproxError

DYN = ir.ShapedType.get_dynamic_size()
DEADBEEF = 0xDEADBEEF  # the "allocated" pointer memref.get_global puts in its descriptor
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
SCALARS: dict[str, tuple[Any, Callable, Callable | None]] = {
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
DTYPES = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
           "index": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64}



# ---------------------------------------------------------------- memrefs <-> numpy

class MemRef:
    """One memref type of a signature: its numpy dtype, rank, static sizes and strides."""

    def __init__(self, t: ir.MemRefType):
        elt = str(t.element_type)
        if elt not in DTYPES:
            raise ValueError(f"memref element type {elt}")
        self.text, self.dtype, self.rank = str(t), np.dtype(DTYPES[elt]), t.rank
        self.shape = list(t.shape)
        strides, off = t.get_strides_and_offset()
        self.identity = isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)
        self.strides = strides
        self.offset = 0 if off == DYN else off
        fields = [("allocated", ctypes.c_size_t), ("aligned", ctypes.c_size_t), ("offset", ctypes.c_int64)]
        if self.rank:
            self.dims = ctypes.c_int64 * self.rank
            fields += [("shape", self.dims), ("strides", self.dims)]
        self.desc = type("MemRefDescriptor", (ctypes.Structure,), {"_fields_": fields})

    def fits(self, x: np.ndarray) -> bool:
        if self.identity:
            return x.flags.c_contiguous
        isz = x.itemsize
        return all(s == DYN or n <= 1 or s * isz == xs for s, n, xs in zip(self.strides, x.shape, x.strides))

    def to_desc(self, x, fname: str, i: int, back: list):
        """A descriptor over `x`'s data (a contiguous copy, written back later, if needed)."""
        if not isinstance(x, np.ndarray):
            raise ApproxError(f"@{fname} argument {i}: expected a numpy array for {self.text}, got {type(x).__name__}")
        if x.dtype != self.dtype or x.ndim != self.rank:
            raise ApproxError(f"@{fname} argument {i}: expected {self.text} ({self.dtype}, rank {self.rank}), "
                              f"got {x.dtype} array of rank {x.ndim}")
        for d, (s, n) in enumerate(zip(self.shape, x.shape)):
            if s != DYN and s != n:
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



# ---------------------------------------------------------------- callables

def kind_of(t: ir.Type):
    """A memref type as a `MemRef`, a scalar type as its name."""
    return MemRef(ir.MemRefType(t)) if isinstance(t, ir.MemRefType) else str(t)


def check(k) -> None:
    """ValueError for a type the C interface here does not pass."""
    if not isinstance(k, MemRef) and k not in SCALARS:
        raise ValueError(f"type {k}")


def make_callable(name: str, ins: list, outs: list, ee, addr: int) -> Callable:
    """A Python function calling `_mlir_ciface_<name>`; all type decisions made here, once."""
    n = len(ins)
    sret = len(outs) > 1 or any(isinstance(k, MemRef) for k in outs)
    packed = any(k == "f16" for k in ins) or (not sret and outs == ["f16"])
    params = [ctypes.POINTER(k.desc) if isinstance(k, MemRef) else SCALARS[k][0] for k in ins]
    if sret:
        fields = [(f"r{j}", k.desc if isinstance(k, MemRef) else SCALARS[k][0]) for j, k in enumerate(outs)]
        res_t = type("Results", (ctypes.Structure,), {"_fields_": fields})
        params.insert(0, ctypes.POINTER(res_t))
    restype = SCALARS[outs[0]][0] if outs and not sret else None

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

    coerce = [None if isinstance(k, MemRef) else SCALARS[k][1] for k in ins]
    memrefs = [(i, k) for i, k in enumerate(ins) if isinstance(k, MemRef)]

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
        out_conv = [k.to_numpy if isinstance(k, MemRef) else SCALARS[k][2] for k in outs]
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
                if isinstance(outs[j], MemRef):
                    vals.append(conv(v))
                    if v.allocated not in (0, DEADBEEF) and v.allocated not in inputs:
                        owned.add(v.allocated)  # a fresh memref.alloc: copied out above, freed here
                else:
                    vals.append(conv(v) if conv else v)
            for p in owned:
                _free(p)
            return vals[0] if single else tuple(vals)

    call.__name__ = call.__qualname__ = name
    call._keep = (ee, cfn)  # the engine must outlive the callable
    return call


def refuse(name: str, why: str) -> Callable:
    def call(*args):
        raise ApproxError(f"@{name} {why}")

    call.__name__ = call.__qualname__ = name
    return call


def external_callback(name: str, ftype, fn: Callable, raised: list):
    """A C function calling the Python `fn` with the declaration's scalar signature; an
    exception is kept in `raised` (the module's caller raises it) and 0 returned."""
    try:
        ins, outs = [kind_of(t) for t in ftype.inputs], [kind_of(t) for t in ftype.results]
    except ValueError as e:
        raise ApproxError(f"external @{name}: unsupported signature ({e})") from None
    if len(outs) > 1 or any(not isinstance(k, str) or k == "f16" for k in ins + outs):
        raise ApproxError(f"external @{name}: only scalar arguments and at most one scalar result "
                          f"(i1 ... i64, index, f32, f64) can be given by a Python function, not {ftype}")
    restype = SCALARS[outs[0]][0] if outs else None

    def call(*args):
        if raised:
            return restype().value if restype else None
        try:
            result = fn(*args)
            return SCALARS[outs[0]][1](result) if outs else None
        except BaseException as err:  # noqa: BLE001 - re-raised by the caller of the module
            raised.append(err)
            return restype().value if restype else None

    return ctypes.CFUNCTYPE(restype, *[SCALARS[k][0] for k in ins])(call)


def raising(fn: Callable, raised: list) -> Callable:
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
