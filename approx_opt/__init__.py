"""approx-opt: the command line and the compile/execute driver.

`driver.run_pipeline` (parse, set knobs, run passes, print), `parsing.parse_module`
(the parse every caller above the passes uses: large inputs through upstream MLIR's
parser, `upstream_import`, `upstream_convert` and `op_text`, with xDSL's parser as the fallback and the
source of every error), `jit` (lower to LLVM and JIT through upstream MLIR: the
runtime of the frontends and the tuner; the command never executes), `program`
(the `Program` protocol that the tuner tunes, and `MlirProgram` for `.mlir`
files), `main` (the `approx-opt` command), `sources` (inputs other than
MLIR text, which packages above register: `--from-python` is the frontends'),
`universe` (the `xdsl-opt` plugin). Imports `approx_dialect` and `passes`, never
`frontends`, `autotuner`, `examples` or `bench` (tests/test_layers.py)."""
