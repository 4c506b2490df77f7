"""`KnobFunction`: what `@Knob(...)` returns. Called like the plain function; the
first call (per configuration, and per array dtype/rank of a kernel) lowers the
Python source to the approx dialect, runs the approx pipeline with the knob
settings (`run_pipeline(..., config=...)`, the same passes a `.mlir` file gets)
and JIT-compiles kernels or generates Python for orchestration code; later calls
go straight to the cached result. It satisfies the autotuner's `Program`
protocol (`name`, `knobs()`, `build(config)`)."""

from __future__ import annotations

import ast
import functools
import inspect
import json
import threading
import typing

import numpy as np

from approx_dialect.context import print_module
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import lower_module, run_pipeline
from approx_opt.parsing import parse_module
from frontends.build import ModuleBuilder, emit_annotations
from frontends.components.runtime import OpTimes, Reuse
from frontends.knob_config import Decorated, KnobConfig, KnobError
from frontends.measured import Measured
from frontends.source import MISSING, FunctionSource
from passes.knobs import KnobSpec, apply_config, knob_specs

PIPELINE = "approx-pipeline"
RUNNERS = 64


def _is_array_annotation(t) -> bool:
    return t is np.ndarray or typing.get_origin(t) is np.ndarray


class _Runner:
    """Calls of one configuration: a table from the argument signature (array
    dtypes and ranks; () when there are none) to the compiled callable."""

    __slots__ = ("owner", "config", "table", "arrays", "n")

    def __init__(self, owner: "KnobFunction", config: dict):
        self.owner, self.config, self.table = owner, config, {}
        self.arrays, self.n = owner._array_positions(), owner._n_params

    def lookup(self, args: tuple):
        key = tuple((args[i].dtype, args[i].ndim) if isinstance(args[i], np.ndarray) else type(args[i])
                    for i in self.arrays) if self.arrays else ()
        fn = self.table.get(key)
        if fn is None:
            fn = self.table[key] = self.owner._compile(self.config, key)
        return fn

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self.n:
            args = self.owner._bind(args, kwargs)
        return self.lookup(args)(*args)


class KnobFunction(Decorated, Measured):
    """A decorated function: callable, tunable (`set_config`, `knobs`, `build`), inspectable (`ir`)."""

    def __init__(self, fn, config: KnobConfig):
        functools.update_wrapper(self, fn)
        self.python = fn
        self.knob_config = config
        self.name = f"{fn.__module__}:{fn.__qualname__}"
        self._signature = inspect.signature(fn)
        self._n_params = len(self._signature.parameters)
        self._lock = threading.RLock()
        # The source is taken now, and checked to be this function's own: read at the
        # first call, a file edited since the import would be what runs.
        self._src: FunctionSource | None = None
        self._src_error: ApproxError | None = None
        try:
            self._src = FunctionSource.of(fn)
        except ApproxError as err:  # raised when the function is first lowered
            self._src_error = err
        self._kind: str | None = None
        self._modules: dict = {}  # signature key -> (text, env, entry symbol)
        self._parsed: dict = {}  # annotated IR text -> its module, parsed once (`_annotated` copies it)
        self._runners: dict[str, _Runner] = {}
        self._config: dict = {}
        self._runner: _Runner | None = None
        self._fast = None
        self._components: dict = {}  # the component registry of the lowered module (symbol -> provider)
        self.reuse = Reuse()  # results its configurations' untimed passes may reuse (`Reuse.keep`)
        self.times = OpTimes()  # its component calls' time per label, while measuring (`profile`)

    # ------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        fast = self._fast  # the one compiled callable, when no argument decides among several
        if fast is not None and not kwargs and len(args) == self._n_params:
            return fast(*args)
        runner = self._runner
        if runner is None:
            runner = self._runner = self._runner_for(self._config)
        if kwargs or len(args) != self._n_params:
            args = self._bind(args, kwargs)
        fn = runner.lookup(args)
        if not runner.arrays and runner is self._runner:
            self._fast = fn
        return fn(*args)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _bind(self, args, kwargs) -> tuple:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.python.__qualname__}(): {err}") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def _runner_for(self, config: dict) -> _Runner:
        """The runner of `config` (the RUNNERS most recently used are kept: a tuning run
        builds thousands of configurations, each holding compiled code)."""
        key = json.dumps(config, sort_keys=True)
        with self._lock:
            runner = self._runners.pop(key, None) or _Runner(self, config)
            self._runners[key] = runner
            while len(self._runners) > RUNNERS:
                self._runners.pop(next(iter(self._runners)))
            return runner

    # ------------------------------------------------------------ tuning (autotuner Program)
    @property
    def config(self) -> dict:
        return dict(self._config)

    def set_config(self, config: dict | None) -> None:
        """Set the knobs (passes.knobs settings, e.g. {"f": {"knob_val": 2}}); {} or None
        = as annotated. Checked now: unknown knobs and values outside a knob's range raise."""
        config = dict(config or {})
        if config:
            apply_config(self._annotated(), config)
        self._config = config
        self._runner, self._fast = self._runner_for(config), None

    def knobs(self) -> list[KnobSpec]:
        """The search space, read from the annotations of the lowered module."""
        return knob_specs(self._annotated())

    def build(self, config: dict) -> typing.Callable:
        """A callable running this function with its knobs set to `config`."""
        if config:
            apply_config(self._annotated(), dict(config))
        return self._runner_for(dict(config or {}))

    def ir(self, after: bool = False, config: dict | None = None, args: tuple | None = None,
           locations: bool = False) -> str:
        """The IR text: the annotated module (before), or after the approx pipeline
        with `config`; for a kernel, arrays are typed like `args` (default: as last
        called, else float64 with the rank the body indexes)."""
        key = self._key_of(args) if args is not None else None
        text = self._module(key)[0]
        if not after:
            return text if locations else print_module(parse_module(text))
        return run_pipeline(text, PIPELINE, self.source.filename, config=config or None)

    # ------------------------------------------------------------ lowering
    @property
    def source(self) -> FunctionSource:
        """The function's source as taken when the decorator ran (an ApproxError if it
        could not be read or is not this function's own)."""
        if self._src is None:
            raise self._src_error
        return self._src

    @property
    def kind(self) -> str:
        """"kernel" (JIT-compiled numeric code) or "python" (generated Python)."""
        if self._kind is None:
            self._kind = self._choose_kind()
        return self._kind

    def _annotation(self, name: str):
        src = self.source
        for a in src.tree.args.args + src.tree.args.kwonlyargs:
            if a.arg == name:
                return self._resolve_annotation(a.annotation) if a.annotation is not None else MISSING
        return MISSING

    def _resolve_annotation(self, node):
        """An annotation's object, read from the AST (never evaluated as text)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return MISSING
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name):
            return self.source.resolve(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve_annotation(node.value)
            return getattr(base, node.attr, MISSING) if base is not MISSING else MISSING
        return MISSING

    def _param_annotations(self) -> list:
        return [self._annotation(p) for p in self._signature.parameters]

    def _choose_kind(self) -> str:
        anns = self._param_annotations()
        numeric = bool(anns) and all(a in (int, float, bool) or _is_array_annotation(a) for a in anns)
        mode = self.knob_config.lowering
        if mode == "kernel" and not numeric:
            bad = [p for p, a in zip(self._signature.parameters, anns) if not (a in (int, float, bool)
                                                                               or _is_array_annotation(a))]
            raise self.source.error(None, f"lowering='kernel' needs every parameter annotated int, "
                                                  f"float, bool or np.ndarray; not: {', '.join(bad) or '(none)'}")
        return "kernel" if (numeric and mode != "python") or mode == "kernel" else "python"

    def _array_positions(self) -> list[int]:
        if self.kind != "kernel":
            return []
        return [i for i, a in enumerate(self._param_annotations()) if _is_array_annotation(a)]

    def _key_of(self, args) -> tuple:
        args = self._bind(tuple(args), {})
        return tuple((args[i].dtype, args[i].ndim) if isinstance(args[i], np.ndarray) else type(args[i])
                     for i in self._array_positions())

    def _default_key(self) -> tuple:
        """Before any call: float64 arrays of the rank the body indexes them with."""
        done = [k for k in self._modules if k != ()]
        if done:
            return done[-1]
        src = self.source
        names = list(self._signature.parameters)
        key = []
        for i in self._array_positions():
            rank = 1
            for node in ast.walk(src.tree):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == names[i]:
                    rank = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
                    break
            key.append((np.dtype(np.float64), rank))
        return tuple(key)

    def _module(self, key: tuple | None = None):
        """(annotated IR text with locations, environment, entry symbol) for a signature key."""
        if key is None:
            key = self._default_key() if self._array_positions() else ()
        with self._lock:
            found = self._modules.get(key)
            if found is None:
                found = self._modules[key] = self._lower(key)
            return found

    def _annotated(self, key: tuple | None = None):
        """A copy of the annotated module for a signature key: parsed once, copied for
        each configuration (a tuner builds hundreds; a copy costs a small part of a parse)."""
        text = self._module(key)[0]
        with self._lock:
            module = self._parsed.get(text)
            if module is None:
                module = self._parsed[text] = parse_module(text, self.source.filename)
            try:
                return module.clone()
            except RecursionError:  # deeply nested: parsed again, with room for it
                return parse_module(text, self.source.filename)

    def arg_types(self, key: tuple = ()) -> list:
        """The IR types of the parameters (for a kernel: arrays typed by `key`)."""
        return self._arg_types(key)

    def _arg_types(self, key: tuple) -> list:
        from approx_dialect.pyobj import OBJ
        from frontends.kernel_types import SCALARS, memref_of
        from frontends.lower_python import SCALAR_ANNOTATIONS

        anns = self._param_annotations()
        if self.kind == "python":
            return [next((t for k, t in SCALAR_ANNOTATIONS.items() if a is k), OBJ) for a in anns]
        types, arrays = [], iter(key)
        for i, a in enumerate(anns):
            if _is_array_annotation(a):
                sig = next(arrays)
                if not isinstance(sig, tuple):
                    name = list(self._signature.parameters)[i]
                    raise TypeError(f"{self.python.__qualname__}(): argument '{name}' must be a numpy array, "
                                    f"got {getattr(sig, '__name__', sig)}")
                dtype, ndim = sig
                from frontends.kernel_types import DTYPES

                if np.dtype(dtype) not in DTYPES:
                    raise TypeError(f"{self.python.__qualname__}(): arrays of {dtype} are not supported "
                                    f"(supported: {', '.join(sorted(str(d) for d in DTYPES))})")
                types.append(memref_of(dtype, ndim))
            else:
                types.append(SCALARS[a])
        return types

    def _lower(self, key: tuple):
        src = self.source
        builder = ModuleBuilder()
        types = self._arg_types(key)
        if self.kind == "kernel":
            entry, _ = builder.kernel_call(self, types)
        else:
            from frontends.lower_python import python_function, python_helper

            entry = builder.orchestration[id(self)] = builder.symbol(self.python.__name__)
            f = python_function(src, builder, entry, types)
            builder.functions.insert(0, f)
            if not self.knob_config.is_empty():
                emit_annotations(builder, entry, self.knob_config, src, types,
                                 list(f.function_type.outputs.data), python_helper(builder))
        module = builder.module()
        from approx_dialect.context import verify_module

        verify_module(module)
        self._components.update(builder.components)
        return _print_with_locations(module), builder.env, entry

    def environment(self) -> tuple[list, str]:
        """(environment table, entry symbol) of the lowered orchestration module: what
        its pyobj ops index (`frontends.deploy.load_tuned` runs a tuned IR file with it)."""
        if self.kind != "python":
            raise ApproxError(f"{self.name} is a numeric kernel: its tuned IR runs through "
                              "approx_opt.jit.compile_module, without an environment")
        _, env, entry = self._module()
        return env, entry

    @property
    def components(self) -> dict:
        """The component registry (symbol -> provider) of the program's component ops."""
        self._module()
        return dict(self._components)

    def _compile(self, config: dict, key: tuple):
        text, env, entry = self._module(key)
        with self._lock:
            if self.kind == "kernel":
                from approx_opt.jit import compile_module

                lowered = run_pipeline(text, PIPELINE, self.source.filename, config=config or None)
                return compile_module(lowered).fn(entry)
            from frontends.components.runtime import ComponentRuntime
            from frontends.pygen import generate

            try:
                module = lower_module(self._annotated(key), PIPELINE, config or None)
            except RecursionError:  # deeply nested: from text, with room for it
                module = parse_module(run_pipeline(text, PIPELINE, self.source.filename, config=config or None))
            runtime = ComponentRuntime(self._components, self.reuse, self.times) if self._components else None
            fn = generate(module, env, self.python.__qualname__, runtime).fn(entry)
            contract = self.knob_config.safety_contract
            return _recovering(fn, contract.recover, self.name) if contract is not None else fn

    def __repr__(self) -> str:
        return f"<KnobFunction {self.name} ({self._kind or 'not lowered yet'})>"


def _recovering(fn, recover, where: str):
    """SafetyContract when there is no result to check: a call that raises (a
    component fault: an LLM backend, a tool, a retriever) is answered by
    `recover`, as a result the checker rejects is; a failing `recover` is one
    ApproxError."""
    def call(*args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - the contract's recovery path answers instead
            pass
        try:
            return recover(*args)
        except ApproxError:
            raise
        except Exception as err:
            name = getattr(recover, "__name__", "recover")
            raise ApproxError(f"recover function '{name}' failed: {type(err).__name__}: {err}", where=where) from None

    return call


def _print_with_locations(module) -> str:
    """The module with `loc("file.py":line:col)` on every op, so errors of the passes
    point at the Python source (generic form: xDSL's custom printer puts the
    location of an scf.while where its parser does not read it)."""
    import io

    from xdsl.printer import Printer

    out = io.StringIO()
    Printer(stream=out, print_debuginfo=True, print_generic_format=True).print_op(module)
    out.write("\n")
    return out.getvalue()


__all__ = ["KnobFunction", "KnobError"]
