// RUN: approx-opt %s -p emit-approx | filecheck %s

// A knob annotation, and a transform annotation (which implies the knob).
module {
  "approx.util.annotation.knob"() <{func_name = "f"}> : () -> ()
  "approx.util.annotation.transform"() <{func_name = "g", transform_type = "loop_perforate", knob_val = 2 : i32}> : () -> ()
  func.func @f(%a: i32) -> i32 {
    %s = arith.muli %a, %a : i32
    return %s : i32
  }
  func.func @g(%n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
    }
    return
  }
}

// CHECK-NOT:  approx.util.annotation.knob
// CHECK:      "approx.util.annotation.transform"() <{func_name = "g", transform_type = "loop_perforate", knob_val = 2 : i32}>
// CHECK:      func.func @f(%a: i32) -> i32 {
// CHECK-NEXT:   %0 = "approx.knob"(%a) <{id = 0 : i32, rf = 0 : i32, QoS_in = array<i32>, QoS_out = array<i32>}> ({
// CHECK-NEXT:     %s = arith.muli %a, %a : i32
// CHECK-NEXT:     approx.yield %s : i32
// CHECK-NEXT:   }) : (i32) -> i32
// CHECK-NEXT:   func.return %0 : i32
// CHECK:      func.func @g(%n: index) {
// CHECK-NEXT:   "approx.knob"(%n) <{id = 1 : i32
// CHECK:          scf.for
// CHECK:          approx.yield
// CHECK-NEXT:   }) : (index) -> ()
// CHECK-NEXT:   func.return
