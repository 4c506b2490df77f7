"""Which composition of the LLM + tools agent's parts writes BFCL calls best: Gemma 3 270M
(the tools adapters) writing them, the reader-based fillers (fast, pro), or Gemma choosing
between its own calls and a filler's by how likely it finds each (the verifier of the RAG
systems, `frontends.components.llm.verifier.Verified`), under either router (MiniLM
embedding, keyword IDF). Per request and router it records every candidate's calls, its
AST match, the fillers' confidence and Gemma's log-probability of each candidate after the
prompt (teacher-forced, `<end_of_turn>` included), so any rule over them can be fitted on the
tuning requests and replayed on the held-out ones (`--rules`).

    python bench/tools_composition_probe.py --n-tune 100 --n-eval 200 --jsonl bench/tools_composition_probe.jsonl
    python bench/tools_composition_probe.py --rules bench/tools_composition_probe.jsonl
    # one process a core, appending to one file: --shards 2 --shard 0 & ... --shards 2 --shard 1

Requests: `examples.systems.tools.data.query_sets` (the bench row's split); Gemma on this
machine's exact path (`tools.agent_llm.load_writer`), one thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FILLERS = ("fast", "pro")
ROUTERS = ("embedding", "keyword")


def probe(args) -> None:
    from examples.systems.common import one_thread
    from examples.systems.tools.agent import indexed
    from examples.systems.tools.agent_llm import load_writer
    from examples.systems.tools.components import ItemTools, routers
    from examples.systems.tools.data import ast_match, query_sets
    from examples.systems.tools.llm import DEFAULT_MAX_NEW_TOKENS, ReaderFiller, calls_of
    from examples.systems.tools.reader import load_readers
    from frontends.components.llm.smollm import first_line

    one_thread()
    writer = load_writer()
    fillers = dict(zip(FILLERS, (ReaderFiller(r) for r in load_readers())))
    embedding, keyword = routers()
    indexed(None, embedding)
    route, tools = {"embedding": embedding, "keyword": keyword}, ItemTools()
    (tq, ti), (eq, ei) = query_sets(args.n_tune, args.seed, args.n_eval)
    items = [("tune", q, i) for q, i in zip(tq, ti)] + [("eval", q, i) for q, i in zip(eq, ei)]
    out = Path(args.jsonl)
    done = {json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()} if out.exists() else set()
    start = time.monotonic()
    with out.open("a") as f:
        for n, (split, query, item) in enumerate(items):
            if item.id in done or n % args.shards != args.shard:
                continue
            row = {"split": split, "id": item.id}
            written = {}  # function name -> the row's fields for it (both routers may pick the same)
            for name in ROUTERS:
                function = tools.call(query, route[name])
                if function["name"] not in written:
                    cand = {k: m.answer(query.question, [function]) for k, m in fillers.items()}
                    content = writer.prompt(query.question, [function])
                    conts = [writer.continuation_ids(cand[k].text.strip()) for k in FILLERS]
                    tokens, logps, _, scores = writer.generate_scored(content, conts, DEFAULT_MAX_NEW_TOKENS)
                    own = first_line(writer.tokenizer.decode(tokens, skip_special_tokens=True))
                    fields = {"function": function["name"], "gemma": own,
                              "gemma_ok": ast_match(calls_of_text(own), item),
                              "lp_gemma": float(sum(logps)), "n_gemma": len(logps)}
                    for k, s in zip(FILLERS, scores):
                        fields |= {k: cand[k].text, f"{k}_conf": cand[k].confidence, f"lp_{k}": float(sum(s)),
                                   f"n_{k}": len(s), f"{k}_ok": ast_match(calls_of(cand[k]), item)}
                    written[function["name"]] = fields
                row[name] = written[function["name"]]
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"{n + 1}/{len(items)} {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)


def calls_of_text(text: str) -> list[dict]:
    from examples.systems.tools.llm import calls_of
    from frontends.components.llm.base import Answer

    return calls_of(Answer(text, 1.0, 0, 0.0, "gemma"))


def rules(path: Path) -> None:
    """Each composition's AST match on tuning and held out; a rule's threshold fitted on tuning."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    tune = [r for r in rows if r["split"] == "tune"]
    held = [r for r in rows if r["split"] == "eval"]

    def ok(r, router, pick) -> float:
        """Whether the candidate `pick` chooses (None: Gemma's own) is right on record `r`."""
        return r[router][f"{pick(r[router]) or 'gemma'}_ok"]

    def acc(rs, router, pick) -> float:
        return sum(ok(r, router, pick) for r in rs) / max(len(rs), 1)

    def mean_lp(x, who):
        return x[f"lp_{who}"] / max(x[f"n_{who}"], 1)

    grid = [t / 10 for t in range(-60, 61)]
    confs = [t / 20 for t in range(0, 21)]
    print(f"{len(tune)} tuning, {len(held)} held out")
    for router in ROUTERS:
        print(f"-- router {router}")
        print(f"gemma alone: tune {acc(tune, router, lambda x: None):.3f} held {acc(held, router, lambda x: None):.3f}")
        for k in FILLERS:
            print(f"{k} filler alone: tune {acc(tune, router, lambda x, k=k: k):.3f} "
                  f"held {acc(held, router, lambda x, k=k: k):.3f}")
            either = lambda rs, k=k: sum(max(r[router]["gemma_ok"], r[router][f"{k}_ok"]) for r in rs) / max(len(rs), 1)  # noqa: E731
            print(f"  either right (gemma, {k}): tune {either(tune):.3f} held {either(held):.3f}")
            families = {
                f"verifier mean ({k} when its lp per token - gemma's > t)":
                    (grid, lambda t, k=k: lambda x: k if mean_lp(x, k) - mean_lp(x, "gemma") > t else None),
                f"cascade ({k} when its confidence >= t)":
                    (confs, lambda t, k=k: lambda x: k if x[f"{k}_conf"] >= t else None),
            }
            for name, (values, make) in families.items():
                best = max(values, key=lambda t: (acc(tune, router, make(t)), -abs(t)))
                pick = make(best)
                gained = sum(1 for r in held if ok(r, router, pick) > r[router]["gemma_ok"])
                lost = sum(1 for r in held if ok(r, router, pick) < r[router]["gemma_ok"])
                print(f"  {name}: t={best} tune {acc(tune, router, pick):.3f} held {acc(held, router, pick):.3f} "
                      f"({gained} gained / {lost} lost held out against gemma alone)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-tune", type=int, default=100)
    ap.add_argument("--n-eval", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jsonl", default=str(ROOT / "bench" / "tools_composition_probe.jsonl"))
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--shard", type=int, default=0)
    ap.add_argument("--rules", type=Path, help="fit and replay the rules on a probe's records")
    args = ap.parse_args(argv)
    if args.rules:
        rules(args.rules)
    else:
        probe(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
