"""Records the previous tools agent's calls (Knobbed components beside the IR,
commit 73d2e32) on 20 fixed BFCL items at five configurations, for
tests/test_systems_tools.py. Run it in an export of that commit:

    git archive 73d2e32 | tar -x -C /tmp/old && cd /tmp/old
    APPROX_DATA_DIR=/path/to/shared/data PYTHONPATH=. python /path/to/record_tools_previous.py OUT.json

Configurations are in that implementation's knob names (the test maps them)."""

import json
import sys

from examples.systems.tools.agent import ToolsAgentProgram
from examples.systems.tools.data import CATEGORIES, pool_items, query_of

ITEMS = [i.id for c in CATEGORIES for i in pool_items(c)[:7]][:20]
CONFIGS = {
    "exact": {},
    "keyword_cascade": {"tools.triage": {"knob_val": 1}, "answer.model": {"knob_val": 3}},
    "bf16_strings_only": {"answer.precision": {"knob_val": 1}, "filler.reader": {"knob_val": 1}},
    "no_reader": {"filler.reader": {"knob_val": 2}},
    "ladder_fast": {"tools_agent": {"thresholds": [10, 30], "decisions": [1, 0, 1]}, "answer.model": {"knob_val": 1}},
}

if __name__ == "__main__":
    program = ToolsAgentProgram()
    items = {i.id: i for c in CATEGORIES for i in pool_items(c)}
    out = {"commit": "73d2e32", "items": ITEMS, "configs": CONFIGS, "calls": {}}
    for name, cfg in CONFIGS.items():
        run = program.build(cfg)
        out["calls"][name] = [run(query_of(items[i])) for i in ITEMS]
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)
