// RUN: approx-opt %s --split-input-file -p approx-pipeline 2>/dev/null | filecheck %s
// RUN: approx-opt %s --split-input-file -p approx-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

// Programs in the conventions of ApproxMLIR's test/approxMLIR/*.mlir (our own, small).
// As in base1.mlir: a bare result type after iter_args, and decisions [1, 2] with
// decision_values [0, 1] (the range the tuner searches; a decision outside it warns).
// WARN: approxmlir_conventions.mlir:[[# @LINE + 2]]:1: warning: decision 2 is outside the range 0..1 of decision_values
"approx.util.annotation.knob"() <{func_name = "total"}> : () -> ()
"approx.util.annotation.decision_tree"() <{
    func_name = "total",
    transform_type = "loop_perforate",
    state_indices = array<i64: 0>,
    state_function = "size_state",
    num_thresholds = 1 : i32,
    thresholds_uppers = array<i32: 100>,
    thresholds_lowers = array<i32: 0>,
    decision_values = array<i32: 0, 1>,
    thresholds = array<i32: 50>,
    decisions = array<i32: 1, 2>
}> : () -> ()
func.func @size_state(%n: i32) -> i32 {
  return %n : i32
}
func.func @total(%n: i32, %xs: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %end = arith.index_cast %n : i32 to index
  %sum = scf.for %i = %c0 to %end step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %xs[%i] : memref<?xf32>
    %next = arith.addf %acc, %v : f32
    scf.yield %next : f32
  }
  return %sum : f32
}

// CHECK-LABEL: func.func @total(
// CHECK:         %[[S:.*]] = func.call @size_state(%{{.*}}) : (i32) -> i32
// CHECK:         scf.index_switch
// CHECK-NOT:     approx.

// -----

// As in loop2.mlir: no state_indices or state_function; the state is the last argument.
"approx.util.annotation.knob"() <{func_name = "pick"}> : () -> ()
"approx.util.annotation.decision_tree"() <{decision_values = array<i32: 0, 1>, decisions = array<i32: 0, 2>, func_name = "pick", num_thresholds = 1 : i32, thresholds = array<i32: 2>, thresholds_lowers = array<i32: 0>, thresholds_uppers = array<i32: 4>, transform_type = "task_skipping"}> : () -> ()
func.func @pick(%out: memref<1xf32>, %x: f32, %state: i32) {
  %c0 = arith.constant 0 : index
  %big = arith.constant 1.0 : f32
  %c = arith.cmpf ogt, %x, %big : f32
  scf.if %c {
    memref.store %x, %out[%c0] : memref<1xf32>
  }
  return
}

// CHECK-LABEL: func.func @pick(
// CHECK-SAME:    %{{.*}}: memref<1xf32>, %{{.*}}: f32, %[[STATE:[a-z]+]]: i32)
// CHECK:         arith.cmpi sge, %[[STATE]]
// CHECK-NOT:     approx.

// -----

// As in loopwithcontrol.mlir: `scf.if %c -> f32` without parentheses, affine loops.
func.func @row_max(%m: memref<4x4xf32>, %out: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %a = affine.load %m[%i, 0] : memref<4x4xf32>
    %b = affine.load %m[%i, 1] : memref<4x4xf32>
    %gt = arith.cmpf ogt, %a, %b : f32
    %pick = scf.if %gt -> f32 {
      scf.yield %a : f32
    } else {
      scf.yield %b : f32
    }
    affine.store %pick, %out[%i] : memref<4xf32>
  }
  return
}

// CHECK-LABEL: func.func @row_max(
// CHECK:         scf.if %{{.*}} -> (f32) {
