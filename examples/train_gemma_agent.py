"""Fine-tune Gemma 3 270M (LoRA on every linear map) as the LLM + tools agent's three
models at once: the triage (which tool a question needs), the summary (the tool output's
sentence that answers) and QA (the answer, from the summary or the tool's output), and
measure the triage.

The training itself is examples/train_gemma.py's `train` step; this script makes its data
and scores its run:

    python -m examples.train_gemma_agent prepare          # here: token ids -> .cache/approx/gemma3/agent_data.npz
    python -m examples.train_gemma train --data .cache/approx/gemma3/agent_data.npz --gguf G --out DIR \\
        --epochs 2 --batch 16 --eval-tokens 6 --eval-batch 1   # the GPU
    python -m examples.train_gemma_agent score --run DIR  # here: -> examples/models/gemma3_agent_metrics.json

Data: the agent's "train" part only (`agent.data.items("train", n)`: graph / point /
particle instances 2000.., SQuAD's training articles; the tuning and held-out parts stay
unseen), each prompt as the agent's ops build it (`agent.llm`: the triage's question and
guide through `build_prompt`, the summary's `SUMMARY` template, QA's `build_prompt`) in
Gemma 3's user turn. Per item: the triage (target: the tool's name, or "none"); for a
question with a tool, the summary of the exact tool's output (target: its first sentence
holding a gold answer, else its first sentence), QA from that sentence and QA from the
whole output (target: the first gold answer). Targets end with `<end_of_turn>`; loss on
the target only.

(The agent's exact program has no summary: with it the agent answered 19 of 36 tuning
questions, without it 26; the summary examples stay in the data the adapters were trained on.)

Evaluation: the first `--eval-items` tuning-part questions' triage, greedy: the share whose
reply names the right tool (`agent.llm.tool_named`), per kind, beside SmolLM2's triage
(examples/models/llm_triage_metrics.json).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from examples.train_gemma import END, OUT, commit_run, save_data

ADAPTER, METRICS = "gemma3_agent_lora.npz", "gemma3_agent_metrics.json"
DATA = Path(__file__).resolve().parents[1] / ".cache" / "approx" / "gemma3" / "agent_data.npz"


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def answering_sentence(output: str, answers) -> str:
    """The summary's target: the output's first sentence that holds a gold answer, else its first."""
    from autotuner.metrics import containment

    parts = sentences(output) or [output]
    return next((s for s in parts if containment(s, list(answers))), parts[0])


def triage_prompt(question: str) -> str:
    from examples.systems.agent.llm import GUIDE, TRIAGE
    from frontends.components.llm.base import build_prompt

    return build_prompt(TRIAGE + question, GUIDE)


def prepare(args) -> None:
    from examples.systems.agent.data import KINDS, exact, items
    from examples.systems.agent.llm import SUMMARY
    from frontends.components.llm.base import build_prompt
    from frontends.components.llm.gemma import gemma_turn, load_base

    _, tok = load_base()
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    prompts, targets, roles = [], [], {"triage": 0, "summary": 0, "qa": 0}

    def add(role: str, content: str, target: str) -> None:
        prompts.append(enc(gemma_turn(content)))
        targets.append(enc(target.strip() + END))
        roles[role] += 1

    chosen = items("train", args.items, args.seed)
    for item in chosen:
        add("triage", triage_prompt(item.question), item.tool)
        if item.tool == "none":
            continue
        output = exact(item.tool, item.question)
        sentence = answering_sentence(output, item.answers)
        add("summary", SUMMARY.format(question=item.question, output=output), sentence)
        add("qa", build_prompt(item.question, [sentence]), item.answers[0])
        add("qa", build_prompt(item.question, [output]), item.answers[0])
    evals = [enc(gemma_turn(triage_prompt(i.question))) for i in items("tune", args.eval_items, args.seed)]
    save_data(args.data, tok, prompts, targets, evals)
    kinds = {k: sum(i.tool == k for i in chosen) for k in KINDS}
    print(json.dumps({"examples": len(prompts), "roles": roles, "kinds": kinds,
                      "max_prompt_tokens": max(map(len, prompts))}), f"-> {args.data}", flush=True)


def score(args) -> None:
    """The triage replies of a `train` run: the right-tool share per kind."""
    from examples.systems.agent.data import KINDS, items
    from examples.systems.agent.llm import tool_named
    from frontends.components.llm.base import first_line
    from frontends.components.llm.gemma import load_base

    run = json.loads((args.run / "train_run.json").read_text())
    _, tok = load_base()
    chosen = items("tune", args.eval_items, args.seed)
    texts = [first_line(tok.decode(t, skip_special_tokens=True)) for t in run["new_tokens"]]
    if len(texts) != len(chosen):
        raise SystemExit(f"{args.run}: {len(texts)} replies for {len(chosen)} questions (other --eval-items?)")
    right = np.array([tool_named(t) == i.tool for t, i in zip(texts, chosen)])
    row = {"all": round(100 * float(right.mean()), 1)}
    for kind in KINDS:
        mine = np.array([i.tool == kind for i in chosen])
        row[kind] = round(100 * float(right[mine].mean()), 1) if mine.any() else None
    evaluation = {"items": len(chosen), "part": "tune", "role": "triage", "device": run["training"]["device"],
                  **row, "examples": [{"question": i.question, "reply": t} for i, t in zip(chosen, texts)][:6]}
    smol = OUT / "llm_triage_metrics.json"
    if smol.is_file():
        evaluation["smollm2"] = {k: v for k, v in json.loads(smol.read_text())["evaluation"]["layers_30"].items()
                                 if k != "examples"}
    commit_run(args.run, run, ADAPTER, METRICS, evaluation, args.data)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    for name in ("prepare", "score"):
        s = sub.add_parser(name)
        s.add_argument("--data", type=Path, default=DATA)
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--eval-items", type=int, default=240, help="tuning-part questions the triage is measured on")
    sub.choices["prepare"].add_argument("--items", type=int, default=1200,
                                        help="train-part items (the six kinds in turn)")
    sub.choices["score"].add_argument("--run", type=Path, required=True,
                                      help="the folder examples.train_gemma train wrote")
    args = p.parse_args()
    {"prepare": prepare, "score": score}[args.step](args)


if __name__ == "__main__":
    main()
