"""Component frontends (issue 4): retrieval, and the LLM / tool components beside it."""
