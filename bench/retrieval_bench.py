"""Retrieval knobs on real SQuAD questions: BM25 and MiniLM dense retrieval
over the 2,067 SQuAD dev paragraphs, one knob value at a time (plus a few combinations).

Speedup = exact time / approximate time, both measured in this run (rounds
interleaved over the configurations, median of the rounds). Times are CPU seconds
of the calling thread, where everything runs (torch on one thread): the machines
are shared, and wall time swings with other people's load. "kernel" times the
JIT-compiled scoring + top-k alone; "retrieval" adds what a query costs before it:
for BM25 preprocessing and gathering the query's term rows (timed per configuration),
for dense the MiniLM query embedding (the same for every configuration, so it is
timed once per question and added). Quality against the exact ranking: mean RBO
(p = 0.95) of the top-10; recall@k = the gold paragraph of the question is retrieved.
The corpus embeddings come from the on-disk cache (computed on the first run).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.squad import paragraphs, questions  # noqa: E402
from frontends.components.retrieval import Bm25Retriever, DenseRetriever, rbo, recall_at_k  # noqa: E402

N_QUESTIONS, SEED, ROUNDS, TOP_K = 300, 0, 5, 10
CLOCK = time.thread_time
LOOP = (2, 3, 4, 8)
TOPK_VALUES = (1, 3, 5)


def bm25_configs(n_docs: int) -> list[tuple[str, str, dict]]:
    rows = [(f"bm25_terms={k}", f"rarest ceil(n/{k}) query terms", {"bm25_terms": {"knob_val": k}}) for k in LOOP]
    rows += [(f"bm25_docs={k}", f"1 in {k} docs ({math.ceil(n_docs / k)})", {"bm25_docs": {"knob_val": k}})
             for k in LOOP]
    rows += [(f"bm25={i + 1}", f"top-{v}", {"bm25": {"knob_val": i + 1}}) for i, v in enumerate(TOPK_VALUES)]
    rows += [(f"preprocess={k}", m, {"preprocess": {"knob_val": k}}) for k, m in ((1, "no stemming"),
                                                                                  (2, "no stemming, stopwords kept"))]
    rows.append(("bm25_terms=2, bm25_docs=2", "both", {"bm25_terms": {"knob_val": 2}, "bm25_docs": {"knob_val": 2}}))
    return rows


def dense_configs(n_docs: int) -> list[tuple[str, str, dict]]:
    rows = [(f"dense_dot={k}", f"first {math.ceil(384 / k)} of 384 dims", {"dense_dot": {"knob_val": k}})
            for k in LOOP]
    rows += [(f"dense_dot#2={k}", t, {"dense_dot#2": {"knob_val": k}}) for k, t in ((1, "f32"), (2, "f16"))]
    rows += [(f"dense_docs={k}", f"1 in {k} docs ({math.ceil(n_docs / k)})", {"dense_docs": {"knob_val": k}})
             for k in LOOP]
    rows += [(f"dense={i + 1}", f"top-{v}", {"dense": {"knob_val": i + 1}}) for i, v in enumerate(TOPK_VALUES)]
    rows.append(("dense_dot=2, dense_dot#2=1", "192 dims in f32", {"dense_dot": {"knob_val": 2},
                                                                    "dense_dot#2": {"knob_val": 1}}))
    return rows


def measure(retriever, configs, qs, shared_prep=None, shared_prep_s: float = 0.0) -> list[dict]:
    """Time every configuration (exact first) in interleaved rounds; score its rankings.
    `shared_prep`: the prepared queries when no knob changes them (dense: the query
    vectors, which took `shared_prep_s`); else each configuration prepares its own
    and its whole search is timed too."""
    rows = [("exact", "all knobs 0", {})] + configs
    built = [retriever.build(cfg) for _, _, cfg in rows]
    own_prep = shared_prep is None
    if own_prep:
        prepared = [[s.prepare(q.question) for q in qs] for s in built]
    else:
        prepared = [shared_prep] * len(rows)
    kern = [[] for _ in rows]
    full = [[] for _ in rows]
    for _ in range(ROUNDS + 1):  # round 0 warms up
        for i, s in enumerate(built):
            t0 = CLOCK()
            for p in prepared[i]:
                s.run(p)
            kern[i].append(CLOCK() - t0)
            if own_prep:
                t0 = CLOCK()
                for q in qs:
                    s(q.question)
                full[i].append(CLOCK() - t0)
    exact_hits = [built[0].run(p) for p in prepared[0]]
    out = []
    for i, (label, meaning, _) in enumerate(rows):
        hits = [built[i].run(p) for p in prepared[i]]
        k_t = statistics.median(kern[i][1:])
        f_t = statistics.median(full[i][1:]) if own_prep else shared_prep_s + k_t
        out.append({"knob": label, "meaning": meaning, "kernel_us": k_t / len(qs) * 1e6,
                    "retrieval_us": f_t / len(qs) * 1e6, "rbo": statistics.mean(rbo(h.ids, e.ids) for h, e in
                                                                               zip(hits, exact_hits)),
                    "recall": statistics.mean(recall_at_k(h.ids, q.paragraph) for h, q in zip(hits, qs))})
    for r in out:
        r["kernel_speedup"] = out[0]["kernel_us"] / r["kernel_us"]
        r["retrieval_speedup"] = out[0]["retrieval_us"] / r["retrieval_us"]
    return out


def table(title: str, rows: list[dict], note: str) -> None:
    print(f"\n## {title}\n{note}\n")
    print("| knob | meaning | kernel (us/query) | kernel speedup | retrieval (us/query) | retrieval speedup "
          "| RBO vs exact | recall@k |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['knob']} | {r['meaning']} | {r['kernel_us']:.1f} | {r['kernel_speedup']:.2f}x "
              f"| {r['retrieval_us']:.1f} | {r['retrieval_speedup']:.2f}x | {r['rbo']:.3f} | {r['recall']:.3f} |")


def main() -> dict:
    corpus = list(paragraphs())
    allq = questions()
    rng = np.random.default_rng(SEED)
    qs = [allq[i] for i in sorted(rng.choice(len(allq), N_QUESTIONS, replace=False))]
    common = (f"{len(qs)} SQuAD dev questions (seed {SEED}) over {len(corpus)} paragraphs, top-{TOP_K}; "
              f"median of {ROUNDS} interleaved rounds; recall@k: gold paragraph among the k returned.")

    bm25 = Bm25Retriever(corpus, top_k=TOP_K, top_k_values=TOPK_VALUES)
    for level in (0, 1, 2):
        bm25.index(level)
    b_rows = measure(bm25, bm25_configs(len(corpus)), qs)
    table("retrieval: BM25 (k1 = 1.5, b = 0.75), JIT kernel", b_rows,
          common + " Retrieval = preprocessing + term rows + kernel.")

    import torch

    t0 = time.perf_counter()
    dense = DenseRetriever(corpus, top_k=TOP_K, top_k_values=TOPK_VALUES)
    load_s = time.perf_counter() - t0
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one query per core: on a shared 2-core machine 2 threads ran 15x slower
    try:
        vecs, embed_s = [], []
        dense.encoder.embed(["warm up"])
        for q in qs:
            t0 = CLOCK()
            vecs.append(dense.encoder.embed([q.question])[0])
            embed_s.append(CLOCK() - t0)
    finally:
        torch.set_num_threads(threads)
    d_rows = measure(dense, dense_configs(len(corpus)), qs, shared_prep=vecs, shared_prep_s=sum(embed_s))
    table("retrieval: dense all-MiniLM-L6-v2, JIT similarity kernel", d_rows,
          common + f" Retrieval = MiniLM query embedding on 1 thread ({statistics.mean(embed_s) * 1e3:.1f} ms/query "
          f"mean, timed once per question, the same in every configuration) + kernel. Corpus embeddings "
          f"loaded (or computed and cached) in {load_s:.1f} s.")
    return {"bm25": b_rows, "dense": d_rows, "embed_ms": statistics.mean(embed_s) * 1e3}


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
