"""Fine-tune SmolLM2-135M-Instruct (LoRA on every linear map, early exits) to
write BFCL calls from the request and the candidate function schemas, and
measure it per category and exit depth on held-out BFCL items.

Data: the development part of BFCL only (`tools.data.dev_items`: the first 30 %
of simple_python, multiple and parallel); the pool the agent is tuned and
evaluated on stays unseen. Each item is one example in BFCL's setting (all its
candidate functions in the prompt, `tools.llm.tools_prompt`); the multiple items
once more with their ground-truth function alone (what the agent's router
hands over). Target: `tools.llm.target_calls` in BFCL's Python syntax + EOS,
loss on the target only; the loss and early exits are those of
examples/train_llm.py (CE at the full depth + `exit_weight` x CE at each exit).
The adapters start from the SQuAD adapters (`--init`, same rank and exits: their
exit maps already carry layers 25 and 20 into the head's space), and are saved,
float16, to examples/models/smollm2_tools_lora.npz.

Evaluation: every pool item of the three categories in BFCL's setting (all
candidates in the prompt), greedy, float32, at every depth: BFCL's AST accuracy
per category and the share of outputs that parse as calls ->
examples/models/llm_tools_metrics.json. Generation is batched (left padding) on
the GPU; the agent (tools/agent_llm.py) generates one request at a time.

    python -m examples.train_llm_tools [--epochs 8] [--device cuda]
    python -m examples.train_llm_tools --adapter examples/models/smollm2_tools_lora.npz   # evaluate only
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch

from approx_dialect.diagnostics import ApproxError
from examples.systems.tools.data import CATEGORIES, dev_items, pool_items
from examples.systems.tools.llm import DEFAULT_MAX_NEW_TOKENS, calls_of, target_calls, tools_prompt
from examples.train_llm import train_loop
from examples.train_reader import seed_everything
from frontends.components.llm.base import Answer, first_line
from frontends.components.llm.smollm import (
    attach_exit_maps,
    attach_lora,
    chat_prompt,
    load_adapter,
    load_base,
    save_adapter,
    stop_ids,
    trained_names,
    truncated,
)
from frontends.components.tools.bfcl import format_calls

OUT = Path(__file__).resolve().parent / "models"
INIT = OUT / "smollm2_lora.npz"


def development_settings(limit: int = 0) -> tuple[list[tuple[str, list[dict], str]], int]:
    """(request, functions in the prompt, target calls) of every development example (the
    first `limit` items of each category: each with all its candidates, the multiple ones
    once more with their ground-truth function alone), and the items left out."""
    out, skipped = [], 0
    for category in CATEGORIES:
        for item in dev_items(category)[:limit or None]:
            try:
                target = format_calls(target_calls(item))
            except ApproxError:  # a ground truth the checker rejects as written (none seen): left out, counted
                skipped += 1
                continue
            gold = {name for call in item.ground_truth for name in call}
            settings = [list(item.functions)]
            if len(item.functions) > 1 and len(gold) == 1:
                settings.append([f for f in item.functions if f["name"] in gold])
            out += [(item.question, functions, target) for functions in settings]
    return out, skipped


def development_examples(tok, limit: int = 0) -> tuple[list[tuple[list[int], int]], dict]:
    """(token ids of prompt + target, prompt length) of every development example
    (`development_settings`), and counts."""
    out, lengths = [], []
    settings, skipped = development_settings(limit)
    for question, functions, target in settings:
        prompt = tok(chat_prompt(tok, question, functions, tools_prompt), add_special_tokens=False)["input_ids"]
        ids = tok(target + tok.eos_token, add_special_tokens=False)["input_ids"]
        out.append((prompt + ids, len(prompt)))
        lengths.append(len(ids))
    return out, {"examples": len(out), "skipped_items": skipped, "max_target_tokens": max(lengths),
                 "max_prompt_tokens": max(p for _, p in out)}


def train(args, examples=None) -> tuple[torch.nn.Module, object, dict]:
    """The adapters trained on `examples(tok)` -> (examples, counts) (default: the BFCL
    development examples), starting from `args.init`'s adapters (their rank, alpha and
    exits) or fresh ones; (model, tokenizer, training info)."""
    seed_everything(args.seed)
    model, tok = load_base()
    for p in model.parameters():
        p.requires_grad_(False)
    if args.init:  # continue from the answer adapters: their rank, alpha and exits
        with np.load(args.init) as data:
            args.rank, args.alpha = int(data["__meta__"][0]), float(data["__meta__"][1])
        args.exits = list(load_adapter(model, args.init))
    else:
        attach_lora(model, args.rank, args.alpha)
        attach_exit_maps(model, args.exits)
    named = dict(model.named_parameters())
    params = [named[n] for n in trained_names(model)]
    for p in params:
        p.requires_grad_(True)
    model.to(args.device).train()
    examples, counts = (examples or (lambda tok: development_examples(tok, args.max_items)))(tok)
    print(json.dumps(counts), flush=True)
    log, start = train_loop(model, params, examples, args)
    info = {**counts, "train_seconds": round(time.time() - start, 1), "log": log}
    return model.eval(), tok, info


def trained_or_loaded(args, adapter: Path, metrics: Path, command: str, examples=None):
    """(model, tokenizer, exits, training info): the adapters of `args.adapter` (trained
    earlier: the info is `metrics`'), else `train(args, examples)` with its adapters saved
    to `adapter` and the info of the file, device and `command`. Shared by the tools and
    the triage adapters."""
    if args.adapter:
        model, tok = load_base()
        exits = load_adapter(model, args.adapter)
        model.to(args.device)
        return model, tok, exits, json.loads(metrics.read_text()).get("training", {}) if metrics.is_file() else {}
    random.seed(args.seed)
    model, tok, info = train(args, examples)
    save_adapter(model, adapter, args.rank, args.alpha, args.exits)
    info.update(file=adapter.name, bytes=adapter.stat().st_size, device=device_name(args.device),
                init=args.init.name if args.init else None, command=command)
    return model, tok, args.exits, info


def device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else "cpu"


def command_line(script: str, args, keys) -> str:
    """The command that trains with `args`' values of `keys`."""
    return f"python -m {script} " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in vars(args).items() if k in keys)


@torch.inference_mode()
def generate_batched(model, tok, prompts: list[str], max_new_tokens: int, batch: int) -> list[str]:
    """Greedy answers (first line of the decoded new tokens) of `prompts`, `batch` at a time, left-padded."""
    from transformers import GenerationConfig

    eos = stop_ids(tok)
    config = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, num_beams=1, use_cache=True,
                              eos_token_id=eos, pad_token_id=eos[0])
    tok.padding_side = "left"
    if tok.pad_token is None:  # transformers versions differ in whether a GGUF tokenizer names one
        tok.pad_token = tok.convert_ids_to_tokens(eos[0])
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out = [""] * len(prompts)
    for s in range(0, len(order), batch):
        chunk = order[s:s + batch]
        enc = tok([prompts[i] for i in chunk], return_tensors="pt", padding=True).to(model.device)
        seqs = model.generate(**enc, generation_config=config)[:, enc["input_ids"].shape[1]:]
        for i, row in zip(chunk, seqs.tolist()):
            out[i] = first_line(tok.decode(row, skip_special_tokens=True))
    return out


def evaluate(model, tok, exits, args, save=lambda results: None) -> dict:
    """AST accuracy per category and depth on every pool item (BFCL's setting)."""
    items = [i for c in CATEGORIES for i in pool_items(c)[:args.eval_items or None]]
    prompts = [chat_prompt(tok, i.question, list(i.functions), tools_prompt) for i in items]
    depth = len(model.model.layers)
    results = {"items": {c: sum(i.category == c for i in items) for c in CATEGORIES},
               "max_new_tokens": args.eval_tokens,
               "precision": "float32", "setting": "all candidate functions in the prompt"}
    for k in args.depths or [depth, *sorted(exits, reverse=True)]:
        lm = model if k == depth else truncated(model, k)
        start = time.time()
        texts = generate_batched(lm, tok, prompts, args.eval_tokens, args.eval_batch)
        calls = [calls_of(Answer(t, None, 0, 0.0, "")) for t in texts]
        ok = np.array([bool(i.check(x)) for i, x in zip(items, calls)])
        parsed = np.array([bool(x) for x in calls])
        row, examples = {"all": round(100 * float(ok.mean()), 1)}, []
        for c in CATEGORIES:
            mine = np.array([i.category == c for i in items])
            row[c] = round(100 * float(ok[mine].mean()), 1)
            row[f"{c}_parsed"] = round(100 * float(parsed[mine].mean()), 1)
            examples += [{"id": i.id, "output": t} for i, t in zip(items, texts) if i.category == c][:2]
        row.update(seconds=round(time.time() - start, 1), examples=examples)
        results[f"layers_{k}"] = row
        print(f"layers {k}: " + json.dumps({c: row[c] for c in (*CATEGORIES, "all")}), flush=True)
        save(results)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--init", type=Path, default=INIT, help="adapters to start from ('' : fresh ones)")
    p.add_argument("--rank", type=int, default=8, help="without --init")
    p.add_argument("--alpha", type=float, default=16.0, help="without --init")
    p.add_argument("--exits", type=int, nargs="*", default=[25, 20], help="without --init")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--exit-weight", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-items", type=int, default=0, help="train on the first N items of each category (0: all)")
    p.add_argument("--eval-items", type=int, default=0,
                   help="evaluate the first N pool items of each category (0: all)")
    p.add_argument("--eval-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS)
    p.add_argument("--eval-batch", type=int, default=64)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--adapter", type=Path, default=None, help="evaluate these adapters, train nothing")
    p.add_argument("--depths", type=int, nargs="*", default=None, help="depths to evaluate (default: 30 and the exits)")
    args = p.parse_args()
    args.init = args.init if args.init and str(args.init) else None
    args.out.mkdir(parents=True, exist_ok=True)
    metrics = args.out / "llm_tools_metrics.json"
    keys = [k for k in vars(args) if k not in ("out", "device", "adapter", "depths", "init", "rank", "alpha",
                                                "exits")]
    model, tok, exits, info = trained_or_loaded(args, args.out / "smollm2_tools_lora.npz", metrics,
                                                command_line("examples.train_llm_tools", args, keys))
    device = device_name(args.device)

    def save(results):
        metrics.write_text(json.dumps({"training": info, "evaluation": {**results, "device": device}}, indent=2)
                           + "\n")

    save({})
    evaluate(model, tok, exits, args, save)


if __name__ == "__main__":
    main()
