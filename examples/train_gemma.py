"""Fine-tune Gemma 3 270M (LoRA on every linear map of every layer) to answer SQuAD
questions from the passages retrieval gives it, in a few words, and measure it.

Three steps, so that training can run on a GPU machine that has torch, transformers
and gguf but neither this project's data nor its pinned tokenizer:

    python -m examples.train_gemma prepare            # here: token ids -> .cache/approx/gemma3/train_data.npz
    python -m examples.train_gemma train --gguf G --out DIR   # the GPU: adapters + new tokens -> DIR
    python -m examples.train_gemma score --run DIR    # here: scored -> examples/models/gemma3_metrics.json

The hinted adapters (`gemma3_hint_lora.npz`, the exact program's answer model reading the
reader's span in its prompt: `Verified(..., hinted=True)`) take two more steps first: cross-fitted
readers answer the training questions (each from a reader that never read the question's
article, as the committed reader never read the tuning and evaluation articles), and
`prepare --hints` puts those spans in the training prompts and the committed reader's in
the evaluation prompts:

    python -m examples.train_gemma prepare            # also writes train_contexts.json beside the data
    python -m examples.train_reader --layers 6 --folds 2 --out FOLDS --model-dir M   # the GPU
    python -m examples.train_gemma hints --readers FOLDS --model-dir M --out HINTS   # the GPU
    python -m examples.train_gemma prepare --hints HINTS --data D   # 80 % of the prompts carry the span
    python -m examples.train_gemma train --data D ...   # the GPU
    python -m examples.train_gemma score --run DIR --hinted   # HINTS saved as hints.json beside the data

A fifth of the training prompts carry no span (`--hint-share`), so the same adapters also
answer alone (the systems' variant without the reader).

Data: the training articles of the by-article split (examples/squad.py) only. Each
training question reads the top 3 BM25 passages among the training articles'
paragraphs, as the RAG systems read theirs (the gold paragraph may be missing: the
model learns to answer from what retrieval gives). Prompt: the answer models'
`build_prompt` in Gemma 3's user turn (`gemma.gemma_turn`); target: the first gold
answer + `<end_of_turn>`; loss on the target only. Batches are right-padded with no
padding mask: under the causal mask a pad row only follows the rows before it (with
a padding mask, the 512-token sliding window leaves some pad rows no key: NaN).

Evaluation: 200 seeded questions of the evaluation articles (picked as
examples/train_llm.py picks them) with the top 3 BM25 passages of all 2,067
paragraphs; greedy, 16 new tokens at most, the answer's first line: containment
(autotuner.metrics.containment), SQuAD F1, exact match. The CPU check (`score
--cpu N`) answers the first N through `Gemma3` as the systems load it.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parent / "models"
ADAPTER, METRICS = "gemma3_lora.npz", "gemma3_metrics.json"
HINTED = "gemma3_hint_lora.npz", "gemma3_hint_metrics.json"  # the adapters reading the reader's span
CONTEXTS = "train_contexts.json"  # each training question's passages (paragraph ids), for `hints`
END = "<end_of_turn>"
STOP_TOKENS = ("<end_of_turn>", "<eos>")


def eval_questions(n: int, seed: int):
    """The evaluation questions examples/train_llm.py evaluates on (the same pick)."""
    from examples import squad

    rng = np.random.RandomState(seed)
    qs = squad.questions_of("eval")
    return [qs[i] for i in sorted(rng.choice(len(qs), size=min(n, len(qs)), replace=False))]


def ragged(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(flat int32 ids, offsets) of token-id rows."""
    offsets = np.cumsum([0, *map(len, rows)]).astype(np.int64)
    return np.array([t for r in rows for t in r], dtype=np.int32), offsets


def unragged(flat: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
    return [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]


def prepare(args) -> None:
    from examples import squad
    from examples.train_llm import Bm25
    from frontends.components.llm.base import build_prompt
    from frontends.components.llm.gemma import gemma_turn, load_base

    _, tok = load_base()
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    qs = squad.questions_of("train")
    qs = qs[:args.max_questions or None]
    bm25 = Bm25(sorted({q.paragraph for q in squad.questions_of("train")}))
    spans = json.loads(args.hints.read_text())["spans"] if args.hints else {}
    rng = random.Random(args.seed)  # which training prompts carry the span
    prompts, targets, contexts = [], [], []
    start = time.time()
    for q in qs:
        ids = bm25.top(q.question, 3)
        passages = [squad.paragraphs()[i] for i in ids]
        contexts.append({"qid": q.qid, "article": q.article, "question": q.question, "passages": ids})
        hinted = spans and rng.random() < args.hint_share
        prompts.append(enc(gemma_turn(build_prompt(q.question, passages, spans[q.qid] if hinted else None))))
        targets.append(enc(q.answers[0].strip() + END))
    evals = eval_questions(args.eval_questions, args.seed)
    everything = Bm25(list(range(len(squad.paragraphs()))))
    top3 = [[squad.paragraphs()[i] for i in everything.top(q.question, 3)] for q in evals]
    reader = pro_reader() if spans else None
    eval_prompts = [enc(gemma_turn(build_prompt(q.question, passages, reader.answer(q.question, passages).text
                                                if reader else None))) for q, passages in zip(evals, top3)]
    save_data(args.data, tok, prompts, targets, eval_prompts, hint_share=np.array(args.hint_share if spans else 0.0))
    (args.data.parent / CONTEXTS).write_text(json.dumps(contexts) + "\n")
    print(f"{len(prompts)} training examples ({sum(map(len, prompts)) + sum(map(len, targets))} tokens), "
          f"{len(eval_prompts)} evaluation prompts, {time.time() - start:.0f} s -> {args.data}", flush=True)


def save_data(path: Path, tok, prompts, targets, evals, **extra) -> None:
    """What `train` reads: the training prompts and targets, the evaluation prompts (token
    ids, ragged) and the stop tokens, with `extra` arrays."""
    stops = [int(tok.convert_tokens_to_ids(t)) for t in STOP_TOKENS]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **dict(zip(("prompt", "prompt_at"), ragged(prompts))),
                        **dict(zip(("target", "target_at"), ragged(targets))),
                        **dict(zip(("eval", "eval_at"), ragged(evals))), stops=np.array(stops), **extra)


def commit_run(run_dir: Path, run: dict, adapter: str, metrics: str, evaluation: dict, data: Path) -> None:
    """A scored `train` run committed: its adapters as examples/models/`adapter`, the training
    record (its command naming `data`) and `evaluation` as examples/models/`metrics`."""
    import shutil

    shutil.copyfile(run_dir / ADAPTER, OUT / adapter)
    training = {**run["training"], "file": adapter, "bytes": (OUT / adapter).stat().st_size}
    training["command"] = training.get("command", "").replace(
        "train_gemma train", "train_gemma train --data " + str(data.relative_to(data.parents[3])))
    (OUT / metrics).write_text(json.dumps({"training": training, "evaluation": evaluation}, indent=2) + "\n")
    print(json.dumps({k: v for k, v in evaluation.items() if k != "examples"}), flush=True)


def pro_reader():
    """The committed pro reader, as the RAG systems load it."""
    from examples.systems.common import readers

    return readers()[1]


def hints(args) -> None:
    """Each training question answered by the cross-fitted reader (`train_reader.py --folds`)
    that left its article out, from the passages `prepare` gave it (train_contexts.json);
    writes {"spans": {qid: span}, ...} with each fold's containment. Runs on the GPU machine."""
    from autotuner.metrics import containment
    from examples import squad
    from examples.train_reader import fold_articles
    from frontends.components.llm.reader import ExtractiveReader, load_tokenizer
    from frontends.components.llm.span_model import fold_lora, load_span_model

    folds = sorted(args.readers.glob("reader_l6_fold*.npz"))
    if len(folds) < 2:
        raise SystemExit(f"{args.readers}: no cross-fitted readers (reader_l6_fold*.npz; train_reader.py --folds)")
    tok = load_tokenizer(args.model_dir)
    readers = []
    for path in folds:
        module = load_span_model(path, args.model_dir)
        fold_lora(module)
        readers.append(ExtractiveReader(module, tok, name=path.stem, device=args.device))
    fold_of = {a: k for k in range(len(folds)) for a in fold_articles(k, len(folds))}
    gold = {q.qid: q.answers for q in squad.questions_of("train")}
    spans, right, start = {}, [[] for _ in folds], time.time()
    for c in json.loads((args.data.parent / CONTEXTS).read_text()):
        k = fold_of[c["article"]]
        span = readers[k].answer(c["question"], [squad.paragraphs()[i] for i in c["passages"]]).text
        spans[c["qid"]] = span
        right[k].append(containment(span, gold[c["qid"]]))
    out = {"spans": spans, "seconds": round(time.time() - start, 1),
           "containment": {path.stem: round(100 * float(np.mean(r)), 1) for path, r in zip(folds, right)}}
    args.out.write_text(json.dumps(out) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "spans"}), f"{len(spans)} spans -> {args.out}", flush=True)


def batches(examples, batch: int, generator: torch.Generator):
    """(ids, labels) of seeded batches, right-padded (pad id 0, label -100)."""
    order = torch.randperm(len(examples), generator=generator).tolist()
    for i in range(0, len(order), batch):
        chunk = [examples[j] for j in order[i:i + batch]]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        labels = torch.full((len(chunk), width), -100, dtype=torch.long)
        for r, (seq, plen) in enumerate(chunk):
            ids[r, :len(seq)] = torch.tensor(seq)
            labels[r, plen:len(seq)] = torch.tensor(seq[plen:])
        yield ids, labels


def target_loss(model, ids, labels) -> torch.Tensor:
    """Cross-entropy of the target tokens (the head applied at those positions only:
    the 262k-word head over every position would not fit)."""
    hidden = model.model(input_ids=ids).last_hidden_state
    pred_at = labels[:, 1:] != -100
    return torch.nn.functional.cross_entropy(model.lm_head(hidden[:, :-1][pred_at]).float(), labels[:, 1:][pred_at])


def train(args) -> None:
    """LoRA training and greedy decoding of the evaluation prompts; writes the adapters,
    the new tokens and the training log to `args.out` (nothing here reads the project's data)."""
    from transformers import AutoModelForCausalLM

    from frontends.components.llm.smollm import attach_lora, save_adapter, trained_names

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    data = np.load(args.data)
    examples = [(p + t, len(p)) for p, t in zip(unragged(data["prompt"], data["prompt_at"]),
                                                 unragged(data["target"], data["target_at"]))]
    model = AutoModelForCausalLM.from_pretrained(str(args.gguf.parent), gguf_file=args.gguf.name, dtype=torch.float32)
    for p in model.parameters():
        p.requires_grad_(False)
    attach_lora(model, args.rank, args.alpha)
    model.to(args.device).train()
    named = dict(model.named_parameters())
    params = [named[n] for n in trained_names(model)]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    steps = args.epochs * ((len(examples) + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.05 * steps)) * max(0.0, 1 - s / steps))
    generator = torch.Generator().manual_seed(args.seed)
    start, log, bad = time.time(), [], 0
    for epoch in range(args.epochs):
        total, count = 0.0, 0
        for ids, labels in batches(examples, args.batch, generator):
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=args.device == "cuda"):
                loss = target_loss(model, ids.to(args.device), labels.to(args.device))
            if not torch.isfinite(loss):
                bad += 1
                continue
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            total, count = total + loss.item(), count + 1
        log.append({"epoch": epoch + 1, "seconds": round(time.time() - start, 1),
                    "loss": round(total / max(count, 1), 4), "non_finite_steps": bad})
        print(json.dumps(log[-1]), flush=True)
    seconds = round(time.time() - start, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    save_adapter(model, args.out / ADAPTER, args.rank, args.alpha)
    model.eval()
    t0 = time.time()
    new_tokens = greedy_answers(model, unragged(data["eval"], data["eval_at"]), sorted(set(data["stops"].tolist())),
                                args.eval_tokens, args.eval_batch, args.device)
    device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    import transformers

    info = {"train_questions": len(examples), "train_seconds": seconds, "log": log, "device": device,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "eval_decode_seconds": round(time.time() - t0, 1),
            "hint_share": float(data["hint_share"]) if "hint_share" in data else 0.0,
            "command": "python -m examples.train_gemma train " + " ".join(
                f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                if k in ("epochs", "rank", "alpha", "batch", "lr", "seed", "eval_tokens", "eval_batch"))}
    (args.out / "train_run.json").write_text(json.dumps({"training": info, "new_tokens": new_tokens}) + "\n")
    print(f"trained in {seconds} s on {device}; {len(new_tokens)} evaluation answers -> {args.out}", flush=True)


@torch.inference_mode()
def greedy_answers(model, prompts: list[list[int]], stops: list[int], n: int, batch: int, device) -> list[list[int]]:
    """Each prompt's greedy new tokens (at most `n`, up to its first stop token), `batch`
    prompts of similar length at a time, left-padded (pad id 0) under their attention mask."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out: list[list[int]] = [[] for _ in prompts]
    for s in range(0, len(order), batch):
        chunk = order[s:s + batch]
        width = max(len(prompts[i]) for i in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros(len(chunk), width, dtype=torch.long)
        for r, i in enumerate(chunk):
            ids[r, width - len(prompts[i]):] = torch.tensor(prompts[i])
            mask[r, width - len(prompts[i]):] = 1
        with sdpa_kernel(SDPBackend.MATH):  # CUDA's fused kernels garbled some left-padded rows' first token
            seqs = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=n,
                                  do_sample=False, eos_token_id=stops, pad_token_id=0)[:, width:].tolist()
        for i, row in zip(chunk, seqs):
            ends = [k for k, t in enumerate(row) if t in stops]
            out[i] = row[:ends[0] + 1] if ends else row
    return out


def score(args) -> None:
    """The evaluation answers of a `train` run scored against the gold answers; with
    `--cpu N`, the first N answered again through `Gemma3` here (float32)."""
    import shutil

    from autotuner.metrics import containment, exact_match, token_f1
    from frontends.components.llm.base import first_line
    from frontends.components.llm.gemma import Gemma3, load_base

    run = json.loads((args.run / "train_run.json").read_text())
    _, tok = load_base()
    qs = eval_questions(args.eval_questions, args.seed)
    answers = [first_line(tok.decode(t, skip_special_tokens=True)) for t in run["new_tokens"]]
    if len(answers) != len(qs):
        raise SystemExit(f"{args.run}: {len(answers)} answers for {len(qs)} questions (other --eval-questions?)")

    def figures(texts, questions) -> dict:
        s = np.array([[containment(a, q.answers), token_f1(a, q.answers), exact_match(a, q.answers)]
                      for a, q in zip(texts, questions)]).mean(0)
        return {"containment": round(100 * s[0], 1), "f1": round(100 * s[1], 1), "exact_match": round(100 * s[2], 1)}

    evaluation = {"questions": len(qs), "contexts": "BM25 top 3 of all 2,067 paragraphs", "max_new_tokens": 16,
                  "device": run["training"]["device"], **figures(answers, qs),
                  "examples": [{"question": q.question, "answer": a, "gold": q.answers[0]}
                               for q, a in list(zip(qs, answers))[:5]]}
    if args.cpu:
        from examples import squad
        from examples.train_llm import Bm25
        from frontends.components.llm.verifier import Verified

        lm = Gemma3.load(args.run / ADAPTER)
        model = Verified(lm, pro_reader(), float("inf"), hinted=True) if args.hinted else lm  # its own answer
        everything = Bm25(list(range(len(squad.paragraphs()))))
        start, cpu = time.time(), []
        for q in qs[:args.cpu]:
            passages = [squad.paragraphs()[i] for i in everything.top(q.question, 3)]
            cpu.append(model.answer(q.question, passages, 16).text)
        evaluation["cpu_float32"] = {"questions": args.cpu, "same_answers": sum(a == b for a, b in zip(cpu, answers)),
                                     "seconds_per_question": round((time.time() - start) / args.cpu, 2),
                                     **figures(cpu, qs[:args.cpu])}
    OUT.mkdir(parents=True, exist_ok=True)
    adapter, metrics = HINTED if args.hinted else (ADAPTER, METRICS)
    shutil.copyfile(args.run / ADAPTER, OUT / adapter)
    training = {**run["training"], "file": adapter, "bytes": (OUT / adapter).stat().st_size}
    if args.hinted:  # what the training prompts' spans were: each fold's containment, and the readers'
        hint_file = args.data.parent / "hints.json"
        folds = args.data.parent / "reader_folds_metrics.json"
        training["hints"] = {k: v for k, v in json.loads(hint_file.read_text()).items() if k != "spans"}
        if folds.exists():
            training["hints"]["readers"] = json.loads(folds.read_text())
    (OUT / metrics).write_text(json.dumps({"training": training, "evaluation": evaluation}, indent=2) + "\n")
    print(json.dumps({k: v for k, v in evaluation.items() if k != "examples"}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    default_data = Path(__file__).resolve().parents[1] / ".cache" / "approx" / "gemma3" / "train_data.npz"
    for name in ("prepare", "train", "score"):
        s = sub.add_parser(name)
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--eval-questions", type=int, default=200)
        s.add_argument("--data", type=Path, default=default_data)
    sub.choices["prepare"].add_argument("--max-questions", type=int, default=0,
                                        help="the first N training questions (0: all)")
    sub.choices["prepare"].add_argument("--hints", type=Path, default=None,
                                        help="the spans `hints` wrote: the prompts carry the reader's answer")
    sub.choices["prepare"].add_argument("--hint-share", type=float, default=0.8,
                                        help="with --hints: the share of training prompts that carry the span "
                                             "(the rest teach the adapters to answer without one too)")
    h = sub.add_parser("hints")
    h.add_argument("--data", type=Path, default=default_data, help="beside it: the train_contexts.json of `prepare`")
    h.add_argument("--readers", type=Path, required=True, help="the folder of train_reader.py --folds")
    h.add_argument("--model-dir", type=Path, default=None, help="MiniLM folder (default: the installed package)")
    h.add_argument("--out", type=Path, required=True)
    h.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    t = sub.choices["train"]
    t.add_argument("--gguf", type=Path, required=True,
                   help="the Gemma 3 270M GGUF file (gemma.gguf_path() assembles it)")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--epochs", type=int, default=2)
    t.add_argument("--rank", type=int, default=8)
    t.add_argument("--alpha", type=float, default=16.0)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--lr", type=float, default=3e-4)
    t.add_argument("--eval-tokens", type=int, default=16)
    t.add_argument("--eval-batch", type=int, default=1,
                   help="evaluation prompts decoded together (left-padded; 1: one at a time, as the RAG runs were)")
    t.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    s = sub.choices["score"]
    s.add_argument("--run", type=Path, required=True, help="the folder `train` wrote")
    s.add_argument("--cpu", type=int, default=0, help="also answer the first N here through Gemma3 (float32)")
    s.add_argument("--hinted", action="store_true",
                   help="the run trained on `prepare --hints` data: commit it as the hinted adapters")
    args = p.parse_args()
    {"prepare": prepare, "hints": hints, "train": train, "score": score}[args.step](args)


if __name__ == "__main__":
    main()
