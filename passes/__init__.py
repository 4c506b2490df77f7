"""Rewrite passes of the approx pipeline."""
