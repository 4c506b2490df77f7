// RUN: approx-opt %s -p approx-pipeline | filecheck %s

// A prompt-level call (component.generate with a template), a tool the program
// runs (component.tool_run), and skips with their fallbacks: a skipped rewrite
// passes its input through (`input = 0`), a skipped tool returns its constant
// (`values = [0]`), both as component.fallback; the knobs after a skip of the same
// label have nothing left to rewrite. The tool's substitute and cache apply.
module {
  "approx.util.annotation.component"() <{func_name = "p", component = "rewrite", parameter = "skip", transform_type = "task_skipping", values = [], knob_val = 1 : i32, input = 0 : i64}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "p", component = "rewrite", parameter = "max_new_tokens", transform_type = "param", values = [4 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "p", component = "extract", parameter = "model", transform_type = "func_substitute", values = [@small], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "p", component = "count", parameter = "tool", transform_type = "func_substitute", values = [@spaces], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "p", component = "count", parameter = "cache", transform_type = "memoize", values = [64 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "q", component = "words", parameter = "skip", transform_type = "task_skipping", values = [0 : i64], knob_val = 1 : i32}> : () -> ()
  func.func @p(%q: !pyobj.obj, %docs: !pyobj.obj) -> !pyobj.obj {
    %r = "component.generate"(%q) <{component = "rewrite", model = @smol, max_new_tokens = 16 : i64, template = "Rewrite: {question}", inputs = ["question"], outputs = ["query"]}> : (!pyobj.obj) -> !pyobj.obj
    %f = "component.generate"(%r, %docs) <{component = "extract", model = @smol, template = "{contexts}\n{question}", inputs = ["question", "contexts"], outputs = ["name", "year"]}> : (!pyobj.obj, !pyobj.obj) -> !pyobj.obj
    %n = "component.tool_run"(%f) <{component = "count", tool = @words}> : (!pyobj.obj) -> !pyobj.obj
    func.return %n : !pyobj.obj
  }
  func.func @q(%t: !pyobj.obj) -> !pyobj.obj {
    %n = "component.tool_run"(%t) <{component = "words", tool = @words}> : (!pyobj.obj) -> !pyobj.obj
    func.return %n : !pyobj.obj
  }
}

// CHECK-LABEL: func.func @p
// CHECK-NEXT:    %[[R:.*]] = "component.fallback"(%q) <{component = "rewrite", of = "component.generate", outputs = ["query"]}>
// CHECK-NEXT:    %[[F:.*]] = "component.generate"(%[[R]], %docs) <{component = "extract", model = @small, template = "{contexts}\0A{question}", inputs = ["question", "contexts"], outputs = ["name", "year"]}>
// CHECK-NEXT:    "component.tool_run"(%[[F]]) <{component = "count", tool = @spaces, cache = 64 : i64}>
// CHECK-LABEL: func.func @q
// CHECK-NEXT:    %[[N:.*]] = "component.fallback"() <{component = "words", of = "component.tool_run", value = 0 : i64}>
// CHECK-NEXT:    func.return %[[N]] : !pyobj.obj
