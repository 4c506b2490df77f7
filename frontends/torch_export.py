"""torch.nn.Module -> one `func.func` of linalg-on-tensors text that xDSL parses.

torch-mlir's `fx.export_and_import` gives upstream MLIR that xDSL cannot take as
it is: weights come as `dense_resource<...>` blobs in a `{-# dialect_resources #-}`
section (xDSL parses the reference but prints it without the blob: the weights
would be lost in the pass pipeline), and some named linalg ops
(`linalg.batch_matmul`, ...) are unknown to xDSL. The route taken here:

- parameters and buffers become trailing function *arguments* (the model is
  called through `torch.func.functional_call`), so the IR stays small whatever
  the model size, the pass pipeline never carries megabytes of constants, and
  the weights are handed over as numpy arrays without a copy at each call;
- the remaining (small) tensor constants are inlined as `dense<"0x...">`;
- a linalg.generic with several results is written `} -> T1, T2` (xDSL's parser
  does not take the `} -> (T1, T2)` that upstream prints);
- every named linalg op is generalized to `linalg.generic` upstream
  (`linalg-generalize-named-ops`), and its loops reordered for speed, with
  bit-identical results (`torch_loops.py`);
- an op of a dialect xDSL does not have (`tm_tensor.sort`/`scan`/`scatter`, from
  sort, topk, cumsum, ...) or a torch op torch-mlir cannot lower is an ApproxError
  naming the op and the line of the model's source.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.func import functional_call

from approx_dialect.diagnostics import ApproxError
from frontends.torch_loops import interchange

#: Partial conversions of torch-mlir's backend pipeline: torch ops left after them
#: are the ones it cannot lower (the full pipeline only names the first illegal op).
_TO_LINALG = ("builtin.module(func.func(convert-torch-to-tmtensor,convert-torch-to-linalg,"
              "convert-torch-to-scf,convert-torch-to-arith,convert-torch-to-tensor))")


def weights_of(model: torch.nn.Module) -> tuple[list[str], list[torch.Tensor]]:
    """Names and tensors of every parameter and buffer (shared ones once)."""
    named = [*model.named_parameters(), *model.named_buffers()]
    return [n for n, _ in named], [t.detach() for _, t in named]


class Lifted(torch.nn.Module):
    """`model` with its weights taken from the arguments: forward(*inputs, *all_weights)
    uses all_weights[lo:hi] as `names`; the other weights are unused arguments (so
    every function of a program has one signature). `as_state` turns the result into
    a 0-d int64 tensor (a decision tree's state)."""

    def __init__(self, model, names: Sequence[str], n_inputs: int, lo: int, as_state: bool = False):
        super().__init__()
        object.__setattr__(self, "inner", model)  # not a submodule: its weights must not be exported
        self.names, self.n_inputs, self.lo, self.as_state = list(names), n_inputs, lo, as_state

    def forward(self, *args):
        inputs, weights = args[: self.n_inputs], args[self.n_inputs + self.lo:]
        params = dict(zip(self.names, weights[: len(self.names)]))
        out = functional_call(self.inner, params, tuple(inputs)) if params else self.inner(*inputs)
        if self.as_state:
            out = torch.as_tensor(out).reshape(()).to(torch.int64)
        return out


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _where(loc) -> str | None:
    """`file:line` of the model's source in a torch-mlir location (the innermost call)."""
    m = re.search(r'"([^"]+)":(\d+):\d+', str(loc))
    return f"{m[1]}:{m[2]}" if m else None


def _export(module, args, **kw):
    """torch-mlir's export, its diagnostics kept off stderr (errors are raised, not printed)."""
    from torch_mlir import fx, ir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter

    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    ctx.attach_diagnostic_handler(lambda d: True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fx.export_and_import(module, *args, fx_importer=FxImporter(context=ctx), **kw)


def _unlowerable(module, args, what: str) -> ApproxError | None:
    """The torch ops torch-mlir cannot lower to linalg, as an error (None if none found)."""
    from torch_mlir import ir, passmanager

    try:
        m = _export(module, args, output_type="torch")
        with m.context:
            passmanager.PassManager.parse(_TO_LINALG).run(m.operation)
    except Exception:
        return None
    left = []

    def visit(op):
        if op.name.startswith("torch.aten.") or op.name.startswith("torch.prims."):
            left.append((op.name, _where(op.location)))
        return ir.WalkResult.ADVANCE

    m.operation.walk(visit)
    if not left:
        return None
    ops = sorted({n for n, _ in left})
    return ApproxError(f"{what}: torch-mlir cannot lower {', '.join(ops)} to linalg-on-tensors "
                       "(unsupported op)", where=left[0][1])


def _inline_resources(text: str) -> str:
    """`dense_resource<key>` -> `dense<"0x...">` from the module's resource section."""
    head, sep, tail = text.partition("{-#")
    if not sep:
        return text
    blobs = dict(re.findall(r'([\w.]+): "0x[0-9A-Fa-f]{8}([0-9A-Fa-f]*)"', tail))

    def inline(m):
        if m[1] not in blobs:
            raise ApproxError(f"torch-mlir resource {m[1]} has no data", where="<torch import>")
        return f'dense<"0x{blobs[m[1]]}">'

    return re.sub(r"dense_resource<([\w.]+)>", inline, head)


def _unknown_ops(module) -> list[tuple[str, str | None]]:
    """Ops of the upstream module that xDSL (our context) does not know."""
    from torch_mlir import ir

    from approx_dialect.context import make_context

    ctx, bad = make_context(), []

    def visit(op):
        if ctx.get_optional_op(op.name) is None:
            bad.append((op.name, _where(op.location)))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return bad


@dataclass(frozen=True)
class Exported:
    """One exported function: its text (`func.func @name`, maps inline) and types."""

    name: str
    text: str
    inputs: tuple[str, ...]
    results: tuple[str, ...]


def export_function(module: torch.nn.Module, args: Sequence, name: str, what: str) -> Exported:
    """`module(*args)` as `func.func @name` in linalg-on-tensors; `what` names it in errors."""
    from torch_mlir import ir, passmanager

    try:
        m = _export(module, args, output_type="linalg-on-tensors", func_name=name)
    except Exception as e:
        err = _unlowerable(module, args, what) if type(e).__name__ == "TorchMlirCompilerError" else None
        raise (err or ApproxError(f"{what}: torch export failed: {_first_line(e)}"[:400],
                                  where="<torch import>")) from None
    with m.context:
        passmanager.PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))").run(m.operation)
        interchange(m)
        bad = _unknown_ops(m)
        if bad:
            ops = sorted({n for n, _ in bad if not n.endswith(".yield")} or {n for n, _ in bad})
            raise ApproxError(f"{what}: torch-mlir lowered the model to {', '.join(ops)}, which the approx "
                              "toolchain cannot take (unsupported op: use linalg/tensor/arith/math/scf ops only)",
                              where=bad[0][1])
        funcs = [op for op in m.body.operations if op.operation.name == "func.func"]
        if len(funcs) != 1:
            raise ApproxError(f"{what}: expected one function from torch-mlir, got {len(funcs)}",
                              where="<torch import>")
        func = funcs[0].operation
        ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        text = func.get_asm(print_generic_op_form=False)
        if "dense_resource<" in text:
            _, sep, resources = str(m).partition("{-#")
            text = _inline_resources(text + "\n" + sep + resources)
        # xDSL 0.74 parses a linalg.generic's result types only without parentheses
        text = re.sub(r"(?m)^(\s*\} -> )\((.*)\)$", r"\1\2", text)
        return Exported(name, text.strip() + "\n", tuple(map(str, ftype.inputs)), tuple(map(str, ftype.results)))
