"""Third-party output at the command lines: off unless `--verbose`.

Optuna's INFO lines ("A new study created in memory ...", "Trial 3 finished ..."),
transformers' warnings and Hugging Face progress bars repeat or bury what the tools
print themselves (their progress line and results). Each entry point (`approx-tune`,
`python -m examples.demo`, `bench/results.py`) runs inside `quiet_third_party(verbose)`.
The choice is kept in the environment variable APPROX_VERBOSE, so that worker
processes and the quiet blocks around tuning and model loading (`verbose()`) follow it.
Here, not in the tuner, because the components' model loading (below the tuner) reads it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

VERBOSE_ENV = "APPROX_VERBOSE"
# read by transformers and huggingface_hub when they load (here and in worker processes)
QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
             "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def verbose() -> bool:
    """Whether the user asked for third-party output (`--verbose`, or APPROX_VERBOSE=1)."""
    return os.environ.get(VERBOSE_ENV) == "1"


@contextmanager
def quiet_third_party(verbose: bool) -> Iterator[None]:
    """While the block runs: third-party logging at warnings (Optuna) or errors
    (transformers) and no Hugging Face progress bars, unless `verbose`; a setting the
    user made in the environment is kept. The previous settings come back afterwards."""
    import optuna

    names = (VERBOSE_ENV, *QUIET_ENV)
    saved = {k: os.environ.get(k) for k in names}
    optuna_level = optuna.logging.get_verbosity()
    hf_logging = sys.modules.get("transformers.utils.logging")  # loaded already: its level is set, not read
    hf_level = hf_logging.get_verbosity() if hf_logging else None
    os.environ[VERBOSE_ENV] = "1" if verbose else "0"
    if not verbose:
        for k, v in QUIET_ENV.items():
            os.environ.setdefault(k, v)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        if hf_logging:
            hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        optuna.logging.set_verbosity(optuna_level)
        if hf_logging:
            hf_logging.set_verbosity(hf_level)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
