"""Per-task QoS metrics: quality of one output against one reference, in [0, 1].

A dataset's QoS is the mean over its inputs. The reference is the ground truth
when one is given, else the exact program's output. Definitions as ApproxMLIR
uses them: answer containment with SQuAD's normalisation for QA (whole words:
gold "V" is not in "vehicles"), 1 - relative L2
error for numeric kernels, rank-biased overlap (p = 0.95) for rankings.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from approx_dialect.diagnostics import ApproxError
from frontends.components.retrieval.metrics import rbo  # ranking QoS: one definition, beside recall@k

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: Any) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    s = str(text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def _answers(reference: Any) -> list[str]:
    if isinstance(reference, (list, tuple, set)):
        return [normalize_answer(r) for r in reference]
    return [normalize_answer(reference)]


def containment(output: Any, reference: Any) -> float:
    """1 when a gold answer (any of a list) appears in the normalised output."""
    out = f" {normalize_answer(output)} "
    return float(any(a and f" {a} " in out for a in _answers(reference)))


def token_f1(output: Any, reference: Any) -> float:
    """SQuAD's token F1 between the normalised output and the best gold answer."""
    pred = normalize_answer(output).split()
    best = 0.0
    for gold in _answers(reference):
        g = gold.split()
        if not pred or not g:
            best = max(best, float(pred == g))
            continue
        common = sum((Counter(pred) & Counter(g)).values())
        if common:
            precision, recall = common / len(pred), common / len(g)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def exact_match(output: Any, reference: Any) -> float:
    """1 when equal: strings after normalisation, arrays element-wise, else `==`."""
    if isinstance(output, str) or isinstance(reference, str):
        return float(normalize_answer(output) in _answers(reference))
    try:
        return float(np.array_equal(np.asarray(output), np.asarray(reference)))
    except (TypeError, ValueError):
        return float(output == reference)


def _flat(x: Any) -> np.ndarray:
    if isinstance(x, tuple):
        return np.concatenate([_flat(v) for v in x]) if x else np.zeros(0)
    return np.asarray(x, dtype=np.float64).ravel()


def rel_l2(output: Any, reference: Any) -> float:
    """1 - ||y - y_ref||_2 / ||y_ref||_2 (tuples of results flattened together),
    clipped to [0, 1]; NaN or a shape change counts as 0."""
    y, r = _flat(output), _flat(reference)
    if y.shape != r.shape:
        return 0.0
    norm = float(np.linalg.norm(r))
    err = float(np.linalg.norm(y - r))
    if not math.isfinite(err):
        return 0.0
    if norm == 0.0:
        return 1.0 if err == 0.0 else 0.0
    return max(0.0, 1.0 - err / norm)


BUILTIN: dict[str, Callable[[Any, Any], float]] = {
    "containment": containment,
    "exact_match": exact_match,
    "token_f1": token_f1,
    "rel_l2": rel_l2,
    "rbo": rbo,
}


@dataclass(frozen=True)
class Metric:
    """A named per-item quality function; `quality(outputs, references)` gives the
    per-input scores (NaN and errors of a user metric count as 0)."""

    name: str
    fn: Callable[[Any, Any], float]

    def scores(self, outputs: Sequence, references: Sequence) -> np.ndarray:
        out = np.empty(len(outputs))
        for i, (o, r) in enumerate(zip(outputs, references)):
            try:
                v = float(self.fn(o, r))
            except ApproxError:
                raise
            except Exception as err:
                raise ApproxError(f"QoS metric '{self.name}' failed on input {i}: "
                                  f"{type(err).__name__}: {err}", where="<metric>") from None
            out[i] = v if math.isfinite(v) else 0.0
        return out


def get_metric(metric: str | Callable | Metric) -> Metric:
    """A builtin by name (containment, exact_match, rel_l2, rbo), or a user callable
    `f(output, reference) -> float in [0, 1]`."""
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str):
        if metric not in BUILTIN:
            raise ApproxError(f"unknown QoS metric '{metric}' (builtin: {', '.join(BUILTIN)}; "
                              "or pass a callable f(output, reference) -> [0, 1])", where="<metric>")
        return Metric(metric, BUILTIN[metric])
    if callable(metric):
        return Metric(getattr(metric, "__name__", "custom"), metric)
    raise ApproxError(f"a QoS metric is a name or a callable, got {type(metric).__name__}", where="<metric>")
