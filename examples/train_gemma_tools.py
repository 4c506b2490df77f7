"""Fine-tune Gemma 3 270M (LoRA on every linear map) to write BFCL calls from the request
and the candidate function schemas: the LLM + tools agent's writer, and measure it.

The training itself is examples/train_gemma.py's `train` step (the GPU machine needs only
torch, transformers and the GGUF file); this script makes its data and scores its run:

    python -m examples.train_gemma_tools prepare           # here: token ids -> .cache/approx/gemma3/tools_data.npz
    python -m examples.train_gemma train --data .cache/approx/gemma3/tools_data.npz --gguf G --out DIR \\
        --epochs 8 --batch 8 --eval-tokens 160 --eval-batch 32   # the GPU
    python -m examples.train_gemma_tools score --run DIR   # here: -> examples/models/gemma3_tools_metrics.json

Data: examples/train_llm_tools.py's (the development part of BFCL only, `tools.data.dev_items`:
each item with all its candidate functions in the prompt, the multiple items once more with
their ground-truth function alone, as the agent's router hands it over), the prompt
`tools.llm.tools_prompt` in Gemma 3's user turn, the target `tools.llm.target_calls` in BFCL's
Python syntax + `<end_of_turn>`, loss on the target only.

Evaluation: every pool item of the three categories in BFCL's setting (all candidates in the
prompt), greedy, 160 new tokens at most, the first line: BFCL's AST accuracy per category and
the share of outputs that parse as calls, beside SmolLM2's (examples/models/llm_tools_metrics.json).
`score --cpu N` writes the first N again through `Gemma3` as the agent loads it (float32).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from examples.train_gemma import ADAPTER as TRAINED
from examples.train_gemma import END, OUT, commit_run, save_data

ADAPTER, METRICS = "gemma3_tools_lora.npz", "gemma3_tools_metrics.json"
DATA = Path(__file__).resolve().parents[1] / ".cache" / "approx" / "gemma3" / "tools_data.npz"


def pool() -> list:
    """The evaluation items: every pool item of each category."""
    from examples.systems.tools.data import CATEGORIES, pool_items

    return [i for c in CATEGORIES for i in pool_items(c)]


def prepare(args) -> None:
    from examples.systems.tools.llm import tools_prompt
    from examples.train_llm_tools import development_settings
    from frontends.components.llm.gemma import gemma_turn, load_base

    _, tok = load_base()
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    settings, skipped = development_settings()
    prompts = [enc(gemma_turn(tools_prompt(question, functions))) for question, functions, _ in settings]
    targets = [enc(target + END) for _, _, target in settings]
    evals = [enc(gemma_turn(tools_prompt(i.question, list(i.functions)))) for i in pool()]
    save_data(args.data, tok, prompts, targets, evals)
    print(f"{len(prompts)} training examples ({skipped} items skipped; prompts up to {max(map(len, prompts))} "
          f"tokens, targets up to {max(map(len, targets))}), {len(evals)} evaluation prompts -> {args.data}",
          flush=True)


def accuracy(items, texts) -> dict:
    """BFCL's AST accuracy (%) of `texts` per category and over all, and the share that parse."""
    from examples.systems.tools.data import CATEGORIES
    from examples.systems.tools.llm import calls_of
    from frontends.components.llm.base import Answer

    calls = [calls_of(Answer(t, None, 0, 0.0, "")) for t in texts]
    ok = np.array([bool(i.check(c)) for i, c in zip(items, calls)])
    parsed = np.array([bool(c) for c in calls])
    row = {"all": round(100 * float(ok.mean()), 1)}
    for c in CATEGORIES:
        mine = np.array([i.category == c for i in items])
        if mine.any():
            row[c] = round(100 * float(ok[mine].mean()), 1)
            row[f"{c}_parsed"] = round(100 * float(parsed[mine].mean()), 1)
    return row


def score(args) -> None:
    """The pool answers of a `train` run scored by BFCL's checker; with `--cpu N`, the first
    N written again here through `Gemma3` as the agent loads it."""
    from examples.systems.tools.llm import DEFAULT_MAX_NEW_TOKENS, tools_prompt
    from frontends.components.llm.base import first_line
    from frontends.components.llm.gemma import Gemma3, load_base

    run = json.loads((args.run / "train_run.json").read_text())
    _, tok = load_base()
    items = pool()
    texts = [first_line(tok.decode(t, skip_special_tokens=True)) for t in run["new_tokens"]]
    if len(texts) != len(items):
        raise SystemExit(f"{args.run}: {len(texts)} answers for {len(items)} pool items (other data?)")
    evaluation = {"items": len(items), "setting": "all candidate functions in the prompt",
                  "max_new_tokens": DEFAULT_MAX_NEW_TOKENS, "device": run["training"]["device"],
                  **accuracy(items, texts),
                  "examples": [{"id": i.id, "output": t} for i, t in list(zip(items, texts))[:4]]}
    smol = OUT / "llm_tools_metrics.json"
    if smol.is_file():
        evaluation["smollm2"] = {k: v for k, v in json.loads(smol.read_text())["evaluation"]["layers_30"].items()
                                 if k not in ("examples", "seconds")}
    if args.cpu:
        lm = Gemma3.load(args.run / TRAINED, name="gemma3_tools", prompt=tools_prompt,
                         max_new_tokens=DEFAULT_MAX_NEW_TOKENS)
        start, cpu = time.time(), []
        for i in items[:args.cpu]:
            cpu.append(lm.answer(i.question, list(i.functions)).text)
        evaluation["cpu_float32"] = {"items": args.cpu, "same_outputs": sum(a == b for a, b in zip(cpu, texts)),
                                     "seconds_per_item": round((time.time() - start) / args.cpu, 2),
                                     **accuracy(items[:args.cpu], cpu)}
    commit_run(args.run, run, ADAPTER, METRICS, evaluation, args.data)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    for name in ("prepare", "score"):
        sub.add_parser(name).add_argument("--data", type=Path, default=DATA)
    s = sub.choices["score"]
    s.add_argument("--run", type=Path, required=True, help="the folder examples.train_gemma train wrote")
    s.add_argument("--cpu", type=int, default=0, help="also write the first N here through Gemma3 (float32)")
    args = p.parse_args()
    {"prepare": prepare, "score": score}[args.step](args)


if __name__ == "__main__":
    main()
