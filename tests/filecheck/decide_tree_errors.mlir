// RUN: not approx-opt %s 2>&1 | filecheck %s

// A malformed multi-feature tree is one line: file:line:col: error: message.
// Here node 2 is reached from node 0 and from node 1: not a tree.
// CHECK: decide_tree_errors.mlir:[[# @LINE + 9]]:3: error: 'approx.util.annotation.decision_tree_multi' op node 2 is a child of both node 0 and node 1; each node has exactly one parent
// CHECK-NOT: Traceback
module {
  func.func @f(%a: i32, %b: i32) -> i32 {
    return %a : i32
  }
  func.func @feat(%a: i32, %b: i32) -> (i32, i32) {
    return %a, %b : i32, i32
  }
  "approx.util.annotation.decision_tree_multi"() <{func_name = "f", transform_type = "loop_perforate", state_indices = array<i64: 0, 1>, state_function = "feat", num_features = 2 : i32, tree_features = array<i32: 0, 1, -1, -1>, tree_thresholds = array<i32: 5, 3, 0, 0>, tree_left = array<i32: 1, 3, -1, -1>, tree_right = array<i32: 2, 2, -1, -1>, tree_decisions = array<i32: 0, 0, 0, 1>, thresholds_lowers = array<i32>, thresholds_uppers = array<i32>, decision_values = array<i32: 0, 1>}> : () -> ()
}
