"""Which composition of the RAG answer models answers best: the MiniLM reader, Gemma 3 270M,
or Gemma choosing between its own answer and the reader's span by how likely it finds
each (a verifier: one extra pass over the candidates' few tokens, the prompt's KV cache
shared). Per question it records both answers, the reader's confidence and Gemma's
log-probability of each candidate given the prompt (teacher-forced, `<end_of_turn>`
included), so any rule over them can be fitted on the tuning questions and replayed on
the held-out ones (`--rules`).

    python bench/composition_probe.py --n-tune 100 --n-eval 200 --jsonl bench/composition_probe.jsonl
    python bench/composition_probe.py --rules bench/composition_probe.jsonl
    python bench/composition_probe.py --exact bench/composition_probe.jsonl   # the system's exact program
    python bench/composition_probe.py --hinted --jsonl bench/composition_probe_hinted.jsonl
    # one process a core, appending to one file: --shards 2 --shard 0 & ... --shards 2 --shard 1

`--hinted`: Gemma with the adapters trained to read the reader's span in its prompt
(examples/models/gemma3_hint_lora.npz, `verifier.Verified(..., hinted=True)`); its answer and
both scores are taken with the span in the prompt.

Questions: `examples.systems.common.question_sets` (tuning and held-out articles disjoint,
neither among Gemma's training articles); passages: the RAG-BM25 system's top 3 of all
SQuAD dev paragraphs; QoS: containment of a gold answer (`autotuner.metrics.containment`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def probe(args) -> None:
    from autotuner.metrics import containment
    from examples import squad
    from examples.systems.common import GEMMA_ADAPTER, GEMMA_HINT_ADAPTER, one_thread, question_sets, readers
    from frontends.components.llm.base import build_prompt
    from frontends.components.llm.gemma import Gemma3
    from frontends.components.llm.smollm import first_line
    from frontends.components.retrieval import Bm25Retriever

    one_thread()
    corpus = tuple(squad.paragraphs())
    search = Bm25Retriever(corpus, top_k=3).build({})
    reader = readers()[1]
    lm = Gemma3.load(GEMMA_HINT_ADAPTER if args.hinted else GEMMA_ADAPTER)
    (tq, ta), (eq, ea) = question_sets(args.n_tune, args.seed, args.n_eval)
    items = [("tune", q, a) for q, a in zip(tq, ta)] + [("eval", q, a) for q, a in zip(eq, ea)]
    done = set()
    out = Path(args.jsonl)
    if out.exists():
        done = {json.loads(line)["question"] for line in out.read_text().splitlines() if line.strip()}
    start = time.monotonic()
    with out.open("a") as f:
        for i, (split, q, gold) in enumerate(items):
            if q in done or i % args.shards != args.shard:
                continue
            passages = [corpus[j] for j in search(q).ids]
            r = reader.answer(q, passages)
            content = build_prompt(q, passages, r.text) if args.hinted else lm.prompt(q, passages)
            new, logps, _ = lm.generate_turn(content, 16)
            g_text = first_line(lm.tokenizer.decode(new, skip_special_tokens=True))
            # both candidates teacher-forced after the prompt (one token decoded, thrown away)
            _, _, _, (r_logps, g_logps) = lm.generate_scored(
                content, [lm.continuation_ids(r.text), lm.continuation_ids(g_text)], 1)
            (lr, nr), (lg, ng) = (sum(r_logps), len(r_logps)), (sum(g_logps), len(g_logps))
            row = {"split": split, "question": q, "gold": list(gold), "reader": r.text, "reader_conf": r.confidence,
                   "gemma": g_text, "gemma_conf": float(sum(logps)), "lp_reader": lr, "n_reader": nr,
                   "lp_gemma": lg, "n_gemma": ng, "reader_ok": containment(r.text, gold),
                   "gemma_ok": containment(g_text, gold)}
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"{i + 1}/{len(items)} {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)


def rules(path: Path) -> None:
    """Each rule's containment on tuning and held out; the rule's threshold fitted on tuning."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    tune = [r for r in rows if r["split"] == "tune"]
    held = [r for r in rows if r["split"] == "eval"]

    def acc(rs, pick) -> float:
        return sum(r["reader_ok"] if pick(r) else r["gemma_ok"] for r in rs) / max(len(rs), 1)

    def mean_lp(r, who):
        return r[f"lp_{who}"] / r[f"n_{who}"]

    family = {
        "verifier sum (reader when lp_reader - lp_gemma > t)": lambda t: lambda r: r["lp_reader"] - r["lp_gemma"] > t,
        "verifier mean (per token)": lambda t: lambda r: mean_lp(r, "reader") - mean_lp(r, "gemma") > t,
        "cascade (reader when its confidence > t)": lambda t: lambda r: r["reader_conf"] > t,
    }
    grid = [x / 10 for x in range(-80, 81)] + [x / 100 for x in range(0, 101)]
    print(f"{len(tune)} tuning, {len(held)} held out")
    print(f"reader alone: tune {acc(tune, lambda r: True):.3f} held {acc(held, lambda r: True):.3f}")
    print(f"gemma alone:  tune {acc(tune, lambda r: False):.3f} held {acc(held, lambda r: False):.3f}")
    either = lambda rs: sum(max(r["reader_ok"], r["gemma_ok"]) for r in rs) / max(len(rs), 1)  # noqa: E731
    print(f"either right: tune {either(tune):.3f} held {either(held):.3f}")
    for name, make in family.items():
        best = max(grid, key=lambda t: (acc(tune, make(t)), -abs(t)))
        print(f"{name}: t={best} tune {acc(tune, make(best)):.3f} held {acc(held, make(best)):.3f}")


def exact(path: Path) -> None:
    """The RAG-BM25-LLM system's exact program (Gemma verifying the reader's span, on this
    machine's exact path) on the probe's questions: containment per split, paired against
    Gemma alone and the reader alone as the probe recorded them."""
    from autotuner.metrics import containment
    from examples.systems.rag import bm25

    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    run = bm25.llm_system().exact()
    oks = []
    for i, r in enumerate(rows):
        oks.append(containment(run(r["question"]), r["gold"]))
        print(f"{i + 1}/{len(rows)}", file=sys.stderr, flush=True)
    for split in ("tune", "eval"):
        pairs = [(ok, r) for ok, r in zip(oks, rows) if r["split"] == split]
        line = f"{split}: exact program {sum(ok for ok, _ in pairs) / max(len(pairs), 1):.3f} of {len(pairs)}"
        for who in ("gemma", "reader"):
            gained = sum(1 for ok, r in pairs if ok and not r[f"{who}_ok"])
            lost = sum(1 for ok, r in pairs if not ok and r[f"{who}_ok"])
            line += f"; against {who} alone {gained} gained / {lost} lost"
        print(line)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-tune", type=int, default=100)
    ap.add_argument("--n-eval", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jsonl", default=str(ROOT / "bench" / "composition_probe.jsonl"))
    ap.add_argument("--rules", type=Path, help="fit and replay the rules on a probe's records")
    ap.add_argument("--shard", type=int, default=0, help="answer the questions i with i %% SHARDS == SHARD")
    ap.add_argument("--shards", type=int, default=1, help="processes appending to one --jsonl (one a core)")
    ap.add_argument("--hinted", action="store_true", help="Gemma reads the reader's span (the hinted adapters)")
    ap.add_argument("--exact", type=Path, help="the system's exact program on a probe's questions")
    args = ap.parse_args(argv)
    if args.exact:
        exact(args.exact)
    elif args.rules:
        rules(args.rules)
    else:
        probe(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
