"""Every recorded row says how to rebuild it, and that recipe loads: the metric and
the held-out inputs that `approx-tune verify` reads from it name functions that
exist (a renamed module had left the tools rows pointing at a missing metric)."""

from __future__ import annotations

import json

import pytest

from autotuner.loading import load_object
from bench import results


def recorded_rows() -> list[tuple[str, dict]]:
    data = json.loads(results.JSON_PATH.read_text())
    return [(f"{table}.{name}", row) for table in ("systems", "gpu_systems")
            for name, row in (data.get(table) or {}).items() if row]


@pytest.mark.parametrize("name, row", recorded_rows(), ids=[n for n, _ in recorded_rows()])
def test_a_rows_metric_and_held_out_inputs_load(name, row):
    assert row.get("metric") and row.get("held_out"), f"{name} does not say how to rebuild it"
    assert load_object(row["metric"], "QoS metric") is not None
    assert callable(load_object(row["held_out"]["inputs"], "inputs"))
