"""The compound AI systems, each an autotuner Program built from
decorated Python functions and knobbed components: `rag_bm25`, `rag_dense`
(and `tools_agent`). `common.py` holds what the RAG systems share."""
