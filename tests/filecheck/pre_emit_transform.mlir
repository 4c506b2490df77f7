// RUN: approx-opt %s -p pre-emit-transform | filecheck %s

// convert_to_call splits @f into @__internal_f (the body) and a wrapper @f.
module {
  "approx.util.annotation.convert_to_call"() <{func_name = "f"}> : () -> ()
  func.func @f(%a: i32, %b: i32) -> i32 {
    %s = arith.addi %a, %b : i32
    return %s : i32
  }
}

// CHECK-NOT:  approx.util.annotation.convert_to_call
// CHECK:      func.func @__internal_f(%a: i32, %b: i32) -> i32 {
// CHECK-NEXT:   %s = arith.addi %a, %b : i32
// CHECK-NEXT:   func.return %s : i32
// CHECK:      func.func @f(%0: i32, %1: i32) -> i32 {
// CHECK-NEXT:   %2 = func.call @__internal_f(%0, %1) : (i32, i32) -> i32
// CHECK-NEXT:   func.return %2 : i32
