"""What the tuner's QoS proxy makes of single knobs of a RAG-LLM system: for each
setting, the loss the search sees (token F1 to the exact program's answers on the
tuning questions, `examples.systems.common.METRIC` without references), the gold
answer containment loss on the same questions, and on the held-out questions the
containment loss with the paired speedup and its 95 % interval
(`autotuner.measure.Measurer`, thread CPU time, torch on one thread).

    .venv/bin/python bench/llm_rag_settings.py rag_bm25_llm [--n-tune 8 --n-eval 16]

A generative answer changes its wording under almost any approximation, so the
agreement proxy can reject settings that keep the gold answers; this shows by how
much, per setting."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTINGS = ({"answer.passages": 2}, {"bm25.top_k": 1}, {"answer.sentences": 1}, {"answer.context_chars": 1},
            {"answer.layers": 1}, {"answer.model": 1})  # knob -> value (the first non-zero, passages: 1 passage)


def measure(name: str, n_tune: int, n_eval: int, seed: int = 0, settings=SETTINGS, log=print) -> list[dict]:
    from autotuner import Cost, Measurer
    from examples.systems.common import METRIC, one_thread
    from examples.systems.registry import system

    one_thread()
    described = system(name)
    program = described.build()
    (tune_q, tune_a), (eval_q, eval_a) = described.splits(n_tune, seed, n_eval)
    exact = program.exact()
    exact_tune = [exact(q) for q in tune_q]
    held_out = Measurer(program, eval_q, eval_a, METRIC, Cost(clock="cpu", timing="paired", repeats=1),
                        what="evaluation")
    gold = lambda outs: sum(METRIC.fn(o, a) for o, a in zip(outs, tune_a)) / len(tune_a)  # noqa: E731
    rows = []
    for setting in settings:
        config = {s.name: {"knob_val": setting.get(s.name, 0)} for s in program.knobs()}
        fn = program.build(config)
        with program.untimed():
            outs = [fn(q) for q in tune_q]
        agree = sum(METRIC.fn(o, e) for o, e in zip(outs, exact_tune)) / len(tune_q)
        m = held_out.measure(fn, config)
        row = {"setting": setting, "tuning_agreement_loss": round(1 - agree, 3),
               "tuning_gold_loss": round((gold(exact_tune) - gold(outs)) / max(gold(exact_tune), 1e-9), 3),
               "held_out_gold_loss": round(m.qos_loss, 3), "held_out_speedup": round(m.speedup, 2),
               "held_out_speedup_ci": [round(v, 2) for v in m.speedup_interval or ()]}
        log(json.dumps(row))
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("system", choices=("rag_bm25_llm", "rag_dense_llm"))
    ap.add_argument("--n-tune", type=int, default=8, help="tuning questions (as bench/results.py's --llm-n-tune)")
    ap.add_argument("--n-eval", type=int, default=16, help="held-out questions (as --llm-n-eval)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    rows = measure(args.system, args.n_tune, args.n_eval, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
