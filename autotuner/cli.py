"""approx-tune: search a program's accuracy/performance Pareto front, write its
report, and apply a chosen configuration.

  approx-tune run PROGRAM --inputs GEN [--n-tune N] [--tuning-qos MODE] [options]
                                                  (PROGRAM: file.mlir:entry or pkg.module:function)
  approx-tune report [--out DIR | --result FILE | --storage URL --study-name NAME] [--to DIR]
  approx-tune apply [--out DIR | --result FILE] [--mode M] [--point I | --max-loss X] [FILE.mlir] [-o OUT]
  approx-tune verify [--out DIR | --result FILE | --row NAME] [--mode M] [--point I ...] [--inputs GEN] [--reverse]
  approx-tune profile PROGRAM --inputs GEN [-n N] [--config FILE]   (where its time goes, per component)

Re-running the same `run` command resumes its study. Every failure is one line
and exit code 1 (`--debug` shows the traceback); Ctrl-C keeps finished trials
(exit code 130). Optuna's and transformers' own output is off (`--verbose` shows it).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from pathlib import Path

from approx_dialect.diagnostics import ApproxError, internal_error_line
from approx_opt.program import offered
from autotuner.run_command import metric_of as _metric
from autotuner.run_command import run_parsed
from autotuner.settings import DEFAULT_SAMPLER, SAMPLERS, TUNING_QOS
from frontends.quiet import quiet_third_party

WHERE = "<approx-tune>"


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="approx-tune", description=__doc__.split("\n\n")[0])
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    p.add_argument("--verbose", action="store_true", help="show the libraries' own output (Optuna's trial lines, "
                   "transformers' warnings and progress bars)")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run or resume a study, re-measure its front on held-out inputs",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="tuning QoS (--tuning-qos; the held-out evaluation scores against the references in "
                       "every mode):\n" + "\n".join(f"  {k:10} {v}" for k, v in TUNING_QOS.items()))
    r.add_argument("program", help="file.mlir:entry, or pkg.module:function (a decorated function or Program)")
    r.add_argument("--inputs", required=True, help="pkg.module:function or file.py:function returning the inputs "
                   "(a list of argument tuples) or (inputs, references); with --n-tune, a split of its own")
    r.add_argument("--n-tune", type=int, metavar="N", help="call --inputs as a split generator, GEN(n_tune=N, "
                   "seed=SEED, n_eval=M), returning ((tuning inputs, references), (held-out inputs, references)) "
                   "(--eval-ratio does not apply); kept: at most N tuning inputs")
    r.add_argument("--n-eval", type=int, metavar="M", help="held-out inputs of the split generator (with --n-tune; "
                   "default: the generator's own)")
    r.add_argument("--tuning-qos", metavar="MODE", help=f"what the search scores on the tuning inputs: "
                   f"{', '.join(TUNING_QOS)} (listed below; default: gold where the inputs give references, else "
                   "agreement)")
    r.add_argument("--kept-from", metavar="GEN", help="kept: the candidate tuning inputs, (inputs, references) from "
                   "GEN called as --inputs is, tried in their order (default: the tuning inputs)")
    r.add_argument("--metric", default="rel_l2", help="containment, exact_match, rel_l2, rbo, or "
                   "pkg.module:function (output, reference) -> [0, 1] (default rel_l2)")
    r.add_argument("--budget", type=float, default=0.05, help="largest QoS loss, a fraction (default 0.05)")
    r.add_argument("--trials", type=int, default=40, help="evaluations per mode, in total over resumes (default 40)")
    r.add_argument("--mode", default="both", choices=["static", "dynamic", "both"])
    r.add_argument("--sampler", default=DEFAULT_SAMPLER,
                   help=f"{', '.join(SAMPLERS)} (default {DEFAULT_SAMPLER}: the fewest evaluations to the front "
                   "in bench/tuning_bench.py)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--jobs", type=int, default=1, help="worker processes on this machine")
    r.add_argument("--storage", help="SQLAlchemy URL (postgresql://user@host/db: workers on several machines "
                   "join one study); default: sqlite under --out")
    r.add_argument("--study-name", help="default: the program's name")
    r.add_argument("--out", help="output folder (default approx-tune/<program>)")
    r.add_argument("--eval-ratio", type=float, default=5.0, help="evaluation inputs per tuning input (default 5)")
    r.add_argument("--eval-levels", metavar="L1,L2", help="re-measure held out only the front points chosen at "
                   "these QoS-loss levels, fractions (default: the whole front)")
    r.add_argument("--ablate", metavar="L1,L2", help="ablate the point chosen at each of these QoS-loss levels: each "
                   "knob set back to exact, paired, on as many held-out inputs as --n-tune (or tuning inputs)")
    r.add_argument("--repeats", type=int, default=5, help="timed samples per measurement (default 5)")
    r.add_argument("--stage-fraction", type=float, default=0.2,
                   help="share of the tuning inputs in the first stage (0: no staged evaluation)")
    r.add_argument("--sweep", type=int, default=5000, help="dynamic configurations scored from kept component "
                   "outputs at most, before the dynamic search (default 5000; 0: no sweep)")
    r.add_argument("--clock", default="auto", choices=["auto", "wall", "cpu"])
    r.add_argument("--money", metavar="MODULE:FN", help="money cost of one run, FN(config, args, output) -> "
                   "float (e.g. an API's price); reported per trial")
    r.add_argument("--objective", default="time", choices=["time", "money"],
                   help="what the speedup is a ratio of (money: exact / approximate cost; needs --money)")
    r.add_argument("--narrow", action="append", metavar="KNOB=V1,V2", help="search only these values")
    r.add_argument("--narrow-thresholds", action="append", metavar="KNOB=LO:HI", help="threshold range")
    r.add_argument("--fix", action="append", metavar="KNOB=V", help="fix a knob to a value")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress line on stderr (default: when stderr is a terminal)")
    r.add_argument("--report", action="store_true", help="also write the report to OUT/report")
    r.add_argument("--warm-start", metavar="STUDY", help="a new study reuses the measurements of an earlier study "
                   "of the same program and settings (a study name in this storage, or an earlier run's --out "
                   "folder); the budget may differ")
    r.add_argument("--patience", type=int, metavar="N", help="stop a mode's search when the front's hypervolume "
                   "has not grown for N evaluations")
    r.add_argument("--timeout", type=float, metavar="SECONDS", help="stop each mode's search after SECONDS "
                   "(between trials; finished trials are kept and the same command resumes)")

    pr = sub.add_parser("profile", help="where a program's time goes: the wall time of its component calls per "
                        "label (an LLM call, a retrieval, a tool), over some inputs")
    pr.add_argument("program", help="pkg.module:function (a decorated function or Program with components)")
    pr.add_argument("--inputs", required=True, help="pkg.module:function or file.py:function returning the inputs")
    pr.add_argument("-n", type=int, default=8, help="profile the first N inputs (default 8)")
    pr.add_argument("--config", help="a configuration to profile instead of the exact program (a JSON file of "
                    "knobs, as approx-tune apply --config-out writes)")

    for name, text in (("report", "write the report of a finished study"),
                       ("apply", "write the transformed IR of a front configuration"),
                       ("verify", "re-measure front points paired with the exact program on the held-out inputs")):
        s = sub.add_parser(name, help=text)
        s.add_argument("--out", help="the run's output folder (holds result.json)")
        s.add_argument("--result", help="a result.json")
        s.add_argument("--storage", help="the study storage URL (with --study-name)")
        s.add_argument("--study-name")
    rep, app, ver = sub.choices["report"], sub.choices["apply"], sub.choices["verify"]
    ver.add_argument("--mode", choices=["static", "dynamic"], help="default: both")
    ver.add_argument("--point", type=int, action="append",
                     help="index in the mode's front (by increasing tuning QoS loss); repeatable; default: all")
    ver.add_argument("--inputs", help="pkg.module:function or file.py:function giving the inputs to measure on "
                     "(default: the run's held-out split)")
    ver.add_argument("--program", help="the program, if the result does not say (file.mlir:entry, pkg.module:attr)")
    ver.add_argument("--metric", help="the QoS metric, if the result does not say")
    ver.add_argument("--repeats", type=int, help="timing rounds for cheap programs (default 5)")
    ver.add_argument("--clock", choices=["wall", "cpu"], help="default: the run's")
    ver.add_argument("--reverse", action="store_true", help="measure the points in reverse order")
    ver.add_argument("--jobs", type=int, default=1, help="worker processes sharing the inputs (the same figures, "
                     "sooner: for costly programs)")
    ver.add_argument("--json", help="also write the figures to this JSON file")
    ver.add_argument("--row", help="re-measure a recorded row's chosen points (its name in --results), from what "
                     "the row holds")
    ver.add_argument("--results", default="bench/results.json", help="the recorded rows (default bench/results.json)")
    rep.add_argument("--to", help="report folder (default OUT/report)")
    app.add_argument("source", nargs="?", help="the program's .mlir file (default: the IR stored in the result)")
    app.add_argument("--mode", choices=["static", "dynamic"], help="default: any")
    app.add_argument("--point", type=int, help="index in the front (by increasing QoS loss)")
    app.add_argument("--max-loss", type=float,
                     help="the fastest front point with tuning QoS loss <= this (chosen on tuning figures, as a "
                     "report's levels are)")
    app.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    app.add_argument("--config-out", help="also write the configuration (for approx-opt --apply-config)")
    return p


def tune_command(argv: list[str]):
    """What `approx-tune run ARGV...` does, printing nothing: its TuningResult (saved in
    its --out folder). Programs that tune a system for people (the bench, the demo) run
    it with the options a user has, so each of their runs is that command."""
    try:
        a = make_parser().parse_args(["run", *map(str, argv)])
    except SystemExit:
        raise ApproxError(f"not an approx-tune run command: {' '.join(map(str, argv))}", where=WHERE) from None
    return run_parsed(a)[0]


def cmd_run(a) -> int:
    result, out = run_parsed(a)
    print(summary(result))
    print(f"result: {out / 'result.json'}")
    if a.report:
        print(f"report: {_write_report(result, out / 'report')}")
    return 0


def summary(result) -> str:
    """The front as a plain table (the report has the full picture), opened by the
    configuration that beats the exact program, where one does (`autotuner.dominance`)."""
    from autotuner.dominance import exact_dominated

    dominated = exact_dominated(result)
    lines = [f"warning: {dominated.warning()}"] if dominated else []
    lines += [f"{result.program}: {result.trials} trials ({result.pruned_trials} pruned, {result.failed_trials} "
              f"failed) in {result.tuning_seconds:.0f} s; QoS loss = (QoS_exact - QoS) / QoS_exact "
              f"({result.qos_metric}), speedup = exact / approximate {result.clock or 'wall'} time"]
    search = result.search or {}
    if search.get("configurations"):
        scored = search.get("scored_from_kept", {})
        said = ", ".join(f"{m} {n} ({search['stopped_at_first_stage'].get(m, 0)} stopped at the first stage"
                         + (f", {scored[m]} scored from kept outputs by the sweep" if scored.get(m) else "") + ")"
                         for m, n in search["configurations"].items())
        timed = "modelled from kept calls, the front timed paired" if search.get("timing") == "model" else "paired"
        lines.append(f"configurations measured: {said}; speedups {timed}")
    if search.get("kept_outputs"):
        k = search["kept_outputs"]
        here = f" (this process read {k['read_here']}, ran {k['run_here']})" if "read_here" in k else ""
        lines.append(f"kept component outputs: {k['calls']} calls in {k['file']}{here}")
    if search.get("endpoint_requests"):
        e = search["endpoint_requests"]
        lines.append(f"endpoint requests (this process): {e['sent']} sent, {e['kept']} answered from kept outputs")
    lines.append(f"{'#':>3} {'mode':8} {'loss tune':>9} {'speedup':>8} {'loss eval':>9} {'speedup':>8}  knobs")
    for mode in ("static", "dynamic"):
        for i, p in enumerate(result.front_of(mode)):
            ev = (f"{p.qos_loss_eval:9.4f} {p.speedup_eval:7.2f}x" if p.qos_loss_eval is not None
                  else f"{'-':>9} {'-':>8}")
            lines.append(f"{i:>3} {mode:8} {p.qos_loss_tune:9.4f} {p.speedup_tune:7.2f}x {ev}  "
                         f"{json.dumps(p.knobs, separators=(',', ':'))}")
    return "\n".join(lines)


def _load(a):
    from autotuner.results import load_result, read_result

    if getattr(a, "row", None):
        from autotuner.verify import result_of_row

        return result_of_row(a.results, a.row)
    if a.result or a.out:
        return read_result(a.result or a.out)
    if a.storage and a.study_name:
        return load_result(a.storage, a.study_name)
    raise ApproxError("give --out DIR, --result FILE, --storage URL with --study-name, or --row NAME"
                      if hasattr(a, "row") else "give --out DIR, --result FILE, or --storage URL with --study-name",
                      where=WHERE)


def _write_report(result, to: Path) -> Path:
    try:
        from autotuner.report import write_report
    except ImportError as err:
        raise ApproxError(f"the report writer is not available (autotuner.report: {err})", where=WHERE) from None
    return write_report(result, Path(to))


def cmd_report(a) -> int:
    result = _load(a)
    to = Path(a.to) if a.to else Path(a.out or ".") / "report"
    print(_write_report(result, to))
    return 0


def cmd_apply(a) -> int:
    result = _load(a)
    front = [p for m in ("static", "dynamic") if a.mode in (None, m) for p in result.front_of(m)]
    if a.max_loss is not None:
        point = result.chosen(a.max_loss, a.mode)
        if point is None:
            raise ApproxError(f"no front point has QoS loss <= {a.max_loss}", where=WHERE)
    else:
        i = a.point if a.point is not None else 0
        if not 0 <= i < len(front):
            raise ApproxError(f"--point {i} is not in the front (0..{len(front) - 1})", where=WHERE)
        point = front[i]
    if a.source:
        from approx_opt.driver import run_pipeline
        from approx_opt.main import read_input

        text, name = read_input(a.source)
        ir = run_pipeline(text, "approx-pipeline", name, config=point.knobs)  # = approx-opt --apply-config
    elif point.ir is not None:
        ir = point.ir
    else:
        raise ApproxError("the result holds no IR for this point: give the program's .mlir file", where=WHERE)
    if a.config_out:
        Path(a.config_out).write_text(json.dumps({"knobs": point.knobs}, indent=2) + "\n")
    from approx_opt.main import write_output

    write_output(a.output, ir)
    return 0


def cmd_verify(a) -> int:
    from dataclasses import asdict

    from autotuner.verify import table, verify

    result = _load(a)
    inputs = refs = None
    if a.inputs:
        from autotuner.loading import load_inputs

        inputs, refs = load_inputs(a.inputs)
    rows = verify(result, mode=a.mode, points=a.point, inputs=inputs, references=refs, program=a.program,
                  metric=_metric(a.metric) if a.metric else None, repeats=a.repeats, clock=a.clock,
                  reverse=a.reverse, progress=lambda msg: print(msg, file=sys.stderr, flush=True), jobs=a.jobs)
    print(f"{result.program}: {rows[0].n} inputs, paired {a.clock or result.clock or 'wall'} time; "
          "speedup with its 95 % interval; change = re-measured / recorded speedup - 1")
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(v) for v in rows], indent=2) + "\n")
    return 0


def cmd_profile(a) -> int:
    from autotuner.loading import as_program, load_inputs

    program = as_program(a.program)
    profile = offered(program, "profile")
    if profile is None:
        raise ApproxError(f"{a.program} has no component calls to profile (a decorated function calling "
                          "Generate, Retrieve, RunTool, ... has)", where=WHERE)
    if a.n < 1:
        raise ApproxError(f"-n must be >= 1, got {a.n}", where=WHERE)
    inputs, _ = load_inputs(a.inputs)
    config = None
    if a.config:
        try:
            config = json.loads(Path(a.config).read_text())
        except (OSError, ValueError) as err:
            raise ApproxError(f"cannot read the configuration: {err}", where=a.config) from None
        config = config.get("knobs", config)
    rows = profile(list(inputs[:a.n]), config)
    total = sum(v["seconds"] for v in rows.values())
    print(f"{a.program}: {min(a.n, len(inputs))} inputs, {total:.3f} s wall "
          f"({'the exact program' if config is None else a.config})")
    print(f"{'component':24} {'share':>7} {'seconds':>9} {'calls':>6} {'ms/call':>9}")
    for label, v in rows.items():
        print(f"{label:24} {100 * v['share']:6.1f}% {v['seconds']:9.3f} {v['calls']:6d} "
              f"{1000 * v['seconds'] / max(v['calls'], 1):9.1f}")
    return 0


def environment_error_line(err: Exception, args) -> str | None:
    """The one line for a failure of the surroundings, not of this program: a file
    that cannot be written, standard output closed, a damaged study database."""
    if isinstance(err, BrokenPipeError) or (isinstance(err, OSError) and err.errno == errno.EBADF):
        try:  # nothing more can reach it: no second error when Python flushes it at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return "error: cannot write the output: standard output is closed"
    if isinstance(err, OSError) and err.strerror:
        where = err.filename or getattr(args, "out", None)
        return f"{where}: error: {err.strerror}" if where else f"error: {err.strerror}"
    if type(err).__module__.split(".")[0] in ("sqlalchemy", "sqlite3") or type(err).__name__ == "StorageInternalError":
        from autotuner.storage import root_cause

        msg = root_cause(err)
        where = getattr(args, "storage", None) or getattr(args, "out", None) or "<study storage>"
        return f"{where}: error: the study storage failed: {msg}"
    return None


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        with quiet_third_party(args.verbose):
            return {"run": cmd_run, "report": cmd_report, "apply": cmd_apply, "verify": cmd_verify,
                    "profile": cmd_profile}[args.command](args)
    except ApproxError as err:
        if args.debug:
            raise
        print(err.line(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: finished trials are kept; run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as err:  # a bug of ours: one line, and --debug for the trace
        if args.debug:
            raise
        line = environment_error_line(err, args)
        if line is not None:
            print(line, file=sys.stderr)
            return 1
        print(internal_error_line(err), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
