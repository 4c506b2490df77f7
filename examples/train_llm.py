"""Fine-tune SmolLM2-135M-Instruct (LoRA on every linear map of every layer) to
answer SQuAD questions from 1-3 passages in a few words, so that its first 25
and 20 layers answer too (LayerSkip-style early exit), and measure it.

Data: the training articles of the by-article split (examples/squad.py) only.
Each question gets 1, 2 or 3 passages (seeded): its gold paragraph mixed, at a
random place, with the best BM25 hits among the training articles' paragraphs
(distractors). Target: the first gold answer + the tokenizer's EOS token (the
committed adapters were trained with transformers 5.17 on the GPU machine; the
answer model stops at any chat-control token, so either EOS its GGUF tokenizer
names ends the answer); the loss
is on the target tokens only. Loss = CE at the full depth + `exit_weight` x CE at
each early-exit depth, where an exit's logits are the shared final norm and
output head applied to that layer's output after a per-depth affine map
(identity at first: the exit map, trained with the adapters). Nothing is merged into the base
weights: the adapters and exit maps go to examples/models/smollm2_lora.npz (float16).

Evaluation (float32, greedy, the answer component's `SmolLM2` class): 200
seeded questions of the evaluation articles, with the gold paragraph and with
the top 3 BM25 passages of all 2,067 paragraphs, at every depth: containment
(autotuner.metrics.containment: whole words), SQuAD F1 and exact match ->
examples/models/llm_metrics.json. Seeds fixed; on an H100 about 4 minutes of training
and 5 of evaluation.

    python -m examples.train_llm [--epochs 2] [--rank 8] [--exits 25 20] [--device cuda]
    python -m examples.train_llm --adapter examples/models/smollm2_lora.npz [--depths 20]   # evaluate only

Rank 8 keeps the adapter file near 6 MB (float16); depth 15 did not learn to answer
in this budget (0.5 % containment), depth 25 does.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch

from autotuner.metrics import containment, exact_match, token_f1
from examples import squad
from examples.train_reader import seed_everything
from frontends.components.llm.smollm import (
    SmolLM2,
    attach_exit_maps,
    attach_lora,
    chat_prompt,
    load_adapter,
    load_base,
    save_adapter,
    trained_names,
)
from frontends.components.retrieval.bm25_index import Bm25Index, bm25_scores
from frontends.components.retrieval.text import tokenize

OUT = Path(__file__).resolve().parent / "models"


class Bm25:
    """Plain numpy BM25 (the reference the retrieval kernel is checked against) over some paragraphs."""

    def __init__(self, ids: list[int]):
        self.ids = np.array(ids)
        self.index = Bm25Index.build([tokenize(squad.paragraphs()[i]) for i in ids])

    def top(self, question: str, k: int) -> list[int]:
        scores = bm25_scores(self.index, self.index.query_terms(tokenize(question)))
        order = np.argsort(-scores, kind="stable")[:k]
        return [int(self.ids[i]) for i in order]


def training_examples(tok, rng: random.Random, limit: int = 0) -> list[tuple[list[int], int]]:
    """(token ids of prompt + target, prompt length) for every training question (the first `limit`)."""
    qs = squad.questions_of("train")
    bm25 = Bm25(sorted({q.paragraph for q in qs}))  # the training articles' paragraphs (each has questions)
    out = []
    for q in qs[:limit or None]:
        n = rng.choice((1, 2, 3))
        distractors = [i for i in bm25.top(q.question, 4) if i != q.paragraph][:n - 1]
        passages = [squad.paragraphs()[i] for i in distractors]
        passages.insert(rng.randrange(len(passages) + 1), squad.paragraphs()[q.paragraph])
        prompt = tok(chat_prompt(tok, q.question, passages), add_special_tokens=False)["input_ids"]
        target = tok(q.answers[0].strip() + tok.eos_token, add_special_tokens=False)["input_ids"]
        out.append((prompt + target, len(prompt)))
    return out


def batches(examples, batch: int, generator: torch.Generator):
    order = torch.randperm(len(examples), generator=generator).tolist()
    for i in range(0, len(order), batch):
        chunk = [examples[j] for j in order[i:i + batch]]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros(len(chunk), width, dtype=torch.long)
        labels = torch.full((len(chunk), width), -100, dtype=torch.long)
        for r, (seq, plen) in enumerate(chunk):  # right padding: positions are those of the unpadded prompt
            ids[r, :len(seq)] = torch.tensor(seq)
            mask[r, :len(seq)] = 1
            labels[r, plen:len(seq)] = torch.tensor(seq[plen:])
        yield ids, mask, labels


def exit_losses(model, ids, mask, labels, exits: list[int]) -> list[torch.Tensor]:
    """Cross-entropy on the target tokens at the full depth, then at each exit depth
    (that layer's output through the shared final norm and head)."""
    captured = {}
    hooks = [model.model.layers[k - 1].register_forward_hook(
        lambda mod, inp, out, k=k: captured.__setitem__(k, out[0] if isinstance(out, tuple) else out))
        for k in exits]
    try:
        last = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
    finally:
        for h in hooks:
            h.remove()
    # the token at position t predicts the label at t + 1
    pred_at = labels[:, 1:] != -100
    targets = labels[:, 1:][pred_at]
    head = model.lm_head
    losses = [torch.nn.functional.cross_entropy(head(last[:, :-1][pred_at]).float(), targets)]
    for k in exits:
        hidden = model.model.norm(model.exit_maps[str(k)](captured[k][:, :-1][pred_at]))
        losses.append(torch.nn.functional.cross_entropy(head(hidden).float(), targets))
    return losses


def train_loop(model, params, examples, args) -> tuple[list[dict], float]:
    """AdamW with warm-up and linear decay over `examples` (batches of `args.batch`,
    seeded order), the full depth's loss plus `args.exit_weight` x each early exit's;
    returns the per-epoch loss log and the start time. Shared by the answer and the
    tools adapters."""
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    steps = args.epochs * ((len(examples) + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.05 * steps)) * max(0.0, 1 - s / steps))
    generator = torch.Generator().manual_seed(args.seed)
    start, log = time.time(), []
    for epoch in range(args.epochs):
        sums, count = np.zeros(1 + len(args.exits)), 0
        for ids, mask, labels in batches(examples, args.batch, generator):
            ids, mask, labels = ids.to(args.device), mask.to(args.device), labels.to(args.device)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=args.device == "cuda"):
                losses = exit_losses(model, ids, mask, labels, args.exits)
            loss = losses[0] + args.exit_weight * sum(losses[1:])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            sums += [x.item() for x in losses]
            count += 1
        line = {"epoch": epoch + 1, "seconds": round(time.time() - start, 1),
                **{f"loss_{d}": round(float(v / count), 4) for d, v in zip(["full", *args.exits], sums)}}
        log.append(line)
        print(json.dumps(line), flush=True)
    return log, start


def train(args) -> tuple[torch.nn.Module, object, dict]:
    seed_everything(args.seed)
    model, tok = load_base()
    for p in model.parameters():
        p.requires_grad_(False)
    attach_lora(model, args.rank, args.alpha)
    attach_exit_maps(model, args.exits)
    model.to(args.device).train()
    rng = random.Random(args.seed)
    examples = training_examples(tok, rng, args.max_questions)
    print(f"{len(examples)} examples, {sum(len(x) for x, _ in examples)} tokens, attention "
          f"{model.config._attn_implementation}", flush=True)
    named = dict(model.named_parameters())
    params = [named[n] for n in trained_names(model)]
    log, start = train_loop(model, params, examples, args)
    info = {"train_questions": len(examples), "train_seconds": round(time.time() - start, 1), "log": log}
    return model.eval(), tok, info


def evaluate(model, tok, args, save=lambda results: None) -> dict:
    """Containment / F1 / EM at every depth, with the gold paragraph and with 3 BM25 passages."""
    rng = np.random.RandomState(args.seed)
    qs = squad.questions_of("eval")
    qs = [qs[i] for i in sorted(rng.choice(len(qs), size=min(args.eval_questions, len(qs)), replace=False))]
    bm25 = Bm25(list(range(len(squad.paragraphs()))))
    contexts = {"gold": [[squad.paragraphs()[q.paragraph]] for q in qs],
                "bm25_top3": [[squad.paragraphs()[i] for i in bm25.top(q.question, 3)] for q in qs]}
    full = SmolLM2(model, tok, exits=tuple(args.exits))
    results = {"questions": len(qs), "max_new_tokens": args.eval_tokens, "precision": "float32"}
    for depth in args.depths or [full.depth, *sorted(args.exits, reverse=True)]:
        lm = full.with_layers(depth)
        for setting, ctx in contexts.items():
            scores = np.zeros(3)
            examples = []
            start = time.time()
            for q, c in zip(qs, ctx):
                text = lm.answer(q.question, c, args.eval_tokens).text
                scores += [containment(text, q.answers), token_f1(text, q.answers), exact_match(text, q.answers)]
                if len(examples) < 5:
                    examples.append({"question": q.question, "answer": text, "gold": q.answers[0]})
            c, f, e = (100 * scores / len(qs)).round(1).tolist()
            results[f"layers_{depth}_{setting}"] = {"containment": c, "f1": f, "exact_match": e,
                                                    "seconds": round(time.time() - start, 1), "examples": examples}
            print(f"layers {depth} {setting}: containment {c} F1 {f} EM {e}", flush=True)
            save(results)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--exits", type=int, nargs="*", default=[25, 20])
    p.add_argument("--exit-weight", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-questions", type=int, default=0, help="train on the first N examples only (0: all)")
    p.add_argument("--eval-questions", type=int, default=200)
    p.add_argument("--eval-tokens", type=int, default=16)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--adapter", type=Path, default=None,
                   help="evaluate these trained adapters, train nothing (figures added to OUT/llm_metrics.json)")
    p.add_argument("--depths", type=int, nargs="*", default=None, help="depths to evaluate (default: 30 and the exits)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    metrics = args.out / "llm_metrics.json"
    device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    if args.adapter:  # evaluate trained adapters only
        model, tok = load_base()
        args.exits = list(load_adapter(model, args.adapter))
        model.to(args.device)
        before = json.loads(metrics.read_text()) if metrics.is_file() else {}
        info, earlier = before.get("training", {}), before.get("evaluation", {})
    else:
        model, tok, info = train(args)
        earlier = {}
        adapter = args.out / "smollm2_lora.npz"
        save_adapter(model, adapter, args.rank, args.alpha, args.exits)
        info.update(file=adapter.name, bytes=adapter.stat().st_size, device=device)
        info["command"] = "python -m examples.train_llm " + " ".join(
            f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items() if k not in ("out", "device", "adapter", "depths"))

    def save(results):
        evaluation = {**earlier, **results, "device": device}
        metrics.write_text(json.dumps({"training": info, "evaluation": evaluation}, indent=2) + "\n")

    save({})
    evaluate(model, tok, args, save)


if __name__ == "__main__":
    main()
