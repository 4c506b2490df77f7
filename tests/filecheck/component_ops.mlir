// RUN: approx-opt %s -p approx-pipeline | filecheck %s
// RUN: approx-opt %s --list-knobs | filecheck %s --check-prefix=KNOBS

// Component knobs rewrite the attributes of the component ops they name (by label):
// param sets a number, func_substitute the provider, precision_reduce the compute
// type, memoize a result cache, task_skipping drops the step (its result is None),
// cascade asks cheaper models first and escalates on low confidence.
module {
  "approx.util.annotation.component"() <{func_name = "rag", component = "query", parameter = "dims", transform_type = "param", values = [128 : i64, 64 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "query", parameter = "precision", transform_type = "precision_reduce", values = [bf16, f16], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "query", parameter = "encoder", transform_type = "func_substitute", values = [@minilm_l3], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "docs", parameter = "top_k", transform_type = "param", values = [2 : i64, 1 : i64], knob_val = 2 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "docs", parameter = "retriever", transform_type = "func_substitute", values = [@bm25_nostem], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "docs", parameter = "cache", transform_type = "memoize", values = [256 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "answer", parameter = "max_new_tokens", transform_type = "param", values = [8 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "answer", parameter = "sentences", transform_type = "param", values = [3 : i64, 2 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "answer", parameter = "precision", transform_type = "precision_reduce", values = [bf16], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "answer", parameter = "model", transform_type = "cascade", values = [@fast], thresholds = [0.2], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "agent", component = "tools", parameter = "router", transform_type = "func_substitute", values = [@keyword], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "agent", component = "tools", parameter = "cache", transform_type = "memoize", values = [64 : i64], knob_val = 0 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "agent", component = "hint", parameter = "model", transform_type = "task_skipping", values = [], knob_val = 1 : i32}> : () -> ()
  func.func @rag(%q: !pyobj.obj) -> !pyobj.obj {
    %e = "component.embed"(%q) <{component = "query", encoder = @minilm}> : (!pyobj.obj) -> !pyobj.obj
    %hits = "component.retrieve"(%e) <{component = "docs", retriever = @bm25, top_k = 3 : i64}> : (!pyobj.obj) -> !pyobj.obj
    %a = "component.generate"(%q, %hits) <{component = "answer", model = @pro, max_new_tokens = 16 : i64}> : (!pyobj.obj, !pyobj.obj) -> !pyobj.obj
    func.return %a : !pyobj.obj
  }
  func.func @agent(%r: !pyobj.obj) -> !pyobj.obj {
    %h = "component.generate"(%r, %r) <{component = "hint", model = @pro}> : (!pyobj.obj, !pyobj.obj) -> !pyobj.obj
    %c = "component.tool_call"(%h) <{component = "tools", tools = @bfcl, router = @embedding}> : (!pyobj.obj) -> !pyobj.obj
    func.return %c : !pyobj.obj
  }
}

// CHECK-NOT:   approx.util.annotation
// CHECK-LABEL: func.func @rag
// CHECK:         %[[E:.*]] = "component.embed"(%q) <{component = "query", encoder = @minilm_l3, dims = 128 : i64, precision = bf16}>
// CHECK:         %[[H:.*]] = "component.retrieve"(%[[E]]) <{component = "docs", retriever = @bm25_nostem, top_k = 1 : i64, cache = 256 : i64}>
// CHECK:         %[[A:.*]] = "component.generate"(%q, %[[H]]) <{component = "answer", model = @fast, max_new_tokens = 8 : i64, sentences = 3 : i64, precision = bf16}>
// CHECK-NEXT:    %[[C:.*]] = "component.confidence"(%[[A]]) : (!pyobj.obj) -> f64
// CHECK-NEXT:    %[[T:.*]] = arith.constant 2.000000e-01 : f64
// CHECK-NEXT:    %[[OK:.*]] = arith.cmpf oge, %[[C]], %[[T]] : f64
// CHECK-NEXT:    %[[R:.*]] = scf.if %[[OK]] -> (!pyobj.obj) {
// CHECK-NEXT:      scf.yield %[[A]] : !pyobj.obj
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[P:.*]] = "component.generate"(%q, %[[H]]) <{component = "answer", model = @pro, max_new_tokens = 8 : i64, sentences = 3 : i64, precision = bf16}>
// CHECK-NEXT:      scf.yield %[[P]] : !pyobj.obj
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]] : !pyobj.obj
// CHECK-LABEL: func.func @agent
// CHECK-NOT:     component.generate
// CHECK:         %[[N:.*]] = "pyobj.const"() <{value}> : () -> !pyobj.obj
// CHECK-NEXT:    %{{.*}} = "component.tool_call"(%[[N]]) <{component = "tools", tools = @bfcl, router = @keyword}>

// KNOBS: "name": "query.dims"
// KNOBS: "name": "query.precision"
// KNOBS: "name": "query.encoder"
// KNOBS: "name": "docs.top_k"
// KNOBS: "name": "docs.retriever"
// KNOBS: "name": "docs.cache"
// KNOBS: "name": "answer.max_new_tokens"
// KNOBS: "name": "answer.sentences"
// KNOBS: "name": "answer.precision"
// KNOBS: "name": "answer.model"
// KNOBS: "name": "tools.router"
// KNOBS: "name": "tools.cache"
// KNOBS: "name": "hint.model"
