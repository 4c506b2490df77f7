"""approx-opt: the command line and the compile/execute driver."""
