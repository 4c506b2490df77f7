"""`compile_module(ir)`: lower a module with upstream MLIR, JIT it, and give its
functions as plain Python callables taking ints/floats/bools and numpy arrays
(a `CompiledModule`); the same module is compiled once (an LRU cache)."""

from __future__ import annotations

import ctypes
import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable

from torch_mlir import execution_engine, ir

from approx_dialect.diagnostics import ApproxError
from approx_opt.jit.abi import check, external_callback, kind_of, make_callable, raising, refuse
from approx_opt.jit.lowering import (
    add_address_functions,
    bufferize_tensors,
    first_diag,
    lower_to_llvm,
    register_shims,
)

CACHE_SIZE = 256
_CACHE: OrderedDict[tuple, CompiledModule] = OrderedDict()
_LOCK = threading.Lock()


class NoSuchFunction(ApproxError, AttributeError):
    """Unknown function name; an AttributeError too so `getattr(cm, name, None)` works."""


class CompiledModule:
    """The JIT-compiled functions of one module; `cm.fn("f")(...)` or `cm.f(...)`."""

    def __init__(self, engine, functions: dict[str, Callable], signatures: dict[str, str], keep: tuple = ()):
        self.engine = engine
        self._keep = keep  # what the engine's code refers to (the context, callbacks of externals)
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
            raise first_diag("cannot parse the module for execution", e) from None
        bufferize_tensors(module)
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
                    linked[name] = external_callback(name, ftype, externals[name], raised)
                continue
            try:
                ins, outs = [kind_of(t) for t in ftype.inputs], [kind_of(t) for t in ftype.results]
                for k in ins + outs:
                    check(k)
            except ValueError as e:
                refused[name] = f"has a signature the executor does not support ({e}): {ftype}"
                continue
            op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            callable_.append((name, ins, outs))
        lower_to_llvm(module, check_bounds)
        add_address_functions(module, [n for n, _, _ in callable_])
        try:
            ee = execution_engine.ExecutionEngine(module, opt_level=opt_level)
        except Exception as e:
            raise first_diag("JIT compilation failed", e, diags) from None
        unknown = sorted(set(externals or {}) - set(linked))
        if unknown:
            raise ApproxError(f"externals given for @{unknown[0]}, which is not an external declaration of the module")
        for name, callback in linked.items():
            ee.raw_register_runtime(name, ctypes.cast(callback, ctypes.c_void_p))
        register_shims(ee, module)
        functions: dict[str, Callable] = {n: refuse(n, why) for n, why in refused.items()}
        for i, (name, ins, outs) in enumerate(callable_):
            wrapper = ee.raw_lookup(f"__approx_addr_{i}")
            if not wrapper:
                raise ApproxError(f"JIT linking failed for @{name}: unresolved external symbol "
                                  f"(declarations: {', '.join(decls) or 'none'})")
            out = ctypes.c_int64()
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(wrapper)((ctypes.c_void_p * 1)(ctypes.addressof(out)))
            functions[name] = make_callable(name, ins, outs, ee, out.value)
            if linked:
                functions[name] = raising(functions[name], raised)
    return CompiledModule(ee, functions, sigs, keep=(ctx, linked))
