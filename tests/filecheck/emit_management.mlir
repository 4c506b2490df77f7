// RUN: approx-opt %s -p emit-approx,emit-management | filecheck %s

// decision_tree -> approx.decide with a state region calling the state function;
// try -> approx.try before the yield, its check region calling the checker.
module {
  func.func @state(%n: i32) -> i32 {
    return %n : i32
  }
  func.func @ok(%r: i32, %x: i32, %n: i32) -> i1 {
    %t = arith.constant true
    return %t : i1
  }
  func.func @rec(%x: i32, %n: i32) -> i32 {
    return %x : i32
  }
  "approx.util.annotation.decision_tree"() <{func_name = "f", transform_type = "loop_perforate", state_indices = array<i64: 1>, state_function = "state", num_thresholds = 2 : i32, thresholds_uppers = array<i32: 100>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 1, 2, 3>, thresholds = array<i32: 10, 20>, decisions = array<i32: 0, 2, 3>}> : () -> ()
  "approx.util.annotation.try"() <{func_name = "f", recover = "@rec", checker = "ok"}> : () -> ()
  func.func @f(%x: i32, %n: i32) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%a = %x) -> (i32) {
      %b = arith.addi %a, %n : i32
      scf.yield %b : i32
    }
    return %r : i32
  }
}

// CHECK-NOT: approx.util.annotation
// CHECK:      func.func @f(%x: i32, %n: i32) -> i32 {
// CHECK-NEXT:   %0 = "approx.knob"(%x, %n)
// CHECK-NEXT:     "approx.decide"(%n) <{num_thresholds = 2 : i32, thresholds_uppers = array<i32: 100>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 1, 2, 3>, thresholds = array<i32: 10, 20>, decisions = array<i32: 0, 2, 3>, transform_type = "loop_perforate"}> ({
// CHECK-NEXT:     ^{{.*}}(%[[S:.*]]: i32):
// CHECK-NEXT:       %[[V:.*]] = func.call @state(%[[S]]) : (i32) -> i32
// CHECK-NEXT:       approx.yield %[[V]] : i32
// CHECK-NEXT:     }) : (i32) -> ()
// CHECK:          %r = scf.for
// CHECK:          "approx.try"(%x, %n) <{recover = "rec"}> ({
// CHECK-NEXT:     ^{{.*}}(%[[A:.*]]: i32, %[[B:.*]]: i32):
// CHECK-NEXT:       %[[OK:.*]] = func.call @ok(%r, %[[A]], %[[B]]) : (i32, i32, i32) -> i1
// CHECK-NEXT:       approx.yield %[[OK]] : i1
// CHECK-NEXT:     }) : (i32, i32) -> ()
// CHECK-NEXT:     approx.yield %r : i32
