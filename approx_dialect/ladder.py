"""The decision ladder shared by `approx.decide` and the `decision_tree` annotation:
thresholds t_0 <= ... <= t_{n-1}, decisions d_0 .. d_n; a state s takes
decisions[#{i : s >= t_i}], so a state equal to a threshold takes the upper side.
As in ApproxMLIR, `decision_values` is the range [min, max] the tuner searches,
and the decisions are taken as given (one outside that range is only a warning)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from xdsl.utils.exceptions import VerifyException

from approx_dialect.diagnostics import warn


def decision_index(state: int, thresholds: Sequence[int]) -> int:
    """Number of thresholds t with state >= t (thresholds sorted ascending)."""
    return bisect_right(list(thresholds), state)


def _values(attr) -> list[int]:
    return list(attr.get_values())


def verify_threshold_bounds(t: int, k: int, lowers: Sequence[int], uppers: Sequence[int], what: str) -> None:
    """Threshold `t` lies within the bounds of index `k` (one bound for all, or one
    per index): the ladder and the decision tree bound their thresholds alike."""
    lo = lowers[k if len(lowers) > 1 else 0] if lowers else None
    hi = uppers[k if len(uppers) > 1 else 0] if uppers else None
    if (lo is not None and t < lo) or (hi is not None and t > hi):
        raise VerifyException(f"{what} is outside its range [{lo}, {hi}] (thresholds_lowers, thresholds_uppers)")


def verify_ladder(op) -> None:
    """Check the ladder properties of `op` (decide op or decision_tree annotation)."""
    thresholds = _values(op.thresholds)
    decisions = _values(op.decisions)
    lowers = _values(op.thresholds_lowers)
    uppers = _values(op.thresholds_uppers)
    values = _values(op.decision_values)
    n = op.num_thresholds.value.data
    if n != len(thresholds):
        raise VerifyException(
            f"num_thresholds is {n} but {len(thresholds)} thresholds are given"
        )
    if len(decisions) != len(thresholds) + 1:
        raise VerifyException(
            f"{len(thresholds)} thresholds need {len(thresholds) + 1} decisions "
            f"(len(decisions) == len(thresholds) + 1), got {len(decisions)}"
        )
    if any(b < a for a, b in zip(thresholds, thresholds[1:])):
        raise VerifyException(f"thresholds must be ascending, got {thresholds}")
    for name, bounds in (("thresholds_lowers", lowers), ("thresholds_uppers", uppers)):
        if len(bounds) not in (1, len(thresholds)) and thresholds:
            raise VerifyException(
                f"{name} has {len(bounds)} entries; give one, or one per threshold "
                f"({len(thresholds)})"
            )
    for i, t in enumerate(thresholds):
        verify_threshold_bounds(t, i, lowers, uppers, f"threshold {i} = {t}")
    if not values:
        raise VerifyException("decision_values is empty; list the allowed knob values")
    if any(d < 0 for d in decisions):
        raise VerifyException(f"decisions must be >= 0 (0 is exact), got {decisions}")
    outside = [d for d in decisions if not min(values) <= d <= max(values)]
    if outside:  # as in ApproxMLIR, whose compiler takes the decisions as given
        warn(f"decision {outside[0]} is outside the range {min(values)}..{max(values)} of decision_values "
             "that the tuner searches", op)
    if any(v < 0 for v in values):
        raise VerifyException(f"decision_values must be >= 0 (0 is exact), got {values}")
