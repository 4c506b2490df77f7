// RUN: approx-opt %s -p emit-approx,emit-management | filecheck %s
// RUN: approx-opt %s -p approx-pipeline | filecheck %s --check-prefix=FULL

// The decision_tree_multi annotation becomes an approx.decide_tree at the start of
// the knob, its state region calling the state function on the arguments at
// state_indices (here %n and %m, in that order); the pipeline leaves no approx op.
module {
  func.func @sum(%buf: memref<?xf64>, %n: index, %m: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
      %v = memref.load %buf[%i] : memref<?xf64>
      %s = arith.addf %acc, %v : f64
      scf.yield %s : f64
    }
    return %r : f64
  }
  func.func @feat(%n: index, %m: index) -> (i32, i32) {
    %a = arith.index_cast %n : index to i32
    %b = arith.index_cast %m : index to i32
    return %a, %b : i32, i32
  }
  "approx.util.annotation.decision_tree_multi"() <{func_name = "sum", transform_type = "loop_perforate", state_indices = array<i64: 1, 2>, state_function = "feat", num_features = 2 : i32, tree_features = array<i32: 0, -1, -1>, tree_thresholds = array<i32: 100, 0, 0>, tree_left = array<i32: 1, -1, -1>, tree_right = array<i32: 2, -1, -1>, tree_decisions = array<i32: 0, 0, 4>, thresholds_lowers = array<i32>, thresholds_uppers = array<i32>, decision_values = array<i32: 0, 4>}> : () -> ()
}

// CHECK:      func.func @sum(%buf: memref<?xf64>, %n: index, %m: index) -> f64 {
// CHECK-NEXT:   %0 = "approx.knob"(%buf, %n, %m)
// CHECK-NEXT:     "approx.decide_tree"(%n, %m) <{num_features = 2 : i32, tree_features = array<i32: 0, -1, -1>, tree_thresholds = array<i32: 100, 0, 0>, tree_left = array<i32: 1, -1, -1>, tree_right = array<i32: 2, -1, -1>, tree_decisions = array<i32: 0, 0, 4>, thresholds_lowers = array<i32>, thresholds_uppers = array<i32>, decision_values = array<i32: 0, 4>, transform_type = "loop_perforate"}> ({
// CHECK-NEXT:     ^{{.*}}(%[[A:.*]]: index, %[[B:.*]]: index):
// CHECK-NEXT:       %[[F0:.*]], %[[F1:.*]] = func.call @feat(%[[A]], %[[B]]) : (index, index) -> (i32, i32)
// CHECK-NEXT:       approx.yield %[[F0]], %[[F1]] : i32, i32
// CHECK-NEXT:     }) : (index, index) -> ()
// CHECK-NOT:  approx.util.annotation

// FULL:       func.func @sum(
// FULL:         func.call @feat
// FULL:         arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// FULL:         scf.index_switch
// FULL:         case 0 {
// FULL:         default {
// FULL:           arith.muli
// FULL-NOT:   approx.
