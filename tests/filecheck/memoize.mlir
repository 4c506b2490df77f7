// RUN: approx-opt %s -p emit-approx,emit-management,transform-approx | filecheck %s

// memoize (knob 20): a direct-mapped table of 1024 entries in memref.globals; the
// f64 input loses its 20 low mantissa bits, the i32 input is kept exact; the key
// words are hashed to a slot; a hit loads the stored result, a miss runs the body
// and stores key, value and valid flag.
module {
  "approx.util.annotation.transform"() <{func_name = "f", transform_type = "memoize", knob_val = 20 : i32}> : () -> ()
  func.func @f(%x: f64, %n: i32) -> f64 {
    %c = arith.constant 3.0 : f64
    %y = arith.mulf %x, %c : f64
    %m = arith.sitofp %n : i32 to f64
    %z = arith.addf %y, %m : f64
    return %z : f64
  }
}

// CHECK:      "memref.global"() <{sym_name = "__approx_memo_f_0_valid", type = memref<1024xi1>, initial_value = dense<false> : tensor<1024xi1>, sym_visibility = "private"}>
// CHECK-NEXT: "memref.global"() <{sym_name = "__approx_memo_f_0_key0", type = memref<1024xi64>
// CHECK-NEXT: "memref.global"() <{sym_name = "__approx_memo_f_0_key1", type = memref<1024xi64>
// CHECK-NEXT: "memref.global"() <{sym_name = "__approx_memo_f_0_val0", type = memref<1024xf64>
// CHECK-LABEL: func.func @f(%x: f64, %n: i32) -> f64 {
// CHECK:        %[[BITS:.*]] = arith.bitcast %x : f64 to i64
// CHECK-NEXT:   %[[MASK:.*]] = arith.constant -1048576 : i64
// CHECK-NEXT:   %[[W0:.*]] = arith.andi %[[BITS]], %[[MASK]] : i64
// CHECK-NEXT:   %[[W1:.*]] = arith.extsi %n : i32 to i64
// CHECK:        %[[TOP:.*]] = arith.constant 54 : i64
// CHECK-NEXT:   %[[H:.*]] = arith.shrui %{{.*}}, %[[TOP]] : i64
// CHECK-NEXT:   %[[SLOT:.*]] = arith.index_cast %[[H]] : i64 to index
// CHECK:        %[[VALS:.*]] = memref.get_global @__approx_memo_f_0_val0 : memref<1024xf64>
// CHECK:        arith.cmpi eq
// CHECK:        arith.cmpi eq
// CHECK-NEXT:   %[[HIT:.*]] = arith.andi
// CHECK-NEXT:   %[[R:.*]] = scf.if %[[HIT]] -> (f64) {
// CHECK-NEXT:     %[[OLD:.*]] = memref.load %[[VALS]][%[[SLOT]]] : memref<1024xf64>
// CHECK-NEXT:     scf.yield %[[OLD]] : f64
// CHECK-NEXT:   } else {
// CHECK:          %z = arith.addf %y, %m : f64
// CHECK-NEXT:     memref.store %[[W0]], %{{.*}}[%[[SLOT]]] : memref<1024xi64>
// CHECK-NEXT:     memref.store %[[W1]], %{{.*}}[%[[SLOT]]] : memref<1024xi64>
// CHECK-NEXT:     memref.store %z, %[[VALS]][%[[SLOT]]] : memref<1024xf64>
// CHECK-NEXT:     %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT:     memref.store %[[TRUE]], %{{.*}}[%[[SLOT]]] : memref<1024xi1>
// CHECK-NEXT:     scf.yield %z : f64
// CHECK-NEXT:   }
// CHECK-NEXT:   approx.yield %[[R]] : f64
// CHECK-NOT:    approx.transform
