"""Component frontends: retrieval, and the LLM / tool components beside it."""
