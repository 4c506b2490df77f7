// RUN: approx-opt %s -p approx-pipeline | filecheck %s

// The remaining (transformation, op) pairs of component_ops.mlir: func_substitute
// on generate, precision_reduce and the kernel params on retrieve, memoize on
// generate / embed / tool_call, task_skipping on embed / retrieve / tool_call,
// param on generate's early exit (layers).
module {
  "approx.util.annotation.component"() <{func_name = "a", component = "answer", parameter = "model", transform_type = "func_substitute", values = [@fast], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "a", component = "answer", parameter = "layers", transform_type = "param", values = [25 : i64, 20 : i64], knob_val = 2 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "a", component = "answer", parameter = "cache", transform_type = "memoize", values = [32 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "a", component = "query", parameter = "cache", transform_type = "memoize", values = [16 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "a", component = "dense", parameter = "precision", transform_type = "precision_reduce", values = [f32, f16], knob_val = 2 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "a", component = "dense", parameter = "dims", transform_type = "param", values = [2 : i64, 4 : i64], knob_val = 2 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "a", component = "dense", parameter = "docs", transform_type = "param", values = [3 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "a", component = "tools", parameter = "cache", transform_type = "memoize", values = [8 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "b", component = "hint_query", parameter = "skip", transform_type = "task_skipping", values = [], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "b", component = "hint_docs", parameter = "skip", transform_type = "task_skipping", values = [], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "b", component = "hint_tools", parameter = "skip", transform_type = "task_skipping", values = [], knob_val = 1 : i32}> : () -> ()
  func.func @a(%q: !pyobj.obj) -> !pyobj.obj {
    %e = "component.embed"(%q) <{component = "query", encoder = @minilm}> : (!pyobj.obj) -> !pyobj.obj
    %h = "component.retrieve"(%e) <{component = "dense", retriever = @dense, top_k = 3 : i64}> : (!pyobj.obj) -> !pyobj.obj
    %a = "component.generate"(%q, %h) <{component = "answer", model = @pro}> : (!pyobj.obj, !pyobj.obj) -> !pyobj.obj
    %c = "component.tool_call"(%a) <{component = "tools", tools = @bfcl, router = @embedding}> : (!pyobj.obj) -> !pyobj.obj
    func.return %c : !pyobj.obj
  }
  func.func @b(%q: !pyobj.obj) -> !pyobj.obj {
    %e = "component.embed"(%q) <{component = "hint_query", encoder = @minilm}> : (!pyobj.obj) -> !pyobj.obj
    %h = "component.retrieve"(%e) <{component = "hint_docs", retriever = @dense, top_k = 3 : i64}> : (!pyobj.obj) -> !pyobj.obj
    %c = "component.tool_call"(%h) <{component = "hint_tools", tools = @bfcl, router = @keyword}> : (!pyobj.obj) -> !pyobj.obj
    func.return %c : !pyobj.obj
  }
}

// CHECK-LABEL: func.func @a
// CHECK:         "component.embed"(%q) <{component = "query", encoder = @minilm, cache = 16 : i64}>
// CHECK:         "component.retrieve"(%{{.*}}) <{component = "dense", retriever = @dense, top_k = 3 : i64, precision = f16, dims = 4 : i64, docs = 3 : i64}>
// CHECK:         "component.generate"(%q, %{{.*}}) <{component = "answer", model = @fast, layers = 20 : i64, cache = 32 : i64}>
// CHECK:         "component.tool_call"(%{{.*}}) <{component = "tools", tools = @bfcl, router = @embedding, cache = 8 : i64}>
// CHECK-LABEL: func.func @b
// CHECK-NEXT:    "pyobj.const"() <{value}> : () -> !pyobj.obj
// CHECK-NEXT:    "pyobj.const"() <{value}> : () -> !pyobj.obj
// CHECK-NEXT:    %[[N:.*]] = "pyobj.const"() <{value}> : () -> !pyobj.obj
// CHECK-NEXT:    func.return %[[N]] : !pyobj.obj
