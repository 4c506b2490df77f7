"""bench/results.md from bench/results.json and the runs' record (results_runs.json):
the systems' table beside the paper's figures, each system's front, the SmolLM2
systems on a CPU and on a GPU side by side, the kernels."""

from __future__ import annotations

import json

from autotuner.report import GOLD_NOTE, MODELLED_NOTE
from bench.systems_bench import LEVELS
from examples.systems.registry import SYSTEMS
from examples.systems.row_figures import levels_text

KERNELS = ("bm25", "kb", "kmeans", "lavamd", "pagerank")
KERNEL_LEVELS = ("1", "5", "10")


def load_text(load: dict | None) -> str:
    """How busy the machine was during a row's run, in words."""
    from autotuner import Load

    if not load:
        return "load not recorded"
    return Load(*(load.get(k) for k in ("load_start", "load_end", "other_share", "seconds", "cores"))).describe()


def speedup_text(v, point=None) -> str:
    """A level's speedup, with the 95 % interval of the chosen point's paired timing."""
    if v is None:
        return "-"
    ci = (point or {}).get("speedup_ci")
    return f"{v:.2f}x [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{v:.2f}x"


def _loss(point: dict) -> str:
    """A point's held-out QoS loss with its 95 % interval."""
    ci = point.get("qos_loss_ci")
    v = point.get("qos_loss")
    if v is None:
        return "-"
    return f"{100 * v:.1f} %" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")


def level_point(row: dict, mode: str, level) -> dict | None:
    """The point a row reports for `mode` at `level` (None: the exact program)."""
    return ((row.get("points") or {}).get(mode) or {}).get(str(level))


def markdown(data: dict, details: dict, missing: dict, kept: list, command: str, seconds: float,
             runs: dict | None = None, gpu_details: dict | None = None) -> str:
    lines = ["# Results: compound AI systems and kernels", "",
             f"- machine: {data['machine']}", f"- commit: {data['commit']}",
             f"- command: `{command}` ({seconds / 60:.1f} min)", "",
             "Speedup = exact time / approximate time on the held-out evaluation split (tuning and evaluation "
             "inputs disjoint, evaluation 5x tuning), thread CPU time with torch on one thread, the two timed "
             "side by side (paired, `autotuner.measure`), with the 95 % bootstrap interval in brackets "
             "(`-` none: the exact program); `approx-tune verify --row <system>` re-measures a row's points. "
             "A level's point is the fastest front configuration within the level on the tuning inputs, replayed "
             "held out (the exact program meets every level: 1.00x when no approximation does); rows recorded "
             "before that rule say `levels chosen on held-out figures`: the held-out figures picked their points, "
             "so they overstate what a replay of a tuning choice gives. QoS loss = (QoS_exact - QoS_approx) / "
             "QoS_exact; QoS = answer containment of the gold answers (SQuAD normalisation) for the RAG systems, "
             "BFCL AST match for tools. The paper (ApproxMLIR, MLSys 2026) reports dynamic approximation only, after "
             "12 hours of tuning per system.", "",
             "## Systems", "",
             "| system | mode | <= 3 % | <= 6 % | <= 9 % | paper (dynamic) | target | exact s / query | QoS exact "
             "| trials | tuning s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in SYSTEMS:
        row = data["systems"].get(name)
        paper = " / ".join(f"{x:.2f}x" for x in SYSTEMS[name].paper)
        loss, want = SYSTEMS[name].target
        if row is None:
            lines.append(f"| {name} | missing | | | | {paper} | >= {want:.1f}x at <= {loss} % | | | | |")
            continue
        got = row["dynamic"][str(loss)]
        verdict = f">= {want:.1f}x at <= {loss} %: {'met' if got >= want else 'NOT met'} ({got:.2f}x)"
        for mode in ("static", "dynamic"):
            first = mode == "static"
            lines.append("| " + " | ".join([
                name if first else "", mode,
                *(speedup_text(row[mode][str(p)], level_point(row, mode, p)) for p in LEVELS),
                paper if not first else "n/a", verdict if first else "",
                f"{row['exact_seconds_per_query']:.3f}" if first else "",
                f"{row['qos_exact']:.3f}" if first and row["qos_exact"] is not None else "",
                str(row["trials"]) if first else "", f"{row['tuning_seconds']:.0f}" if first else ""]) + " |")
    dyn_ok = [n for n, r in data["systems"].items() if r and all(
        r["dynamic"][str(p)] >= r["static"][str(p)] for p in LEVELS)]
    lines += ["", f"Dynamic >= static at every level: {', '.join(dyn_ok) or 'none'}"
              + (f"; not: {', '.join(n for n, r in data['systems'].items() if r and n not in dyn_ok)}"
                 if any(r and n not in dyn_ok for n, r in data["systems"].items()) else "") + "."]
    for name, d in details.items():
        lines += detail_lines(name, data["systems"].get(name) or {}, d, data["machine"])
    lines += gpu_lines(data, gpu_details or {})
    lines += ["", "## Kernels", "", "| kernel | mode | <= 1 % | <= 5 % | <= 10 % |", "|---|---|---|---|---|"]
    for name in KERNELS:
        row = data["kernels"].get(name)
        if row is None:
            lines.append(f"| {name} | missing | | | |")
            continue
        for mode in ("static", "dynamic"):
            lines.append(f"| {name if mode == 'static' else ''} | {mode} | "
                         + " | ".join(speedup_text(row[mode].get(lv), level_point(row, mode, lv))
                                      for lv in KERNEL_LEVELS) + " |")
    if missing or kept:
        lines += ["", "## Not run here", ""]
        lines += [f"- {k}: missing: {v}" for k, v in missing.items()]
        lines += [f"- {k}: kept from the previous bench/results.json"
                  + ("" if k == "kernels" or k.endswith("@cuda") or (data["systems"].get(k) or {}).get("points") else
                     " (timed before paired timing: the exact program's time taken once per split; knob names "
                     "of that commit)") + (
            f", made by `{runs[k]['command']}` ({runs[k]['minutes']:.1f} min, commit {runs[k]['commit']})"
            if runs and k in runs else "") for k in kept]
    return "\n".join(lines) + "\n"


def chosen_lines(row: dict, details: dict | None = None) -> list[str]:
    """How a row's level points were chosen, and where a replay breaks its level."""
    if row.get("chosen_on") == "tuning":
        broken = [f"{m} <= {lv} %" for m, levels in (row.get("points") or {}).items()
                  for lv, p in levels.items() if p and not p.get("meets_level", True)]
        made = row.get("configurations") or {}
        return ["- levels chosen on tuning figures, replayed held out"
                + (f"; the replay breaks {', '.join(broken)}" if broken else "; every replay keeps its level")
                + (f"; configurations measured: {', '.join(f'{m} {n}' for m, n in made.items())}" if made else "")]
    if row.get("chosen_on") == "held-out":
        front = (details or {}).get("front") or []
        replay = ", ".join(f"{m} <= {lv} % {tuning_choice(front, m, lv)}" for m in ("static", "dynamic")
                           for lv in LEVELS)
        return ["- levels chosen on held-out figures (recorded before the tuner chose on tuning figures; to "
                "re-record)" + (f". Chosen on tuning figures, the same measured front gives: {replay}"
                                if front else "")]
    return []


def tuning_choice(front: list[dict], mode: str, level: int) -> str:
    """The held-out figures of the front point the tuning figures choose at `level` (the
    fastest within it on the tuning split), from a row's recorded front: what the row
    says under the current rule, with no new measurement."""
    within = [p for p in front if p["mode"] == mode and p.get("qos_loss_tune") is not None
              and p["qos_loss_tune"] <= level / 100 + 1e-9]
    p = max(within, key=lambda p: p["speedup_tune"], default=None)
    if p is None or not p["knobs"] or p.get("speedup_eval") is None:
        return "1.00x"
    return f"{p['speedup_eval']:.2f}x at {100 * p['qos_loss_eval']:.1f} %"


def detail_lines(name: str, row: dict, d: dict, top_machine: str) -> list[str]:
    """One system's section: its sizes, machine and load, the most accurate point, its front."""
    model = row.get("model")
    lines = ["", f"### {name}", ""] + ([f"- answer model: {model}"] if model else []) + [
              f"- tuning questions {d.get('n_tune')}, evaluation {d.get('n_eval')}; "
              f"trials per mode {d.get('trials_per_mode')}; wall time (load, tune, evaluate, report) "
              f"{d.get('wall_seconds', 0):.0f} s; report: {repo_path(d.get('report', '-'))}"]
    if row.get("machine") and row["machine"] != top_machine:
        lines.append(f"- machine: {row['machine']}")
    if (row.get("workers") or 1) > 1:
        lines.append(f"- worker processes: {row['workers']} (the search and the held-out evaluation; each times "
                     "the exact and the approximate program side by side on its own inputs)")
    if row.get("load"):
        lines.append(f"- while it ran: {load_text(row['load'])}")
    lines += chosen_lines(row, d)
    best = row.get("most_accurate")
    if best:
        lines.append(f"- most accurate configuration measured: {best['mode']} "
                     f"`{json.dumps(best['knobs'], sort_keys=True)}`, held-out QoS loss {_loss(best)} at "
                     f"{best['speedup']:.2f}x" + ("; it beats the exact program beyond the interval, so against "
                                                 f"it: {levels_text(best)}" if best.get("beats_exact") else ""))
    if d.get("qos_note"):
        lines.append(f"- {d['qos_note']}")
    if d.get("fixed"):
        lines.append("- fixed at exact (stage under 2 % of the exact time): "
                     + ", ".join(f"{k} ({100 * v:.2f} %)" for k, v in d["fixed"].items()))
    front = d.get("front", [])
    gold = any(p.get("qos_loss_tune_gold") is not None for p in front)
    if front:
        lines += ["", "| mode | QoS loss tuning " + ("| QoS loss tuning, gold " if gold else "")
                  + "| speedup tuning | QoS loss held-out | speedup held-out | held-out vs tuning | knobs |",
                  "|---|---|---|---|---|---|---|" + ("---|" if gold else "")]
    for p in front:
        loss = lambda v: "-" if v is None else f"{100 * v:.1f} %"  # noqa: E731
        gap = (f"{100 * (p['speedup_eval'] / p['speedup_tune'] - 1):+.0f} %"
               if p.get("speedup_eval") and p.get("speedup_tune") else "-")
        lines.append(f"| {p['mode']} | {loss(p.get('qos_loss_tune'))} | "
                     + (f"{loss(p.get('qos_loss_tune_gold'))} | " if gold else "") +
                     f"{speedup_text(p.get('speedup_tune'), {'speedup_ci': p.get('speedup_tune_ci')})}"
                     f"{' (modelled)' if p.get('speedup_tune_modelled') else ''} | "
                     f"{_loss({'qos_loss': p.get('qos_loss_eval'), 'qos_loss_ci': p.get('qos_loss_eval_ci')})} | "
                     f"{speedup_text(p.get('speedup_eval'), {'speedup_ci': p.get('speedup_eval_ci')})} | {gap} | "
                     f"`{json.dumps(p['knobs'], sort_keys=True)}` |")
    if gold:
        lines.append(f"- {GOLD_NOTE}")
    if any(p.get("speedup_tune_modelled") for p in front):
        lines.append(f"- {MODELLED_NOTE}")
    for a in d.get("ablations") or []:
        rows = ", ".join(f"{r['knob']} {100 * r['speedup_share']:.0f} %" for r in a["rows"]
                         if r.get("speedup_share") is not None)
        lines.append(f"- ablation, {a['label']} ({speedup_text(a['speedup'], a)}): share of the speedup per knob "
                     f"(each set back to exact, paired, {a.get('inputs', '')}): {rows or '-'}")
    return lines


def gpu_lines(data: dict, details: dict) -> list[str]:
    """The SmolLM2 systems run on a GPU beside their CPU rows: same program and
    search, the LLM on CUDA with its compiled decode, wall-time speedups."""
    gpu = {n: r for n, r in (data.get("gpu_systems") or {}).items() if r}
    if not gpu:
        return []
    lines = ["", "## SmolLM2 systems on a CPU and on a GPU", "",
             "The same programs and search (`bench/results.py --device cuda`); on the GPU the LLM runs with its "
             "compiled decode (static KV cache, CUDA graphs) as the exact program, and times are wall time "
             "(paired as on the CPU).", "",
             "| system | device | mode | <= 3 % | <= 6 % | <= 9 % | exact s / query | QoS exact | trials |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, g in gpu.items():
        shown = [(where, row) for where, row in (("CPU", data["systems"].get(name)), ("GPU", g)) if row]
        for i, (where, row) in enumerate(shown):
            for mode in ("static", "dynamic"):
                first = mode == "static"
                lines.append("| " + " | ".join([
                    name if first and i == 0 else "", where if first else "", mode,
                    *(speedup_text(row[mode][str(p)], level_point(row, mode, p)) for p in LEVELS),
                    f"{row['exact_seconds_per_query']:.3f}" if first else "",
                    f"{row['qos_exact']:.3f}" if first and row["qos_exact"] is not None else "",
                    str(row["trials"]) if first else ""]) + " |")
    for name, d in details.items():
        lines += detail_lines(f"{name} on a GPU", gpu.get(name) or {}, d, data["machine"])
    return lines


def run_details(runs: dict) -> tuple[dict, dict]:
    """({system: details} of the CPU rows, {system: details} of the GPU rows) from the runs' record."""
    cpu = {n: runs[n]["details"] for n in SYSTEMS if (runs.get(n) or {}).get("details")}
    gpu = {n: runs[f"{n}@cuda"]["details"] for n in SYSTEMS if (runs.get(f"{n}@cuda") or {}).get("details")}
    return cpu, gpu


def repo_path(path: str) -> str:
    """`path` relative to the checkout it was written in (reports/...): results
    travel between checkouts."""
    return path[path.index("reports/"):] if "reports/" in path else path
