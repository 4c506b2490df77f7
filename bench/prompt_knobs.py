"""The answer op's prompt budgets and int8 weights on this CPU: per-question thread
CPU time and gold answer containment of RAG-BM25-LLM's answer step (SmolLM2 on the
exact BM25 top-3 passages, 16 new tokens, one thread) on held-out SQuAD questions,
each setting run right after the exact one on the same question (paired; the order
rotates per question). Settings: `context_tokens` and `compress_tokens` values
alone and as the prompt ladder's steps (`rag_program.PROMPT_TOKENS` /
`COMPRESS_TOKENS`), precision bfloat16 and int8 (weight-only, `llm.int8`), and, for
comparison only, torch's dynamic int8 quantisation (not a knob value).

    .venv/bin/python bench/prompt_knobs.py [--n 30]

Prints one JSON line per setting; writes nothing under bench/results.*."""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def settings():
    from examples.systems.rag.program import COMPRESS_TOKENS, PROMPT_TOKENS

    out = [{"context_tokens": v} for v in PROMPT_TOKENS] + [{"compress_tokens": v} for v in COMPRESS_TOKENS]
    out += [{"context_tokens": t, "compress_tokens": c} for t, c in zip(PROMPT_TOKENS, COMPRESS_TOKENS)]
    return out + [{"precision": "bfloat16"}, {"precision": "int8"}, {"precision": "dynamic int8"}]


def dynamic_int8(llm):
    """SmolLM2 with torch.ao's dynamic int8 linear maps (activations quantised per call)."""
    import torch

    other = copy.copy(llm)
    other.model = torch.ao.quantization.quantize_dynamic(copy.deepcopy(llm.model), {torch.nn.Linear},
                                                         dtype=torch.qint8)
    return other


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=30, help="held-out questions")
    args = ap.parse_args(argv)

    from autotuner.metrics import containment
    from examples.systems.common import held_out_questions, smollm
    from examples.systems.rag import bm25 as rag_bm25
    from frontends.components.settings import GenerateSettings

    system, llm = rag_bm25.llm_system(), smollm()
    questions, golds = held_out_questions(8, n_eval=args.n)
    cases = [(q, [system.corpus[i] for i in system.search(q).ids]) for q in questions]
    models = {"int8": llm.with_precision("int8"), "bfloat16": llm.with_precision("bfloat16"),
              "dynamic int8": dynamic_int8(llm)}
    rows = settings()

    def run(setting, q, passages):
        precision = setting.get("precision")
        model = llm if precision is None else models[precision]
        cut = GenerateSettings(context_tokens=setting.get("context_tokens"),
                               compress_tokens=setting.get("compress_tokens")).cut(q, passages, llm.token_spans)
        t0 = time.thread_time()
        text = model.answer(q, cut, 16).text
        return time.thread_time() - t0, text, sum(len(llm.token_spans(c)) for c in cut)

    for m in models.values():  # warm
        m.answer(*cases[0], 16)
    spent = {i: [0.0, 0.0, 0, 0, 0] for i in range(len(rows))}  # exact s, setting s, contained, exact contained, tokens
    exact_tokens = 0
    for n, ((q, passages), gold) in enumerate(zip(cases, golds)):
        order = list(range(len(rows)))
        order = order[n % len(order):] + order[:n % len(order)]
        t_exact, exact, tokens = run({}, q, passages)
        exact_tokens += tokens
        for i in order:
            dt, text, cut_tokens = run(rows[i], q, passages)
            s = spent[i]
            s[0] += t_exact
            s[1] += dt
            s[2] += containment(text, gold)
            s[3] += containment(exact, gold)
            s[4] += cut_tokens
    for i, setting in enumerate(rows):
        e, t, c, ce, tok = spent[i]
        print(json.dumps({"setting": setting, "questions": len(cases), "exact_s_per_q": round(e / len(cases), 3),
                          "s_per_q": round(t / len(cases), 3), "speedup": round(e / t, 2),
                          "containment": round(c / len(cases), 3), "exact_containment": round(ce / len(cases), 3),
                          "context_tokens_per_q": round(tok / len(cases)),
                          "exact_context_tokens_per_q": round(exact_tokens / len(cases))}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
