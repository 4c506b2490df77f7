"""Gemma 3 270M (the fine-tuned RAG answer model, LoRA merged) through the CPU engine builds
against eager torch float32, paired per question, one thread.

The questions: the knob probe's 3 (`policy.rag_probe()`), then SQuAD evaluation questions (train_gemma.py's
evaluation pick) with their BM25 top-3 contexts over all paragraphs, as the systems and
`examples/train_gemma.py score` build them. Each question runs through torch float32 and each
engine variant one after the other, their order rotated per question (interleaved rounds):
the same prompt ids, greedy, the same stop rule, at most 16 new tokens. Reported per variant:
s/question (wall), speedup vs torch, answers (token ids) equal to torch float32's, containment
of the gold answer (`common.answer_qos`); and the prefill of a ~530-token prompt against the f32
peak of one core (16 FLOP/cycle at /proc/cpuinfo's clock; 2 * linear-map parameters * tokens,
the LM head left out: the builds compute the last position's logits only).

    python bench/gemma_engine_probe.py [--questions 20] [--engines ort-fp32 ort-int8 ...]"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from autotuner import describe_machine  # noqa: E402
from examples import squad  # noqa: E402
from examples.systems.common import GEMMA_ADAPTER, answer_qos, one_thread  # noqa: E402
from frontends.components.llm.policy import rag_probe  # noqa: E402

OUT = Path(__file__).with_suffix(".json")
WALL = time.perf_counter


def squad_questions(n: int, seed: int = 0):
    """(question, BM25 top-3 contexts, gold answers) of train_gemma.py's first n evaluation questions."""
    from examples.train_gemma import eval_questions
    from examples.train_llm import Bm25

    paragraphs = squad.paragraphs()
    everything = Bm25(list(range(len(paragraphs))))
    return [(q.question, [paragraphs[i] for i in everything.top(q.question, 3)], q.answers)
            for q in eval_questions(200, seed)[:n]]


def clock_mhz() -> float:
    mhz = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
           if line.startswith("cpu MHz")]
    return max(mhz) if mhz else float("nan")


def linear_params(model) -> int:
    """Parameters of the decoder layers' linear maps (the embedding / LM head left out)."""
    return sum(m.weight.numel() for name, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and "lm_head" not in name)


def prefill_seconds(name, model, ids, repeats: int = 3) -> float:
    """Best of `repeats`: the logits at the prompt's last position after `ids`."""
    best = float("inf")
    for _ in range(repeats):
        start = WALL()
        if name == "torch f32":
            with torch.inference_mode():
                model.model(torch.tensor([ids]), logits_to_keep=1)
        elif hasattr(model.decoder, "prompt"):  # OpenVINO's prompt
            model.decoder.prompt(ids)
        else:
            og, dec = model.decoder.og, model.decoder
            params = og.GeneratorParams(dec.model)
            params.set_search_options(max_length=len(ids) + 1)
            gen = og.Generator(dec.model, params)
            gen.append_tokens(np.asarray([ids], dtype=np.int32))
            gen.get_logits()
        best = min(best, WALL() - start)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=20, help="SQuAD questions (after the probe's 3)")
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--engines", nargs="+", default=["ort-fp32", "ort-int8", "ov-ort-int8", "ov-int8", "ort-int4"])
    p.add_argument("--json", type=Path, default=OUT)
    args = p.parse_args()
    from autotuner import LoadProbe

    load = LoadProbe()  # how busy the machine was beside the probe, recorded with its figures
    one_thread()
    torch.set_num_threads(1)
    from frontends.components.llm.base import first_line
    from frontends.components.llm.engine import build_info
    from frontends.components.llm.engine_model import precision_engines, through_engine
    from frontends.components.llm.gemma import Gemma3
    from frontends.components.machine import machine_key

    lm = Gemma3.load(GEMMA_ADAPTER)
    models, builds = {"torch f32": lm}, {}
    for engine in args.engines:
        models[engine] = through_engine(lm, engine, threads=1, engines={})
        builds[engine] = {**build_info(models[engine].build), "folder": Path(models[engine].build).name,
                          "compile_seconds": getattr(models[engine].decoder, "compile_seconds", None)}
        print(engine, builds[engine], flush=True)
    items = [(q, c, None) for q, c in rag_probe()] + squad_questions(args.questions)
    for model in models.values():  # warm-up
        model.generate(items[0][0], items[0][1][:1], 2)
    names = list(models)
    rows = {n: {"wall": [], "tokens": [], "answers": [], "containment": []} for n in names}
    for i, (question, contexts, gold) in enumerate(items):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start = WALL()
            tokens, _, _ = models[name].generate(question, contexts, args.tokens)
            rows[name]["wall"].append(WALL() - start)
            rows[name]["tokens"].append(tokens)
            text = first_line(lm.tokenizer.decode(tokens, skip_special_tokens=True))
            rows[name]["answers"].append(text)
            if gold is not None:
                rows[name]["containment"].append(answer_qos(text, tuple(gold)))
        print(f"question {i + 1}/{len(items)}", file=sys.stderr, flush=True)
    timed = slice(len(rag_probe()), None)  # the SQuAD questions (the probe's 3 only checked for equality)
    ref = rows["torch f32"]
    summary = {}
    for name, row in rows.items():
        walls = row["wall"][timed]
        summary[name] = {"seconds_per_question": round(float(np.mean(walls)), 3),
                         "speedup_vs_torch": round(sum(ref["wall"][timed]) / sum(walls), 2),
                         "same_as_torch_squad": sum(a == b for a, b in zip(ref["tokens"][timed], row["tokens"][timed])),
                         "same_as_torch_probe": sum(a == b for a, b in zip(ref["tokens"][:timed.start],
                                                                          row["tokens"][:timed.start])),
                         "containment": round(float(np.mean(row["containment"])), 3),
                         "differing": [{"question": items[k][0], "torch": ref["answers"][k], name: row["answers"][k]}
                                       for k in range(len(items)) if row["tokens"][k] != ref["tokens"][k]][:8]}
    # prefill of a ~530-token prompt (the probe's first question on the first four paragraphs' worth of context)
    ids, k = [], 1
    paragraphs = squad.paragraphs()
    while len(ids) < 530:
        ids = lm.tokenizer(lm.turn(lm.prompt(items[0][0], list(paragraphs[:k]))), add_special_tokens=False)["input_ids"]
        k += 1
    ids = ids[-530:] if len(ids) > 560 else ids
    flops = 2 * linear_params(lm.model) * len(ids)
    mhz = clock_mhz()
    peak = 16 * mhz * 1e6
    prefill = {"tokens": len(ids), "flop": flops, "linear_params": linear_params(lm.model), "cpu_mhz": mhz,
               "f32_peak_flop_per_s_one_core": peak, "limit_seconds": round(flops / peak, 3)}
    for name, model in models.items():
        s = prefill_seconds(name, model, ids)
        prefill[name] = {"seconds": round(s, 3), "share_of_f32_peak": round(flops / s / peak, 3)}
    machine, busy = describe_machine("cpu", 1), load.finish()
    result = {"date": datetime.date.today().isoformat(), "machine": machine, "machine_key": machine_key(),
              "quiet": busy.quiet, "load": busy.to_dict(), "note": busy.describe(),
              "threads": 1, "questions": {"probe": timed.start, "squad": len(items) - timed.start,
                                          "contexts": "BM25 top 3 of all SQuAD paragraphs", "tokens": args.tokens},
              "precision_engines": precision_engines(), "builds": builds, "rows": summary, "prefill": prefill}
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"machine: {machine} ({busy.describe()})")
    print(f"{'variant':12} {'s/q':>6} {'vs torch':>8} {'same':>6} {'probe':>5} {'contain':>7} "
          f"{'prefill s':>9} {'%peak':>6}")
    for name, s in summary.items():
        print(f"{name:12} {s['seconds_per_question']:6.2f} {s['speedup_vs_torch']:7.2f}x "
              f"{s['same_as_torch_squad']:3}/{len(items) - timed.start} {s['same_as_torch_probe']:3}/{timed.start} "
              f"{s['containment']:7.3f} {prefill[name]['seconds']:9.2f} "
              f"{100 * prefill[name]['share_of_f32_peak']:5.1f}%")
    print(f"prefill limit at f32 peak: {prefill['limit_seconds']} s for {len(ids)} tokens ({flops / 1e9:.1f} GFLOP, "
          f"{mhz:.0f} MHz)")


if __name__ == "__main__":
    main()
