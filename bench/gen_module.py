"""Generate a large ApproxMLIR-style module: many annotated functions mixing every
management op (decision trees, static transforms, substitution, try), for timing
the pipeline at scale."""

from __future__ import annotations


def _kernel(i: int) -> str:
    return f"""
  func.func @k{i}(%m: memref<?xf64>, %n: index) -> f64 {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {{
      %v = memref.load %m[%i] : memref<?xf64>
      %w = arith.mulf %v, %v : f64
      %s = arith.addf %acc, %w : f64
      scf.yield %s : f64
    }}
    return %r : f64
  }}"""


def _annotation(i: int) -> str:
    kind = i % 4
    if kind == 0:
        return (
            f'  "approx.util.annotation.decision_tree"() <{{func_name = "k{i}", transform_type = "loop_perforate", '
            'state_indices = array<i64: 1>, state_function = "state", num_thresholds = 2 : i32, '
            "thresholds_uppers = array<i32: 100000>, thresholds_lowers = array<i32: 0>, "
            "decision_values = array<i32: 0, 2, 4>, thresholds = array<i32: 100, 1000>, "
            "decisions = array<i32: 0, 2, 4>}> : () -> ()"
        )
    if kind == 1:
        return (
            f'  "approx.util.annotation.transform"() <{{func_name = "k{i}", '
            f'transform_type = "loop_perforate", knob_val = {2 + i % 3} : i32}}> : () -> ()'
        )
    if kind == 2:
        return (
            f'  "approx.util.annotation.convert_to_call"() <{{func_name = "k{i}"}}> : () -> ()\n'
            f'  "approx.util.annotation.transform"() <{{func_name = "k{i}", '
            'transform_type = "func_substitute", knob_val = 1 : i32}> : () -> ()\n'
            f"  func.func @approx_k{i}_1(%m: memref<?xf64>, %n: index) -> f64 {{\n"
            "    %z = arith.constant 0.0 : f64\n    return %z : f64\n  }"
        )
    return (
        f'  "approx.util.annotation.try"() <{{func_name = "k{i}", recover = "@recover", '
        'checker = "@check"}> : () -> ()'
    )


SHARED = """
  func.func @state(%n: index) -> i32 {
    %c = arith.index_cast %n : index to i32
    return %c : i32
  }
  func.func @check(%r: f64, %m: memref<?xf64>, %n: index) -> i1 {
    %lim = arith.constant 1.0e9 : f64
    %ok = arith.cmpf olt, %r, %lim : f64
    return %ok : i1
  }
  func.func @recover(%m: memref<?xf64>, %n: index) -> f64 {
    %z = arith.constant 0.0 : f64
    return %z : f64
  }"""


def generate(functions: int) -> str:
    parts = [SHARED]
    for i in range(functions):
        parts.append(_kernel(i))
        parts.append(_annotation(i))
    return "module {" + "\n".join(parts) + "\n}\n"


def count_ops(text: str) -> int:
    from approx_opt.parsing import parse_module

    return sum(1 for _ in parse_module(text).walk())
