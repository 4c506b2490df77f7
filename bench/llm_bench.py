"""Cost of one RAG question with the generative answer model (SmolLM2-135M-Instruct
+ the trained adapters), exact against each parameter at one cheaper value:
float32 -> bfloat16, 16 -> 8 new tokens, 3 -> 1 passages, 30 -> 25 / 20 layers.

Paired: for every question the exact call and every approximate call run one
after the other (their order rotated per question), on the top 3 BM25 passages
of the question (retrieval is not timed). Times are CPU seconds of the calling
thread, torch on one thread (the machine is shared); the speedup of a variant is
sum(exact) / sum(variant) over the questions, with the min-max of the per-question
ratios. Containment (whole words) against the gold answers is shown for
information only: a few questions say little about quality (the figures of
examples/models/llm_metrics.json do).

    python bench/llm_bench.py [--questions 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotuner.metrics import containment  # noqa: E402
from examples import squad  # noqa: E402
from examples.systems.common import SMOLLM_ADAPTER, one_thread  # noqa: E402

EXACT = dict(precision="float32", max_new_tokens=16, passages=3, layers=30)
VARIANTS = {"bfloat16": dict(precision="bfloat16"), "8 new tokens": dict(max_new_tokens=8),
            "1 passage": dict(passages=1), "25 layers": dict(layers=25), "20 layers": dict(layers=20)}
CLOCK = time.thread_time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    one_thread()
    from frontends.components.llm.smollm import SmolLM2
    from frontends.components.retrieval import Bm25Retriever

    lm = SmolLM2.load(SMOLLM_ADAPTER)
    search = Bm25Retriever(squad.paragraphs(), top_k=3).build()
    qs, _ = squad.sample_questions(args.questions, args.seed)
    runs = {"exact": EXACT, **{name: {**EXACT, **change} for name, change in VARIANTS.items()}}
    models = {name: lm.with_precision(r["precision"]).with_layers(r["layers"]) for name, r in runs.items()}
    passages = [[squad.paragraphs()[i] for i in search(q.question).ids] for q in qs]
    for model in models.values():  # warm-up
        model.answer(qs[0].question, passages[0][:1], 2)
    rows = {name: {"seconds": [], "containment": [], "prompt_tokens": [], "new_tokens": []} for name in runs}
    names = list(runs)
    for i, (q, ctx) in enumerate(zip(qs, passages)):
        for name in names[i % len(names):] + names[:i % len(names)]:
            r = runs[name]
            start = CLOCK()
            a = models[name].answer(q.question, ctx[:r["passages"]], r["max_new_tokens"])
            rows[name]["seconds"].append(CLOCK() - start)
            rows[name]["containment"].append(containment(a.text, q.answers))
            rows[name]["prompt_tokens"].append(a.tokens_used - a.new_tokens)
            rows[name]["new_tokens"].append(a.new_tokens)
        print(f"question {i + 1}/{len(qs)}", file=sys.stderr, flush=True)
    exact = rows["exact"]["seconds"]
    summary = {}
    print(f"{len(qs)} tuning-article questions, top-3 BM25 passages, CPU seconds of one thread (torch 1 thread)")
    print(f"{'run':14} {'s/question':>10} {'speedup':>8} {'per-question range':>19} {'prompt tok':>10} "
          f"{'new tok':>8} {'containment':>11}")
    for name, row in rows.items():
        ratios = [e / s for e, s in zip(exact, row["seconds"])]
        n = len(qs)
        summary[name] = {"seconds_per_question": sum(row["seconds"]) / n, "speedup": sum(exact) / sum(row["seconds"]),
                         "speedup_min": min(ratios), "speedup_max": max(ratios),
                         "prompt_tokens": sum(row["prompt_tokens"]) / n, "new_tokens": sum(row["new_tokens"]) / n,
                         "containment": sum(row["containment"]) / n}
        s = summary[name]
        print(f"{name:14} {s['seconds_per_question']:10.2f} {s['speedup']:7.2f}x {s['speedup_min']:8.2f}-"
              f"{s['speedup_max']:.2f}x {s['prompt_tokens']:10.0f} {s['new_tokens']:8.1f} {s['containment']:11.2f}")
    if args.json:
        args.json.write_text(json.dumps({"questions": len(qs), "exact": EXACT, "runs": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
