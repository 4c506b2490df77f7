// RUN: approx-opt %s --split-input-file -p transform-approx | filecheck %s

// loop_perforate: the step of the first scf.for is multiplied by the knob.
// CHECK-LABEL: func.func @perforate
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[K:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.muli %[[C1]], %[[K]] : index
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[STEP]]
// CHECK-NOT:     approx.transform
func.func @perforate(%n: index, %m: memref<?xf64>) {
  %0 = arith.constant 0 : index
  %1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  "approx.transform"() <{transform_type = "loop_perforate", knob_val = 3 : i32}> : () -> ()
  scf.for %i = %0 to %n step %1 {
    memref.store %z, %m[%i] : memref<?xf64>
  }
  return
}

// -----

// loop_perforate at knob 0 leaves the loop exact.
// CHECK-LABEL: func.func @perforate_exact
// CHECK-NOT:     arith.muli
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
func.func @perforate_exact(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "approx.transform"() <{transform_type = "loop_perforate", knob_val = 0 : i32}> : () -> ()
  scf.for %i = %c0 to %n step %c1 {
  }
  return
}

// -----

// func_substitute: the call to __internal_f becomes a call to approx_f_<k>.
// CHECK-LABEL: func.func @f
// CHECK-NEXT:    %{{.*}} = func.call @approx_f_2(%{{.*}}) : (f64) -> f64
func.func @__internal_f(%x: f64) -> f64 {
  return %x : f64
}
func.func @approx_f_2(%x: f64) -> f64 {
  return %x : f64
}
func.func @f(%x: f64) -> f64 {
  "approx.transform"() <{transform_type = "func_substitute", knob_val = 2 : i32}> : () -> ()
  %r = func.call @__internal_f(%x) : (f64) -> f64
  return %r : f64
}

// -----

// task_skipping: branches of the if-chain are 1 (then), 2 (else-then), 3 (else-else);
// knob 2 runs the second branch unconditionally.
// CHECK-LABEL: func.func @skip
// CHECK-NOT:     scf.if
// CHECK:         func.call @task_b(%x) : (i32) -> ()
// CHECK-NOT:     scf.if
// CHECK-NEXT:    func.return
func.func private @task_a(i32) -> ()
func.func private @task_b(i32) -> ()
func.func private @task_c(i32) -> ()
func.func @skip(%x: i32, %c: i1, %d: i1) {
  "approx.transform"() <{transform_type = "task_skipping", knob_val = 2 : i32}> : () -> ()
  scf.if %c {
    func.call @task_a(%x) : (i32) -> ()
  } else {
    scf.if %d {
      func.call @task_b(%x) : (i32) -> ()
    } else {
      func.call @task_c(%x) : (i32) -> ()
    }
  }
  return
}

// -----

// task_skipping knob n+1 (= 3 here) skips every branch.
// CHECK-LABEL: func.func @skip_all
// CHECK-NEXT:    func.return
func.func private @task_a(i32) -> ()
func.func private @task_b(i32) -> ()
func.func @skip_all(%x: i32, %c: i1) {
  "approx.transform"() <{transform_type = "task_skipping", knob_val = 3 : i32}> : () -> ()
  scf.if %c {
    func.call @task_a(%x) : (i32) -> ()
  } else {
    func.call @task_b(%x) : (i32) -> ()
  }
  return
}
