"""BFCL v4 questions for the tool-calling systems: the split, the QoS and what their
tuning run takes besides (the "kept" candidates, the row's facts: registry.py).

Split, fixed here in code: in each category (simple_python, multiple, parallel)
the first DEV_FRACTION of the items (in file order) is the development split,
on which the agent's heuristics and constants were chosen by hand; tuning and
evaluation questions are drawn from the rest only, disjoint, stratified by
category (each split has the categories' shares of the pool), evaluation = 5x
tuning, by a seeded permutation.

The agent sees a `ToolQuery` (the request and the item's function
descriptions), never the ground truth; QoS is BFCL's AST check of its calls
against the item's possible answers (`frontends.components.tools`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from approx_dialect.diagnostics import ApproxError
from frontends.components.tools import BfclItem, load_bfcl

CATEGORIES = ("simple_python", "multiple", "parallel")
DEV_FRACTION = 0.3


@dataclass(frozen=True)
class ToolQuery:
    """What the agent is given: the user's request and the candidate functions."""

    id: str
    question: str
    functions: tuple[dict, ...]


def query_of(item: BfclItem) -> ToolQuery:
    return ToolQuery(item.id, item.question, item.functions)


def dev_items(category: str) -> tuple[BfclItem, ...]:
    items = load_bfcl(category)
    return items[: int(DEV_FRACTION * len(items))]


def pool_items(category: str) -> tuple[BfclItem, ...]:
    items = load_bfcl(category)
    return items[int(DEV_FRACTION * len(items)):]


def split(n_tune: int, seed: int = 0, eval_ratio: int = 5) -> tuple[list[BfclItem], list[BfclItem]]:
    """(tuning items, evaluation items): disjoint, from the pool, stratified by category,
    len(eval) = eval_ratio * len(tune)."""
    tune, evaluation, _ = _split3(n_tune, seed, eval_ratio)
    return tune, evaluation


def query_sets(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """((requests, items) to tune on, (requests, items) held out) of `split`, the
    held-out part n_eval // n_tune (default 5) times the tuning part."""
    tune, evaluation = split(n_tune, seed, (n_eval or 5 * n_tune) // n_tune)
    return ([query_of(i) for i in tune], tune), ([query_of(i) for i in evaluation], evaluation)


def kept_candidates(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """(requests, items) tried in this order for "kept" tuning: the tuning items of
    `query_sets(n_tune, seed, n_eval)`, then the pool items in neither of its parts."""
    eval_ratio = (n_eval or 5 * n_tune) // n_tune
    items = split(n_tune, seed, eval_ratio)[0] + spare_items(n_tune, seed, eval_ratio)
    return [query_of(i) for i in items], items


def spare_items(n_tune: int, seed: int = 0, eval_ratio: int = 5) -> list[BfclItem]:
    """The pool items in neither part of `split(n_tune, seed, eval_ratio)`, seeded order:
    more tuning candidates that leave the evaluation items as they are."""
    return _split3(n_tune, seed, eval_ratio)[2]


def _split3(n_tune: int, seed: int, eval_ratio: int) -> tuple[list[BfclItem], list[BfclItem], list[BfclItem]]:
    pools = {c: pool_items(c) for c in CATEGORIES}
    total = sum(len(p) for p in pools.values())
    if n_tune < 1 or n_tune * (1 + eval_ratio) > total:
        raise ApproxError(f"n_tune must be in 1..{total // (1 + eval_ratio)} ({total} pool items, "
                          f"evaluation = {eval_ratio}x tuning), got {n_tune}", where="tools split")
    tune, evaluation, spare = [], [], []
    want_tune = _shares(n_tune, [len(pools[c]) for c in CATEGORIES])
    want_eval = _shares(eval_ratio * n_tune, [len(pools[c]) for c in CATEGORIES])
    for k, c in enumerate(CATEGORIES):
        order = np.random.default_rng([seed, k]).permutation(len(pools[c]))
        picked = [pools[c][i] for i in order]
        tune += picked[:want_tune[k]]
        evaluation += picked[want_tune[k]:want_tune[k] + want_eval[k]]
        spare += picked[want_tune[k] + want_eval[k]:]
    mix = lambda xs, s: [xs[i] for i in np.random.default_rng(s).permutation(len(xs))]  # noqa: E731
    return mix(tune, [seed, 7]), mix(evaluation, [seed, 8]), mix(spare, [seed, 9])


def _shares(n: int, sizes: list[int]) -> list[int]:
    """n split in proportion to sizes (largest remainders), every share >= 1 when n allows."""
    total = sum(sizes)
    raw = [n * s / total for s in sizes]
    out = [int(r) for r in raw]
    for i in sorted(range(len(sizes)), key=lambda i: -(raw[i] - out[i]))[: n - sum(out)]:
        out[i] += 1
    return out


def ast_match(calls: list[dict], item: BfclItem) -> float:
    """The QoS of one answer: 1 when BFCL's AST checker accepts the calls."""
    return 1.0 if item.check(calls) else 0.0


def row_facts(items, scores) -> dict:
    """What a tools agent's bench row adds: the exact agent's QoS by BFCL category."""
    return {"qos_exact_by_category": accuracy_by_category(items, scores)}


def accuracy_by_category(items, scores) -> dict[str, float]:
    """Mean AST score per category of `items` (`scores`: ast_match per item)."""
    out: dict[str, list[float]] = {}
    for item, score in zip(items, scores):
        out.setdefault(item.category, []).append(score)
    return {c: float(np.mean(v)) for c, v in out.items()}
