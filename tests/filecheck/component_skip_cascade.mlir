// RUN: approx-opt %s -p approx-pipeline | filecheck %s

// A skipped call is dropped whatever other knobs of its label come before it in the
// module: a cascade over it would test the confidence of its fallback (which has none).
module {
  "approx.util.annotation.component"() <{func_name = "agent", component = "answer", parameter = "model", transform_type = "cascade", values = [@fast], thresholds = [0.3], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "agent", component = "answer", parameter = "passages", transform_type = "param", values = [1 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "agent", component = "answer", parameter = "skip", transform_type = "task_skipping", values = [], knob_val = 1 : i32}> : () -> ()
  func.func @agent(%q: !pyobj.obj, %c: !pyobj.obj) -> !pyobj.obj {
    %a = "component.generate"(%q, %c) <{component = "answer", model = @pro}> : (!pyobj.obj, !pyobj.obj) -> !pyobj.obj
    func.return %a : !pyobj.obj
  }
}

// CHECK-LABEL: func.func @agent
// CHECK-NEXT:    %[[N:.*]] = "pyobj.const"() <{value}> : () -> !pyobj.obj
// CHECK-NEXT:    func.return %[[N]] : !pyobj.obj
// CHECK-NOT:     component.confidence
