// RUN: approx-opt %s --split-input-file -p transform-approx | filecheck %s

// loop_truncate: the upper bound becomes lb + ceil(n / k) * step, with the trip
// count n = max(0, ceil((ub - lb) / step)) computed at run time.
// CHECK-LABEL: func.func @truncate
// CHECK:         %[[SPAN:.*]] = arith.subi %ub, %lb : index
// CHECK-NEXT:    %[[N0:.*]] = arith.ceildivsi %[[SPAN]], %s : index
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[N:.*]] = arith.maxsi %[[N0]], %[[ZERO]] : index
// CHECK-NEXT:    %[[K:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[KEPT:.*]] = arith.ceildivsi %[[N]], %[[K]] : index
// CHECK-NEXT:    %[[LEN:.*]] = arith.muli %[[KEPT]], %s : index
// CHECK-NEXT:    %[[UB:.*]] = arith.addi %lb, %[[LEN]] : index
// CHECK-NEXT:    scf.for %{{.*}} = %lb to %[[UB]] step %s iter_args
// CHECK-NOT:     approx.transform
func.func @truncate(%lb: index, %ub: index, %s: index, %m: memref<?xf64>) -> f64 {
  %z = arith.constant 0.0 : f64
  "approx.transform"() <{transform_type = "loop_truncate", knob_val = 4 : i32}> : () -> ()
  %r = scf.for %i = %lb to %ub step %s iter_args(%acc = %z) -> (f64) {
    %v = memref.load %m[%i] : memref<?xf64>
    %t = arith.addf %acc, %v : f64
    scf.yield %t : f64
  }
  return %r : f64
}

// -----

// Integer-typed loops: the same arithmetic in the loop's own type (i32 here).
// CHECK-LABEL: func.func @truncate_i32
// CHECK:         arith.ceildivsi %{{.*}}, %{{.*}} : i32
// CHECK:         %[[K:.*]] = arith.constant 2 : i32
// CHECK:         %[[UB:.*]] = arith.addi %lb, %{{.*}} : i32
// CHECK-NEXT:    scf.for %{{.*}} = %lb to %[[UB]] step %s : i32 {
func.func @truncate_i32(%lb: i32, %ub: i32, %s: i32) {
  "approx.transform"() <{transform_type = "loop_truncate", knob_val = 2 : i32}> : () -> ()
  scf.for %i = %lb to %ub step %s : i32 {
  }
  return
}

// -----

// Knobs 0 and 1 leave the loop exact.
// CHECK-LABEL: func.func @truncate_exact
// CHECK-NOT:     arith.ceildivsi
// CHECK:         scf.for %{{.*}} = %c0 to %n step %c1
func.func @truncate_exact(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "approx.transform"() <{transform_type = "loop_truncate", knob_val = 1 : i32}> : () -> ()
  scf.for %i = %c0 to %n step %c1 {
  }
  return
}
