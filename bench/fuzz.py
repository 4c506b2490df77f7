"""`make fuzz`: approx-opt on N generated and mutated inputs (tests/fuzz/), judged
by the contract of docs/reliability.md: output (exit 0) or one clear error line (exit 1); no
traceback, no `internal error`, no hang over 5 s, no crash of the interpreter.

Three groups of inputs: `--inputs` of every earlier kind (mutated `.mlir`, pipelines,
configurations, kernels, Python functions, ...), `--components` programs of component
ops with their knobs (tests/fuzz/components.py) and `--sources` decorated Python
programs calling components (tests/fuzz/pycomponents.py); these two must also say
where each error is, and give output when valid. `--size N` splits N over the three
(half, a quarter, a quarter): `make fuzz FUZZ_SIZE=100000`.

Inputs run in-process (`main()`, in a pool of worker processes; a worker that
dies is a crash, confirmed by re-running its inputs as commands); a sample (a
quarter of it inputs large enough for the upstream-MLIR parsing path) also runs
as the real command. `--kernels N` also checks N generated kernels for out-of-
bounds accesses and knob-0 exactness. Prints a summary; findings are written to
--findings-dir."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.inputs import Case  # noqa: E402
from tests.fuzz.oracle import Outcome, run_in_process, run_in_subprocess  # noqa: E402

UPSTREAM_PATH_CHARS = 20_000  # approx_opt.upstream_import.worth_trying


GROUPS = ("mixed", "components", "sources")


def strategy(group: str):
    """The hypothesis strategy of a group of inputs."""
    if group == "components":
        from tests.fuzz.components import component_cases

        return component_cases()
    if group == "sources":
        from tests.fuzz.pycomponents import component_source_cases

        return component_source_cases()
    from tests.fuzz.inputs import cases

    return cases()


def split(size: int) -> dict[str, int]:
    """`--size N`: half the inputs of every earlier kind, a quarter of each new group."""
    quarter = size // 4
    return {"mixed": size - 2 * quarter, "components": quarter, "sources": quarter}


def generate(n: int, seed: int, group: str = "mixed") -> list[Case]:
    """n cases of a group from the hypothesis strategies (generation only: no shrinking)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    out: list[Case] = []
    round_ = 0
    while len(out) < n:
        @hseed(seed + round_)
        @settings(max_examples=n - len(out), phases=[Phase.generate], database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy(group))
        def collect(case):
            out.append(case)

        collect()
        round_ += 1
    return out[:n]


def _slim(o: Outcome) -> Outcome:
    return Outcome(o.rc, "", o.stderr[:2000], o.seconds, o.problem)


def _run_chunk(seed: int, size: int, group: str) -> list[tuple[Case, Outcome]]:
    """Generate `size` cases of `group` from `seed` and run them in this (worker) process."""
    return [(c, _slim(run_in_process(c))) for c in generate(size, seed, group)]


def _pooled(chunks: list[tuple[int, int, str]], workers: int) -> tuple[list, list[tuple[int, int, str]]]:
    """Run chunks in a process pool: (results, chunks lost to a worker that died)."""
    done, lost = [], []
    with ProcessPoolExecutor(workers) as pool:
        for chunk, fut in [(ch, pool.submit(_run_chunk, *ch)) for ch in chunks]:
            try:
                done += fut.result()
            except BrokenProcessPool:
                lost.append(chunk)
    return done, lost


def run_all(counts: dict[str, int] | int, seed: int, workers: int, chunk: int = 50) -> list[tuple[Case, Outcome]]:
    """Cases and in-process outcomes (`counts`: inputs per group), generated and run in
    a pool of worker processes. A worker that dies (a crash) takes the pool's pending
    chunks with it: those run again, each in a pool of its own; a chunk that still
    kills its worker is generated again here (same seed, same cases) and each of its
    inputs runs as a command, which tells which input it was."""
    if isinstance(counts, int):
        counts = {"mixed": counts}
    chunks = []
    for g, group in enumerate(GROUPS):  # each group its own seeds: a group's inputs do not depend on the others'
        n = counts.get(group, 0)
        chunks += [(seed * 100_003 + g * 10_000_019 + j, min(chunk, n - i), group)
                   for j, i in enumerate(range(0, n, chunk))]
    done, lost = _pooled(chunks, workers)
    for ch in lost:
        again, crashed = _pooled([ch], 1)
        done += again
        for s, size, group in crashed:
            done += [(c, run_in_subprocess(c)) for c in generate(size, s, group)]
    return done


def check_kernels(n: int, seed: int, workers: int) -> dict:
    """n generated kernels with random knob settings, bounds-checked (tests/fuzz/bounds.py),
    and n knob-0 settings compared bit for bit with the unannotated kernel."""
    import threading

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from tests.fuzz.bounds import exactness_problem, in_bounds_problem
    from tests.fuzz.checked_jit import CheckedJit
    from tests.fuzz.generated_kernels import annotated_kernels, exact_cases

    jobs: list[tuple] = []
    sizes = st.tuples(st.integers(0, 40), st.integers(0, 3))

    @hseed(seed)
    @settings(max_examples=n, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(annotated_kernels(), exact_cases(), sizes)
    def collect(case, exact, size):
        jobs.append((in_bounds_problem, case[:3], size))
        jobs.append((exactness_problem, exact, size))

    collect()
    local = threading.local()
    runners: list[CheckedJit] = []

    def run(job):
        if not hasattr(local, "jit"):
            local.jit = CheckedJit()
            runners.append(local.jit)
        check, (kernel, transform, setting), (size, extra) = job
        return check.__name__, check(local.jit, kernel, transform, setting, size, extra)

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(run, jobs))
    for r in runners:
        r.close()
    problems = [p for _, p in results if p]
    return {"bounds_checked_runs": sum(1 for c, _ in results if c == "in_bounds_problem"),
            "knob0_comparisons": sum(1 for c, _ in results if c == "exactness_problem"),
            "violations": len(problems), "first_violation": problems[0][:2000] if problems else None,
            "seconds": round(time.perf_counter() - start, 1)}


def group_of(case: Case) -> str:
    return {"component": "components", "source": "sources"}.get(case.kind.split(":")[0], "mixed")


def group_summaries(cases: list[Case], results: dict[int, Outcome]) -> dict[str, dict]:
    """Per group of inputs: counts, verdicts, valid inputs (output expected) and times."""
    out: dict[str, dict] = {}
    for group in GROUPS:
        mine = [i for i, c in enumerate(cases) if group_of(c) == group]
        if not mine:
            continue
        verdicts = Counter(results[i].verdict for i in mine)
        valid = [i for i in mine if cases[i].expect == "output"]
        times = sorted(results[i].seconds for i in mine)
        out[group] = {"inputs": len(mine), "outputs": verdicts["output"], "clear_errors": verdicts["error"],
                      "findings": verdicts["finding"], "valid": len(valid),
                      "valid_outputs": sum(1 for i in valid if results[i].verdict == "output"),
                      "median_seconds": round(times[len(times) // 2], 4), "max_seconds": round(times[-1], 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=10_000, help="inputs of every earlier kind (mutated .mlir, "
                    "pipelines, configurations, kernels, Python functions, split files, sizes, deep programs)")
    ap.add_argument("--components", type=int, default=0, help="programs of component ops with their knobs")
    ap.add_argument("--sources", type=int, default=0, help="decorated Python programs calling components")
    ap.add_argument("--size", type=int, help="N inputs in all: half of every earlier kind, a quarter components, a "
                    "quarter sources (overrides the three counts)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--sample", type=int, default=100, help="inputs also run as the real command")
    ap.add_argument("--kernels", type=int, default=0, help="also check N generated kernels in bounds (runtime "
                    "verification) and N knob-0 settings exact")
    ap.add_argument("--findings-dir", default="/tmp/approx-fuzz-findings")
    ap.add_argument("--json", help="write the summary as JSON here")
    args = ap.parse_args(argv)

    counts = split(args.size) if args.size is not None else {
        "mixed": args.inputs, "components": args.components, "sources": args.sources}
    t0 = time.perf_counter()
    done = run_all(counts, args.seed, args.workers)
    t_run = time.perf_counter() - t0
    cases = [c for c, _ in done]
    results = {i: o for i, (_, o) in enumerate(done)}

    step = max(1, len(cases) // max(args.sample, 1))
    large = [i for i, c in enumerate(cases) if len(c.data) >= UPSTREAM_PATH_CHARS]  # the upstream parsing path
    sample = sorted({*range(0, len(cases), step), *large[:max(args.sample // 4, 1)]})
    with ThreadPoolExecutor(args.workers) as pool:  # each command is its own process
        sub = dict(zip(sample, pool.map(lambda i: run_in_subprocess(cases[i]), sample)))
    t_sub = time.perf_counter() - t0 - t_run

    verdicts = Counter(o.verdict for o in results.values())
    findings = [(i, o) for i, o in sorted(results.items()) if o.problem]
    findings += [(i, o) for i, o in sorted(sub.items()) if o.problem and not results[i].problem]
    kinds = Counter(c.kind.split(":")[0] for c in cases)
    times = sorted(o.seconds for o in results.values())
    summary = {
        "inputs": len(cases), "by_kind": dict(kinds), "outputs": verdicts["output"], "clear_errors": verdicts["error"],
        "findings": len(findings), "distinct_findings": len({o.signature for _, o in findings}),
        "max_seconds_per_input": round(times[-1], 3), "median_seconds": round(times[len(times) // 2], 4),
        "p99_seconds": round(times[int(len(times) * 0.99)], 3),
        "subprocess_sample": len(sub),
        "subprocess_max_seconds": round(max((o.seconds for o in sub.values()), default=0), 3),
        "seed": args.seed, "workers": args.workers, "run_seconds": round(t_run, 1), "command_seconds": round(t_sub, 1),
        "groups": group_summaries(cases, results),
    }
    print(f"fuzz approx-opt: {summary['inputs']} inputs ({', '.join(f'{k} {v}' for k, v in kinds.items())}), "
          f"seed {args.seed}")
    print(f"  outputs (exit 0):           {summary['outputs']}")
    print(f"  clear errors (exit 1):      {summary['clear_errors']}")
    print(f"  findings:                   {summary['findings']} ({summary['distinct_findings']} distinct)")
    print(f"  time per input:             median {summary['median_seconds']} s, p99 {summary['p99_seconds']} s, "
          f"max {summary['max_seconds_per_input']} s (limit 5 s, + 1 s per 10 KB or 50 levels of nesting)")
    print(f"  as a command (sample):      {len(sub)} inputs, max {summary['subprocess_max_seconds']} s, "
          f"{sum(1 for o in sub.values() if o.problem)} findings")
    print(f"  wall: generate + run {t_run:.0f} s, commands {t_sub:.0f} s, {args.workers} workers")
    for group, g in summary["groups"].items():
        print(f"  {group + ':':27s} {g['inputs']} inputs ({g['valid']} valid, {g['valid_outputs']} of them output), "
              f"{g['outputs']} outputs, {g['clear_errors']} clear errors, {g['findings']} findings; "
              f"median {g['median_seconds']} s, max {g['max_seconds']} s")
    slow = sorted(results, key=lambda i: -results[i].seconds)[:3]
    print("  slowest:                    " + "; ".join(
        f"{results[i].seconds:.2f} s {cases[i].kind} ({len(cases[i].data)} bytes)" for i in slow))
    if findings:
        out = Path(args.findings_dir)
        out.mkdir(parents=True, exist_ok=True)
        for i, o in findings:
            (out / f"{i}.{'py' if cases[i].python else 'mlir'}").write_bytes(cases[i].data)
            (out / f"{i}.txt").write_text(f"{o.problem}\n{o.stderr}\n{cases[i].describe()}\n")
        for problem, n in Counter(o.signature for _, o in findings).most_common(20):
            print(f"  {n:5d} x {problem[:160]}")
        print(f"  inputs of the findings: {out}/")
    if args.kernels:
        k = summary["kernels"] = check_kernels(args.kernels, args.seed, args.workers)
        print(f"kernels: {k['bounds_checked_runs']} bounds-checked runs at random knob settings, "
              f"{k['knob0_comparisons']} knob-0 runs compared bit for bit: {k['violations']} violations "
              f"({k['seconds']} s)")
        if k["first_violation"]:
            print(k["first_violation"])
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if findings or summary.get("kernels", {}).get("violations") else 0


if __name__ == "__main__":
    sys.exit(main())
