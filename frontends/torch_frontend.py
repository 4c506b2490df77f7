"""Torch models as approx programs: a `torch.nn.Module`, and smaller variants of it,
imported through torch-mlir (linalg-on-tensors), annotated in ApproxMLIR's format,
run through the approx pipeline and JIT-compiled by upstream MLIR.

Knobs (all exact at 0):
- substitution: variant k (user-supplied, e.g. fewer layers) is the function
  `approx_<name>_<k>` with the signature of the model; `<name>` is a wrapper calling
  `<name>_exact`, marked `convert_to_call`, with a `func_substitute` annotation
  (static, or a decision tree over a state function, itself a torch module);
- precision: a `precision_reduce` annotation on `<name>_exact` and on every variant.

Precision: the model is exported in f64 (a copy, `.double()`), so knob 0 is f64,
knob 1 computes in f32 (torch's own precision: equal to torch's f32 output within
f32 rounding) and knob 2 in f16. Why not reduce from f32: precision_reduce narrows
f64 ops, the knob numbering is then the same as in every other program, and the
shared transform is left as it is. The price: knob 0 runs in f64 (bench/torch_bench.py
reports speedups against knob 1 too), and the f64 weights are narrowed at each call.
`precision=False` exports in the model's own dtype, without a precision knob.

Weights are trailing arguments of every function (see frontends/torch_export.py):
all functions take (inputs, weights of the model, of variant 1, ..., of the state).
Shapes are those of the example arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.parsing import parse_module
from frontends import torch_iree
from frontends.torch_export import Exported, Lifted, export_function, weights_of
from passes.knobs import KnobSpec, knob_specs


def _prepared(model: torch.nn.Module, double: bool) -> torch.nn.Module:
    if not isinstance(model, torch.nn.Module):
        raise ApproxError(f"expected a torch.nn.Module, got {type(model).__name__}", where="<torch import>")
    m = copy.deepcopy(model).eval()
    return m.double() if double else m


def _example(args: Sequence, double: bool) -> list[torch.Tensor]:
    out = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            a = torch.from_numpy(a)
        if not isinstance(a, torch.Tensor):
            raise ApproxError(f"example argument {i}: expected a torch tensor or numpy array, got "
                              f"{type(a).__name__}", where="<torch import>")
        a = a.detach()
        out.append(a.double() if double and a.is_floating_point() else a)
    return out


def import_torch(model: torch.nn.Module, *example_args, name: str = "forward", double: bool = False,
                 inline_weights: bool = False) -> str:
    """The MLIR text (linalg-on-tensors) of `model(*example_args)` as `@name`.
    Weights are trailing arguments, in the order of `torch_export.weights_of(model)`,
    or, with `inline_weights`, constants in the IR (small models only: xDSL prints
    every element)."""
    m, args = _prepared(model, double), _example(example_args, double)
    if inline_weights:
        f = export_function(m, args, name, type(model).__name__)
    else:
        names, weights = weights_of(m)
        f = export_function(Lifted(m, names, len(args), 0), [*args, *weights], name, type(model).__name__)
    return "module {\n" + f.text + "}\n"


def _contiguous(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous else x.copy(order="C")  # (np.ascontiguousarray makes 0-d 1-d)


def _setting(obj, *names, default=None):
    for n in names:
        if isinstance(obj, Mapping) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return default


def _arr(xs, t="i32") -> str:
    return f"array<{t}: {', '.join(str(int(x)) for x in xs)}>" if len(xs) else f"array<{t}>"


def _ladder(tree, ks: Sequence[int]) -> tuple[list, list, list, list, list]:
    """thresholds, decisions, lowers, uppers, decision values of a decision tree."""
    thresholds = list(_setting(tree, "thresholds", default=[]))
    decisions = list(_setting(tree, "decisions", default=[]))
    if len(decisions) != len(thresholds) + 1:
        raise ApproxError(f"decision_tree: {len(thresholds)} thresholds need {len(thresholds) + 1} decisions, "
                          f"got {len(decisions)}", where="<torch import>")
    lowers = _setting(tree, "thresholds_lower", "thresholds_lowers", default=None) or [min([0, *thresholds])]
    uppers = _setting(tree, "thresholds_upper", "thresholds_uppers", default=None) or [max([100, *thresholds])]
    values = _setting(tree, "decision_values", default=None) or [0, *ks]
    bad = [d for d in decisions if d not in values]
    if bad:
        raise ApproxError(f"decision_tree: decision {bad[0]} is not a variant (have {list(values)})",
                          where="<torch import>")
    return thresholds, decisions, list(lowers), list(uppers), list(values)


class _StateFn(torch.nn.Module):
    """The state function on the inputs at `indices` (all when None)."""

    def __init__(self, fn: Callable, indices: Sequence[int] | None):
        super().__init__()
        self.fn, self.indices = fn, None if indices is None else [int(i) for i in indices]

    def forward(self, *x):
        return self.fn(*(x if self.indices is None else [x[i] for i in self.indices]))


class TorchProgram:
    """A torch model with approx knobs, satisfying the autotuner's `Program` protocol.

    `variants={k: module}` (k >= 1, same inputs and output shapes) are substituted by
    `func_substitute`; `static_transform` (an int, or an object with `knob_val`) sets
    its knob, or `decision_tree` (an object or dict with ApproxMLIR's names:
    `state_function` (a torch module or function of the inputs returning one number),
    `thresholds`, `decisions`, optional `thresholds_lower`/`thresholds_upper`,
    `decision_values`) picks it per call. `build(config)` gives a callable taking
    numpy arrays or torch tensors (the example shapes) and returning numpy arrays,
    run by MLIR's JIT (`backend="jit"`) or by IREE (`backend="iree"`, optional extra).
    `decision_tree` / `static_transform` may also be `frontends.DecisionTree` /
    `StaticTransform` objects (transform_type func_substitute), their
    `approx_kernels` / `approx_kernel` then being the variants.
    """

    def __init__(self, model: torch.nn.Module, example_args: Sequence,
                 variants: Mapping[int, torch.nn.Module] | None = None,
                 decision_tree: Any = None, static_transform: Any = None, precision: bool = True,
                 name: str = "forward", backend: str = "jit"):
        if backend not in ("jit", "iree"):
            raise ApproxError(f"backend must be 'jit' (MLIR ExecutionEngine) or 'iree', got {backend!r}",
                              where="<torch import>")
        if backend == "iree" and not torch_iree.available():
            torch_iree.compile_iree("", name)  # raises the error saying what to install
        self.backend = backend
        if decision_tree is not None and static_transform is not None:
            raise ApproxError("give either decision_tree or static_transform, not both", where="<torch import>")
        chooser = decision_tree if decision_tree is not None else static_transform
        kind = _setting(chooser, "transform_type", default="func_substitute")
        if chooser is not None and kind != "func_substitute":
            raise ApproxError(f"a TorchProgram's decision_tree/static_transform picks variants (func_substitute), got "
                              f"{kind!r}; precision is set per function through the config", where="<torch import>")
        variants = dict(variants or {})
        if not variants and chooser is not None:  # frontends.knob objects carry their kernels
            kernels = chooser.kernels() if callable(getattr(chooser, "kernels", None)) else None
            variants = dict(kernels or _setting(chooser, "approx_kernels", default={}) or {})
        bad = [k for k in variants if not isinstance(k, int) or isinstance(k, bool) or k < 1]
        if bad:
            raise ApproxError(f"variant keys are knob values >= 1, got {bad[0]!r}", where="<torch import>")
        if chooser is not None and not variants:
            raise ApproxError("a decision_tree or static_transform needs variants to substitute",
                              where="<torch import>")
        static_k = _setting(static_transform, "knob_val", default=static_transform)
        if static_transform is not None and static_k not in (0, *variants):
            raise ApproxError(f"static_transform {static_k!r} is not 0 or a variant ({sorted(variants)})",
                              where="<torch import>")
        self.entry, self.double = name, precision
        self.name = f"{type(model).__name__}:{name}"
        self.filename = f"<torch:{type(model).__name__}>"
        args = _example(example_args, precision)
        models = {0: _prepared(model, precision)} | {k: _prepared(v, precision) for k, v in sorted(variants.items())}
        state = _setting(decision_tree, "state_function") if decision_tree is not None else None
        if decision_tree is not None and state is None:
            raise ApproxError("decision_tree needs a state_function", where="<torch import>")
        if decision_tree is not None:
            _ladder(decision_tree, sorted(variants))  # its errors before the (slow) exports
        if state is not None:
            indices = _setting(decision_tree, "state_indices", default=None)
            models["state"] = _prepared(_StateFn(state, indices), precision)
        self._check_outputs(models, args)
        layout, weights = {}, []
        for key, m in models.items():
            names, ws = weights_of(m)
            layout[key] = (names, len(weights))
            weights += ws
        self.in_shapes = [tuple(a.shape) for a in args]
        self.in_dtypes = [a.numpy().dtype for a in args]
        self.weights = [_contiguous(w.numpy()) for w in weights]
        full = [*args, *weights]
        fname = lambda k: f"{name}_exact" if k == 0 else f"approx_{name}_{k}"  # noqa: E731
        funcs: dict[Any, Exported] = {}
        for key, m in models.items():
            names, lo = layout[key]
            suffix = "" if key == 0 else f" (variant {key})" if key != "state" else " (state)"
            what = f"{type(model).__name__}{suffix}"
            sym = f"{name}_state_t" if key == "state" else fname(key)
            funcs[key] = export_function(Lifted(m, names, len(args), lo, as_state=key == "state"), full, sym, what)
        self.text = self._module(funcs, decision_tree, static_transform, precision)
        self._specs = knob_specs(parse_module(self.text, self.filename))

    @staticmethod
    def _check_outputs(models: dict, args: list) -> None:
        """Every variant returns what the model returns (shapes, dtypes)."""
        def sig(out):
            outs = out if isinstance(out, (tuple, list)) else (out,)
            return [(tuple(o.shape), o.dtype) if isinstance(o, torch.Tensor) else type(o).__name__ for o in outs]

        with torch.no_grad():
            try:
                ref = sig(models[0](*args))
            except Exception as e:
                raise ApproxError(f"the model fails on the example arguments: {type(e).__name__}: {e}",
                                  where="<torch import>") from None
            for k, m in models.items():
                if k in (0, "state"):
                    continue
                try:
                    got = sig(m(*args))
                except Exception as e:
                    raise ApproxError(f"variant {k} fails on the example arguments: {type(e).__name__}: {e}",
                                      where="<torch import>") from None
                if got != ref:
                    raise ApproxError(f"variant {k} returns {got}, the model returns {ref}: a substitute "
                                      "needs the same output shapes and dtypes", where="<torch import>")

    def _module(self, funcs: dict, tree, static, precision: bool) -> str:
        name, exact = self.entry, funcs[0]
        ins = ", ".join(exact.inputs)
        outs = ", ".join(exact.results)
        params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(exact.inputs))
        vals = ", ".join(f"%a{i}" for i in range(len(exact.inputs)))
        n_out = len(exact.results)
        res = "%r" if n_out == 1 else ", ".join(f"%r#{i}" for i in range(n_out))
        lines = [f.text for f in funcs.values()]
        lines.append(f"func.func @{name}({params}) -> ({outs}) {{\n"
                     f"  %r{'' if n_out == 1 else f':{n_out}'} = "
                     f"func.call @{exact.name}({vals}) : ({ins}) -> ({outs})\n"
                     f"  return {res} : {outs}\n}}\n")
        anns = []
        ks = sorted(k for k in funcs if isinstance(k, int) and k > 0)
        if ks:
            anns.append(f'"approx.util.annotation.convert_to_call"() <{{func_name = "{name}"}}> : () -> ()')
        if "state" in funcs:
            st = funcs["state"]
            lines.append(f"func.func @{name}_state({params}) -> i32 {{\n"
                         f"  %t = func.call @{st.name}({vals}) : ({ins}) -> ({st.results[0]})\n"
                         f"  %e = tensor.extract %t[] : tensor<i64>\n"
                         f"  %s = arith.trunci %e : i64 to i32\n  return %s : i32\n}}\n")
            thresholds, decisions, lowers, uppers, values = _ladder(tree, ks)
            anns.append(
                f'"approx.util.annotation.decision_tree"() <{{func_name = "{name}", '
                'transform_type = "func_substitute", '
                f'state_indices = {_arr(range(len(exact.inputs)), "i64")}, state_function = "{name}_state", '
                f"num_thresholds = {len(thresholds)} : i32, thresholds_uppers = {_arr(uppers)}, "
                f"thresholds_lowers = {_arr(lowers)}, decision_values = {_arr(values)}, "
                f"thresholds = {_arr(thresholds)}, decisions = {_arr(decisions)}}}> : () -> ()")
        elif ks:
            k = int(_setting(static, "knob_val", default=static)) if static is not None else 0
            anns.append(self._transform(name, "func_substitute", k))
        if precision:
            anns += [self._transform(f.name, "precision_reduce", 0) for key, f in funcs.items()
                     if key != "state" and "f64" in f.text]
        return "module {\n" + "".join(lines) + "\n".join(anns) + "\n}\n"

    @staticmethod
    def _transform(func: str, t: str, k: int) -> str:
        return (f'"approx.util.annotation.transform"() <{{func_name = "{func}", '
                f'transform_type = "{t}", knob_val = {k} : i32}}> : () -> ()')

    # ------------------------------------------------------------ Program protocol

    def knobs(self) -> list[KnobSpec]:
        return list(self._specs)

    def mlir(self, config: dict[str, dict] | None = None) -> str:
        """The IR after the approx pipeline for `config` (what `build` compiles)."""
        return run_pipeline(self.text, "approx-pipeline", self.filename, config=config or {})

    transformed_ir = mlir  # the name the autotuner's report asks for

    def build(self, config: dict[str, dict] | None = None, backend: str | None = None) -> Callable[..., Any]:
        """`backend` overrides the program's for this build ("jit" or "iree")."""
        from approx_opt.jit import compile_module

        text = self.mlir(config)
        backend = backend or self.backend
        fn = compile_module(text).fn(self.entry) if backend == "jit" else torch_iree.compile_iree(text, self.entry)
        weights, convert = self.weights, self._inputs

        def run(*inputs):
            return fn(*convert(inputs), *weights)

        run.__name__ = run.__qualname__ = self.entry
        return run

    def _inputs(self, inputs: Sequence) -> list[np.ndarray]:
        if len(inputs) != len(self.in_shapes):
            raise ApproxError(f"{self.name} takes {len(self.in_shapes)} input(s), got {len(inputs)}",
                              where=self.filename)
        out = []
        for i, (x, shape, dtype) in enumerate(zip(inputs, self.in_shapes, self.in_dtypes)):
            if isinstance(x, torch.Tensor):
                x = x.detach().cpu().numpy()
            if not isinstance(x, np.ndarray):
                raise ApproxError(f"{self.name} input {i}: expected a numpy array or torch tensor, got "
                                  f"{type(x).__name__}", where=self.filename)
            if x.shape != shape:
                raise ApproxError(f"{self.name} input {i}: expected shape {shape} (the example's), got "
                                  f"{x.shape}", where=self.filename)
            if x.dtype != dtype:
                if x.dtype.kind != dtype.kind:
                    raise ApproxError(f"{self.name} input {i}: expected {dtype} values, got {x.dtype}",
                                      where=self.filename)
                x = x.astype(dtype)
            out.append(_contiguous(x))
        return out
