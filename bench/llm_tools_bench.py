"""Answer-model and tool knobs, speedups against the exact setting
measured in the same run (rounds interleaved over configurations, median round).

- Reader: the trained extractive readers (examples/models/reader_l6.npz
  = pro, reader_l3.npz = fast) on SQuAD evaluation questions with their gold
  paragraph plus two other paragraphs of the article; exact = pro in float32.
  Quality: exact match (SQuAD normalisation) on these questions.
- Causal LM: the decoding loop of a tiny random GPT-2 (time only: its text is
  noise), max_new_tokens 32 (exact) vs fewer, and the same model behind the
  OpenAI-compatible server (HTTP + JSON cost per call).
- Triage on BFCL `multiple`: keyword vs MiniLM embedding router, time per query
  and top-1 = the expected function among the item's candidates.
Torch runs on one thread: the machines are shared, and a second thread makes small
ops wait on a loaded machine."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N_QUESTIONS, ROUNDS, N_TRIAGE = 30, 3, 50
MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"


def timed_rounds(configs: dict, run, rounds: int = ROUNDS) -> dict[str, float]:
    """Median over rounds of the time `run(config)` takes; configurations interleaved."""
    times: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(rounds):
        for name, cfg in configs.items():
            start = time.perf_counter()
            run(cfg)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def reader_bench() -> None:
    from autotuner.metrics import exact_match
    from examples import squad
    from frontends import Knob
    from frontends.components.declare import Generate, Tune
    from frontends.components.llm import ExtractiveReader

    if not (MODELS / "reader_l6.npz").is_file():
        print("reader: skipped (examples/models/reader_l6.npz not trained yet)")
        return
    fast, pro = (ExtractiveReader.from_path(MODELS / f"reader_l{n}.npz") for n in (3, 6))

    def program(model_tune: Tune):
        answer = Generate("answer", pro, tune=[model_tune, Tune.precision("bfloat16"), Tune.param("passages", 1)])

        def ask(question, contexts):
            return answer(question, contexts)

        ask.__qualname__ = "ask"
        return Knob()(ask)

    cascade, sub = program(Tune.cascade([fast], [0.1, 0.3])), program(Tune.substitute("model", fast))
    paras = squad.paragraphs()
    qs = squad.questions_of("eval")[:N_QUESTIONS]
    by_article: dict[str, list[int]] = {}
    for q in squad.questions_of("eval"):
        by_article.setdefault(q.article, []).append(q.paragraph)
    def contexts(q):  # gold first, then two other paragraphs of its article
        others = [p for p in dict.fromkeys(by_article[q.article]) if p != q.paragraph][:2]
        return [paras[q.paragraph]] + [paras[p] for p in others]
    configs = {
        "exact (pro, float32)": {},
        "precision=1 (pro, bfloat16)": {"precision": 1},
        "model=1 (fast alone)": {"model": 1},
        "model=1+precision=1": {"model": 1, "precision": 1},
        "cascade fast->pro, t=0.1": {"model": 1},
        "cascade fast->pro, t=0.3": {"model": 2},
        "passages=1 (gold only)": {"passages": 1},
    }
    built = {n: (cascade if n.startswith("cascade") else sub).build({f"answer.{k}": {"knob_val": v}
                                                                     for k, v in c.items()})
             for n, c in configs.items()}
    answers: dict[str, list] = {}

    def run(name):
        answers[name] = [built[name](q.question, contexts(q)) for q in qs]

    times = timed_rounds({n: n for n in configs}, run)
    base = times["exact (pro, float32)"]
    print(f"\nreader on {N_QUESTIONS} SQuAD eval questions (gold + 2 paragraphs), median of {ROUNDS} rounds")
    print(f"{'configuration':30s} {'ms/question':>12s} {'speedup':>8s} {'EM':>6s} {'pro answers':>11s}")
    for name in configs:
        em = sum(exact_match(a.text, q.answers) for a, q in zip(answers[name], qs)) / len(qs)
        by_pro = sum(a.model == pro.name for a in answers[name]) / len(qs)
        print(f"{name:30s} {1000 * times[name] / len(qs):12.1f} {base / times[name]:8.2f} {100 * em:6.1f} "
              f"{100 * by_pro:10.0f}%")


def causal_bench() -> None:
    from frontends.components.llm import CausalLM, LocalServer, OpenAIAnswerModel
    from tests.tiny_models import build_tiny_causal_lm

    ctx = ["Super Bowl 50 was an American football game to determine the champion of the NFL."]
    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_causal_lm(Path(tmp) / "tiny", seed=0)
        local = CausalLM.from_path(path)
        reps = 5
        times = timed_rounds({n: n for n in (32, 8, 2)},
                             lambda n: [local.answer("Who won?", ctx, n) for _ in range(reps)])
        print(f"\ncausal LM decoding loop (tiny random GPT-2, time only), median of {ROUNDS} rounds")
        for n, t in times.items():
            print(f"max_new_tokens={n:<3d} {1000 * t / reps:8.1f} ms/answer   speedup {times[32] / t:5.2f}")
        with LocalServer({"tiny": f"causal:{path}"}, env={"OMP_NUM_THREADS": "1"}) as server:
            remote = OpenAIAnswerModel(server.url, "tiny", timeout=30)
            both = timed_rounds({"local": local, "http": remote},
                                lambda m: [m.answer("Who won?", ctx, 8) for _ in range(reps)])
        print(f"same model via serve.py + openai client (8 tokens): {1000 * both['http'] / reps:.1f} ms vs "
              f"{1000 * both['local'] / reps:.1f} ms local (x{both['http'] / both['local']:.2f})")


def triage_bench() -> None:
    from frontends.components.tools import EmbeddingTriage, KeywordTriage, load_bfcl

    items = load_bfcl("multiple")[:N_TRIAGE]
    emb = EmbeddingTriage()
    emb.rank("warm up", list(items[0].registry()))
    print(f"\ntriage on the first {N_TRIAGE} BFCL 'multiple' items (2-4 candidate functions each)")
    times = {}
    for router in (emb, KeywordTriage()):
        start, hits = time.perf_counter(), 0
        for it in items:
            hits += router.rank(it.question, list(it.registry()))[0][0] == next(iter(it.ground_truth[0]))
        times[router.name] = time.perf_counter() - start
        print(f"{router.name:10s} {1000 * times[router.name] / len(items):8.2f} ms/query   top-1 {hits}/{len(items)}")
    print(f"keyword speedup over embedding: {times['embedding'] / times['keyword']:.0f}x")


def main() -> None:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        print("== answer models and tools (bench/llm_tools_bench.py) ==")
        reader_bench()
        causal_bench()
        triage_bench()
    finally:
        torch.set_num_threads(before)


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
