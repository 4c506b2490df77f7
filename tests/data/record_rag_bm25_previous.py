"""Records the previous RAG-BM25 implementation's answers (Knobbed components beside
the IR, commit 73d2e32) on 20 fixed evaluation questions at five configurations,
for tests/test_systems_rag.py. Run it in an export of that commit:

    git archive 73d2e32 | tar -x -C /tmp/old && cd /tmp/old
    APPROX_DATA_DIR=/path/to/shared/data PYTHONPATH=. python /path/to/record_rag_bm25_previous.py OUT.json

Configurations are in that implementation's knob names (the test maps them)."""

import json
import sys

from examples import squad
from examples.systems import rag_bm25

QUESTIONS = [q.question for q in squad.questions_of("eval")[:20]]
CONFIGS = {
    "exact": {},
    "cascade_bf16_sentences": {"answer.model": {"knob_val": 2}, "answer.precision": {"knob_val": 1},
                               "answer.sentences": {"knob_val": 1}},
    "top1_preprocess_cuts": {"bm25": {"knob_val": 2}, "preprocess": {"knob_val": 1},
                             "answer.passages": {"knob_val": 1}, "answer.context_chars": {"knob_val": 2}},
    "ladder_tokens": {"read": {"thresholds": [500, 1500], "decisions": [0, 1, 3]},
                      "answer.max_new_tokens": {"knob_val": 2}},
    "kernel_knobs_fast": {"bm25_terms": {"knob_val": 2}, "bm25_docs": {"knob_val": 2},
                          "answer.model": {"knob_val": 1}},
}

if __name__ == "__main__":
    system = rag_bm25.system()
    out = {"commit": "73d2e32", "questions": QUESTIONS, "configs": CONFIGS, "answers": {}}
    for name, cfg in CONFIGS.items():
        run = system.build(cfg)
        out["answers"][name] = [run(q) for q in QUESTIONS]
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)
