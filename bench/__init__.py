"""Benchmarks: each script measures one part of the toolchain and answers `--help`;
`run_all.py` is `make bench`. Users of the toolchain's public names only
(tests/test_layers.py)."""
