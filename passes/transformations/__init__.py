"""One module per transform_type; each exports `apply(transform, symbols)`, which
rewrites the region the `approx.transform` stands in for its knob value (0 = exact,
nothing changes). `REWRITES` is what transform-approx dispatches on."""

from passes.transformations import func_substitute, loop_perforate, task_skipping

REWRITES = {
    "loop_perforate": loop_perforate.apply,
    "func_substitute": func_substitute.apply,
    "task_skipping": task_skipping.apply,
}
