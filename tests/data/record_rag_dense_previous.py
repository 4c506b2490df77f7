"""Records the previous RAG-dense implementation's answers (knobs held by Python
objects beside the IR, commit 73d2e32) on 20 fixed evaluation questions at five
configurations, over the 30 paragraphs tests/test_systems_rag.py uses (every 69th),
for that test. Run it in an export of that commit:

    git archive 73d2e32 | tar -x -C /tmp/old && cd /tmp/old
    APPROX_DATA_DIR=/path/to/shared/data PYTHONPATH=. python /path/to/record_rag_dense_previous.py OUT.json

Configurations are in that implementation's knob names (the test maps them)."""

import json
import sys

import torch

from examples import squad
from examples.systems import rag_dense

STEP = 69
QUESTIONS = [q.question for q in squad.questions_of("eval") if q.paragraph % STEP == 0][:20]
CONFIGS = {
    "exact": {},
    "cascade_bf16_sentences": {"answer.model": {"knob_val": 2}, "answer.precision": {"knob_val": 1},
                               "answer.sentences": {"knob_val": 1}},
    "encoder_top1_cuts": {"query.layers": {"knob_val": 1}, "query.precision": {"knob_val": 1},
                          "dense": {"knob_val": 2}, "answer.passages": {"knob_val": 1},
                          "answer.context_chars": {"knob_val": 2}},
    "ladder_tokens": {"read": {"thresholds": [40, 80], "decisions": [0, 1, 3]},
                      "answer.max_new_tokens": {"knob_val": 2}},
    "kernel_knobs_fast": {"dense_dot": {"knob_val": 2}, "dense_docs": {"knob_val": 2},
                          "dense_dot#2": {"knob_val": 1}, "answer.model": {"knob_val": 1}},
}

if __name__ == "__main__":
    torch.set_num_threads(1)
    system = rag_dense.system(tuple(squad.paragraphs()[::STEP]))
    out = {"commit": "73d2e32", "questions": QUESTIONS, "configs": CONFIGS, "answers": {}}
    for name, cfg in CONFIGS.items():
        run = system.build(cfg)
        out["answers"][name] = [run(q) for q in QUESTIONS]
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)
