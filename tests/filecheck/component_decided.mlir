// RUN: approx-opt %s -p approx-pipeline | filecheck %s
// RUN: approx-opt %s --list-knobs | filecheck %s --check-prefix=KNOBS

// A decided component knob: the decision tree of @rag (transform_type param) sets
// bm25.top_k per input; each case of the lowered decision rewrites its own copy of
// the retrieve op (state < 5: decision 0, top_k as written; >= 5: decision 2, values[1] = 1).
module {
  "approx.util.annotation.component"() <{func_name = "rag", component = "bm25", parameter = "top_k", transform_type = "param", values = [2 : i64, 1 : i64], knob_val = 0 : i32, decided}> : () -> ()
  "approx.util.annotation.decision_tree"() <{func_name = "rag", transform_type = "param", state_indices = array<i64: 1>, state_function = "words", num_thresholds = 1 : i32, thresholds_uppers = array<i32: 100>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 1, 2>, thresholds = array<i32: 5>, decisions = array<i32: 0, 2>}> : () -> ()
  func.func @words(%n: i32) -> i32 {
    func.return %n : i32
  }
  func.func @rag(%q: !pyobj.obj, %n: i32) -> !pyobj.obj {
    %hits = "component.retrieve"(%q) <{component = "bm25", retriever = @bm25, top_k = 3 : i64}> : (!pyobj.obj) -> !pyobj.obj
    func.return %hits : !pyobj.obj
  }
}

// CHECK-LABEL: func.func @rag
// CHECK:         %[[CASE:.*]] = arith.addi
// CHECK:         scf.index_switch %[[CASE]] -> !pyobj.obj
// CHECK-NEXT:    case 0 {
// CHECK-NEXT:      "component.retrieve"(%q) <{component = "bm25", retriever = @bm25, top_k = 3 : i64}>
// CHECK:         default {
// CHECK-NEXT:      "component.retrieve"(%q) <{component = "bm25", retriever = @bm25, top_k = 1 : i64}>

// KNOBS:     "name": "rag"
// KNOBS-NOT: "name": "bm25.top_k"
