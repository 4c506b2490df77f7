// A compound function whose components are ops: BM25 retrieval, then an answer by
// the `pro` reader. Three knobs, set here to non-zero values (0 = as written).
module {
  "approx.util.annotation.component"() <{func_name = "rag", component = "bm25", parameter = "top_k", transform_type = "param", values = [2 : i64, 1 : i64], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "answer", parameter = "model", transform_type = "cascade", values = [@fast], thresholds = [0.2, 0.1], knob_val = 1 : i32}> : () -> ()
  "approx.util.annotation.component"() <{func_name = "rag", component = "answer", parameter = "precision", transform_type = "precision_reduce", values = [bf16, f16], knob_val = 1 : i32}> : () -> ()
  func.func @rag(%question: !pyobj.obj) -> !pyobj.obj {
    %hits = "component.retrieve"(%question) <{component = "bm25", retriever = @bm25, top_k = 3 : i64}> : (!pyobj.obj) -> !pyobj.obj
    %answer = "component.generate"(%question, %hits) <{component = "answer", model = @pro}> : (!pyobj.obj, !pyobj.obj) -> !pyobj.obj
    func.return %answer : !pyobj.obj
  }
}
