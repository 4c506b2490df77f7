// A kernel in ApproxMLIR's annotation format: `@mean` averages n samples.
// The decision tree reads the state `@size(n)`: below 1000 samples the loop is
// exact; from 1000 it runs every 2nd sample, from 100000 every 8th (each
// perforated loop also counts what it visits, so the mean stays unbiased).
// Run: approx-opt examples/mlir/adaptive_sum.mlir -p approx-pipeline
module {
  "approx.util.annotation.decision_tree"() <{
    func_name = "mean", transform_type = "loop_perforate",
    state_indices = array<i64: 1>, state_function = "size",
    num_thresholds = 2 : i32,
    thresholds_uppers = array<i32: 1000000>, thresholds_lowers = array<i32: 1>,
    decision_values = array<i32: 0, 2, 4, 8>,
    thresholds = array<i32: 1000, 100000>, decisions = array<i32: 0, 2, 8>
  }> : () -> ()

  func.func @size(%n: index) -> i32 {
    %c = arith.index_cast %n : index to i32
    return %c : i32
  }

  func.func @mean(%x: memref<?xf64>, %n: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f64
    %one = arith.constant 1.0 : f64
    %sum, %count = scf.for %i = %c0 to %n step %c1 iter_args(%s = %zero, %k = %zero) -> (f64, f64) {
      %v = memref.load %x[%i] : memref<?xf64>
      %s2 = arith.addf %s, %v : f64
      %k2 = arith.addf %k, %one : f64
      scf.yield %s2, %k2 : f64, f64
    }
    %m = arith.divf %sum, %count : f64
    return %m : f64
  }
}
