"""Optuna search over knobs and the Pareto report (issue 5)."""
