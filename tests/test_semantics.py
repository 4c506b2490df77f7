"""The transformed programs, JIT-run through upstream MLIR, compute what each
approximation says (numbers, not only "it differs"), and knob 0 is exact."""

from __future__ import annotations

import numpy as np
import pytest

from approx_dialect import decision_index
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module, static_transform

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal(64)


def jit(text: str, pipeline: str = "approx-pipeline"):
    return compile_module(run_pipeline(text, pipeline))


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 64, 100])
def test_perforation_sums_exactly_the_strided_iterations(k):
    fn = jit(module(SUM_LOOP, static_transform("sum", "loop_perforate", k))).fn("sum")
    n = 37
    want = DATA[:n].sum() if k <= 1 else DATA[:n][::k].sum()
    assert fn(DATA, n) == pytest.approx(want, rel=0, abs=1e-12)


THRESHOLDS, DECISIONS = [5, 9], [0, 2, 3]
LADDER = module(
    STATE_OF_N, SUM_LOOP, decision_tree("sum", "loop_perforate", "state", THRESHOLDS, DECISIONS, state_indices=(1,))
)


@pytest.mark.parametrize("n", [0, 4, 5, 6, 8, 9, 10, 31])
def test_decision_tree_takes_the_decision_of_the_state_interval(n):
    """state == threshold takes the upper region (5 -> stride 2, 9 -> stride 3)."""
    fn = jit(LADDER).fn("sum")
    stride = DECISIONS[decision_index(n, THRESHOLDS)]
    want = DATA[:n].sum() if stride <= 1 else DATA[:n][::stride].sum()
    assert fn(DATA, n) == pytest.approx(want, abs=1e-12)
    assert decision_index(5, THRESHOLDS) == 1 and decision_index(9, THRESHOLDS) == 2


SQUARE = """
  func.func @f(%x: f64, %n: i32) -> f64 {
    %y = arith.mulf %x, %x : f64
    return %y : f64
  }
  func.func @approx_f_1(%x: f64, %n: i32) -> f64 {
    %c = arith.constant 1.0 : f64
    %y = arith.addf %x, %c : f64
    return %y : f64
  }
  func.func @approx_f_2(%x: f64, %n: i32) -> f64 {
    %c = arith.constant 2.0 : f64
    %y = arith.addf %x, %c : f64
    return %y : f64
  }
  func.func @state(%n: i32) -> i32 {
    return %n : i32
  }
"""
CONVERT = '"approx.util.annotation.convert_to_call"() <{func_name = "f"}> : () -> ()'


@pytest.mark.parametrize("k, want", [(0, 9.0), (1, 4.0), (2, 5.0)])
def test_static_substitution_calls_approx_f_k(k, want):
    fn = jit(module(SQUARE, CONVERT, static_transform("f", "func_substitute", k))).fn("f")
    assert fn(3.0, 0) == want


@pytest.mark.parametrize("n, want", [(0, 9.0), (2, 9.0), (3, 4.0), (6, 4.0), (7, 5.0), (50, 5.0)])
def test_dynamic_substitution_follows_the_ladder(n, want):
    text = module(SQUARE, CONVERT,
                  decision_tree("f", "func_substitute", "state", [3, 7], [0, 1, 2], state_indices=(1,)))
    assert jit(text).fn("f")(3.0, n) == want


TRY = """
  func.func @f(%x: f64) -> f64 {
    %y = arith.mulf %x, %x : f64
    return %y : f64
  }
  func.func @small(%r: f64, %x: f64) -> i1 {
    %lim = arith.constant 100.0 : f64
    %ok = arith.cmpf olt, %r, %lim : f64
    return %ok : i1
  }
  func.func @fallback(%x: f64) -> f64 {
    %m = arith.constant -1.0 : f64
    return %m : f64
  }
"""


@pytest.mark.parametrize("recover, checker", [("fallback", "small"), ("@fallback", "@small")])
def test_try_keeps_good_results_and_recovers_bad_ones(recover, checker):
    ann = ('"approx.util.annotation.try"() '
           f'<{{func_name = "f", recover = "{recover}", checker = "{checker}"}}> : () -> ()')
    fn = jit(module(TRY, ann)).fn("f")
    assert fn(3.0) == 9.0
    assert fn(9.99) == pytest.approx(99.8001)
    assert fn(10.0) == -1.0
    assert fn(-20.0) == -1.0


TASKS = """
  func.func @tasks(%m: memref<3xf64>, %sel: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %one = arith.constant 1.0 : f64
    %is0 = arith.cmpi eq, %sel, %c0 : index
    scf.if %is0 {
      memref.store %one, %m[%c0] : memref<3xf64>
    } else {
      %is1 = arith.cmpi eq, %sel, %c1 : index
      scf.if %is1 {
        memref.store %one, %m[%c1] : memref<3xf64>
      } else {
        memref.store %one, %m[%c2] : memref<3xf64>
      }
    }
    return
  }
"""


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
def test_task_skipping_runs_branch_k_or_none(k):
    fn = jit(module(TASKS, static_transform("tasks", "task_skipping", k))).fn("tasks")
    for sel in range(3):
        m = np.zeros(3)
        fn(m, sel)
        want = np.zeros(3)
        if k == 0:
            want[sel] = 1.0  # exact: the branch the input selects
        elif k <= 3:
            want[k - 1] = 1.0  # branch k, whatever the input
        assert (m == want).all(), (k, sel, m)


# Knob 0 is exact: every transformation, static and through a decision tree whose
# decisions are all 0, gives bit-identical results to the unannotated program.
EXACT_CASES = {
    "loop_perforate": (module(SUM_LOOP), "sum", lambda: (DATA, 41)),
    "func_substitute": (module(SQUARE), "f", lambda: (1.7, 5)),
}


@pytest.mark.parametrize("transform", sorted(EXACT_CASES))
def test_knob_zero_is_exact_static_and_dynamic(transform):
    base, func, args = EXACT_CASES[transform]
    plain = jit(base, "").fn(func)(*args())
    extra = [CONVERT] if transform == "func_substitute" else []
    static = module(base.strip()[len("module {"):-1], *extra, static_transform(func, transform, 0))
    state_fn = "" if "@state" in base else STATE_OF_N
    idx = (1,)
    dynamic = module(base.strip()[len("module {"):-1], state_fn, *extra,
                     decision_tree(func, transform, "state", [3], [0, 0], state_indices=idx, values=[0, 1, 2]))
    for text in (static, dynamic):
        assert jit(text).fn(func)(*args()) == plain


def test_task_skipping_knob_zero_is_exact():
    plain = jit(module(TASKS), "").fn("tasks")
    annotated = jit(module(TASKS, static_transform("tasks", "task_skipping", 0))).fn("tasks")
    for sel in range(3):
        a, b = np.zeros(3), np.zeros(3)
        plain(a, sel)
        annotated(b, sel)
        assert (a == b).all()


def test_try_with_passing_checker_is_exact():
    ann = '"approx.util.annotation.try"() <{func_name = "f", recover = "fallback", checker = "small"}> : () -> ()'
    plain = jit(module(TRY), "").fn("f")
    guarded = jit(module(TRY, ann)).fn("f")
    for x in RNG.uniform(-9.9, 9.9, 20):
        assert guarded(x) == plain(x)


def test_two_decisions_on_one_function_are_a_clear_error():
    first = decision_tree("sum", "loop_perforate", "state", [10], [0, 2], state_indices=(1,), values=[0, 2, 4])
    second = decision_tree("sum", "loop_perforate", "state", [20], [0, 4], state_indices=(1,), values=[0, 2, 4])
    with pytest.raises(ApproxError, match="'sum' already has a decision tree; a knob takes one decision"):
        run_pipeline(module(STATE_OF_N, SUM_LOOP, first, second), "approx-pipeline")


def test_hand_written_nested_decisions_are_lowered_case_by_case():
    """Two decides in one knob written directly in the IR: the second is cloned
    into every case of the first and lowered there (no crash, no decide left)."""
    text = run_pipeline(module(STATE_OF_N, SUM_LOOP, decision_tree("sum", "loop_perforate", "state", [10], [0, 2],
                                                                   state_indices=(1,), values=[0, 2])),
                        "emit-approx,emit-management")
    decide_line = next(line for line in text.splitlines() if '"approx.decide"' in line)
    start = text.index(decide_line)
    end = text.index("}) : (index) -> ()", start) + len("}) : (index) -> ()")
    doubled = text[:end] + "\n" + text[start:end] + text[end:]
    out = run_pipeline(doubled, "config-approx")
    assert "approx.decide" not in out
    assert out.count("scf.index_switch") == 3
