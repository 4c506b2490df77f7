"""approx-opt: the command line and the compile/execute driver.

`driver.run_pipeline` (parse, set knobs, run passes, print), `execute` (lower to
LLVM and JIT through upstream MLIR), `program` (the `Program` protocol that the
tuner tunes, and `MlirProgram` for `.mlir` files), `main` (the `approx-opt`
command), `universe` (the `xdsl-opt` plugin). Imports `approx_dialect` and
`passes`; only the command's `--from-python` reaches up into `frontends`."""
