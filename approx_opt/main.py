"""approx-opt: apply approx passes to MLIR files, in the style of mlir-opt/xdsl-opt.

Every failure is one line on stderr (`FILE:LINE:COL: error: ...` for IR) and exit
code 1; `--debug` shows the Python traceback for bug reports."""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from importlib import metadata

from approx_dialect.diagnostics import ApproxError, ApproxWarning, internal_error_line
from approx_opt.sources import read_source
from passes import ALL_PASSES, APPROX_PIPELINE, APPROX_PIPELINE_NAME, GENERIC_PASSES, description, summary
from passes.knobs import knob_specs, load_config

SPLIT_MARKER = "// -----"
# As mlir-opt: a chunk ends at a line that is the marker alone.
SPLIT_LINE = re.compile(r"^[ \t]*// -----[ \t]*\r?$", re.MULTILINE)


def version() -> str:
    try:
        return metadata.version("approx-toolchain")
    except metadata.PackageNotFoundError:
        return "unknown"


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="approx-opt",
        description="Apply approx dialect passes to MLIR (ApproxMLIR-compatible).",
    )
    p.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin")
    p.add_argument("-p", "--passes", default="", help="comma-separated passes, e.g. emit-approx,config-approx "
                   f"or {APPROX_PIPELINE_NAME}; options as pass{{opt=val}}")
    p.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    p.add_argument("--list-passes", action="store_true", help="list passes with their summaries and exit")
    p.add_argument("--print-op-generic", action="store_true", help="print ops in the generic form")
    p.add_argument("--print-no-properties", action="store_true",
                   help="print properties in the attribute dictionary (for upstream MLIR with IRDL)")
    p.add_argument("--split-input-file", action="store_true",
                   help=f"process each chunk between lines '{SPLIT_MARKER}' on its own; the outputs are joined "
                   "by the marker, and each chunk that fails gives its own error line")
    p.add_argument("--verify-each", action=argparse.BooleanOptionalAction, default=True,
                   help="verify the IR after every pass (default; --no-verify-each verifies the result only)")
    p.add_argument("--allow-unregistered-dialect", action="store_true",
                   help="accept ops of dialects this toolchain does not know (kept as they are)")
    p.add_argument("--version", action="version", version=f"approx-opt {version()}")
    p.add_argument("--emit-irdl", action="store_true", help="print the approx dialect as IRDL and exit")
    p.add_argument("--apply-config", metavar="JSON", help="set the program's knobs from a saved configuration "
                   "(knob name -> setting; a front.json entry works) before the passes")
    p.add_argument("--list-knobs", action="store_true", help="print the program's knobs (the search space) as JSON")
    p.add_argument("--from-python", metavar="MODULE:FUNCTION", help="input: the IR of a Python function "
                   "decorated with frontends.Knob (e.g. pkg.module:function), instead of a file (the input source "
                   "'python' of the entry-point group approx_opt.sources)")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    return p


def list_passes() -> str:
    lines = [f"{APPROX_PIPELINE_NAME:22s} the whole ApproxMLIR pipeline: {APPROX_PIPELINE}"]
    for name, cls in {**ALL_PASSES, **GENERIC_PASSES}.items():
        lines.append(f"{name:22s} {summary(cls)}")
        for desc_line in description(cls).splitlines():
            lines.append(f"{'':22s}   {desc_line.strip()}")
    return "\n".join(lines) + "\n"


def list_knobs(text: str, name: str) -> str:
    import dataclasses
    import json

    from approx_opt.parsing import parse_module

    specs = knob_specs(parse_module(text, name))
    return json.dumps([dataclasses.asdict(s) for s in specs], indent=2) + "\n"


def read_input(path: str) -> tuple[str, str]:
    if path == "-":
        raw = getattr(sys.stdin, "buffer", None)  # bytes, so that invalid UTF-8 is rejected as from a file
        if raw is None:
            return sys.stdin.read(), "<stdin>"
        try:
            return raw.read().decode("utf-8"), "<stdin>"
        except UnicodeDecodeError:
            raise ApproxError("input is not UTF-8 text", where="<stdin>") from None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except OSError as err:
        raise ApproxError(f"cannot read input: {err.strerror}", where=path) from None
    except UnicodeDecodeError:
        raise ApproxError("input is not UTF-8 text", where=path) from None


def process(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The output, and one error line per chunk that failed (--split-input-file;
    otherwise an error is raised)."""
    from approx_opt.driver import run_pipeline
    from approx_opt.pipeline import build_pipeline

    if args.list_passes:
        return list_passes(), []
    if args.emit_irdl:
        from approx_dialect.irdl_export import emit_irdl

        return emit_irdl(), []
    build_pipeline(args.passes)  # a bad pipeline fails before any input is read
    config = load_config(args.apply_config) if args.apply_config else None
    if args.from_python:
        text, name = read_source("python", args.from_python)
    else:
        text, name = read_input(args.input)
    if args.list_knobs:
        return list_knobs(text, name), []
    chunks = split_chunks(text) if args.split_input_file else [(text, 0)]
    outputs, errors = [], []
    for chunk, line_offset in chunks:
        try:
            outputs.append(run_pipeline(chunk, args.passes, name, args.print_op_generic, args.print_no_properties,
                                        line_offset, config, verify_each=args.verify_each,
                                        allow_unregistered=args.allow_unregistered_dialect))
        except ApproxError as err:
            if not args.split_input_file:
                raise
            errors.append(err.line())
    return (SPLIT_MARKER + "\n").join(outputs), errors


def split_chunks(text: str) -> list[tuple[str, int]]:
    """The chunks of `text` between marker lines, each with the number of lines before it."""
    chunks, start, line = [], 0, 0
    for marker in SPLIT_LINE.finditer(text):
        chunks.append((text[start:marker.start()], line))
        line += text.count("\n", start, marker.end()) + 1
        start = min(marker.end() + 1, len(text))
    chunks.append((text[start:], line))
    return chunks


def write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise ApproxError(f"cannot write output: {err.strerror}", where=path) from None


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    """Warnings (Python's own, e.g. a SyntaxWarning in a --from-python module) as one
    `FILE:LINE: warning: ...` line each, in the style of the error line; warnings
    about the IR (ApproxWarning) are their own line already."""
    if issubclass(category, ApproxWarning):
        return f"{message}\n"
    return f"{filename}:{lineno}: warning: {category.__name__}: {(str(message).strip().splitlines() or [''])[0]}\n"


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    warnings.formatwarning = one_line_warning
    try:
        # each run shows each of its warnings once (in one process too: tests, fuzzing), whichever
        # thread or pass raised it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ApproxWarning)
            try:
                output, errors = process(args)
            finally:
                shown = list(dict.fromkeys(one_line_warning(w.message, w.category, w.filename, w.lineno)
                                           for w in caught))
                sys.stderr.write("".join(shown))
        for line in errors:
            print(line, file=sys.stderr)
        write_output(args.output, output)
        return 1 if errors else 0
    except ApproxError as err:
        if args.debug:
            raise
        print(err.line(), file=sys.stderr)
        return 1
    except RecursionError:
        print("error: input nests too deeply", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 1
    except Exception as err:  # a bug of ours: one line, and --debug for the trace
        if args.debug:
            raise
        print(internal_error_line(err), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
