"""Child process that JIT-runs kernels with MLIR's runtime bounds checks on.

A failed check aborts the process (MLIR's `cf.assert` lowering calls abort), so
the kernels run here and not in pytest: one JSON job per line on stdin, one JSON
reply per line on stdout. `checked_jit.CheckedJit` is the parent side."""

from __future__ import annotations

import ctypes
import json
import os
import sys

import numpy as np


def encode(x):
    if isinstance(x, np.ndarray):
        return {"dtype": str(x.dtype), "shape": list(x.shape), "hex": x.tobytes().hex()}
    if isinstance(x, float):
        return {"float": x.hex()}
    if isinstance(x, tuple):
        return {"tuple": [encode(v) for v in x]}
    return {"int": int(x)} if x is not None else None


def decode(d):
    if d is None:
        return None
    if "dtype" in d:
        return np.frombuffer(bytes.fromhex(d["hex"]), dtype=d["dtype"]).reshape(d["shape"]).copy()
    if "float" in d:
        return float.fromhex(d["float"])
    if "tuple" in d:
        return tuple(decode(v) for v in d["tuple"])
    return d["int"]


def _replies():
    """Replies go to the original stdout; C's stdout (where MLIR `puts` the failed
    check) goes unbuffered to stderr, so the message survives the abort."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    libc = ctypes.CDLL(None)
    libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), None, 2, 0)  # _IONBF
    return replies


def main() -> int:
    from approx_dialect.diagnostics import ApproxError
    from approx_opt.jit import compile_module

    out = _replies()
    for line in sys.stdin:
        job = json.loads(line)
        try:
            fn = compile_module(job["text"], check_bounds=job["check_bounds"]).fn(job["func"])
            args = [decode(a) for a in job["args"]]
            result = fn(*args)
            reply = {"result": encode(result), "args": [encode(a) for a in args]}
        except ApproxError as err:
            reply = {"error": str(err)}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
