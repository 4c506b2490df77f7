"""Compound AI systems and kernels built with the toolchain."""
