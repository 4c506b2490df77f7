"""Upstream MLIR's side of execution: the pass pipelines from the toolchain's IR to
the LLVM dialect (tensors bufferized first), upstream diagnostics as one-line
errors, and the shims the JIT needs (runtime functions the wheel lacks, the
address of each entry point)."""

from __future__ import annotations

import ctypes
import re

import numpy as np
from torch_mlir import ir, passmanager

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

def first_diag(stage: str, e: Exception, diags: list = ()) -> ApproxError:
    """ApproxError from upstream's first error diagnostic (in `e`, else collected by a handler)."""
    diags = [(d.message, str(d.location)) for d in getattr(e, "error_diagnostics", None) or []] or diags
    msg = diags[0][0] if diags else str(e)
    where = None
    if diags:
        m = re.match(r'loc\("([^"]+)":(\d+):(\d+)\)', diags[0][1])
        if m:
            where = ":".join(("<execute>" if m[1] == "-" else m[1], m[2], m[3]))
    return ApproxError(f"{stage}: {msg}", where=where)


def readonly_tensor_args(module) -> None:
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


def _is_tensor(t: ir.Type) -> bool:
    return isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType))


def has_tensors(module: ir.Module) -> bool:
    """Whether any op of `module` is a linalg op or takes, gives or declares a tensor
    (what TENSOR_PIPELINE is for)."""
    found = []

    def visit(op):
        types = [r.type for r in op.results]
        if op.name == "func.func":
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            types += [*ftype.inputs, *ftype.results]
        if op.name.startswith("linalg.") or any(_is_tensor(t) for t in types):
            found.append(op.name)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return bool(found)


def bufferize_tensors(module: ir.Module) -> None:
    """Tensors -> memrefs, in place, when `module` has any (before its signatures are read:
    the functions then take and return memrefs)."""
    if not has_tensors(module):
        return
    try:
        readonly_tensor_args(module)
        passmanager.PassManager.parse(TENSOR_PIPELINE).run(module.operation)
    except ir.MLIRError as e:
        raise first_diag("bufferizing tensors failed", e) from None


def lower_to_llvm(module: ir.Module, check_bounds: bool) -> None:
    """To the LLVM dialect, in place; `check_bounds` adds MLIR's runtime verification."""
    try:
        pipeline = PIPELINE.replace("(", "(generate-runtime-verification,", 1) if check_bounds else PIPELINE
        passmanager.PassManager.parse(pipeline).run(module.operation)
    except ir.MLIRError as e:
        raise first_diag("lowering to LLVM failed", e) from None


def add_address_functions(module: ir.Module, names: list[str]) -> None:
    """Append `__approx_addr_<i>() -> i64`, the address of `_mlir_ciface_<names[i]>`, so
    calls can skip the engine's `invoke` (which looks the symbol up on every call)."""
    stubs = "\n".join(f'llvm.func @"_mlir_ciface_{n}"()' for n in names)
    addrs = "\n".join(
        f'llvm.func @__approx_addr_{i}() -> i64 {{\n%0 = llvm.mlir.addressof @"_mlir_ciface_{n}" : !llvm.ptr\n'
        f"%1 = llvm.ptrtoint %0 : !llvm.ptr to i64\nllvm.return %1 : i64\n}}"
        for i, n in enumerate(names))
    snippet = ir.Module.parse(stubs + "\n" + addrs)
    for op in list(snippet.body.operations)[len(names):]:
        module.body.append(op)


def register_shims(engine, module: ir.Module) -> None:
    """Runtime functions the lowered code may call that the JIT does not find by itself."""
    if "memrefCopy" in ir.SymbolTable(module.operation):
        engine.raw_register_runtime("memrefCopy", ctypes.cast(memref_copy, ctypes.c_void_p))
    if truncdfhf2() is not None:  # f64 -> f16 is a libcall the JIT misses (resolved only where called)
        engine.raw_register_runtime("__truncdfhf2", truncdfhf2())


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
def memref_copy(elt, src, dst):
    """`memrefCopy` from MLIR's runner utils (not in the wheel): non-contiguous memref.copy."""
    np.copyto(_view(dst, elt), _view(src, elt))


def truncdfhf2():
    """libgcc's f64 -> f16 conversion (x86 has no such instruction; LLVM calls it)."""
    try:
        return ctypes.cast(ctypes.CDLL("libgcc_s.so.1").__truncdfhf2, ctypes.c_void_p)
    except (OSError, AttributeError):
        return None
