"""Fine-tune SmolLM2-135M-Instruct (LoRA on every linear map, early exits) as the
agent's triage: name the tool a question needs, from the question and the one-line
guide per tool the agent prompts with (`agent_llm.TRIAGE`, `agent_llm.GUIDE`).

Why: with the SQuAD answer adapters, the triage named the right tool for about a
third of the questions (mostly pagerank and kmeans), so the agent's exact program
answered wrongly for want of its tool, whatever its knobs.

Data: the agent's "train" part only (`agent.data.items("train", n)`: graph / point /
particle instances 2000.., SQuAD's training articles, SQuAD training questions as the
no-tool ones); the tuning and held-out parts stay unseen. Target: the tool's name (or
"none") + EOS, loss on the target only; the loss and early exits are those of
examples/train_llm.py (CE at the full depth + `exit_weight` x CE at each exit), so the
agent's `triage.layers` knob has trained exits. The adapters start from the SQuAD
adapters (`--init`) and are saved, float16, to examples/models/smollm2_triage_lora.npz.

Evaluation: the first `--eval-items` tuning-part questions, greedy, float32, at every
depth: the share whose reply names the right tool (`agent.llm.tool_named`), per kind ->
examples/models/llm_triage_metrics.json.

    python -m examples.train_llm_triage [--items 600] [--device cuda]
    python -m examples.train_llm_triage --adapter examples/models/smollm2_triage_lora.npz   # evaluate only
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from examples.systems.agent.data import KINDS, items
from examples.systems.agent.llm import GUIDE, TRIAGE, TRIAGE_TOKENS, tool_named
from examples.train_llm_tools import command_line, device_name, generate_batched, trained_or_loaded
from frontends.components.llm.smollm import chat_prompt, truncated

OUT = Path(__file__).resolve().parent / "models"
INIT = OUT / "smollm2_lora.npz"
ADAPTER = "smollm2_triage_lora.npz"


def prompt_of(tok, question: str) -> str:
    """The triage's prompt, as the agent's `triage` op builds it (the answer prompt, the guide as passages)."""
    return chat_prompt(tok, TRIAGE + question, GUIDE)


def training_examples(tok, n: int, seed: int) -> tuple[list[tuple[list[int], int]], dict]:
    """(token ids of prompt + target, prompt length) of the first `n` train-part items."""
    out = []
    chosen = items("train", n, seed)
    for item in chosen:
        prompt = tok(prompt_of(tok, item.question), add_special_tokens=False)["input_ids"]
        target = tok(item.tool + tok.eos_token, add_special_tokens=False)["input_ids"]
        out.append((prompt + target, len(prompt)))
    kinds = {k: sum(i.tool == k for i in chosen) for k in KINDS}
    return out, {"examples": len(out), "kinds": kinds, "max_prompt_tokens": max(p for _, p in out)}


def evaluate(model, tok, exits, args) -> dict:
    """Right-tool share per kind and depth on the first `args.eval_items` tuning-part items."""
    chosen = items("tune", args.eval_items, args.seed)
    prompts = [prompt_of(tok, i.question) for i in chosen]
    depth = len(model.model.layers)
    results = {"items": len(chosen), "part": "tune", "max_new_tokens": TRIAGE_TOKENS, "precision": "float32"}
    for k in [depth, *sorted(exits, reverse=True)]:
        lm = model if k == depth else truncated(model, k)
        texts = generate_batched(lm, tok, prompts, TRIAGE_TOKENS, args.eval_batch)
        right = np.array([tool_named(t) == i.tool for t, i in zip(texts, chosen)])
        row = {"all": round(100 * float(right.mean()), 1)}
        for kind in KINDS:
            mine = np.array([i.tool == kind for i in chosen])
            row[kind] = round(100 * float(right[mine].mean()), 1) if mine.any() else None
        row["examples"] = [{"question": i.question, "reply": t} for i, t in zip(chosen, texts)][:6]
        results[f"layers_{k}"] = row
        print(f"layers {k}: " + json.dumps({c: row[c] for c in ("all", *KINDS)}), flush=True)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=600, help="train-part items (the six kinds in turn)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--init", type=Path, default=INIT, help="adapters to start from (rank, alpha and exits too)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--exit-weight", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-items", type=int, default=240, help="tuning-part items the triage is measured on")
    p.add_argument("--eval-batch", type=int, default=32)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--adapter", type=Path, default=None, help="evaluate these adapters, train nothing")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    metrics = args.out / "llm_triage_metrics.json"
    command = command_line("examples.train_llm_triage", args,
                           ("items", "epochs", "batch", "lr", "exit_weight", "seed"))
    model, tok, exits, info = trained_or_loaded(args, args.out / ADAPTER, metrics, command,
                                                lambda tok: training_examples(tok, args.items, args.seed))
    device = device_name(args.device)
    results = evaluate(model.float(), tok, exits, args)
    metrics.write_text(json.dumps({"training": info, "evaluation": {**results, "device": device}}, indent=2) + "\n")
    print(f"wrote {metrics}")


if __name__ == "__main__":
    main()
