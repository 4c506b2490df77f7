// RUN: approx-opt %s --split-input-file -p transform-approx | filecheck %s
// RUN: approx-opt %s --split-input-file -p approx-pipeline | filecheck %s --check-prefix=PIPE

// cascade, knob 2 of 2 variants x 2 thresholds: start at variant 1 with threshold
// 900; each variant's result is kept when confidence >= 900, else the next one
// runs; the exact body is the last else. The annotation is consumed.
// CHECK-NOT:   approx.util.annotation.cascade
// CHECK-LABEL: func.func @f
// CHECK-NEXT:    %[[T:.*]] = arith.constant 900 : i32
// CHECK-NEXT:    %[[R1:.*]] = func.call @approx_f_1(%x) : (f64) -> f64
// CHECK-NEXT:    %[[C1:.*]] = func.call @conf(%[[R1]], %x) : (f64, f64) -> i32
// CHECK-NEXT:    %[[OK1:.*]] = arith.cmpi sge, %[[C1]], %[[T]] : i32
// CHECK-NEXT:    %[[IF1:.*]] = scf.if %[[OK1]] -> (f64) {
// CHECK-NEXT:      scf.yield %[[R1]] : f64
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[R2:.*]] = func.call @approx_f_2(%x) : (f64) -> f64
// CHECK-NEXT:      %[[C2:.*]] = func.call @conf(%[[R2]], %x) : (f64, f64) -> i32
// CHECK-NEXT:      %[[OK2:.*]] = arith.cmpi sge, %[[C2]], %[[T]] : i32
// CHECK-NEXT:      %[[IF2:.*]] = scf.if %[[OK2]] -> (f64) {
// CHECK-NEXT:        scf.yield %[[R2]] : f64
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %y = arith.mulf %x, %x : f64
// CHECK-NEXT:        scf.yield %y : f64
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield %[[IF2]] : f64
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[IF1]] : f64
"approx.util.annotation.cascade"() <{func_name = "f", confidence = "conf", variants = 2 : i32, thresholds = array<i32: 500, 900>}> : () -> ()
func.func @f(%x: f64) -> f64 {
  "approx.transform"() <{transform_type = "cascade", knob_val = 2 : i32}> : () -> ()
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func @approx_f_1(%x: f64) -> f64 {
  return %x : f64
}
func.func @approx_f_2(%x: f64) -> f64 {
  return %x : f64
}
func.func @conf(%r: f64, %x: f64) -> i32 {
  %c = arith.constant 1000 : i32
  return %c : i32
}

// -----

// Through a decision tree on a convert_to_call split: each case of the switch gets
// its own cascade (knob 3 starts at variant 2, threshold 500), around the call to
// the exact body; knob 0 stays a plain call.
// PIPE-NOT:   approx.util.annotation
// PIPE-LABEL: func.func @g
// PIPE:         scf.index_switch
// PIPE-NEXT:    case 0 {
// PIPE-NEXT:      %[[E:.*]] = func.call @__internal_g(%{{.*}}, %{{.*}}) : (f64, i32) -> f64
// PIPE-NEXT:      scf.yield %[[E]] : f64
// PIPE-NEXT:    }
// PIPE-NEXT:    default {
// PIPE-NEXT:      %[[T:.*]] = arith.constant 500 : i32
// PIPE-NEXT:      %[[R:.*]] = func.call @approx_g_2(
// PIPE-NEXT:      %[[C:.*]] = func.call @conf(%[[R]],
// PIPE-NEXT:      %[[OK:.*]] = arith.cmpi sge, %[[C]], %[[T]] : i32
// PIPE-NEXT:      %[[IF:.*]] = scf.if %[[OK]] -> (f64) {
// PIPE-NEXT:        scf.yield %[[R]] : f64
// PIPE-NEXT:      } else {
// PIPE-NEXT:        %[[X:.*]] = func.call @__internal_g(
// PIPE-NEXT:        scf.yield %[[X]] : f64
// PIPE-NEXT:      }
// PIPE-NEXT:      scf.yield %[[IF]] : f64
// PIPE-NEXT:    }
"approx.util.annotation.convert_to_call"() <{func_name = "g"}> : () -> ()
"approx.util.annotation.cascade"() <{func_name = "g", confidence = "conf", variants = 2 : i32, thresholds = array<i32: 500, 900>}> : () -> ()
"approx.util.annotation.decision_tree"() <{func_name = "g", transform_type = "cascade", state_indices = array<i64: 1>, state_function = "state", num_thresholds = 1 : i32, thresholds_uppers = array<i32: 100>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 3>, thresholds = array<i32: 10>, decisions = array<i32: 0, 3>}> : () -> ()
func.func @g(%x: f64, %n: i32) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func @approx_g_1(%x: f64, %n: i32) -> f64 {
  return %x : f64
}
func.func @approx_g_2(%x: f64, %n: i32) -> f64 {
  return %x : f64
}
func.func @conf(%r: f64, %x: f64, %n: i32) -> i32 {
  return %n : i32
}
func.func @state(%n: i32) -> i32 {
  return %n : i32
}
