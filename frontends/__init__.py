"""Frontends: Python decorator, LLM / retrieval / tool / torch components (issue 4)."""
