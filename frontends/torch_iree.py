"""Optional backend: run the transformed linalg-on-tensors IR with IREE (llvm-cpu)
instead of MLIR's ExecutionEngine. IREE tiles and vectorizes the linalg ops (the
JIT path lowers them to plain loops), which is what ApproxMLIR itself uses for ML
code. Needs the optional extra `iree` (iree-base-compiler, iree-base-runtime).

f64 stays f64 (`--iree-input-demote-f64-to-f32=false`; IREE demotes it by default,
which would make knob 0 and knob 1 the same program). Results equal the JIT's
within the rounding of the type computed in: IREE's tiling sums in another order.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from approx_dialect.diagnostics import ApproxError

FLAGS = ("--iree-llvmcpu-target-cpu=host", "--iree-input-demote-f64-to-f32=false")
_CACHE: OrderedDict[tuple[str, str], bytes] = OrderedDict()
_LOCK = threading.Lock()


def available() -> bool:
    try:
        import iree.compiler  # noqa: F401
        import iree.runtime  # noqa: F401
    except ImportError:
        return False
    return True


def compile_iree(text: str, entry: str, driver: str = "local-sync") -> Callable:
    """A callable running `@entry` of `text` (approx-free MLIR) on IREE's CPU driver
    (`local-sync`: one thread, as the JIT; `local-task`: a thread pool)."""
    if not available():
        raise ApproxError("backend 'iree' needs the optional packages iree-base-compiler and iree-base-runtime "
                          "(pip install 'approx-toolchain[iree]')", where="<iree>")
    import iree.compiler as ireec
    import iree.runtime as ireert

    key = (hashlib.sha256(text.encode()).hexdigest(), entry)
    with _LOCK:
        vmfb = _CACHE.get(key)
        if vmfb is None:
            try:
                vmfb = ireec.compile_str(text, target_backends=["llvm-cpu"], extra_args=list(FLAGS))
            except ireec.CompilerToolError as e:
                lines = [ln for ln in str(e).splitlines() if "error:" in ln]
                raise ApproxError(f"IREE cannot compile the module: {(lines or ['?'])[0].strip()}"[:400],
                                  where="<iree>") from None
            _CACHE[key] = vmfb
            while len(_CACHE) > 32:
                _CACHE.popitem(last=False)
    module = ireert.load_vm_flatbuffer(vmfb, driver=driver)
    try:
        fn = module[entry]
    except (KeyError, AttributeError, RuntimeError):
        raise ApproxError(f"no function @{entry} in the IREE module", where="<iree>") from None

    def call(*arrays):
        try:
            out = fn(*arrays)
        except ValueError as e:
            raise ApproxError(f"IREE @{entry}: {str(e).splitlines()[0]}"[:400], where="<iree>") from None
        if isinstance(out, (tuple, list)):
            return tuple(np.asarray(o) for o in out)
        return np.asarray(out)

    call.__name__ = call.__qualname__ = entry
    call._keep = module
    return call
