// RUN: approx-opt %s -p finalize-approx | filecheck %s

// The knob is inlined: its body moves into the function, its results are the
// yielded values.
// CHECK:      func.func @f(%a: i32) -> i32 {
// CHECK-NEXT:   %s = arith.muli %a, %a : i32
// CHECK-NEXT:   func.return %s : i32
// CHECK-NOT:  approx.
func.func @f(%a: i32) -> i32 {
  %0 = "approx.knob"(%a) <{id = 0 : i32, rf = 0 : i32, QoS_in = array<i32>, QoS_out = array<i32>}> ({
    %s = arith.muli %a, %a : i32
    approx.yield %s : i32
  }) : (i32) -> i32
  return %0 : i32
}
