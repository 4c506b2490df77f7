"""Running transformed (approx-free) IR: `compile_module(ir)` lowers it with upstream
MLIR, JIT-compiles it and gives its functions as Python callables (`engine`). The
runtime of the frontends' kernels, the tuner's `.mlir` programs and the tests; the
`approx-opt` command itself never executes. `lowering` holds the upstream pass
pipelines and the JIT's shims, `abi` the C interface (ints, floats, bools and numpy
arrays to and from `_mlir_ciface_*` entry points).

Frontends and the autotuner call compiled functions in tight loops, so everything
that can be decided from a signature is decided once at compile time, and calls go
straight to the native entry point through ctypes (the stock
`ExecutionEngine.invoke` looks the symbol up and packs pointers on every call)."""

from approx_opt.jit.engine import CompiledModule, NoSuchFunction, compile_module
from approx_opt.jit.lowering import PIPELINE, TENSOR_PIPELINE

__all__ = ["PIPELINE", "TENSOR_PIPELINE", "CompiledModule", "NoSuchFunction", "compile_module"]
