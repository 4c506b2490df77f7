"""Compound AI systems and kernels built with the toolchain: users of its public
names only (tests/test_layers.py checks that nothing private is imported)."""
