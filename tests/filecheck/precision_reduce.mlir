// RUN: approx-opt %s --split-input-file -p transform-approx | filecheck %s

// knob 1: the product is computed in f32; the argument is truncated where it
// enters the region and the result extended where it leaves it.
// CHECK-LABEL: func.func @square
// CHECK-SAME:    (%[[X:.*]]: f64) -> f64
// CHECK-NEXT:    %[[T:.*]] = arith.truncf %[[X]] : f64 to f32
// CHECK-NEXT:    %[[Y:.*]] = arith.mulf %[[T]], %[[T]] : f32
// CHECK-NEXT:    %[[E:.*]] = arith.extf %[[Y]] : f32 to f64
// CHECK-NEXT:    func.return %[[E]] : f64
func.func @square(%x: f64) -> f64 {
  "approx.transform"() <{transform_type = "precision_reduce", knob_val = 1 : i32}> : () -> ()
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

// -----

// knob 0 is exact: nothing changes.
// CHECK-LABEL: func.func @square_exact
// CHECK-NOT:     arith.truncf
// CHECK:         arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NOT:     arith.extf
func.func @square_exact(%x: f64) -> f64 {
  "approx.transform"() <{transform_type = "precision_reduce", knob_val = 0 : i32}> : () -> ()
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

// -----

// A reduction: the constant is re-materialised in f32, the iter_arg and the loop
// result become f32, each memref load is truncated right after it, and the store
// of an f64 memref gets the extended value.
// CHECK-LABEL: func.func @sum_and_scale
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[R:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[Z]]) -> (f32) {
// CHECK-NEXT:      %[[V:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<?xf64>
// CHECK-NEXT:      %[[VT:.*]] = arith.truncf %[[V]] : f64 to f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[VT]] : f32
// CHECK-NEXT:      scf.yield %[[S]] : f32
// CHECK:         %[[H:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         %[[M:.*]] = arith.mulf %[[R]], %[[H]] : f32
// CHECK-NEXT:    %[[ME:.*]] = arith.extf %[[M]] : f32 to f64
// CHECK:         memref.store %[[ME]], %{{.*}}[%{{.*}}] : memref<?xf64>
func.func @sum_and_scale(%m: memref<?xf64>, %n: index) {
  "approx.transform"() <{transform_type = "precision_reduce", knob_val = 1 : i32}> : () -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %v = memref.load %m[%i] : memref<?xf64>
    %s = arith.addf %acc, %v : f64
    scf.yield %s : f64
  }
  %h = arith.constant 0.5 : f64
  %mean = arith.mulf %r, %h : f64
  memref.store %mean, %m[%c0] : memref<?xf64>
  return
}

// -----

// scf.if carrying f64, math ops and cmpf/select: all in f32; the i1 stays i1.
// CHECK-LABEL: func.func @branchy
// CHECK:         %[[XT:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK:         %[[C:.*]] = arith.cmpf ogt, %[[XT]], %{{.*}} : f32
// CHECK:         %[[IF:.*]] = scf.if %[[C]] -> (f32) {
// CHECK-NEXT:      %[[Q:.*]] = math.sqrt %[[XT]] : f32
// CHECK-NEXT:      scf.yield %[[Q]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[XT]] : f32
// CHECK-NEXT:      scf.yield %[[E]] : f32
// CHECK:         arith.extf %[[IF]] : f32 to f64
func.func @branchy(%x: f64) -> f64 {
  "approx.transform"() <{transform_type = "precision_reduce", knob_val = 1 : i32}> : () -> ()
  %zero = arith.constant 0.0 : f64
  %c = arith.cmpf ogt, %x, %zero : f64
  %r = scf.if %c -> (f64) {
    %q = math.sqrt %x : f64
    scf.yield %q : f64
  } else {
    %e = math.exp %x : f64
    scf.yield %e : f64
  }
  return %r : f64
}

// -----

// knob 2: f16. The f64 -> f16 conversion rounds to f32 to odd, then to f16
// (correct rounding without a libcall); the product is an f16 op.
// CHECK-LABEL: func.func @square_half
// CHECK:         %[[T32:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK:         %[[ODD:.*]] = arith.ori %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %[[F:.*]] = arith.bitcast %[[ODD]] : i32 to f32
// CHECK-NEXT:    %[[H:.*]] = arith.truncf %[[F]] : f32 to f16
// CHECK-NEXT:    %[[Y:.*]] = arith.mulf %[[H]], %[[H]] : f16
// CHECK-NEXT:    %{{.*}} = arith.extf %[[Y]] : f16 to f64
func.func @square_half(%x: f64) -> f64 {
  "approx.transform"() <{transform_type = "precision_reduce", knob_val = 2 : i32}> : () -> ()
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

// -----

// linalg on tensors (torch-mlir's linalg-on-tensors): tensors entering the region
// are truncated element-wise, fill/matmul/generic are recreated on f32 tensors,
// and the result tensor is extended back.
// CHECK-LABEL: func.func @linear_relu
// CHECK-SAME:    (%[[A:.*]]: tensor<4x5xf64>, %[[B:.*]]: tensor<5x3xf64>) -> tensor<4x3xf64>
// CHECK-DAG:     %[[AT:.*]] = arith.truncf %[[A]] : tensor<4x5xf64> to tensor<4x5xf32>
// CHECK-DAG:     %[[BT:.*]] = arith.truncf %[[B]] : tensor<5x3xf64> to tensor<5x3xf32>
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK:         %[[F:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:         %[[M:.*]] = linalg.matmul ins(%[[AT]], %[[BT]] : tensor<4x5xf32>, tensor<5x3xf32>) outs(%[[F]] : tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[M]] : tensor<4x3xf32>) outs(%[[E]] : tensor<4x3xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ugt, %[[IN]], %[[Z]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.select %[[GT]], %[[IN]], %[[Z]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<4x3xf32>
// CHECK:         arith.extf %{{.*}} : tensor<4x3xf32> to tensor<4x3xf64>
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @linear_relu(%arg0: tensor<4x5xf64>, %arg1: tensor<5x3xf64>) -> tensor<4x3xf64> {
  "approx.transform"() <{transform_type = "precision_reduce", knob_val = 1 : i32}> : () -> ()
  %cst = arith.constant 0.000000e+00 : f64
  %0 = tensor.empty() : tensor<4x3xf64>
  %1 = linalg.fill ins(%cst : f64) outs(%0 : tensor<4x3xf64>) -> tensor<4x3xf64>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<4x5xf64>, tensor<5x3xf64>) outs(%1 : tensor<4x3xf64>) -> tensor<4x3xf64>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<4x3xf64>) outs(%0 : tensor<4x3xf64>) {
  ^bb0(%in: f64, %out: f64):
    %5 = arith.cmpf ugt, %in, %cst : f64
    %6 = arith.select %5, %in, %cst : f64
    linalg.yield %6 : f64
  } -> tensor<4x3xf64>
  return %3 : tensor<4x3xf64>
}

// -----

// linalg on memrefs keeps its f64 element type (fixed by the buffers); the
// arithmetic in its body is still reduced, with conversions around it.
// CHECK-LABEL: func.func @square_buffer
// CHECK:         ^bb0(%[[IN:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %[[IN]] : f64 to f32
// CHECK-NEXT:      %[[S:.*]] = arith.mulf %[[T]], %[[T]] : f32
// CHECK-NEXT:      %[[E:.*]] = arith.extf %[[S]] : f32 to f64
// CHECK-NEXT:      linalg.yield %[[E]] : f64
func.func @square_buffer(%a: memref<4xf64>, %b: memref<4xf64>) {
  "approx.transform"() <{transform_type = "precision_reduce", knob_val = 1 : i32}> : () -> ()
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : memref<4xf64>) outs(%b : memref<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %s = arith.mulf %in, %in : f64
    linalg.yield %s : f64
  }
  return
}
