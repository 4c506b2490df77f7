// RUN: approx-opt %s -p emit-approx,emit-management | filecheck %s --check-prefix=EMIT
// RUN: approx-opt %s -p emit-approx,emit-management,transform-approx | filecheck %s --check-prefix=TUNED

// param: the annotation on argument 1 becomes an approx.param inside the knob whose
// result replaces the argument's uses there; the `param` transform at knob 3 replaces
// it by values[2] = 5 as an arith.constant.
module {
  "approx.util.annotation.param"() <{func_name = "topk_sum", arg_index = 1 : i64, name = "top_k", values = array<i64: 1, 2, 5>}> : () -> ()
  "approx.util.annotation.transform"() <{func_name = "topk_sum", transform_type = "param", knob_val = 3 : i32}> : () -> ()
  func.func @topk_sum(%m: memref<?xf64>, %k: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %k step %c1 iter_args(%acc = %z) -> (f64) {
      %v = memref.load %m[%i] : memref<?xf64>
      %s = arith.addf %acc, %v : f64
      scf.yield %s : f64
    }
    return %r : f64
  }
}

// EMIT-NOT:    approx.util.annotation
// EMIT:        %{{.*}} = "approx.knob"(%m, %k)
// EMIT-NEXT:     "approx.transform"() <{transform_type = "param", knob_val = 3 : i32}> : () -> ()
// EMIT-NEXT:     %[[P:.*]] = "approx.param"(%k) <{name = "top_k", values = array<i64: 1, 2, 5>}> : (index) -> index
// EMIT:          scf.for %{{.*}} = %c0 to %[[P]] step %c1

// TUNED-LABEL: func.func @topk_sum
// TUNED-NOT:     approx.param
// TUNED:         %[[V:.*]] = arith.constant 5 : index
// TUNED:         scf.for %{{.*}} = %c0 to %[[V]] step %c1
// TUNED-NOT:     approx.transform
