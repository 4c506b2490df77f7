"""Letting the example systems' models go between tests: the example modules keep the
systems and LLMs they build (cached factories), and one test worker that had built every
LLM system in turn held three Gemma models with their engine builds, 15 GB."""

from __future__ import annotations

import gc
import sys

CACHED = {  # module -> its cached factories of systems or models
    "examples.systems.common": ("smollm", "gemma"),
    "examples.systems.agent.llm": ("agent_model",),
    "examples.systems.tools.agent_llm": ("system",),
    "examples.systems.rag.bm25": ("system",),
    "examples.systems.rag.dense": ("system",),
}


def release_models() -> None:
    """Clear the caches of the example modules imported so far (none is imported here)."""
    for module, names in CACHED.items():
        if module in sys.modules:
            for name in names:
                getattr(sys.modules[module], name).cache_clear()
    gc.collect()
    if sys.platform.startswith("linux"):  # glibc keeps freed arenas: hand them back to the system
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
