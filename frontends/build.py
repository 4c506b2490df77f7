"""One decorated function -> one module in ApproxMLIR's annotation format: the
function, module-level `approx.util.annotation.*` ops naming it, and the functions
those annotations name (state function, checker, recover, approx kernels, cascade
variants and confidence), so `run_pipeline` applies exactly the passes a `.mlir`
file gets. Kernels' helpers are kernels; orchestration helpers are Python
callables reached through `pyobj.call` (the environment table lives here)."""

from __future__ import annotations

import inspect
import re
import sys

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    f64,
    i32,
    i64,
)
from xdsl.ir import Operation

from approx_dialect import (
    AnnotationCascadeOp,
    AnnotationConvertToCallOp,
    AnnotationDecisionTreeOp,
    AnnotationParamOp,
    AnnotationTransformOp,
    AnnotationTryOp,
)
from approx_dialect.diagnostics import ApproxError
from approx_dialect.ops import i32_array
from frontends.knob_config import Decorated, KnobConfig, KnobError
from frontends.lower_kernel import kernel_function
from frontends.lower_python import python_function, python_helper
from frontends.source import FunctionSource

_LIBRARY_PREFIXES = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})


def symbol_base(name: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return base if base and not base[0].isdigit() else f"f_{base}"


class ModuleBuilder:
    """Collects annotations, functions and the pyobj environment of one module."""

    def __init__(self):
        self.annotations: list[Operation] = []
        self.functions: list[Operation] = []
        self.env: list = []
        self._env_ids: dict[int, int] = {}
        self.names: set[str] = set()
        self.kernels: dict[tuple, tuple[str, list]] = {}
        self._active: set[tuple] = set()
        self.components: dict[str, object] = {}  # the component registry: symbol -> provider
        self._labels: dict[str, object] = {}  # component label -> the first component declaring it
        self._declared: list = []  # every component called, once
        self.orchestration: dict[int, str] = {}  # decorated orchestration callee -> its symbol
        self.call_sites: dict[str, tuple] = {}  # component label -> (source, call node) of its first call

    def symbol(self, base: str, exact: bool = False) -> str:
        """A fresh symbol name (`exact`: this very name, an error if taken)."""
        name = symbol_base(base)
        if exact:
            if name in self.names:
                raise KnobError(f"two functions of the module would be named '{name}'")
        else:
            i = 2
            while name in self.names or re.fullmatch(r"approx_.*_\d+|__internal_.*", name):
                name = f"{symbol_base(base)}_{i}"
                i += 1
        self.names.add(name)
        return name

    def global_index(self, obj) -> int:
        """Index of `obj` in the environment table (one entry per object)."""
        i = self._env_ids.get(id(obj))
        if i is None or self.env[i] is not obj:
            i = len(self.env)
            self.env.append(obj)
            self._env_ids[id(obj)] = i
        return i

    def component(self, comp, func_name: str) -> None:
        """Register a called component: its providers, and on the first call of its
        label its knobs (annotations naming `func_name`). Components sharing a label
        share its knobs, so they must declare the same ones."""
        if all(c is not comp for c in self._declared):
            self._declared.append(comp)
        first = self._labels.setdefault(comp.label, comp)
        if first is comp and not any(a.name == "approx.util.annotation.component" and a.component.data == comp.label
                                     for a in self.annotations):
            self.annotations.extend(comp.annotations(func_name))
        elif first is not comp and first.tune != comp.tune:
            raise KnobError(f"two components labelled '{comp.label}' declare different knobs; "
                            "components sharing a label share its knobs")
        for name, provider in comp.registry().items():
            if self.components.setdefault(name, provider) is not provider:
                raise KnobError(f"two different component providers are named '{name}' (a provider's name "
                                "is its symbol in the IR)")

    def function(self, symbol: str):
        for f in self.functions:
            if f.sym_name.data == symbol:
                return f
        raise KnobError(f"'{symbol}' calls itself (through decorated functions): recursion is not supported")

    def python_callee(self, fn) -> str:
        """A decorated orchestration function lowered into this module, with its
        annotations; its symbol."""
        src = FunctionSource.of(fn.python)
        symbol = self.orchestration[id(fn)] = self.symbol(fn.python.__name__)
        types = fn.arg_types()
        f = python_function(src, self, symbol, types)
        self.functions.append(f)
        if not fn.knob_config.is_empty():
            emit_annotations(self, symbol, fn.knob_config, src, types, list(f.function_type.outputs.data),
                             python_helper(self))
        return symbol

    def module(self) -> ModuleOp:
        """The module; a knob no provider of its label supports is an error at the label's first call."""
        from frontends.components.declare import check_knobs

        by_label: dict[str, list] = {}
        for comp in self._declared:
            by_label.setdefault(comp.label, []).append(comp)
        for label, comps in by_label.items():
            try:
                check_knobs(comps)
            except ApproxError as err:
                site = self.call_sites.get(label)
                raise (site[0].relocate(err, site[1]) if site else err) from None
        return ModuleOp([*self.annotations, *self.functions])

    # ------------------------------------------------------------ kernel helpers
    @staticmethod
    def is_lowerable(fn) -> bool:
        """Functions a kernel can call by lowering them: decorated ones, and plain
        Python functions of user code (not of the standard library or installed packages)."""
        if isinstance(fn, Decorated):
            return True
        if not inspect.isfunction(fn) or fn.__name__ == "<lambda>":
            return False
        return not fn.__code__.co_filename.startswith(_LIBRARY_PREFIXES)

    def kernel_call(self, fn, arg_types: list, node=None, caller=None) -> tuple[str, list]:
        """Symbol and result types of `fn` lowered as a kernel for `arg_types`
        (once per function and types; a decorated callee brings its own annotations)."""
        key = (id(fn), tuple(arg_types))
        if key in self.kernels:
            return self.kernels[key]
        if key in self._active:
            err = caller.error if caller is not None else None
            msg = f"'{getattr(fn, '__name__', fn)}' calls itself: recursive kernels are not supported"
            raise err(node, msg) if err else KnobError(msg)
        self._active.add(key)
        try:
            py = fn.python if isinstance(fn, Decorated) else fn
            src = fn.source if isinstance(fn, Decorated) else FunctionSource.of(py)
            name = self.symbol(py.__name__)
            f = kernel_function(src, self, name, arg_types)
            results = list(f.function_type.outputs.data)
            self.kernels[key] = (name, results)
            self.functions.append(f)
            if isinstance(fn, Decorated) and not fn.knob_config.is_empty():
                emit_annotations(self, name, fn.knob_config, src, list(arg_types), results, kernel_helper(self))
        finally:
            self._active.discard(key)
        return self.kernels[key]


def kernel_helper(builder: ModuleBuilder):
    """helper(role, fn, symbol, ins, outs): `fn` lowered as a kernel with these types."""
    def helper(role: str, fn, symbol: str, ins: list, outs: list) -> None:
        if not builder.is_lowerable(fn):
            raise KnobError(f"the {role} {getattr(fn, '__name__', fn)!r} of a kernel must be a Python "
                            "function it can lower (kernels run compiled and cannot call Python objects)")
        src = fn.source if isinstance(fn, Decorated) else FunctionSource.of(fn)
        builder.functions.append(kernel_function(src, builder, symbol, ins, outs))

    return helper


def _values_attr(values: list, t) -> DenseArrayBase:
    if isinstance(t, IntegerType | IndexType):
        if not all(float(v).is_integer() for v in values):
            raise KnobError(f"Param values {values} must be integers for an integer argument")
        return DenseArrayBase.from_list(i64, [int(v) for v in values])
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def _param_index(src: FunctionSource, arg) -> int:
    params = [a.arg for a in src.tree.args.args + src.tree.args.kwonlyargs]
    if isinstance(arg, int):
        if not 0 <= arg < len(params):
            raise KnobError(f"Param index {arg} is out of range: '{src.name}' has {len(params)} parameters")
        return arg
    if arg not in params:
        raise KnobError(f"Param {arg!r} is not a parameter of '{src.name}' (parameters: {', '.join(params)})")
    return params.index(arg)


def emit_annotations(b: ModuleBuilder, fname: str, cfg: KnobConfig, src: FunctionSource,
                     ins: list, outs: list, helper) -> None:
    """The annotations of `cfg` on function `fname` (types ins -> outs) and their functions;
    a setting that does not fit the function is an error at its decorator."""
    try:
        _emit_annotations(b, fname, cfg, src, ins, outs, helper)
    except KnobError as err:
        raise src.relocate(err, src.tree.decorator_list[0] if src.tree.decorator_list else src.tree) from None


def _emit_annotations(b: ModuleBuilder, fname: str, cfg: KnobConfig, src: FunctionSource,
                      ins: list, outs: list, helper) -> None:
    loc = src.loc(src.tree.decorator_list[0] if src.tree.decorator_list else src.tree)
    anns: list[Operation] = []
    selected: set[str] = set()
    substitutes: dict = {}

    def transform(ttype: str, k: int) -> None:
        anns.append(AnnotationTransformOp(fname, ttype, k))
        selected.add(ttype)

    st = cfg.static_transform
    if st is not None:
        transform(st.transform_type, st.knob_val)
        if st.transform_type == "func_substitute":
            substitutes.update(st.kernels())
    if cfg.memoize is not None:
        transform("memoize", cfg.memoize.knob_val)
    dt = cfg.decision_tree
    if dt is not None:
        for i in dt.state_indices:
            if not 0 <= i < len(ins):
                raise KnobError(f"state index {i} is out of range: '{src.name}' has {len(ins)} parameters")
        state = b.symbol(getattr(dt.state_function, "__name__", "state"))
        helper("state function", dt.state_function, state, [ins[i] for i in dt.state_indices], [i32])
        lo, hi, values = dt.bounds()
        anns.append(AnnotationDecisionTreeOp(properties={
            "func_name": StringAttr(fname), "transform_type": StringAttr(dt.transform_type),
            "state_indices": DenseArrayBase.from_list(i64, list(dt.state_indices)),
            "state_function": StringAttr(state), "num_thresholds": IntegerAttr(len(dt.thresholds), i32),
            "thresholds_uppers": i32_array(hi), "thresholds_lowers": i32_array(lo),
            "decision_values": i32_array(values), "thresholds": i32_array(dt.thresholds),
            "decisions": i32_array(dt.decisions)}))
        selected.add(dt.transform_type)
        if dt.transform_type == "func_substitute":
            substitutes.update(dt.approx_kernels)
    if substitutes:
        if cfg.cascade is not None:
            raise KnobError("func_substitute and Cascade both need approx_<f>_<k> functions; use one of them")
        anns.append(AnnotationConvertToCallOp(fname))
        for k, fn in sorted(substitutes.items()):
            helper(f"approx kernel {k}", fn, b.symbol(f"approx_{fname}_{k}", exact=True), ins, outs)
    sc = cfg.safety_contract
    if sc is not None:
        checker = b.symbol(getattr(sc.checker, "__name__", "checker"))
        recover = b.symbol(getattr(sc.recover, "__name__", "recover"))
        helper("checker", sc.checker, checker, outs + ins, [IntegerType(1)])
        helper("recover function", sc.recover, recover, ins, outs)
        anns.append(AnnotationTryOp(fname, recover, checker))
    for p in cfg.params:
        i = _param_index(src, p.arg)
        name = p.name or (p.arg if isinstance(p.arg, str) else src.tree.args.args[i].arg)
        anns.append(AnnotationParamOp(fname, i, name, _values_attr(list(p.values), ins[i])))
    if cfg.params and "param" not in selected:
        transform("param", max(p.knob_val for p in cfg.params))
    cc = cfg.cascade
    if cc is not None:
        for j, fn in enumerate(cc.variants, 1):
            helper(f"cascade variant {j}", fn, b.symbol(f"approx_{fname}_{j}", exact=True), ins, outs)
        conf = b.symbol(getattr(cc.confidence, "__name__", "confidence"))
        helper("confidence function", cc.confidence, conf, outs + ins, [i32])
        anns.append(AnnotationCascadeOp(fname, conf, len(cc.variants), list(cc.thresholds)))
        if "cascade" not in selected:
            transform("cascade", cc.knob_val)
    for a in anns:
        a.location = loc
    b.annotations.extend(anns)
