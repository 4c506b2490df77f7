"""The results benchmark: the three compound AI systems and the five kernels, tuned
and evaluated on held-out inputs; writes bench/results.json (per system, mode and
level the speedup, and the chosen configuration with its interval and what
rebuilding it needs: program, metric, held-out inputs) and bench/results.md (our
numbers beside the paper's, and the command).

A part that cannot run (not written yet, or failing) is recorded as missing (null
in the JSON, the reason in the Markdown) instead of stopping the others. With
`--only`, parts not run keep their entry of the existing results.json.

    .venv/bin/python bench/results.py                       # what `make bench` runs
    .venv/bin/python bench/results.py --only rag_dense --rag-n-tune 24   # one part, smaller
    .venv/bin/python bench/results.py --only rag_bm25_llm,rag_dense_llm,tools_llm,agent_llm  # the LLM systems

Defaults: each reader-based system tuned for at most 12-14 minutes, held-out
evaluation 5x the tuning questions. The SmolLM2 systems (1.2-5 s per question or
request, by CPU) search for at most 20 minutes each in two worker processes on 40
tuning and 200 held-out inputs (one held-out input is then 0.5 % of QoS, finer than
the 3 / 6 / 9 % levels) and are not ablated (an ablation re-times each knob of each
chosen point: hours here); the held-out evaluation of each front point times 200
exact and 200 approximate runs side by side, so such a system takes one to two hours
on 2 cores. Each row records its machine (CPU and the instructions that decide the
front, or the GPU) and how busy the machine was; a run that shared its cores keeps a
quiet run's row unless --overwrite-quiet.

A row is recorded only when its exact program is the most accurate one measured
(`exact_is_most_accurate: true` in every row): where a configuration beats the exact
program beyond its interval, every speedup of the row would be over a weaker program
than that configuration, so the run prints that configuration, records no row for that
part (its previous row, if any, is kept, as for a part that failed) and exits 1 once the
other parts are written: hours of measurements of the others are not thrown away.
"""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.results_md import KERNELS, load_text, markdown, run_details  # noqa: E402
from bench.systems_bench import GPU_SYSTEMS, SHAPE  # noqa: E402
from examples.systems.registry import SYSTEMS  # noqa: E402
from frontends.components import run_settings  # noqa: E402
from frontends.quiet import quiet_third_party  # noqa: E402

JSON_PATH, MD_PATH = ROOT / "bench" / "results.json", ROOT / "bench" / "results.md"
RUNS_PATH = ROOT / "bench" / "results_runs.json"  # per part: the command, commit and details of its run


def machine() -> str:
    from autotuner import describe_machine
    from frontends.components import run_settings

    return describe_machine(run_settings.current().device)


def commit() -> str:
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()

    try:
        head = git("rev-parse", "HEAD") or "unknown"
        # the results files themselves change with every run: not a change to the code measured
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results.json",
                    ":!bench/results.md", ":!bench/results_runs.json")
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _call(fn, **kwargs):
    """fn with the keyword arguments it accepts."""
    params = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in params})


def refusal(name: str, result) -> str | None:
    """Why `name`'s row, from its TuningResult, is not recorded: a configuration beats the
    exact program beyond its interval (`autotuner.exact_dominated`); None when the exact
    program is the most accurate measured."""
    from autotuner import exact_dominated

    dominated = exact_dominated(result)
    if dominated is None:
        return None
    return (f"{name}: not recorded: the exact program is dominated by {dominated.configuration()}, "
            f"{dominated.figures()}; its speedups would be over a weaker program than that configuration")


def run_systems(names, sizes: dict, seed: int, log) -> tuple[dict, dict, dict, list]:
    """({name: row or None}, {name: details}, {name: why missing}, [names refused]); each
    row says its machine and how busy the machine was while it ran (`autotuner.machine`);
    a row whose exact program is dominated is refused (`refusal`: None, as if missing)."""
    from autotuner import LoadProbe, read_result
    from bench.systems_bench import run_system

    rows, details, missing, refused = {}, {}, {}, []
    for name in names:
        log(f"[results] {name}: tuning ...")
        probe = LoadProbe()
        try:
            row = run_system(name, seed=seed, **sizes[name])
        except Exception as err:  # a part that cannot run is recorded, not fatal
            rows[name], missing[name] = None, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            log(f"[results] {name}: missing ({missing[name]})")
            traceback.print_exc(file=sys.stderr)
            continue
        why = refusal(name, read_result(row["result"]))
        if why:
            rows[name], missing[name] = None, why.removeprefix(f"{name}: ")
            refused.append(name)
            log(f"[results] {why}")
            continue
        row.update(machine=machine(), load=probe.finish().to_dict(), exact_is_most_accurate=True)
        rows[name] = {k: _num_keys(row[k]) if k in ("static", "dynamic") else row.get(k) for k in SHAPE}
        details[name] = {k: v for k, v in row.items() if k not in SHAPE}
        log(f"[results] {name}: done ({row.get('wall_seconds', 0):.0f} s; {load_text(row['load'])})")
    return rows, details, missing, refused


def run_kernels(trials: int, n_tune: int, seed: int, log) -> tuple[dict, str | None]:
    log("[results] kernels: tuning ...")
    try:
        from bench.kernels_bench import run_kernels as kernels
    except Exception as err:
        return {k: None for k in KERNELS}, f"bench/kernels_bench.py cannot be imported: {type(err).__name__}: {err}"
    try:
        got = _call(kernels, trials_per_kernel=trials, n_tune=n_tune, seed=seed)
    except Exception as err:
        traceback.print_exc(file=sys.stderr)
        return {k: None for k in KERNELS}, f"{type(err).__name__}: {err}"
    out = {}
    for k in KERNELS:
        r = got.get(k)
        # a kernel's QoS is agreement with its exact outputs (QoS_exact = 1): no configuration can beat them
        out[k] = None if r is None else {**r, **{m: {str(lv): float(v) for lv, v in r[m].items()}
                                                  for m in ("static", "dynamic")}, "exact_is_most_accurate": True}
    return out, None


def keep_quiet_rows(old: dict, new: dict, overwrite: bool, log) -> list[str]:
    """Names of the rows of `new` that keep their row of `old`: a part this run could not
    measure (None: a failure does not erase a recorded row), and one that would replace a
    quiet run's row with a run that shared its cores (unless `overwrite`)."""
    kept = []
    for name, row in new.items():
        if row is None and old.get(name):
            log(f"[results] {name}: this run has no row; the previous row is kept")
            new[name] = old[name]
            kept.append(name)
            continue
        before = (old.get(name) or {}).get("load") or {}
        now = (row or {}).get("load") or {}
        if before.get("quiet") and now.get("quiet") is False and not overwrite:
            log(f"[results] {name}: this run shared its cores ({load_text(now)}); the quiet run's row is kept "
                "(--overwrite-quiet replaces it)")
            new[name] = old[name]
            kept.append(name)
    return kept


def _num_keys(v):
    return {str(k): float(x) for k, x in v.items()} if isinstance(v, dict) else v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help=f"comma-separated parts: {', '.join(SYSTEMS)}, kernels (default: all)")
    ap.add_argument("--rag-n-tune", type=int, default=40)
    ap.add_argument("--rag-trials", type=int, default=40)
    ap.add_argument("--rag-seconds", type=float, default=720)
    ap.add_argument("--rag-tuning-qos", choices=("gold", "agreement"), default=None,
                    help="reader RAG systems: the search's QoS (default: the system's, agreement: token F1 with the "
                    "exact program's answers; gold: containment of the gold answers, as held out)")
    ap.add_argument("--tools-n-tune", type=int, default=80)
    ap.add_argument("--tools-trials", type=int, default=40)
    ap.add_argument("--tools-seconds", type=float, default=840)
    ap.add_argument("--llm-n-tune", type=int, default=100, help="RAG-LLM systems: tuning questions")
    ap.add_argument("--llm-tuning-qos", choices=("kept", "gold", "agreement"), default="gold",
                    help="LLM systems: the search's QoS: the gold answers on a random sample of tuning inputs, as "
                    "held out (gold), on tuning inputs the exact program gets right (kept), or agreement with the "
                    "exact program's answers (token F1, the reader systems'; RAG-LLM only)")
    ap.add_argument("--llm-n-eval", type=int, default=200, help="RAG-LLM systems: held-out questions (the first of "
                    "the 5x n-tune sample)")
    ap.add_argument("--llm-trials", type=int, default=30, help="RAG-LLM systems: evaluations per mode")
    ap.add_argument("--llm-seconds", type=float, default=1200, help="RAG-LLM systems: search time (both modes)")
    ap.add_argument("--llm-jobs", type=int, default=2, help="SmolLM2 systems: worker processes of the search and of "
                    "the held-out evaluation (which shares the held-out inputs among them)")
    ap.add_argument("--llm-eval-repeats", type=int, default=None, help="SmolLM2 systems: paired timing rounds of "
                    "the held-out evaluation (default: 2; 1 for the LLM + tools agent)")
    ap.add_argument("--llm-ablate", default="", help="RAG-LLM systems: as --ablate (default: none)")
    ap.add_argument("--tools-llm-n-tune", type=int, default=40, help="LLM + tools agent: tuning items")
    ap.add_argument("--tools-llm-n-eval", type=int, default=200, help="LLM + tools agent: held-out items (a "
                    "multiple of its n-tune)")
    ap.add_argument("--tools-llm-seconds", type=float, default=1200, help="LLM + tools agent: search time")
    ap.add_argument("--agent-n-tune", type=int, default=40, help="LLM + kernel tools agent: tuning questions")
    ap.add_argument("--agent-n-eval", type=int, default=200, help="LLM + kernel tools agent: held-out questions")
    ap.add_argument("--kernel-trials", type=int, default=12)
    ap.add_argument("--kernel-n-tune", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ablate", default="3,6,9", help="QoS-loss levels (percent) whose chosen points are ablated "
                    "(each knob set back to exact, paired; on n-tune held-out inputs); empty: none")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where the SmolLM2 systems' LLM runs (cuda: its compiled decode; rows name the GPU, speedups "
                    "are wall-time ratios)")
    ap.add_argument("--resume", action="store_true",
                    help="go on with each part's study in reports/bench/<part> (a run stopped part-way keeps its "
                    "trials and held-out figures; the search gets its time again: --llm-seconds 0 only finishes "
                    "the evaluation)")
    ap.add_argument("--progress", action=argparse.BooleanOptionalAction, default=sys.stderr.isatty(),
                    help="show the searches' progress line and the held-out evaluation's progress on standard "
                    "error (default: when it is a terminal)")
    ap.add_argument("--overwrite-quiet", action="store_true",
                    help="let a run that shared its cores with other processes replace a quiet run's row")
    ap.add_argument("--render", action="store_true",
                    help="run nothing: write results.md again from results.json and results_runs.json")
    ap.add_argument("--verbose", action="store_true", help="show the libraries' own output (Optuna, transformers)")
    args = ap.parse_args(argv)
    with quiet_third_party(args.verbose):
        return run(ap, args, argv)


def run(ap: argparse.ArgumentParser, args: argparse.Namespace, argv) -> int:
    """The parts `args` names, then results.json, results_runs.json and results.md."""
    if args.render:
        return render()
    parts = [p.strip() for p in (args.only or ",".join([*SYSTEMS, "kernels"])).split(",") if p.strip()]
    unknown = [p for p in parts if p not in (*SYSTEMS, "kernels")]
    if unknown:
        ap.error(f"unknown part {unknown[0]!r} (parts: {', '.join((*SYSTEMS, 'kernels'))})")
    with run_settings.context(device=args.device) as chosen:  # APPROX_DEVICE overrides it
        device = chosen.device
    if device.startswith("cuda") and any(p not in GPU_SYSTEMS for p in parts):
        print(f"error: --device cuda runs the SmolLM2 systems only ({', '.join(GPU_SYSTEMS)}), not "
              f"{', '.join(p for p in parts if p not in GPU_SYSTEMS)}", file=sys.stderr)
        return 1
    run_settings.configure(device=args.device)  # the run's device, for this process and its worker processes
    start = time.perf_counter()
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    ablate = tuple(int(v) for v in args.ablate.split(",") if v.strip())
    rag = dict(n_tune=args.rag_n_tune, trials=args.rag_trials, seconds=args.rag_seconds, ablate_levels=ablate,
               fresh=not args.resume, progress=args.progress, tuning_qos=args.rag_tuning_qos)
    llm = dict(n_tune=args.llm_n_tune, n_eval=args.llm_n_eval, trials=args.llm_trials, seconds=args.llm_seconds,
               jobs=args.llm_jobs, fresh=not args.resume, progress=args.progress,
               eval_repeats=args.llm_eval_repeats,
               ablate_levels=tuple(int(v) for v in args.llm_ablate.split(",") if v.strip()))
    rag_llm = dict(llm, tuning_qos=args.llm_tuning_qos)
    tools_llm = dict(rag_llm, n_tune=args.tools_llm_n_tune, n_eval=args.tools_llm_n_eval,
                     seconds=args.tools_llm_seconds)
    groups = {"rag": rag, "rag_llm": rag_llm, "tools_llm": tools_llm,
              "agent": dict(rag_llm, n_tune=args.agent_n_tune, n_eval=args.agent_n_eval),
              "tools": dict(n_tune=args.tools_n_tune, trials=args.tools_trials, seconds=args.tools_seconds,
                            ablate_levels=ablate, fresh=not args.resume, progress=args.progress)}
    sizes = {n: groups[s.sizes] for n, s in SYSTEMS.items()}
    old = json.loads(JSON_PATH.read_text()) if JSON_PATH.is_file() else {"systems": {}, "kernels": {}}
    gpu = args.device == "cuda"
    if gpu:
        return run_gpu(parts, sizes, args, argv, old, start, log)
    rows, details, missing, refused = run_systems([p for p in SYSTEMS if p in parts], sizes, args.seed, log)
    kept = [n for n in SYSTEMS if n not in parts and old["systems"].get(n)]
    kept += keep_quiet_rows(old["systems"], rows, args.overwrite_quiet, log)
    systems = {n: rows[n] if n in parts else old["systems"].get(n) for n in SYSTEMS}
    if "kernels" in parts:
        kernels, why = run_kernels(args.kernel_trials, args.kernel_n_tune, args.seed, log)
        if why:
            missing["kernels"] = why
    else:
        kernels = {k: old.get("kernels", {}).get(k) for k in KERNELS}
        kept += ["kernels"] if any(kernels.values()) else []
    for n in SYSTEMS:
        if systems[n] is None and n not in missing:
            missing[n] = "not run"
    if all(v is None for v in kernels.values()) and "kernels" not in missing:
        missing["kernels"] = "not run"
    data = {"systems": systems, "gpu_systems": old.get("gpu_systems", {}), "kernels": kernels,
            "machine": machine(), "commit": commit()}
    write(data, {p: details.get(p) for p in parts}, missing, kept, argv, start)
    return refused_exit(refused, log)


def run_gpu(parts: list[str], sizes: dict, args, argv, old: dict, start: float, log) -> int:
    """The SmolLM2 systems with their LLM on CUDA: rows under `gpu_systems` (the CPU
    rows, the kernels and the top-level machine stay as recorded)."""
    rows, details, missing, refused = run_systems(parts, sizes, args.seed, log)
    gpu_old = old.get("gpu_systems") or {}
    kept = keep_quiet_rows(gpu_old, rows, args.overwrite_quiet, log)
    data = {**old, "gpu_systems": {n: rows[n] if n in parts else gpu_old.get(n) for n in GPU_SYSTEMS}}
    data.setdefault("machine", machine())
    data.setdefault("commit", commit())
    missing = {f"{n} on a GPU": why for n, why in missing.items()}
    write(data, {f"{p}@cuda": details.get(p) for p in parts}, missing, [f"{n}@cuda" for n in kept], argv, start)
    return refused_exit(refused, log)


def refused_exit(refused: list, log) -> int:
    """1 (after the other rows are written) when a row was refused for a dominated exact program."""
    if refused:
        log(f"[results] not recorded: {', '.join(refused)} (a configuration beats the exact program; see above)")
    return 1 if refused else 0


def write(data: dict, part_details: dict, missing: dict, kept: list, argv, start: float) -> int:
    """results.json, the runs' record (per part: command, commit, minutes, details) and results.md."""
    JSON_PATH.write_text(json.dumps(data, indent=2) + "\n")
    command = " ".join([".venv/bin/python", "bench/results.py", *(argv if argv is not None else sys.argv[1:])])
    runs = json.loads(RUNS_PATH.read_text()) if RUNS_PATH.is_file() else {}
    for part, d in part_details.items():
        runs[part] = {"command": command, "commit": commit(), "minutes": (time.perf_counter() - start) / 60,
                      "details": d}
    RUNS_PATH.write_text(json.dumps(runs, indent=2, default=str) + "\n")
    cpu_details, gpu_details = run_details(runs)
    md = markdown(data, cpu_details, missing, kept, command, time.perf_counter() - start, runs, gpu_details)
    MD_PATH.write_text(md)
    print(md)
    print(f"wrote {JSON_PATH.relative_to(ROOT)} and {MD_PATH.relative_to(ROOT)}")
    return 0


def render() -> int:
    """results.md from the recorded results (parts of several runs: each says its command)."""
    data, runs = json.loads(JSON_PATH.read_text()), json.loads(RUNS_PATH.read_text())
    details, gpu_details = run_details(runs)
    kept = [n for n in (*SYSTEMS, "kernels") if n in runs] + [n for n in runs if n.endswith("@cuda")]
    missing = {n: "not run" for n in SYSTEMS if data["systems"].get(n) is None}
    md = markdown(data, details, missing, kept, ".venv/bin/python bench/results.py --render (parts below)", 0.0, runs,
                  gpu_details)
    MD_PATH.write_text(md.replace("## Not run here", "## Runs").replace(
        "kept from the previous bench/results.json, made by", "made by"))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
