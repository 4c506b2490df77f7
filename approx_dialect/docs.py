"""docs/transformations.md, generated from the definitions: the table of transform
types (`transform_types`) and the component ops (`component`); and the table of the
component ops' declared settings in docs/components.md (`settings_table`). Sits
above both, so the table itself imports no op."""

from __future__ import annotations

from xdsl.irdl import IRDLOperation

from approx_dialect.component import COMPONENT_OPS, ConfidenceOp, FallbackOp
from approx_dialect.component_knobs import COMPONENT_TRANSFORMS
from approx_dialect.op_settings import APPLIES
from approx_dialect.transform_types import TRANSFORM_TYPES


def markdown_table() -> str:
    """docs/transformations.md; a test keeps the file equal to this."""
    rows = [
        "# Transformations",
        "",
        "Generated from `approx_dialect/transform_types.py` by "
        "`python -m approx_dialect > docs/transformations.md`.",
        "Every transformation is exact at knob value 0.",
        "",
        "| transform_type | what it rewrites | knob k | exact when | what it needs from the program |",
        "|---|---|---|---|---|",
    ]
    for t in TRANSFORM_TYPES.values():
        rows.append(f"| `{t.name}` | {t.summary} | {t.knob} | {t.exact} | {t.needs} |")
    return "\n".join(rows + [""] + component_table()) + "\n"


def component_table() -> list[str]:
    """The section on component ops (approx_dialect/component.py)."""
    rows = [
        "## On component ops",
        "",
        "The components of a compound AI program (answer models, embedding, retrieval, tool calls) are ops of "
        "the `component` dialect (`approx_dialect/component.py`); the parameters a knob can change are their "
        "attributes. A knob of a component is an `approx.util.annotation.component {func_name, component, "
        "parameter, transform_type, values, knob_val[, thresholds, decided, input]}` named `<component>.<parameter>`; "
        "transform-approx rewrites `parameter` of every op labelled `component`. Every one is exact at k = 0. "
        "Decisions per input: a component knob marked `decided` is set by the decision tree of `func_name` "
        "with the same transform_type (each case of the lowered decision rewrites its own copy of the op; "
        "`tests/filecheck/component_decided.mlir`), and a decision tree with `func_substitute` chooses among "
        "variants of a decorated function that call components (the RAG systems' answer step): the variants "
        "are lowered into the module, so their component ops take the same knobs.",
        "",
        "| op | operands | attributes (optional ones with ?) |",
        "|---|---|---|",
    ]
    ops: tuple[type[IRDLOperation], ...] = (*COMPONENT_OPS, ConfidenceOp, FallbackOp)
    for op in ops:
        d = op.get_irdl_definition()
        attrs = ", ".join(n + ("?" if type(p).__name__.startswith("Opt") else "") for n, p in d.properties.items())
        operands = ", ".join(n + ("..." if type(o).__name__.startswith("Var") else "") for n, o in d.operands)
        rows.append(f"| `{d.name}` | {operands} | {attrs or '-'} |")
    rows += ["", "| transform_type | parameters it rewrites | knob k |", "|---|---|---|"]
    rows += [f"| `{name}` | {where} | {meaning} |" for name, (where, meaning) in COMPONENT_TRANSFORMS.items()]
    return rows



def settings_table() -> list[str]:
    """The table of every component op's declared settings (`SETTINGS`), as docs/components.md
    holds it (a test keeps the two equal; `python -m approx_dialect settings` prints it)."""
    rows = ["| op | setting | values (absent: exact) | applied by | what it does |", "|---|---|---|---|---|"]
    for op in COMPONENT_OPS:
        for s in op.SETTINGS:
            rows.append(f"| `{op.name}` | `{s.name}` | {s.values()}{' (required)' if s.required else ''} | "
                        f"{APPLIES[s.applies]} | {s.doc} |")
    return rows
