"""Component faults at size: injected by real misbehaving
components (tests/faulty_components.py), a few hundred of them across the
kinds, and a tuning study where most configurations use a faulty component.

For every injection: with an exact path (Fallback, ModelCascade, SafetyContract, the
exact tool) the output must equal the exact path's (a fallback taken); without
one it must be one ApproxError line naming the component (a clear error).
Anything else is counted as a traceback (another exception, a multi-line or
anonymous error), a wrong answer, or a hang (longer than the timeout + 1 s);
all three must be 0. The study must finish with every faulty configuration a
FAIL trial carrying its error, counted in the result, none lost.

    python bench/reliability_faults.py [--rounds 10] [--trials 30]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from approx_dialect.diagnostics import ApproxError  # noqa: E402
from tests import faulty_components as F  # noqa: E402

BOUND = F.TIMEOUT + 1.0


class Tally:
    """Outcomes per fault kind: injected, fallback, clear, traceback, wrong, hang."""

    def __init__(self):
        self.rows: dict[str, Counter] = {}

    def alone(self, kind: str, names: str, call) -> None:
        """A fault with no exact path: must be one clear ApproxError line."""
        row = self.rows.setdefault(kind, Counter())
        row["injected"] += 1
        start = time.monotonic()
        try:
            call()
            row["wrong"] += 1  # a fault that went unnoticed
        except ApproxError as err:
            line = str(err)
            ok = "\n" not in line and "Traceback" not in line and names in line
            row["clear" if ok else "traceback"] += 1
        except Exception:  # noqa: BLE001 - what this bench counts
            row["traceback"] += 1
        row["hang"] += time.monotonic() - start > BOUND

    def guarded(self, kind: str, call, want, faults_before: int, faults) -> None:
        """Calls through an exact path: each fault injected must give `want`."""
        row = self.rows.setdefault(kind, Counter())
        start = time.monotonic()
        try:
            got = call()
            row["wrong"] += got != want
        except Exception:  # noqa: BLE001
            row["traceback"] += 1
        row["hang"] += time.monotonic() - start > BOUND
        injected = faults() - faults_before
        row["injected"] += injected
        row["fallback"] += injected


def http_faults(t: Tally, server, exact, qs, corpus, rounds: int) -> None:
    from frontends.components.llm.escalation import Fallback, ModelCascade

    ctx = corpus[:3]
    for fault in F.HTTP_FAULTS:
        model = server.model(fault)
        escalations = {"Fallback": Fallback(model, exact), "ModelCascade": ModelCascade([model], exact, [0.5], knob=1)}
        for i in range(rounds):
            q = qs[i % len(qs)]
            t.alone(f"llm backend: {fault}", server.url, lambda: model.answer(q, ctx, 4))
            want = exact.answer(q, ctx, 4).text
            for name, escalation in escalations.items():
                t.guarded(f"llm backend: {fault}", lambda: escalation.answer(q, ctx, 4).text, want, 0, lambda: 1)
        F.ACTIVE.update(exact=exact, approx=model)
        before = F.RECOVERED["answer"]
        for i in range(rounds // 2):
            q = qs[i % len(qs)]
            t.guarded(f"llm backend: {fault}", lambda: F.contracted_answer(q, ctx), exact.answer(q, ctx).text,
                      before, lambda: F.RECOVERED["answer"])
            before = F.RECOVERED["answer"]


def model_faults(t: Tally, exact, qs, corpus, rounds: int) -> None:
    from frontends.components.llm.escalation import Fallback, ModelCascade

    ctx = corpus[:3]
    want4 = {q: exact.answer(q, ctx, 4).text for q in qs}
    want = {q: exact.answer(q, ctx).text for q in qs}
    for fault in F.MODEL_FAULTS:
        kind = f"answer model: {fault}"
        if fault != "empty":
            for i in range(rounds):
                t.alone(kind, f"faulty-{fault}", lambda: F.FaultyModel(exact, fault).answer(qs[i % len(qs)], ctx, 4))
        model = F.FaultyModel(exact, fault, every=2)
        conf = (lambda a: a.confidence if a.text.strip() else 0.0) if fault == "empty" else None
        escalations = [Fallback(model, exact, F.non_empty if fault == "empty" else None),
                       ModelCascade([model], exact, [1e-9], knob=1, confidence=conf)]
        for escalation in escalations:
            for i in range(rounds):
                q = qs[i % len(qs)]
                t.guarded(kind, lambda: escalation.answer(q, ctx, 4).text, want4[q], model.faults, lambda: model.faults)
        F.ACTIVE.update(exact=exact, approx=model)
        for i in range(rounds):
            q = qs[i % len(qs)]
            t.guarded(kind, lambda: F.contracted_answer(q, ctx), want[q], model.faults, lambda: model.faults)


def tool_faults(t: Tally, rounds: int) -> None:
    from frontends.components.tools import ToolRunner

    reg = F.make_tools()
    tools = ToolRunner(reg)
    for sub, fault in ((2, "raise"), (3, "garbage"), (4, "hang")):
        kind, n = f"tool: {fault}", rounds if fault != "hang" else max(2, rounds // 3)
        for i in range(n):
            args = {"amount": float(i), "rate": 1.17}
            t.alone(kind, f"tool convert (substitute {sub})", lambda: reg.call("convert", args, sub))
            before = tools.stats["fallbacks"]
            t.guarded(kind, lambda: tools.call("convert", args, substitute=sub), i * 1.17, before,
                      lambda: tools.stats["fallbacks"])


def retriever_faults(t: Tally, corpus, qs, rounds: int) -> None:
    from frontends.components.retrieval import Bm25Retriever

    search = Bm25Retriever(corpus, top_k=3).build({})
    always = F.FlakySearch(search)
    F.ACTIVE.update(search=search, flaky=F.FlakySearch(search, every=2))
    for i in range(rounds):
        t.alone("retriever: raises", "retrieval.bm25", lambda: always(qs[i % len(qs)]))
    for i in range(4 * rounds):
        q = qs[i % len(qs)]
        t.guarded("retriever: raises", lambda: F.contracted_retrieve(q), search(q).ids.tolist(),
                  F.ACTIVE["flaky"].faults, lambda: F.ACTIVE["flaky"].faults)


def study(server, exact, corpus, qs, trials: int) -> dict:
    import optuna

    from autotuner import Cost, HeldOut, Search, Storage, tune
    from autotuner.report import write_report

    out = Path(tempfile.mkdtemp(prefix="reliability-faults-"))
    start = time.perf_counter()
    r = tune(F.FaultyRag(corpus, exact, server), qs[:8], metric="exact_match", budget=0.5,
             search=Search(n_trials=trials, mode="static", stage_fraction=0), cost=Cost(repeats=1),
             held_out=HeldOut(inputs=qs[8:16]), storage=Storage(out_dir=out))
    seconds = time.perf_counter() - start
    write_report(r, out / "report")
    st = optuna.load_study(study_name="faulty_rag/static", storage=f"sqlite:///{out / 'study.db'}")
    ts = [t for t in st.get_trials() if "duplicate_of" not in t.user_attrs]
    fail = [t for t in ts if t.state.name == "FAIL" and "error" in t.user_attrs]
    done = [t for t in ts if t.state.name == "COMPLETE"]
    faulty_done = sum(F.is_faulty(t.user_attrs["config"]) for t in done)
    html = (out / "report" / "index.html").read_text()
    return {"trials": r.trials, "failed (study)": len(fail), "failed (result)": r.failed_trials,
            "errors listed": len(r.failures), "faulty configs failed": sum(F.is_faulty(t.user_attrs["config"])
                                                                           for t in fail),
            "faulty configs completed (must be 0)": faulty_done,
            "lost (running / interrupted, must be 0)": len(ts) - len(fail) - len(done),
            "front": len(r.front), "front faulty (must be 0)": sum(F.is_faulty(p.knobs) for p in r.front),
            "report shows count": f"({r.failed_trials} failed" in html and f"Failed trials ({r.failed_trials};" in html,
            "seconds": round(seconds, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=30)
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from examples.squad import paragraphs, questions
    from tests.tiny_models import untrained_reader

    t0 = time.perf_counter()
    corpus = paragraphs()[:20]
    qs = [q.question for q in questions() if q.paragraph < 20][:24]
    exact = untrained_reader(Path(tempfile.mkdtemp(prefix="untrained-reader-")) / "reader.npz")
    tally = Tally()
    with F.FaultServer() as server:
        for name, run in (("llm backend", lambda: http_faults(tally, server, exact, qs, corpus, a.rounds)),
                          ("answer models", lambda: model_faults(tally, exact, qs, corpus, a.rounds)),
                          ("tools", lambda: tool_faults(tally, a.rounds)),
                          ("retriever", lambda: retriever_faults(tally, corpus, qs, a.rounds))):
            s = time.perf_counter()
            run()
            print(f"[{name}: {time.perf_counter() - s:.1f} s]", file=sys.stderr)
        s = study(server, exact, corpus, qs, a.trials)
    cols = ("injected", "fallback", "clear", "traceback", "wrong", "hang")
    print("| fault | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols))
    total = Counter()
    for kind, row in tally.rows.items():
        total.update(row)
        print(f"| {kind} | " + " | ".join(str(row[c]) for c in cols) + " |")
    print("| **total** | " + " | ".join(f"**{total[c]}**" for c in cols) + " |")
    print("\ntuning study (FaultyRag, 33 of 45 configurations faulty):")
    for k, v in s.items():
        print(f"  {k}: {v}")
    bad = total["traceback"] + total["wrong"] + total["hang"] + s["lost (running / interrupted, must be 0)"] \
        + s["faulty configs completed (must be 0)"] + s["front faulty (must be 0)"]
    ok = bad == 0 and s["failed (study)"] == s["failed (result)"] == s["errors listed"] and s["report shows count"]
    print(f"\nwall {time.perf_counter() - t0:.0f} s; {'OK' if ok else 'FINDINGS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
