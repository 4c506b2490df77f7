"""`make bench`: every benchmark of the toolchain, ratios against baselines measured
in the same run (machines are shared and noisy: medians, not single runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import (  # noqa: E402 (after the path insert)
    decision_tree_bench,
    frontend_bench,
    kernels_bench,
    llm_tools_bench,
    pipeline_bench,
    retrieval_bench,
    torch_bench,
    transform_loops,
    transform_memo_param,
    transform_precision,
    tuning_bench,
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
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    sys.exit(main())
