"""`make bench`: every benchmark of the toolchain, ratios against baselines measured
in the same run (machines are shared and noisy: medians, not single runs)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import (
    decision_tree_bench,  # noqa: E402
    frontend_bench,  # noqa: E402
    kernels_bench,  # noqa: E402
    llm_tools_bench,  # noqa: E402
    pipeline_bench,  # noqa: E402
    retrieval_bench,  # noqa: E402
    torch_bench,  # noqa: E402
    transform_loops,  # noqa: E402
    transform_memo_param,  # noqa: E402
    transform_precision,  # noqa: E402
    tuning_bench,  # noqa: E402
)


def main() -> int:
    pipeline_bench.main()
    decision_tree_bench.main()
    transform_precision.main()
    transform_memo_param.main()
    transform_loops.main()
    tuning_bench.main()
    retrieval_bench.main()
    frontend_bench.main()
    torch_bench.main()
    llm_tools_bench.main()
    kernels_bench.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
