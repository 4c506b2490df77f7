"""QoS metrics, the QoS-loss definition, splits, and the Pareto helpers."""

from __future__ import annotations

import numpy as np
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from autotuner.measure import Measurer
from autotuner.metrics import containment, exact_match, get_metric, normalize_answer, rbo, rel_l2, token_f1
from autotuner.pareto import dominates, hypervolume, pareto_indices
from autotuner.settings import Cost
from autotuner.splits import split_inputs
from bench.dots_kernel import kernel_inputs, kernel_text


def test_squad_normalisation_and_containment():
    assert normalize_answer("The  Eiffel-Tower, in PARIS!") == "eiffeltower in paris"
    assert containment("It was built in 1889 by Eiffel.", "1889") == 1.0
    assert containment("It was built in 18890.", "1889") == 0.0  # whole words only
    assert containment("Paris, France", ["Lyon", "paris"]) == 1.0
    assert exact_match("the Answer.", "answer") == 1.0
    assert exact_match(np.array([1, 2]), np.array([1, 2])) == 1.0 and exact_match(3, 4) == 0.0


def test_containment_is_whole_words_everywhere():
    """One answer-containment definition: a gold answer inside a longer word is not contained
    (plain substring matching called gold "V" contained in "vehicles")."""
    assert containment("electric vehicles", ("V",)) == 0.0
    assert containment("Super Bowl V", ("V",)) == 1.0
    assert containment("Denver Broncos", ("Broncos",)) == 1.0
    assert containment("the Broncoss", ("Broncos",)) == 0.0
    import examples.squad as squad
    from examples.systems import common

    assert not hasattr(squad, "contains_answer") and not hasattr(squad, "normalize_answer")
    assert common.answer_qos("electric vehicles", ("V",)) == 0.0  # held-out QoS of the RAG systems


def test_token_f1():
    assert token_f1("the Denver Broncos", "Denver Broncos") == 1.0
    assert token_f1("Broncos", ["Denver Broncos", "x"]) == 2 * (1 * 0.5) / 1.5
    assert token_f1("", "") == 1.0 and token_f1("a", "b") == 0.0


def test_relative_l2():
    assert rel_l2(np.array([3.0, 4.0]), np.array([3.0, 4.0])) == 1.0
    assert rel_l2(np.array([3.0, 4.5]), np.array([3.0, 4.0])) == pytest.approx(0.9)
    assert rel_l2((1.0, 2.0), (1.0, 2.0)) == 1.0 and rel_l2(float("nan"), 1.0) == 0.0
    assert rel_l2(10.0, 1.0) == 0.0  # clipped
    assert rel_l2(np.zeros(3), np.zeros(2)) == 0.0  # a shape change


def test_rank_biased_overlap():
    assert rbo([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert rbo([1, 2, 3], [4, 5, 6]) == 0.0
    # one swap at the bottom of 3 costs less than one at the top
    assert 1.0 > rbo([1, 2, 3], [1, 3, 2]) > rbo([1, 2, 3], [2, 1, 3]) > 0.9
    # Webber's extrapolated RBO for depth 2, p = 0.95: (1-p)/p*(0/1*p + 2/2*p^2) + 1*p^2 = 0.9975
    assert rbo(["a", "b"], ["b", "a"]) == pytest.approx(0.05 * 0.95 + 0.95**2)
    assert 0 < rbo([1, 2], [1, 2, 3, 4]) <= 1.0


def test_metric_lookup_errors():
    assert get_metric("rbo").name == "rbo"
    assert get_metric(lambda o, r: 1.0).name == "<lambda>"
    with pytest.raises(ApproxError, match="unknown QoS metric 'f1'"):
        get_metric("f1")


def test_qos_loss_is_relative_to_the_exact_programs_quality():
    program = MlirProgram(kernel_text(1), "main", "dot.mlir")
    inputs = kernel_inputs(4, 4000, knobs=1)
    exact = [program.build({})(*x) for x in inputs]
    # ground truth the exact program gets right on 3 of 4 inputs: QoS_exact = 0.75
    refs = [e if i else -e for i, e in enumerate(exact)]  # -e: error 2|e|, QoS 0
    m = Measurer(program, inputs, refs, "rel_l2", Cost(clock="wall", timing="paired", repeats=1))
    assert m.exact_scores.mean() == pytest.approx(0.75)
    got = m.measure(program.build({"d1": {"knob_val": 8}}), {"d1": {"knob_val": 8}})
    approx_q = np.mean([rel_l2(program.build({"d1": {"knob_val": 8}})(*x), r) for x, r in zip(inputs, refs)])
    assert got.qos_loss == pytest.approx((0.75 - approx_q) / 0.75)
    assert got.speedup > 0 and got.n == 4
    no_refs = Measurer(program, inputs, None, "rel_l2", Cost(clock="wall", timing="paired", repeats=1))
    assert no_refs.measure(no_refs.exact_fn, {}).qos_loss == 0.0


def test_split_is_disjoint_seeded_and_five_to_one():
    inputs = list(range(60))
    (t, tr), (e, er) = split_inputs(inputs, [x * 10 for x in inputs], 5.0, seed=3)
    assert len(t) == 10 and len(e) == 50 and not set(t) & set(e) and sorted(t + e) == inputs
    assert tr == [x * 10 for x in t] and er == [x * 10 for x in e]
    assert split_inputs(inputs, None, 5.0, seed=3)[0][0] == t
    assert split_inputs(inputs, None, 5.0, seed=4)[0][0] != t
    with pytest.raises(ApproxError, match="at least 2 inputs"):
        split_inputs([1], None, 5.0, 0)


def test_pareto_helpers():
    pts = [(0.0, 1.0), (0.01, 2.0), (0.02, 1.5), (0.03, 3.0), (0.03, 3.0), (0.2, 9.0)]
    assert pareto_indices(pts) == [0, 1, 3, 5]
    assert dominates((0.01, 2.0), (0.02, 1.5)) and not dominates((0.03, 3.0), (0.03, 3.0))
    # within budget 0.05 above speedup 1: (0.05-0.01)*1 + (0.05-0.03)*1 = 0.06
    assert hypervolume(pts, 0.05) == pytest.approx(0.06)
    assert hypervolume([], 0.05) == 0.0
