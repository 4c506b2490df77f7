"""One module per transform_type; each exports `apply(transform, symbols)`, which
rewrites the region the `approx.transform` stands in for its knob value (0 = exact,
nothing changes). `REWRITES` is what transform-approx dispatches on."""

from passes.transformations import (
    cascade,
    func_substitute,
    loop_perforate,
    loop_perforate_modes,
    loop_truncate,
    memoize,
    param,
    precision_reduce,
    task_skipping,
)

REWRITES = {
    "loop_perforate": loop_perforate.apply,
    "func_substitute": func_substitute.apply,
    "task_skipping": task_skipping.apply,
    "precision_reduce": precision_reduce.apply,
    "loop_truncate": loop_truncate.apply,
    "loop_perforate_modulo": loop_perforate_modes.apply_modulo,
    "loop_perforate_rescale": loop_perforate_modes.apply_rescale,
    "loop_perforate_modulo_rescale": loop_perforate_modes.apply_modulo_rescale,
    "cascade": cascade.apply,
    "memoize": memoize.apply,
    "param": param.apply,
}
