"""Pass-pipeline strings (`-p a,b{opt=1}`) -> pass instances, with one-line errors."""

from __future__ import annotations

from xdsl.passes import ModulePass, parse_pipeline

from approx_dialect.diagnostics import ApproxError
from passes import ALL_PASSES, APPROX_PIPELINE, APPROX_PIPELINE_NAME, GENERIC_PASSES


def build_pipeline(spec: str) -> list[ModulePass]:
    """Parse a pipeline string; the name `approx-pipeline` stands for ApproxMLIR's
    whole sequence."""
    spec = spec.strip()
    if not spec:
        return []
    try:
        specs = list(parse_pipeline(spec))
    except BaseException as err:  # xDSL's ArgSpecParseError derives from BaseException
        raise ApproxError(f"bad pass pipeline '{spec}': {_one_line(err)}", where="<pipeline>") from None
    passes: list[ModulePass] = []
    for one in specs:
        if one.name == APPROX_PIPELINE_NAME:
            if one.parameters:
                raise ApproxError(f"'{APPROX_PIPELINE_NAME}' takes no options", where="<pipeline>")
            passes += build_pipeline(APPROX_PIPELINE)
            continue
        cls = ALL_PASSES.get(one.name) or GENERIC_PASSES.get(one.name)
        if cls is None:
            known = ", ".join([APPROX_PIPELINE_NAME, *ALL_PASSES, *GENERIC_PASSES])
            raise ApproxError(f"unknown pass '{one.name}' (known: {known})", where="<pipeline>")
        try:
            passes.append(cls.from_pass_spec(one))
        except BaseException as err:
            raise ApproxError(f"bad options for pass '{one.name}': {_one_line(err)}", where="<pipeline>") from None
    return passes


def _one_line(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    return lines[-1] if lines else type(err).__name__
