"""The compound AI systems of issue 6, each an autotuner Program built from
decorated Python functions and knobbed components: `rag_bm25`, `rag_dense`
(and `tools_agent`). `common.py` holds what the RAG systems share."""
