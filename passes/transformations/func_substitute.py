"""func_substitute (ApproxMLIR): in the wrapper `f` made by pre-emit-transform, the
call to `__internal_f` is redirected to the user's `approx_f_<k>`; k = 0 is exact."""

from __future__ import annotations

from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.dialects.func import CallOp

from approx_dialect import TransformOp
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols, first_in_region, parent_func
from passes.pre_emit_transform import internal_name


def substitute_name(func_name: str, k: int) -> str:
    return f"approx_{func_name}_{k}"


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    k = transform.knob_val.value.data
    func = parent_func(transform)
    fname = func.sym_name.data
    region = transform.parent_region()
    calls = [op for op in region.walk() if isinstance(op, CallOp)]
    call = next((c for c in calls if c.callee.string_value() == internal_name(fname)), None)
    call = call or first_in_region(region, (CallOp,))
    if call is None:
        raise ApproxError(
            f"func_substitute: '{fname}' has no call to substitute; mark it with "
            "approx.util.annotation.convert_to_call",
            transform,
        )
    if k == 0:
        return
    new_name = substitute_name(fname, k)
    target = symbols.get(new_name)
    if target is None:
        raise ApproxError(
            f"func_substitute: knob {k} of '{fname}' needs a function '{new_name}' in the module",
            transform,
        )
    want = (tuple(o.type for o in call.arguments), tuple(r.type for r in call.res))
    have = (tuple(target.function_type.inputs.data), tuple(target.function_type.outputs.data))
    if want != have:
        raise ApproxError(
            f"func_substitute: '{new_name}' has type {target.function_type} but the call "
            f"it replaces has ({', '.join(map(str, want[0]))}) -> ({', '.join(map(str, want[1]))})",
            transform,
        )
    call.callee = SymbolRefAttr(new_name)
