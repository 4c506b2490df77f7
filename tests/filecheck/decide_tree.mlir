// RUN: approx-opt %s -p config-approx | filecheck %s

// decide_tree -> state call yielding both features, nested scf.if (go left when
// feature < threshold) whose leaves yield the case of their decision, and one
// index_switch case per DISTINCT decision (leaves 1 and 4 both decide 2: one body).
module {
  func.func @feat(%a: i32, %b: i32) -> (i32, i32) {
    return %a, %b : i32, i32
  }
  func.func @f(%x: i32, %a: i32, %b: i32) -> i32 {
    %0 = "approx.knob"(%x, %a, %b) <{id = 0 : i32, rf = 0 : i32, QoS_in = array<i32>, QoS_out = array<i32>}> ({
      "approx.decide_tree"(%a, %b) <{num_features = 2 : i32, tree_features = array<i32: 1, -1, 0, -1, -1>, tree_thresholds = array<i32: 10, 0, 5, 0, 0>, tree_left = array<i32: 1, -1, 3, -1, -1>, tree_right = array<i32: 2, -1, 4, -1, -1>, tree_decisions = array<i32: 0, 2, 0, 0, 2>, thresholds_lowers = array<i32: 0>, thresholds_uppers = array<i32: 100>, decision_values = array<i32: 0, 1, 2>, transform_type = "loop_perforate"}> ({
      ^bb0(%s: i32, %t: i32):
        %u, %v = func.call @feat(%s, %t) : (i32, i32) -> (i32, i32)
        approx.yield %u, %v : i32, i32
      }) : (i32, i32) -> ()
      %y = arith.addi %x, %a : i32
      approx.yield %y : i32
    }) : (i32, i32, i32) -> i32
    return %0 : i32
  }
}

// CHECK:      func.func @f(%x: i32, %a: i32, %b: i32) -> i32 {
// CHECK-NEXT:   %0 = "approx.knob"(%x, %a, %b)
// CHECK-NEXT:     %[[F0:.*]], %[[F1:.*]] = func.call @feat(%a, %b) : (i32, i32) -> (i32, i32)
// CHECK-NEXT:     %[[T10:.*]] = arith.constant 10 : i32
// CHECK-NEXT:     %[[LT10:.*]] = arith.cmpi slt, %[[F1]], %[[T10]] : i32
// CHECK-NEXT:     %[[IDX:.*]] = scf.if %[[LT10]] -> (index) {
// CHECK-NEXT:       %[[L1:.*]] = arith.constant 1 : index
// CHECK-NEXT:       scf.yield %[[L1]] : index
// CHECK-NEXT:     } else {
// CHECK-NEXT:       %[[T5:.*]] = arith.constant 5 : i32
// CHECK-NEXT:       %[[LT5:.*]] = arith.cmpi slt, %[[F0]], %[[T5]] : i32
// CHECK-NEXT:       %[[IN:.*]] = scf.if %[[LT5]] -> (index) {
// CHECK-NEXT:         %[[L3:.*]] = arith.constant 0 : index
// CHECK-NEXT:         scf.yield %[[L3]] : index
// CHECK-NEXT:       } else {
// CHECK-NEXT:         %[[L4:.*]] = arith.constant 1 : index
// CHECK-NEXT:         scf.yield %[[L4]] : index
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.yield %[[IN]] : index
// CHECK-NEXT:     }
// CHECK-NEXT:     %[[R:.*]] = scf.index_switch %[[IDX]] -> i32
// CHECK-NEXT:     case 0 {
// CHECK-NEXT:       "approx.transform"() <{transform_type = "loop_perforate", knob_val = 0 : i32}> : () -> ()
// CHECK-NEXT:       %[[Y0:.*]] = arith.addi %x, %a : i32
// CHECK-NEXT:       scf.yield %[[Y0]] : i32
// CHECK-NEXT:     }
// CHECK-NEXT:     default {
// CHECK-NEXT:       "approx.transform"() <{transform_type = "loop_perforate", knob_val = 2 : i32}> : () -> ()
// CHECK-NEXT:       %[[Y2:.*]] = arith.addi %x, %a : i32
// CHECK-NEXT:       scf.yield %[[Y2]] : i32
// CHECK-NEXT:     }
// CHECK-NEXT:     approx.yield %[[R]] : i32
// CHECK-NOT:  approx.decide_tree
