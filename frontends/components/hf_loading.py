"""Loading local Hugging Face models quietly: offline, no progress bars, errors only.

The components load models that ship inside installed packages (MiniLM, SmolLM2);
nothing is downloaded, and progress bars or warnings from transformers would
clutter the CLI's one-line output. The caller's settings come back afterwards,
so a program that uses transformers itself keeps its own; with `--verbose`
(frontends.quiet) the loading shows everything."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr

from frontends.quiet import verbose


@contextmanager
def quiet_loading() -> Iterator[None]:
    """While the block runs: HF offline (for good: these models are local), and unless
    verbose: no progress bars (transformers' own, and the tqdm bar its GGUF
    conversion writes to stderr directly), transformers logging at errors only."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if verbose():
        yield
        return
    from transformers.utils import logging

    bars, verbosity = logging.is_progress_bar_enabled(), logging.get_verbosity()
    logging.disable_progress_bar()
    logging.set_verbosity_error()
    try:
        with redirect_stderr(io.StringIO()):
            yield
    finally:
        if bars:
            logging.enable_progress_bar()
        logging.set_verbosity(verbosity)
