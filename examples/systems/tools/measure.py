"""AST accuracy and CPU time per request of the LLM + tools agent's settings,
next to the reader-based agent, on held-out BFCL items (the first n evaluation
items of `tools.data.split(80)`: never seen by the adapters nor the tuning).

Paired: every setting runs on each request in turn, so load on the shared
machine hits all alike; speedups are total exact time / total setting time over
the same requests, with a 95 % bootstrap interval over requests."""

from __future__ import annotations

import time

import numpy as np

from examples.systems.tools.data import accuracy_by_category, ast_match, query_of, split

# (name, program: "llm" | "reader", configuration: knob -> value, first n requests only: None = all)
SETTINGS = (
    ("llm exact", "llm", {}, None),
    ("llm layers 25", "llm", {"writer.layers": 1}, None),
    ("llm layers 20", "llm", {"writer.layers": 2}, None),
    ("llm max_new_tokens 64", "llm", {"writer.max_new_tokens": 2}, None),
    ("llm cascade fast>=0.5", "llm", {"writer.model": 3}, None),
    ("llm cascade pro>=0.5", "llm", {"writer.model": 8}, None),
    ("llm cascade pro>=0.9", "llm", {"writer.model": 10}, None),
    ("llm skip (cue words)", "llm", {"writer.skip": 1}, None),
    ("llm keyword router", "llm", {"tools.router": 1}, None),
    ("reader agent exact", "reader", {}, None),
    ("llm bfloat16", "llm", {"writer.precision": 1}, 6),
)


def interval(exact: np.ndarray, approx: np.ndarray, seed: int = 0, draws: int = 2000) -> tuple[float, float]:
    """95 % bootstrap interval of sum(exact) / sum(approx) over paired requests."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(exact), size=(draws, len(exact)))
    ratios = exact[idx].sum(1) / np.maximum(approx[idx].sum(1), 1e-9)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return round(float(lo), 2), round(float(hi), 2)


def measure(n: int, seed: int = 0) -> dict:
    from examples.systems.tools import agent as tools_agent
    from examples.systems.tools import agent_llm as tools_agent_llm

    items = split(80, seed)[1][:n]
    queries = [query_of(i) for i in items]
    programs = {"llm": tools_agent_llm.system(), "reader": tools_agent.system()}
    runs = {name: programs[p].build({k: {"knob_val": v} for k, v in cfg.items()}) for name, p, cfg, _ in SETTINGS}
    limit = {name: (m or n) for name, _, _, m in SETTINGS}
    for run in runs.values():  # warm-up (first-call costs: tokenizers, variants made once)
        run(queries[0])
    seconds = {name: [] for name in runs}
    outputs = {name: [] for name in runs}
    for k, q in enumerate(queries):
        for name, run in runs.items():
            if k >= limit[name]:
                continue
            start = time.process_time()
            outputs[name].append(run(q))
            seconds[name].append(time.process_time() - start)
    exact = np.array(seconds["llm exact"])
    out = {"items": n, "categories": {c: sum(i.category == c for i in items) for c in {i.category for i in items}},
           "clock": "CPU time (time.process_time), torch on one thread"}
    for name in runs:
        m = len(outputs[name])
        t = np.array(seconds[name])
        scores = [ast_match(o, i) for o, i in zip(outputs[name], items)]
        out[name] = {"requests": m, "ast_accuracy": round(float(np.mean(scores)), 3),
                     "by_category": {c: round(v, 3) for c, v in accuracy_by_category(items[:m], scores).items()},
                     "seconds_per_request": round(float(t.mean()), 4),
                     "speedup_vs_llm_exact": round(float(exact[:m].sum() / max(t.sum(), 1e-9)), 2),
                     "speedup_interval": interval(exact[:m], t)}
    return out


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(json.dumps(measure(args.items, args.seed), indent=2))
