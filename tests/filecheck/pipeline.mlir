// RUN: approx-opt %s -p approx-pipeline | filecheck %s
// RUN: approx-opt %s -p pre-emit-transform,emit-approx,emit-management,config-approx,transform-approx,finalize-approx | filecheck %s

// A program in ApproxMLIR's annotation format: a decision tree substitutes @f
// by @approx_f_1 when the state is >= 4. After the whole pipeline no approx op
// is left: plain func/arith/scf IR.
module {
  "approx.util.annotation.decision_tree"() <{func_name = "f", transform_type = "func_substitute", state_indices = array<i64: 1>, state_function = "@state", num_thresholds = 1 : i32, thresholds_uppers = array<i32: 10>, thresholds_lowers = array<i32: 1>, decision_values = array<i32: 0, 1>, thresholds = array<i32: 4>, decisions = array<i32: 0, 1>}> : () -> ()
  "approx.util.annotation.convert_to_call"() <{func_name = "f"}> : () -> ()
  func.func @state(%n: i32) -> i32 {
    return %n : i32
  }
  func.func @approx_f_1(%x: f64, %n: i32) -> f64 {
    return %x : f64
  }
  func.func @f(%x: f64, %n: i32) -> f64 {
    %y = arith.mulf %x, %x : f64
    return %y : f64
  }
}

// CHECK-NOT:  approx.
// CHECK:      func.func @__internal_f(%x: f64, %n: i32) -> f64
// CHECK:      func.func @f(%{{.*}}: f64, %[[N:.*]]: i32) -> f64 {
// CHECK-NEXT:   %[[S:.*]] = func.call @state(%[[N]]) : (i32) -> i32
// CHECK:        %[[R:.*]] = scf.index_switch
// CHECK-NEXT:   case 0 {
// CHECK-NEXT:     %{{.*}} = func.call @__internal_f
// CHECK:        default {
// CHECK-NEXT:     %{{.*}} = func.call @approx_f_1
// CHECK:        func.return %[[R]] : f64
// CHECK-NOT:  approx.
