"""The per-token exit of the fine-tuned SmolLM2 (`token_exit`) on this CPU: each
threshold against the exact program, paired per question.

For every SQuAD evaluation question (the gold paragraph and the two after it, as
bench/gpu_smollm_bench.py makes them; 16 new tokens, ending at the answer's end) the
runs go one after the other, their order rotated per question: the exact program
(transformers' `generate`), the per-token loop never exiting (its own overhead), and
the loop at each threshold (exit at depth 20 or 25 when the exit's top-token
probability is >= p %). A prefill alone (the prompt through every layer) is timed too,
so the decode's share of the exact time shows. Times are CPU seconds of the calling
thread, torch on one thread (the machine is shared). Printed: seconds per question,
speedup sum(exact) / sum(run), gold containment, answers equal to the exact one, and
where the decoded tokens (all but the first, which the prefill gives) left the stack.

    python bench/token_exit_bench.py [--questions 30] [--thresholds 99 95 90 80]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotuner.metrics import containment  # noqa: E402
from examples import squad  # noqa: E402
from examples.systems.common import SMOLLM_ADAPTER, one_thread  # noqa: E402

TOKENS = 16
CLOCK = time.thread_time


def questions(n: int):
    """(question, contexts, gold answers) of the first `n` evaluation questions."""
    paragraphs = squad.paragraphs()
    return [(q.question, [paragraphs[(q.paragraph + k) % len(paragraphs)] for k in range(3)], q.answers)
            for q in squad.questions_of("eval")[:n]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=30)
    p.add_argument("--thresholds", type=int, nargs="+", default=[99, 95, 90, 80])
    args = p.parse_args()
    one_thread()
    import torch

    from frontends.components.llm.base import first_line
    from frontends.components.llm.smollm import SmolLM2, chat_turn
    from frontends.components.llm.token_exit import exit_logits, greedy

    lm = SmolLM2.load(SMOLLM_ADAPTER)
    tok, stop = lm.tokenizer, lm.stop_rule(True)

    def exact(question, contexts):
        tokens, _, _ = lm.generate(question, contexts, TOKENS)
        return tokens, None

    def looped(percent):
        def run(question, contexts):
            ids = tok(chat_turn(tok, lm.prompt(question, contexts)), return_tensors="pt")["input_ids"]
            out = greedy(lm.model, ids, TOKENS, None if percent is None else percent / 100, lm.exits, stop)
            return out.tokens, out.depths
        return run

    def prefill(question, contexts):
        ids = tok(chat_turn(tok, lm.prompt(question, contexts)), return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            lm.model(input_ids=ids, use_cache=True, logits_to_keep=1)
        return [], None

    runs = {"exact": exact, "loop, no exit": looped(None), **{f"exit >= {t} %": looped(t) for t in args.thresholds},
            "prefill alone": prefill}
    items = questions(args.questions)
    for run in runs.values():  # warm-up
        run(items[0][0], items[0][1][:1])
    rows = {name: {"seconds": [], "containment": [], "tokens": [], "depths": Counter()} for name in runs}
    names = list(runs)
    for i, (question, contexts, answers) in enumerate(items):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start = CLOCK()
            tokens, depths = runs[name](question, contexts)
            rows[name]["seconds"].append(CLOCK() - start)
            if name == "prefill alone":
                continue
            text = first_line(tok.decode(tokens, skip_special_tokens=True))
            rows[name]["containment"].append(containment(text, answers))
            rows[name]["tokens"].append(tokens)
            rows[name]["depths"].update((depths or [])[1:])
        print(f"question {i + 1}/{len(items)}", file=sys.stderr, flush=True)
    with torch.inference_mode():  # what one exit check costs: exit map, norm, head and softmax
        hidden = torch.randn(1, 1, lm.model.config.hidden_size)
        start = CLOCK()
        for _ in range(50):
            torch.softmax(exit_logits(lm.model, lm.exits[0], hidden).float(), -1).max()
        check = (CLOCK() - start) / 50
    report(rows, lm.depth, lm.exits, len(items), check)


def report(rows, depth: int, exits, n: int, check: float) -> None:
    exact = sum(rows["exact"]["seconds"])
    prefill = sum(rows["prefill alone"]["seconds"])
    print(f"{n} SQuAD evaluation questions (gold paragraph + 2 after), {TOKENS} new tokens at most, "
          f"CPU seconds of one thread (torch 1 thread)")
    print(f"prefill alone {prefill / n:.2f} s/question: decode is {1 - prefill / exact:.0%} of the exact time")
    decoded = sum(len(t) - 1 for t in rows["exact"]["tokens"])
    per_token = (exact - prefill) / max(decoded, 1)
    print(f"a decoded token {per_token * 1e3:.1f} ms ({decoded / n:.1f} a question); one exit check (exit map, "
          f"norm, head, softmax) {check * 1e3:.1f} ms")
    levels = [depth, *sorted(exits, reverse=True)]
    head = " ".join(f"{'at ' + str(d):>6}" for d in levels)
    print(f"{'run':16} {'s/question':>10} {'speedup':>8} {'containment':>11} {'same answer':>11} {head}")
    for name, row in rows.items():
        if name == "prefill alone":
            continue
        same = sum(a == b for a, b in zip(rows["exact"]["tokens"], row["tokens"])) / n
        decoded = sum(row["depths"].values())
        where = " ".join(f"{row['depths'][d] / decoded:6.0%}" if decoded else f"{'':>6}" for d in levels)
        print(f"{name:16} {sum(row['seconds']) / n:10.2f} {exact / sum(row['seconds']):7.3f}x "
              f"{sum(row['containment']) / n:11.3f} {same:11.0%} {where}")


if __name__ == "__main__":
    main()
