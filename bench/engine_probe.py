"""SmolLM2 (the fine-tuned answer model, LoRA merged) through a CPU inference engine
against eager torch float32, paired per question.

Builds, offline and once, the engine variants from the same weights
(`frontends/components/llm/engine.py`: onnxruntime-genai's model builder on the merged
model saved as a transformers folder, fp32, int8 or int4 weight-only), cached under
`.cache/approx/engines/` (APPROX_CACHE_DIR), and reports each build's time and size.
OpenVINO runs the same ONNX builds (compiled when loaded: that time is reported too),
at f32 compute (`ov-*`, INFERENCE_PRECISION_HINT f32) or its default precision on this
CPU (`ov-*-auto`: bf16 compute where the CPU has bf16 instructions, int8 activations).
Then every SQuAD evaluation question (the gold paragraph and the two after it, as
bench/token_exit_bench.py makes them) runs through torch float32 and each engine
variant one after the other, their order rotated per question: the same prompt ids,
greedy, the same stop rule (end of turn / sequence, or the line break ending the
answer), the same new-token budget, one thread. Times are CPU seconds of the process
(all its threads: the engines run their own) and wall seconds; speedup is
sum(torch) / sum(variant). Printed: s/question, speedup vs torch f32, containment
against the gold answers, answers (token ids) equal to torch f32's, and the machine.

    python bench/engine_probe.py [--questions 20] [--skip 0] [--engines ort-fp32 ov-int8-auto ...] [--json out.json]

`--baseline ort-fp32` compares every variant with that engine (the exact path where it
runs it) instead, and leaves eager torch out: its 1.4 s a question is most of a long run."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotuner import describe_machine  # noqa: E402
from autotuner.metrics import containment  # noqa: E402
from examples import squad  # noqa: E402
from examples.systems.common import SMOLLM_ADAPTER, one_thread  # noqa: E402

CLOCK, WALL = time.process_time, time.perf_counter


def questions(n: int, skip: int):
    """(question, contexts, gold answers) of evaluation questions skip .. skip + n."""
    paragraphs = squad.paragraphs()
    return [(q.question, [paragraphs[(q.paragraph + k) % len(paragraphs)] for k in range(3)], q.answers)
            for q in squad.questions_of("eval")[skip:skip + n]]


def openvino_version() -> str:
    import openvino

    return openvino.__version__.split("-")[0]


def random_smollm(folder: Path):
    """SmolLM2 of the config and tokenizer in `folder`, random weights (seed 0), no adapters."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from frontends.components.llm.smollm import SmolLM2

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return SmolLM2(model, AutoTokenizer.from_pretrained(str(folder), local_files_only=True), name="smollm2-random")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--skip", type=int, default=0, help="evaluation questions skipped first")
    p.add_argument("--tokens", type=int, default=16, help="new tokens at most")
    p.add_argument("--engines", nargs="+", default=["ort-fp32", "ort-int8", "ov-f32", "ov-f32-auto", "ov-int8",
                                                    "ov-int8-auto", "ov-ort-int8"],
                   help="engine variants (frontends/components/llm/engine.py ENGINES)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--baseline", default=None, metavar="ENGINE",
                   help="compare with this engine variant (e.g. ort-fp32, the exact path) instead of eager torch, "
                        "which is left out")
    p.add_argument("--random-weights", type=Path, default=None, metavar="FOLDER",
                   help="SmolLM2's shape with random weights (seed 0): the config and tokenizer of FOLDER, for a "
                        "machine without the GGUF (timing and agreement only: containment means nothing there)")
    args = p.parse_args()
    one_thread()
    from frontends.components.llm.base import first_line
    from frontends.components.llm.engine import build_info
    from frontends.components.llm.engine_model import through_engine
    from frontends.components.llm.smollm import SmolLM2

    lm = random_smollm(args.random_weights) if args.random_weights else SmolLM2.load(SMOLLM_ADAPTER)
    base = args.baseline or "torch float32"
    engines = list(dict.fromkeys([args.baseline, *args.engines])) if args.baseline else args.engines
    models, builds = ({} if args.baseline else {base: lm}), {}
    for engine in engines:
        start = WALL()
        models[engine] = through_engine(lm, engine, threads=1)
        info = build_info(models[engine].build)
        compile_seconds = getattr(models[engine].decoder, "compile_seconds", None)
        builds[engine] = {**info, "cached": WALL() - start < 0.5 * info["build_seconds"] + (compile_seconds or 0),
                          "folder": str(models[engine].build), "compile_seconds": compile_seconds}
        compiled = "" if compile_seconds is None else f", compiled by openvino {openvino_version()} in " \
                                                      f"{compile_seconds:.1f} s when loaded"
        print(f"{engine}: {info['precision']} ONNX build {info['build_seconds']:.1f} s"
              f"{' (cached)' if builds[engine]['cached'] else ''}, {info['bytes'] / 2**20:.0f} MiB, "
              f"{info['engine']} {info['builder']}{compiled}", flush=True)
    items = questions(args.questions, args.skip)
    for model in models.values():  # warm-up
        model.generate(items[0][0], items[0][1][:1], 2)
    rows = {name: {"seconds": [], "wall": [], "containment": [], "tokens": []} for name in models}
    names = list(models)
    for i, (question, contexts, answers) in enumerate(items):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start, wall = CLOCK(), WALL()
            tokens, _, _ = models[name].generate(question, contexts, args.tokens)
            rows[name]["seconds"].append(CLOCK() - start)
            rows[name]["wall"].append(WALL() - wall)
            text = first_line(lm.tokenizer.decode(tokens, skip_special_tokens=True))
            rows[name]["containment"].append(containment(text, answers))
            rows[name]["tokens"].append(tokens)
        print(f"question {i + 1}/{len(items)}", file=sys.stderr, flush=True)
    machine = describe_machine("cpu", 1)
    weights = "random (seed 0)" if args.random_weights else "fine-tuned, LoRA merged"
    summary = report(rows, len(items), args, machine, base)
    if args.json:
        args.json.write_text(json.dumps({"date": datetime.date.today().isoformat(), "machine": machine,
                                         "questions": len(items), "skip": args.skip, "tokens": args.tokens,
                                         "weights": weights, "baseline": base,
                                         "builds": builds, "rows": summary}, indent=1))


def report(rows, n: int, args, machine: str, base: str) -> dict:
    exact = rows[base]
    print(f"machine: {machine}" + (" (random weights: containment means nothing)" if args.random_weights else ""))
    print(f"{n} SQuAD evaluation questions from #{args.skip} (gold paragraph + 2 after), {args.tokens} new tokens "
          f"at most, greedy, one thread; CPU seconds of the process (wall in brackets)")
    print(f"{'variant':14} {'s/question':>10} {'(wall)':>7} {'vs ' + base:>12} {'containment':>11} "
          f"{'same answer':>11}")
    summary = {}
    for name, row in rows.items():
        same = sum(a == b for a, b in zip(exact["tokens"], row["tokens"]))
        s = summary[name] = {"seconds_per_question": sum(row["seconds"]) / n, "wall_per_question": sum(row["wall"]) / n,
                             "speedup": sum(exact["seconds"]) / sum(row["seconds"]),
                             "wall_speedup": sum(exact["wall"]) / sum(row["wall"]),
                             "containment": sum(row["containment"]) / n, "same_answer": same}
        print(f"{name:14} {s['seconds_per_question']:10.2f} {s['wall_per_question']:7.2f} {s['speedup']:11.2f}x "
              f"{s['containment']:11.3f} {same:>7}/{n}")
    return summary


if __name__ == "__main__":
    main()
