// RUN: not approx-opt %s 2>&1 | filecheck %s

// A verifier failure is one line: file:line:col: error: message.
// CHECK: errors.mlir:[[# @LINE + 2]]:1: error: 'approx.transform' op unknown transform_type 'loop_unroll'
// CHECK-NOT: Traceback
"approx.transform"() <{transform_type = "loop_unroll", knob_val = 1 : i32}> : () -> ()
