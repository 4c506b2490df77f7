"""Records the previous RAG implementation's answers (knobs held by Python objects
beside the IR, commit 73d2e32) on 20 fixed evaluation questions at five
configurations, for tests/test_systems_rag.py: RAG-BM25 over every SQuAD dev
paragraph, RAG-dense over the 30 paragraphs that test uses (every 69th). Run it in
an export of that commit:

    git archive 73d2e32 | tar -x -C /tmp/old && cd /tmp/old
    APPROX_DATA_DIR=/path/to/shared/data PYTHONPATH=. python /path/to/record_rag_previous.py {bm25,dense} OUT.json

Configurations are in that implementation's knob names (the test maps them)."""

import json
import sys

from examples import squad

STEP = 69  # RAG-dense: every STEP-th paragraph
CASCADE_BF16_SENTENCES = {"answer.model": {"knob_val": 2}, "answer.precision": {"knob_val": 1},
                          "answer.sentences": {"knob_val": 1}}
CONFIGS = {
    "bm25": {
        "exact": {},
        "cascade_bf16_sentences": CASCADE_BF16_SENTENCES,
        "top1_preprocess_cuts": {"bm25": {"knob_val": 2}, "preprocess": {"knob_val": 1},
                                 "answer.passages": {"knob_val": 1}, "answer.context_chars": {"knob_val": 2}},
        "ladder_tokens": {"read": {"thresholds": [500, 1500], "decisions": [0, 1, 3]},
                          "answer.max_new_tokens": {"knob_val": 2}},
        "kernel_knobs_fast": {"bm25_terms": {"knob_val": 2}, "bm25_docs": {"knob_val": 2},
                              "answer.model": {"knob_val": 1}},
    },
    "dense": {
        "exact": {},
        "cascade_bf16_sentences": CASCADE_BF16_SENTENCES,
        "encoder_top1_cuts": {"query.layers": {"knob_val": 1}, "query.precision": {"knob_val": 1},
                              "dense": {"knob_val": 2}, "answer.passages": {"knob_val": 1},
                              "answer.context_chars": {"knob_val": 2}},
        "ladder_tokens": {"read": {"thresholds": [40, 80], "decisions": [0, 1, 3]},
                          "answer.max_new_tokens": {"knob_val": 2}},
        "kernel_knobs_fast": {"dense_dot": {"knob_val": 2}, "dense_docs": {"knob_val": 2},
                              "dense_dot#2": {"knob_val": 1}, "answer.model": {"knob_val": 1}},
    },
}


def system_and_questions(name: str):
    """The previous system `name` and its 20 questions (RAG-dense: on one torch thread, as recorded)."""
    questions = squad.questions_of("eval")
    if name == "bm25":
        from examples.systems.rag import bm25 as rag_bm25

        return rag_bm25.system(), [q.question for q in questions[:20]]
    import torch

    from examples.systems.rag import dense as rag_dense

    torch.set_num_threads(1)
    return (rag_dense.system(tuple(squad.paragraphs()[::STEP])),
            [q.question for q in questions if q.paragraph % STEP == 0][:20])


if __name__ == "__main__":
    name, path = sys.argv[1:3]
    system, questions = system_and_questions(name)
    out = {"commit": "73d2e32", "questions": questions, "configs": CONFIGS[name], "answers": {}}
    for label, cfg in CONFIGS[name].items():
        run = system.build(cfg)
        out["answers"][label] = [run(q) for q in questions]
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
