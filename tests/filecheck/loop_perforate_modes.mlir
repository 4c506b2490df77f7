// RUN: approx-opt %s --split-input-file -p transform-approx | filecheck %s

// loop_perforate_modulo: blocks of k iterations, the last of each dropped. Full
// blocks run as one loop of step k*s whose body is k-1 clones of the original
// body (no per-iteration branch); the original loop runs the last partial block.
// CHECK-LABEL: func.func @modulo
// CHECK:         %[[N:.*]] = arith.maxsi
// CHECK-NEXT:    %[[K:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[BLOCKS:.*]] = arith.divsi %[[N]], %[[K]] : index
// CHECK-NEXT:    %[[KS:.*]] = arith.muli %c1, %[[K]] : index
// CHECK-NEXT:    %[[LEN:.*]] = arith.muli %[[BLOCKS]], %[[KS]] : index
// CHECK-NEXT:    %[[MID:.*]] = arith.addi %c0, %[[LEN]] : index
// CHECK-NEXT:    %[[FULL:.*]] = scf.for %[[J:.*]] = %c0 to %[[MID]] step %[[KS]] iter_args(%[[A:.*]] = %z) -> (f64) {
// CHECK-NEXT:      %[[V0:.*]] = memref.load %m[%[[J]]] : memref<?xf64>
// CHECK-NEXT:      %[[S0:.*]] = arith.addf %[[A]], %[[V0]] : f64
// CHECK-NEXT:      %[[J1:.*]] = arith.addi %[[J]], %c1 : index
// CHECK-NEXT:      %[[V1:.*]] = memref.load %m[%[[J1]]] : memref<?xf64>
// CHECK-NEXT:      %[[S1:.*]] = arith.addf %[[S0]], %[[V1]] : f64
// CHECK-NEXT:      scf.yield %[[S1]] : f64
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = scf.for %i = %[[MID]] to %n step %c1 iter_args(%acc = %[[FULL]]) -> (f64) {
// CHECK-NEXT:      memref.load %m[%i]
// CHECK:         func.return %r : f64
func.func @modulo(%m: memref<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  "approx.transform"() <{transform_type = "loop_perforate_modulo", knob_val = 3 : i32}> : () -> ()
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %v = memref.load %m[%i] : memref<?xf64>
    %s = arith.addf %acc, %v : f64
    scf.yield %s : f64
  }
  return %r : f64
}

// -----

// loop_perforate_rescale: stride perforation as loop_perforate, then the sum is
// extrapolated, init + (r - init) * n / kept, unless kept == n; the product is not a sum.
// CHECK-LABEL: func.func @rescale
// CHECK:         %[[N:.*]] = arith.maxsi
// CHECK-NEXT:    %[[K:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[KEPT:.*]] = arith.ceildivsi %[[N]], %[[K]] : index
// CHECK:         %[[R:[a-z0-9_]+]], %[[P:[a-z0-9_]+]] = scf.for
// CHECK:         }
// CHECK-NEXT:    %[[SAME:.*]] = arith.cmpi eq, %[[KEPT]], %[[N]] : index
// CHECK-NEXT:    %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[NF:.*]] = arith.sitofp %[[NI]] : i64 to f32
// CHECK-NEXT:    %[[KI:.*]] = arith.index_cast %[[KEPT]] : index to i64
// CHECK-NEXT:    %[[KF:.*]] = arith.sitofp %[[KI]] : i64 to f32
// CHECK-NEXT:    %[[D:.*]] = arith.subf %[[R]], %z : f32
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %[[D]], %[[NF]] : f32
// CHECK-NEXT:    %[[Q:.*]] = arith.divf %[[M]], %[[KF]] : f32
// CHECK-NEXT:    %[[E:.*]] = arith.addf %z, %[[Q]] : f32
// CHECK-NEXT:    %[[S:.*]] = arith.select %[[SAME]], %[[R]], %[[E]] : f32
// CHECK-NEXT:    func.return %[[S]], %[[P]] : f32, f32
func.func @rescale(%m: memref<?xf32>, %n: index) -> (f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %o = arith.constant 1.0 : f32
  "approx.transform"() <{transform_type = "loop_perforate_rescale", knob_val = 2 : i32}> : () -> ()
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z, %p = %o) -> (f32, f32) {
    %v = memref.load %m[%i] : memref<?xf32>
    %s = arith.addf %v, %acc : f32
    %q = arith.mulf %p, %v : f32
    scf.yield %s, %q : f32, f32
  }
  return %r#0, %r#1 : f32, f32
}

// -----

// loop_perforate_modulo_rescale: kept = n - floor(n / k); with k = 20 the
// blocks run as an inner loop over their first 19 iterations.
// CHECK-LABEL: func.func @modulo_rescale
// CHECK:         %[[N:.*]] = arith.maxsi
// CHECK-NEXT:    %[[K:.*]] = arith.constant 20 : i64
// CHECK-NEXT:    %[[SKIP:.*]] = arith.divsi %[[N]], %[[K]] : i64
// CHECK-NEXT:    %[[KEPT:.*]] = arith.subi %[[N]], %[[SKIP]] : i64
// CHECK:         scf.for %[[J:.*]] = %c0 to %{{.*}} step %{{.*}} iter_args
// CHECK-NEXT:      %[[END:.*]] = arith.addi %[[J]], %{{.*}} : i64
// CHECK-NEXT:      scf.for %{{.*}} = %[[J]] to %[[END]] step %c1 iter_args
// CHECK:         arith.cmpi eq, %[[KEPT]], %[[N]] : i64
// CHECK-NEXT:    arith.sitofp %[[N]] : i64 to f64
// CHECK-NEXT:    arith.sitofp %[[KEPT]] : i64 to f64
func.func @modulo_rescale(%n: i64) -> f64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %z = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  "approx.transform"() <{transform_type = "loop_perforate_modulo_rescale", knob_val = 20 : i32}> : () -> ()
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) : i64 {
    %s = arith.addf %acc, %one : f64
    scf.yield %s : f64
  }
  return %r : f64
}
