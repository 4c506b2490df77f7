"""The retrieval scoring kernels as MLIR text with ApproxMLIR annotations.

Why MLIR text: the kernels go through approx-opt's passes and the JIT (the Python
decorator will emit the same shapes). Each knob sits on its own function, so each
transformation finds its loop as "the first scf.for of the knob":

BM25, entry `@bm25(tf, idf, dl, avgdl, nterms, k, ids, vals) -> count`:
  `bm25`        param `top_k` on k                         (top-k)
  `bm25_docs`   loop over documents (perforate / truncate)  (corpus subsetting)
  `bm25_terms`  loop over query terms, rarest first, loop_truncate (term skipping)
Dense, entry `@dense(q, emb, k, ids, vals) -> count`:
  `dense`       param `top_k` on k
  `dense_docs`  loop over documents                         (document subsetting)
  `dense_dot`   loop over dimensions, loop_truncate          (first d of 384 dims)
  `dense_dot#2` precision_reduce of the dot product (f64 exact; f32, f16)

Both scans keep the best k documents in `ids`/`vals` (sorted by score, earlier
document first on ties: numpy's stable argsort of -score) and return how many.
k is clamped to the buffers' length, so a top-k value never writes past them.
"""

from __future__ import annotations

from string import Template

from approx_dialect.diagnostics import ApproxError

DOC_TRANSFORMS = ("loop_perforate", "loop_truncate", "loop_perforate_modulo")

# Insert (doc, s) into the sorted top-k buffers holding `count` entries.
TOPK_INSERT = """
  func.func @topk_insert(%ids: memref<?xi64>, %vals: memref<?xf64>, %count: index, %k: index,
                         %doc: index, %s: f64) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %full = arith.cmpi eq, %count, %k : index
    %enter = scf.if %full -> (i1) {
      %lastk = arith.subi %k, %c1 : index
      %worst = memref.load %vals[%lastk] : memref<?xf64>
      %better = arith.cmpf ogt, %s, %worst : f64
      scf.yield %better : i1
    } else {
      %true = arith.constant true
      scf.yield %true : i1
    }
    %new = scf.if %enter -> (index) {
      %pos = scf.for %j = %c0 to %count step %c1 iter_args(%p = %c0) -> (index) {
        %v = memref.load %vals[%j] : memref<?xf64>
        %ge = arith.cmpf oge, %v, %s : f64
        %p1 = arith.addi %p, %c1 : index
        %p2 = arith.select %ge, %p1, %p : index
        scf.yield %p2 : index
      }
      %grown = arith.addi %count, %c1 : index
      %n = arith.minui %grown, %k : index
      %last = arith.subi %n, %c1 : index
      %shifts = arith.subi %last, %pos : index
      scf.for %i = %c0 to %shifts step %c1 {
        %dst = arith.subi %last, %i : index
        %src = arith.subi %dst, %c1 : index
        %mi = memref.load %ids[%src] : memref<?xi64>
        %mv = memref.load %vals[%src] : memref<?xf64>
        memref.store %mi, %ids[%dst] : memref<?xi64>
        memref.store %mv, %vals[%dst] : memref<?xf64>
      }
      %d = arith.index_cast %doc : index to i64
      memref.store %d, %ids[%pos] : memref<?xi64>
      memref.store %s, %vals[%pos] : memref<?xf64>
      scf.yield %n : index
    } else {
      scf.yield %count : index
    }
    return %new : index
  }
"""


def _annotations(entry: str, k_arg: int, top_k_values, loops: list[tuple[str, str]]) -> str:
    vals = ", ".join(str(int(v)) for v in top_k_values)
    lines = [f'"approx.util.annotation.transform"() <{{func_name = "{f}", transform_type = "{t}", '
             f"knob_val = 0 : i32}}> : () -> ()" for f, t in loops]
    lines.append(f'"approx.util.annotation.param"() <{{func_name = "{entry}", arg_index = {k_arg} : i64, '
                 f'name = "top_k", values = array<i64: {vals}>}}> : () -> ()')
    lines.append(f'"approx.util.annotation.transform"() <{{func_name = "{entry}", transform_type = "param", '
                 f"knob_val = 0 : i32}}> : () -> ()")
    return "\n  ".join(lines)


# tf: (nterms, ndocs) term frequencies of the query's terms, rarest term first;
# score(d) = sum_t idf[t] * (tf[t,d] * (k1+1)) / (tf[t,d] + k1 * ((1-b) + b * dl[d]/avgdl)).
BM25 = Template("""module {
  $annotations

  func.func @bm25_terms(%tf: memref<?x?xf64>, %idf: memref<?xf64>, %dl: memref<?xf64>, %avgdl: f64,
                        %d: index, %nterms: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f64
    %k1 = arith.constant $k1 : f64
    %k1p1 = arith.constant $k1p1 : f64
    %b = arith.constant $b : f64
    %omb = arith.constant $one_minus_b : f64
    %len = memref.load %dl[%d] : memref<?xf64>
    %rel = arith.divf %len, %avgdl : f64
    %brel = arith.mulf %b, %rel : f64
    %x = arith.addf %omb, %brel : f64
    %norm = arith.mulf %k1, %x : f64
    %score = scf.for %t = %c0 to %nterms step %c1 iter_args(%acc = %zero) -> (f64) {
      %f = memref.load %tf[%t, %d] : memref<?x?xf64>
      %w = memref.load %idf[%t] : memref<?xf64>
      %num = arith.mulf %f, %k1p1 : f64
      %den = arith.addf %f, %norm : f64
      %q = arith.divf %num, %den : f64
      %c = arith.mulf %w, %q : f64
      %a = arith.addf %acc, %c : f64
      scf.yield %a : f64
    }
    return %score : f64
  }

  func.func @bm25_docs(%tf: memref<?x?xf64>, %idf: memref<?xf64>, %dl: memref<?xf64>, %avgdl: f64,
                       %nterms: index, %k: index, %ids: memref<?xi64>, %vals: memref<?xf64>) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ndocs = memref.dim %dl, %c0 : memref<?xf64>
    %n = scf.for %d = %c0 to %ndocs step %c1 iter_args(%count = %c0) -> (index) {
      %s = func.call @bm25_terms(%tf, %idf, %dl, %avgdl, %d, %nterms)
          : (memref<?x?xf64>, memref<?xf64>, memref<?xf64>, f64, index, index) -> f64
      %c = func.call @topk_insert(%ids, %vals, %count, %k, %d, %s)
          : (memref<?xi64>, memref<?xf64>, index, index, index, f64) -> index
      scf.yield %c : index
    }
    return %n : index
  }

  func.func @bm25(%tf: memref<?x?xf64>, %idf: memref<?xf64>, %dl: memref<?xf64>, %avgdl: f64,
                  %nterms: index, %k: index, %ids: memref<?xi64>, %vals: memref<?xf64>) -> index {
    %c0 = arith.constant 0 : index
    %cap = memref.dim %ids, %c0 : memref<?xi64>
    %kk = arith.minui %k, %cap : index
    %n = func.call @bm25_docs(%tf, %idf, %dl, %avgdl, %nterms, %kk, %ids, %vals)
        : (memref<?x?xf64>, memref<?xf64>, memref<?xf64>, f64, index, index, memref<?xi64>, memref<?xf64>) -> index
    return %n : index
  }
$topk_insert}
""")

# q: (dim,) and emb: (ndocs, dim) as the model gives them (f32); the dot product is
# computed in f64 (exact), or in f32 / f16 under precision_reduce.
DENSE = Template("""module {
  $annotations

  func.func @dense_dot(%q: memref<?xf32>, %emb: memref<?x?xf32>, %d: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f64
    %dim = memref.dim %q, %c0 : memref<?xf32>
    %s = scf.for %j = %c0 to %dim step %c1 iter_args(%acc = %zero) -> (f64) {
      %x = memref.load %q[%j] : memref<?xf32>
      %y = memref.load %emb[%d, %j] : memref<?x?xf32>
      %x64 = arith.extf %x : f32 to f64
      %y64 = arith.extf %y : f32 to f64
      %p = arith.mulf %x64, %y64 : f64
      %a = arith.addf %acc, %p : f64
      scf.yield %a : f64
    }
    return %s : f64
  }

  func.func @dense_docs(%q: memref<?xf32>, %emb: memref<?x?xf32>, %k: index,
                        %ids: memref<?xi64>, %vals: memref<?xf64>) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ndocs = memref.dim %emb, %c0 : memref<?x?xf32>
    %n = scf.for %d = %c0 to %ndocs step %c1 iter_args(%count = %c0) -> (index) {
      %s = func.call @dense_dot(%q, %emb, %d) : (memref<?xf32>, memref<?x?xf32>, index) -> f64
      %c = func.call @topk_insert(%ids, %vals, %count, %k, %d, %s)
          : (memref<?xi64>, memref<?xf64>, index, index, index, f64) -> index
      scf.yield %c : index
    }
    return %n : index
  }

  func.func @dense(%q: memref<?xf32>, %emb: memref<?x?xf32>, %k: index,
                   %ids: memref<?xi64>, %vals: memref<?xf64>) -> index {
    %c0 = arith.constant 0 : index
    %cap = memref.dim %ids, %c0 : memref<?xi64>
    %kk = arith.minui %k, %cap : index
    %n = func.call @dense_docs(%q, %emb, %kk, %ids, %vals)
        : (memref<?xf32>, memref<?x?xf32>, index, memref<?xi64>, memref<?xf64>) -> index
    return %n : index
  }
$topk_insert}
""")


def _check(top_k_values, doc_transform: str) -> None:
    if doc_transform not in DOC_TRANSFORMS:
        raise ApproxError(f"document subsetting must be one of {', '.join(DOC_TRANSFORMS)}, got {doc_transform!r}",
                          where="retrieval kernel")
    if not top_k_values or any(int(v) < 1 for v in top_k_values):
        raise ApproxError(f"top_k values must be integers >= 1, got {list(top_k_values)}", where="retrieval kernel")


def bm25_module(k1: float = 1.5, b: float = 0.75, top_k_values=(1, 3, 5),
                doc_transform: str = "loop_perforate") -> str:
    """The BM25 kernel module (entry `@bm25`), all knobs at 0 (exact)."""
    _check(top_k_values, doc_transform)
    ann = _annotations("bm25", 5, top_k_values, [("bm25_terms", "loop_truncate"), ("bm25_docs", doc_transform)])
    return BM25.substitute(annotations=ann, k1=repr(float(k1)), k1p1=repr(float(k1) + 1.0), b=repr(float(b)),
                           one_minus_b=repr(1.0 - float(b)), topk_insert=TOPK_INSERT)


def dense_module(top_k_values=(1, 3, 5), doc_transform: str = "loop_perforate") -> str:
    """The dense-similarity kernel module (entry `@dense`), all knobs at 0 (exact)."""
    _check(top_k_values, doc_transform)
    ann = _annotations("dense", 2, top_k_values, [("dense_dot", "loop_truncate"), ("dense_dot", "precision_reduce"),
                                                  ("dense_docs", doc_transform)])
    return DENSE.substitute(annotations=ann, topk_insert=TOPK_INSERT)
