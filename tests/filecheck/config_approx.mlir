// RUN: approx-opt %s -p config-approx | filecheck %s

// decide -> state call, threshold count, index_switch with one cloned body per
// decision (each starting with its approx.transform); try -> scf.if + recover call.
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
  func.func @f(%x: i32, %n: i32) -> i32 {
    %0 = "approx.knob"(%x, %n) <{id = 0 : i32, rf = 0 : i32, QoS_in = array<i32>, QoS_out = array<i32>}> ({
      "approx.decide"(%n) <{num_thresholds = 2 : i32, thresholds_uppers = array<i32: 100>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 1, 2, 3>, thresholds = array<i32: 10, 20>, decisions = array<i32: 0, 2, 3>, transform_type = "loop_perforate"}> ({
      ^bb0(%s: i32):
        %v = func.call @state(%s) : (i32) -> i32
        approx.yield %v : i32
      }) : (i32) -> ()
      %y = arith.addi %x, %n : i32
      "approx.try"(%x, %n) <{recover = "@rec"}> ({
      ^bb0(%a: i32, %b: i32):
        %ok = func.call @ok(%y, %a, %b) : (i32, i32, i32) -> i1
        approx.yield %ok : i1
      }) : (i32, i32) -> ()
      approx.yield %y : i32
    }) : (i32, i32) -> i32
    return %0 : i32
  }
}

// CHECK:      func.func @f(%x: i32, %n: i32) -> i32 {
// CHECK-NEXT:   %0 = "approx.knob"(%x, %n)
// CHECK-NEXT:     %[[S:.*]] = func.call @state(%n) : (i32) -> i32
// CHECK-NEXT:     %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:     %[[T0:.*]] = arith.constant 10 : i32
// CHECK-NEXT:     %[[GE0:.*]] = arith.cmpi sge, %[[S]], %[[T0]] : i32
// CHECK-NEXT:     %[[SEL0:.*]] = arith.select %[[GE0]], %[[ONE]], %[[ZERO]] : index
// CHECK-NEXT:     %[[C0:.*]] = arith.addi %[[ZERO]], %[[SEL0]] : index
// CHECK-NEXT:     %[[T1:.*]] = arith.constant 20 : i32
// CHECK-NEXT:     %[[GE1:.*]] = arith.cmpi sge, %[[S]], %[[T1]] : i32
// CHECK-NEXT:     %[[SEL1:.*]] = arith.select %[[GE1]], %[[ONE]], %[[ZERO]] : index
// CHECK-NEXT:     %[[IDX:.*]] = arith.addi %[[C0]], %[[SEL1]] : index
// CHECK-NEXT:     %[[R:.*]] = scf.index_switch %[[IDX]] -> i32
// CHECK-NEXT:     case 0 {
// CHECK-NEXT:       "approx.transform"() <{transform_type = "loop_perforate", knob_val = 0 : i32}> : () -> ()
// CHECK-NEXT:       %[[Y0:.*]] = arith.addi %x, %n : i32
// CHECK-NEXT:       %[[OK0:.*]] = func.call @ok(%[[Y0]], %x, %n) : (i32, i32, i32) -> i1
// CHECK-NEXT:       %[[IF0:.*]] = scf.if %[[OK0]] -> (i32) {
// CHECK-NEXT:         scf.yield %[[Y0]] : i32
// CHECK-NEXT:       } else {
// CHECK-NEXT:         %[[REC0:.*]] = func.call @rec(%x, %n) : (i32, i32) -> i32
// CHECK-NEXT:         scf.yield %[[REC0]] : i32
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.yield %[[IF0]] : i32
// CHECK-NEXT:     }
// CHECK-NEXT:     case 1 {
// CHECK-NEXT:       "approx.transform"() <{transform_type = "loop_perforate", knob_val = 2 : i32}> : () -> ()
// CHECK:          default {
// CHECK-NEXT:       "approx.transform"() <{transform_type = "loop_perforate", knob_val = 3 : i32}> : () -> ()
// CHECK:          approx.yield %[[R]] : i32
// CHECK-NOT:  approx.decide
// CHECK-NOT:  approx.try
